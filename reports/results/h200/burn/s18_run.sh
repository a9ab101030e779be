#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 18, call B (issue 37), the build of 940d356 (the clock probe beside the burn's own FMAs):
# the probe's unit tests (they print the clock alone and beside each vector load), then Burn
# compare 60 s: bf16 alone, the 16 host cores alone, both together. Files: s18_*.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,memory.total --format=csv,noheader >"$R/gpu.txt"
nproc >>"$R/gpu.txt"; lscpu | grep -E "Model name|Socket|Flags" | cut -c1-300 >>"$R/gpu.txt"
timeout 30 $B/test_burn_cpu --gtest_filter='CpuKernels.*' >"$R/test_burn_cpu.log" 2>&1; echo "rc=$?" >>"$R/test_burn_cpu.log"
timeout 260 $B/xfbench --benchmark_filter='^Burn/(bf16|cpu)/' --xfbench_burn_compare=true --xfbench_burn_seconds=60 \
  --benchmark_out="$R/burn_compare.json" --benchmark_out_format=json >"$R/burn.log" 2>&1
echo "rc=$?" >>"$R/burn.log"
