#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 15, call D (issue 34): FP8 tests again (forward products with fast accumulation, part
# tolerances), the linear layers by hand, and LlamaBlock 8B s4096 b2 bf16 against fp8 (delayed and
# current), medians of 3 repetitions, one process per recipe.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$OUT/gpu.txt"
L="$OUT/tests.log"
run() { echo "=== ${*:2}" >>"$L"; timeout "$1" "${@:2}" >>"$L" 2>&1; echo "rc=$?" >>"$L"; }
run 60 $B/test_kernels --gtest_filter='*Fp8*'
run 120 $B/test_llama_block --gtest_filter="*Fp8*:*/16:*/17:LlamaGpuParts*"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|^===|Failure|rel_l2|worst|skipped|current scaling|head dim" "$L" | head -150 >"$OUT/tests_summary.txt"
timeout 60 $B/fp8_linear_speed --out="$OUT/fp8_linear_speed.jsonl" >"$OUT/speed.log" 2>&1
X=(--xfbench_llama_seqs=4096 --xfbench_llama_batches=2 --benchmark_repetitions=3 --benchmark_out_format=json)
timeout 200 $B/xfbench "${X[@]}" --benchmark_filter='^LlamaBlock/fused/' --xfbench_llama_dtypes=bf16,fp8 --benchmark_out="$OUT/llama_fp8_delayed.json" >"$OUT/xf.log" 2>&1
echo "rc=$?" >>"$OUT/xf.log"
timeout 100 $B/xfbench "${X[@]}" --benchmark_filter='^LlamaBlock/fused/fp8/recipe:current/fwdbwd/' --xfbench_llama_dtypes=fp8 --xfbench_llama_fp8_recipe=current --benchmark_out="$OUT/llama_fp8_current.json" >>"$OUT/xf.log" 2>&1
echo "rc=$?" >>"$OUT/xf.log"
