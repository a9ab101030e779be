#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 17, call B (issue 34, 32): GPU tests of the new cast kernels, GPT-2 / T5 in fp8 and the
# 16384-wide column sums, the steady GEMM final; the linear layers by hand old (c6f8659) vs new;
# LlamaBlock 8B and GPT2Block hidden 4096 in bf16 vs fp8.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
L="$R/tests.log"
run() { echo "=== ${*:2} ($(($(date +%s) - t0)) s)" >>"$L"; timeout "$1" "${@:2}" >>"$L" 2>&1; echo "rc=$?" >>"$L"; }
run 60 $B/test_kernels --gtest_filter='*Fp8*:*Elementwise*'
run 60 compute-sanitizer --tool memcheck $B/test_kernels --gtest_filter='Fp8Gpu.CastTranspose*'
run 60 compute-sanitizer --tool racecheck $B/test_kernels --gtest_filter='Fp8Gpu.CastTranspose*'
run 60 $B/test_gpt2_block --gtest_filter='Backends/Gpt2Gpu.*:Gpt2GpuFp8.*'
run 90 $B/test_t5 --gtest_filter='Backends/T5Gpu.*'
run 40 $B/test_matmul --gtest_filter='GemmGpu.Search*'
run 40 $B/test_bert_layer --gtest_filter='BertGpuWide.*'
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|^===|Failure|ERROR SUMMARY|RACECHECK SUMMARY|worst|current scaling" "$L" | head -150 >"$R/tests_summary.txt"
tar -C /tmp -xJf .carry/old.tar.xz
LD_LIBRARY_PATH=/tmp/old/lib:build/device/lib:$LD_LIBRARY_PATH timeout 45 /tmp/old/bin/fp8_linear_speed --out="$R/speed_old.jsonl" >"$R/speed_old.log" 2>&1
timeout 70 $B/fp8_linear_speed --out="$R/speed_new.jsonl" >"$R/speed_new.log" 2>&1
echo "speed done $(($(date +%s) - t0)) s" >>"$R/time.txt"
X=(--benchmark_repetitions=3 --benchmark_out_format=json)
left() { echo $((560 - ($(date +%s) - t0))); }
timeout $(( $(left) / 2 )) $B/xfbench "${X[@]}" --xfbench_llama_seqs=4096 --xfbench_llama_batches=2 --benchmark_filter='^LlamaBlock/fused/(bf16|fp8/recipe:delayed)/fwdbwd/' --xfbench_llama_dtypes=bf16,fp8 --benchmark_out="$R/llama_fp8.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
G=(--xfbench_gpt2_hidden=4096 --xfbench_gpt2_heads=32 --xfbench_gpt2_seqs=2048 --xfbench_gpt2_batches=8 --xfbench_gpt2_backends=fused)
timeout "$(left)" $B/xfbench "${X[@]}" "${G[@]}" --benchmark_filter='^GPT2Block/fused/.*/fwdbwd/' --xfbench_gpt2_dtypes=bf16,fp8 --benchmark_out="$R/gpt2_fp8.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
