#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 17, call A (issue 32): the default suite end to end, then each case alone in its own
# process (suite vs alone), with the search's tie rule; then the two power-capped cases that
# differed alone again (alone vs alone: the machine's own reproducibility).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R/alone" "$R/again"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
start=$(date +%s.%N)
timeout 250 $B/xfbench --benchmark_out="$R"/suite.json --benchmark_out_format=json 2>&1 |
  while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done >"$R"/suite.log
end=$(date +%s.%N)
echo "default suite wall: $(python3 -c "print(round($end - $start, 1))") s" | tee "$R"/wall.txt
$B/xfbench --benchmark_list_tests 2>/dev/null | grep -v '^P2P/' | sed 's|/iterations:.*||' >"$R/cases.txt"
i=0
while IFS= read -r name; do
  i=$((i + 1))
  if [ $(($(date +%s) - t0)) -gt 540 ]; then echo "stopped before case $i: time" >>"$R/alone.log"; break; fi
  timeout 40 $B/xfbench --benchmark_filter="^${name}/" --benchmark_out="$R/alone/$i.json" \
    --benchmark_out_format=json >>"$R/alone.log" 2>&1
done <"$R/cases.txt"
for k in 1 2; do
  for name in 'BertLayer/fused/fp16/fwdbwd/seq:128/batch:128' 'T5Encoder/flash/fp16/fwdbwd/seq:512/batch:64'; do
    if [ $(($(date +%s) - t0)) -gt 570 ]; then break 2; fi
    timeout 25 $B/xfbench --benchmark_filter="^${name}/" --benchmark_out="$R/again/${k}_${name//[\/:]/_}.json" \
      --benchmark_out_format=json >>"$R/again.log" 2>&1
  done
done
echo "total $(($(date +%s) - t0)) s" >>"$R/wall.txt"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
