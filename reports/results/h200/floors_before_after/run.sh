#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 19 (prepared in session 18), issue 35's invariant: the headline cases before the
# restructuring (before.tar.xz: xfbench and its plugins built from 4db9a2a, the commit
# before the first issue-35 change) and after (this build), alternating processes in one call:
# before, after, before, after. Part 1 first runs the GPU tests of session 18's conversions
# (conversion_tests.sh). Usage: bash reports/results/h200/floors_before_after/run.sh 1|2
set -uo pipefail
part=${1:-1}
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
tar -C /tmp -xJf before.tar.xz
if [ "$part" = 1 ]; then
  OUT=$R bash "$(dirname "$0")"/conversion_tests.sh >/dev/null 2>&1; tar -C "$R" -xzf "$R/r.tgz" && mv "$R/r/tests_summary.txt" "$R/tests_summary.txt"; rm -rf "$R/r" "$R/r.tgz"
  F='^(Matmul/bf16/NN/m:8192/n:8192/k:8192|Vector/scale/fp32/n:268435456|BertLayer/(fused|flash)/fp16/fwdbwd/seq:(512/batch:64|128/batch:128))/iterations'
else
  F='^(GPT2Block/fused/fp16/fwdbwd/seq:1024/batch:64|T5(Encoder|Decoder)/fused/fp16/fwdbwd/seq:512/batch:64|TrainStep/fused/(bert-large/bf16/seq:(128/batch:64|512/batch:16)|gpt2-medium/bf16/seq:1024/batch:8)/accum:1/ckpt:off/adamw:fused)/iterations'
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
for k in 1 2; do
  for side in before after; do
    X=$B/xfbench; [ $side = before ] && X=/tmp/before/bin/xfbench
    left=$((560 - ($(date +%s) - t0)))
    if [ $left -lt 30 ]; then echo "no time for $side $k" >>"$R/wall.txt"; break 2; fi
    timeout $left "$X" --xfbench_suite=all --benchmark_filter="$F" --benchmark_out="$R/${side}_$k.json" \
      --benchmark_out_format=json >>"$R/xf_$side.log" 2>&1
    echo "$side $k rc=$? $(($(date +%s) - t0)) s" >>"$R/wall.txt"
  done
done
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
