#!/usr/bin/env bash
# Session 24: the default suite (the README's main command without its build) timed end to end,
# process start included, every line timestamped; main 5054096, the device build (sm_90a), one H200.
# Carry: build/device/bin/xfbench build/device/lib
# Run: bash reports/results/h200/default_suite/s24/run.sh
set -uo pipefail
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT  # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
start=$(date +%s.%N)
timeout 240 build/device/bin/xfbench --benchmark_out="$R/default_suite.json" \
  --benchmark_out_format=json 2>&1 |
  while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done >"$R/default_suite.log"
end=$(date +%s.%N)
echo "default suite wall: $(python3 -c "print(round($end - $start, 1))") s" >"$R/wall.txt"
