#!/usr/bin/env bash
# shellcheck disable=SC2129  # one redirect a line: each step as it ran
# Session 14, device call A: GPU tests of the Llama work, then LlamaBlock beside HF's
# LlamaDecoderLayer (eager, sdpa, torch.compile) in the same call.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$OUT/gpu.txt"
L="$OUT/tests.log"
run() { echo "=== $*" >>"$L"; timeout 300 "$@" >>"$L" 2>&1; echo "rc=$?" >>"$L"; }
run $B/test_rope
run $B/test_kernels --gtest_filter='*Attention*:*Norm*'
run $B/test_t5_kernels
run $B/test_llama_block
run $B/test_gpt2_block
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|^===|Failure|worst|skipped" "$L" | head -150 >"$OUT/tests_summary.txt"
# xfbench LlamaBlock: 8B s4096 b2 and 1B s4096 b4, every backend, bf16.
X=("$B/xfbench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=false)
timeout 280 "${X[@]}" --benchmark_filter='^LlamaBlock/.*/bf16/.*/seq:4096/batch:2/' \
  --benchmark_out="$OUT/xf_llama8b.json" --benchmark_out_format=json >"$OUT/xf_llama8b.log" 2>&1
timeout 200 "${X[@]}" --xfbench_llama_model=llama-3.2-1b --benchmark_filter='^LlamaBlock/.*/bf16/.*/seq:4096/batch:4/' \
  --benchmark_out="$OUT/xf_llama1b.json" --benchmark_out_format=json >"$OUT/xf_llama1b.log" 2>&1
