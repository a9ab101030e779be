#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 18, call F (issue 34, FP8 memory): one set of FP8 scratch per block (x = xT, dy, dyT;
# T5's wq_cross a second dy slot; a join before each cast of dy). The fp8 GPU tests on the new
# build, then LlamaBlock 8B s4096 b2 and GPT2Block hidden 4096 s2048 b8 fused fwd+bwd, fp8 delayed
# with the old libxfbench_models.so (per-linear scratch, .carry/old_lib) and the new one, bf16 once.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
left() { local l=$((270 - ($(date +%s) - t0))); echo $((l > 1 ? l : 1)); }
L="$R/tests.log"
run() { echo "=== ${*:2} ($(($(date +%s) - t0)) s)" >>"$L"; timeout "$1" "${@:2}" >>"$L" 2>&1; echo "rc=$?" >>"$L"; }
run 45 $B/test_llama_block --gtest_filter='*Fp8*'
run 45 $B/test_gpt2_block
run 45 $B/test_t5 --gtest_filter='Backends/T5Gpu.*'
run 45 $B/test_train_step --gtest_filter='*Fp8*'
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|^===|Failure" "$L" >"$R/tests_summary.txt"
X=(--benchmark_repetitions=3 --benchmark_out_format=json)
LL=(--xfbench_llama_seqs=4096 --xfbench_llama_batches=2 --xfbench_llama_dtypes=bf16,fp8)
G=(--xfbench_gpt2_hidden=4096 --xfbench_gpt2_heads=32 --xfbench_gpt2_seqs=2048 --xfbench_gpt2_batches=8 --xfbench_gpt2_backends=fused --xfbench_gpt2_dtypes=bf16,fp8)
LD_LIBRARY_PATH=.carry/old_lib:$LD_LIBRARY_PATH timeout "$(left)" $B/xfbench "${X[@]}" "${LL[@]}" \
  --benchmark_filter='^LlamaBlock/fused/fp8/recipe:delayed/fwdbwd/' --benchmark_out="$R/llama_old.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout "$(left)" $B/xfbench "${X[@]}" "${LL[@]}" --benchmark_filter='^LlamaBlock/fused/(bf16|fp8/recipe:delayed)/fwdbwd/' \
  --benchmark_out="$R/llama_new.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
LD_LIBRARY_PATH=.carry/old_lib:$LD_LIBRARY_PATH timeout "$(left)" $B/xfbench "${X[@]}" "${G[@]}" \
  --benchmark_filter='^GPT2Block/fused/fp8.*/fwdbwd/' --benchmark_out="$R/gpt2_old.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout "$(left)" $B/xfbench "${X[@]}" "${G[@]}" --benchmark_filter='^GPT2Block/fused/fp8.*/fwdbwd/' \
  --benchmark_out="$R/gpt2_new.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
