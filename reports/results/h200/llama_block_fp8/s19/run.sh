#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 19, call 4 (issue 34; reports/results/h200/llama_block_fp8/s19): the norms and activations writing FP8 (Fp8Output), the weight
# gradient transposing those bytes. GPU tests (kernels, every fp8 block, the fp8 training step),
# memcheck/racecheck on the new kernels, then LlamaBlock 8B s4096 b2 and GPT2Block hidden 4096
# s2048 b8 fused fwd+bwd: bf16, fp8 delayed, fp8 current (3 repetitions, medians; memory).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
left() { local l=$((560 - ($(date +%s) - t0))); echo $((l > 1 ? l : 1)); }
L="$R/tests.log"
run() {
  local l; l=$(left); [ "$l" -lt "$1" ] || l=$1
  echo "=== ${*:2} ($(($(date +%s) - t0)) s)" >>"$L"; timeout "$l" "${@:2}" >>"$L" 2>&1; echo "rc=$? ($(($(date +%s) - t0)) s)" >>"$L"
}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
run 60 $B/test_kernels --gtest_filter='*Fp8*:Norm/*:Elementwise/*'
run 60 compute-sanitizer --tool memcheck $B/test_kernels --gtest_filter='*Fp8Producers*:*Fp8Transpose*'
run 40 compute-sanitizer --tool racecheck $B/test_kernels --gtest_filter='Fp8Transpose.*:Recipes/Fp8ProducersGpu.RmsNorm*/current'
run 45 $B/test_llama_block --gtest_filter='*Fp8*'
run 45 $B/test_gpt2_block
run 45 $B/test_t5 --gtest_filter='Backends/T5Gpu.*'
run 45 $B/test_bert_layer --gtest_filter='Parts/BertGpu.*'
run 60 $B/test_train_step --gtest_filter='*Fp8*'
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|^===|Failure" "$L" >"$R/tests_summary.txt"
X=(--benchmark_repetitions=3 --benchmark_out_format=json)
LL=(--xfbench_llama_seqs=4096 --xfbench_llama_batches=2 --xfbench_llama_dtypes=bf16,fp8)
G=(--xfbench_gpt2_hidden=4096 --xfbench_gpt2_heads=32 --xfbench_gpt2_seqs=2048 --xfbench_gpt2_batches=8 --xfbench_gpt2_backends=fused --xfbench_gpt2_dtypes=bf16,fp8)
timeout "$(left)" $B/xfbench "${X[@]}" "${LL[@]}" --benchmark_filter='^LlamaBlock/fused/(bf16|fp8/recipe:delayed)/fwdbwd/' \
  --benchmark_out="$R/llama.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout "$(left)" $B/xfbench "${X[@]}" "${G[@]}" --benchmark_filter='^GPT2Block/fused/(bf16|fp8/recipe:delayed)/fwdbwd/' \
  --benchmark_out="$R/gpt2.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout "$(left)" $B/xfbench "${X[@]}" "${LL[@]}" --xfbench_llama_fp8_recipe=current \
  --benchmark_filter='^LlamaBlock/fused/fp8/recipe:current/fwdbwd/' --benchmark_out="$R/llama_current.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
