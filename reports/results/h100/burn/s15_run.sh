#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 15, call A: the Llama training step's GPU tests (never run on a GPU), the kernel tests of
# the embedding without positions and the 128256-wide cross-entropy, the train-step test binary
# whole, then the Llama TrainStep cases; Burn compare (bf16 alone, cpu, together) 30 s and a host
# memory burn (issue 37).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,memory.total --format=csv,noheader >"$OUT/gpu.txt"
nproc >>"$OUT/gpu.txt"; free -g >>"$OUT/gpu.txt"; lscpu | grep -E "Model name|Socket" >>"$OUT/gpu.txt"
L="$OUT/tests.log"
run() { echo "=== $*" >>"$L"; timeout "$1" "${@:2}" >>"$L" 2>&1; echo "rc=$?" >>"$L"; }
run 240 $B/test_train_step
run 120 $B/test_kernels --gtest_filter='*Embedding*:*CrossEntropy*'
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|^===|Failure|worst|max_err|skipped" "$L" | head -80 >"$OUT/tests_summary.txt"
s=$(date +%s)
timeout 200 $B/xfbench --benchmark_filter='^TrainStep/fused/llama' --benchmark_repetitions=1 \
  --benchmark_out="$OUT/train_llama.json" --benchmark_out_format=json >"$OUT/xf.log" 2>&1
echo "rc=$? wall $(( $(date +%s) - s )) s" >>"$OUT/xf.log"
timeout 170 $B/xfbench --benchmark_filter='^Burn/(bf16|cpu)/' --xfbench_burn_compare=true --xfbench_burn_seconds=30 \
  --benchmark_out="$OUT/burn_compare.json" --benchmark_out_format=json >"$OUT/burn.log" 2>&1
echo "rc=$?" >>"$OUT/burn.log"
timeout 80 $B/xfbench --benchmark_filter='^Burn/cpu/' --xfbench_burn_seconds=20 --xfbench_burn_host_mem_pct=10 \
  --benchmark_out="$OUT/burn_mem.json" --benchmark_out_format=json >>"$OUT/burn.log" 2>&1
echo "rc=$?" >>"$OUT/burn.log"
