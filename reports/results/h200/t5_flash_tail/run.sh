#!/usr/bin/env bash
# Session 24: T5 flash forward+backward (score bias, no grouped-query attention) with main
# 6385a17's kernels (build/device/lib) and main 39fba9b's (.carry/oldlib), before b1f540a sized
# the backward's block order tail by its heaviest block; alternating processes, one H200.
# Carry: build/device/bin/xfbench build/device/lib .carry/oldlib
# Run: bash reports/results/h200/t5_flash_tail/run.sh
set -uo pipefail
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
BASE=$T/cudnn/lib:$T/nccl/lib:$PWD/build/device/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT  # a call brings back 8 files at most
t0=$SECONDS
for i in 1 2; do
  for v in main old; do
    [ $((SECONDS - t0)) -gt 200 ] && break 2
    lib=$BASE
    [ "$v" = old ] && lib=$PWD/.carry/oldlib:$BASE
    LD_LIBRARY_PATH=$lib timeout 100 build/device/bin/xfbench --xfbench_validate=false \
      --benchmark_filter='^T5(Encoder|Decoder)/flash/fp16/fwdbwd/seq:512/batch:64(/|$)' \
      --benchmark_out="$R/t5_${v}_$i.json" --benchmark_out_format=json >"$R/t5_${v}_$i.txt" 2>&1
    echo "t5 $v $i rc=$? t=$((SECONDS - t0)) s" >>"$R/summary.txt"
  done
done
