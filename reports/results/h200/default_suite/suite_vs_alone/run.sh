#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 16, call D (issue 32): the default suite timed end to end, then each of its cases alone
# in its own process, same machine, same build, same protocol (suite vs alone).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R/alone"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
lscpu | grep -E "Model name" >>"$R/gpu.txt"
start=$(date +%s.%N)
timeout 260 $B/xfbench --benchmark_out="$R"/suite.json --benchmark_out_format=json 2>&1 |
  while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done >"$R"/suite.log
end=$(date +%s.%N)
echo "default suite wall: $(python3 -c "print(round($end - $start, 1))") s" | tee "$R"/wall.txt
$B/xfbench --benchmark_list_tests 2>/dev/null | grep -v '^P2P/' >"$R/cases.txt"
i=0
while IFS= read -r name; do
  i=$((i + 1))
  if [ $(($(date +%s) - t0)) -gt 575 ]; then echo "stopped before case $i: time" >>"$R/alone.log"; break; fi
  timeout 40 $B/xfbench --benchmark_filter="^${name}\$" --benchmark_out="$R/alone/$i.json" \
    --benchmark_out_format=json >>"$R/alone.log" 2>&1
done <"$R/cases.txt"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
