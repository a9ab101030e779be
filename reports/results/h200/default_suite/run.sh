#!/usr/bin/env bash
# shellcheck disable=SC2129  # one redirect a line: each step as it ran
# Session 14, device call C: the 42-case default suite timed end to end (process start included,
# every line timestamped), then Burn bf16 60 s alone, with the CPU burn beside it, and the CPU
# alone 30 s (issue 37).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$OUT/gpu.txt"
nproc >>"$OUT/gpu.txt"; lscpu | grep -E "Model name|Socket|Thread|Core" >>"$OUT/gpu.txt"
start=$(date +%s.%N)
timeout 330 "$B"/xfbench --benchmark_out="$OUT"/default_suite.json --benchmark_out_format=json 2>&1 |
  while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done >"$OUT"/default_suite.log
end=$(date +%s.%N)
echo "default suite wall: $(python3 -c "print(round($end - $start, 1))") s" | tee "$OUT"/wall.txt
timeout 100 "$B"/xfbench --benchmark_filter='^Burn/bf16/seconds:60/iterations' --benchmark_out="$OUT"/burn_gpu_alone.json --benchmark_out_format=json >"$OUT"/burn.log 2>&1
echo "rc=$?" >>"$OUT"/burn.log
timeout 100 "$B"/xfbench --xfbench_burn_cpu=true --benchmark_filter='^Burn/bf16/seconds:60/cpu:on' --benchmark_out="$OUT"/burn_gpu_cpu.json --benchmark_out_format=json >>"$OUT"/burn.log 2>&1
echo "rc=$?" >>"$OUT"/burn.log
timeout 60 "$B"/xfbench --xfbench_burn_seconds=30 --benchmark_filter='^Burn/cpu/' --benchmark_out="$OUT"/burn_cpu_alone.json --benchmark_out_format=json >>"$OUT"/burn.log 2>&1
echo "rc=$?" >>"$OUT"/burn.log
