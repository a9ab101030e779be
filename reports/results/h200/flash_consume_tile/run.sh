#!/usr/bin/env bash
# Session 24: the Hopper flash forward with a key tile's work in one function (consume_tile), both
# head dims, against main 6385a17's kernels (.carry/keys128lib) and cuDNN, one H200, one call.
# Carry: build/device/bin/{test_kernels,test_llama_block,flash_speed} build/device/lib .carry/keys128lib
# Run: bash reports/results/h200/flash_consume_tile/run.sh
set -uo pipefail
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
BASE=$T/cudnn/lib:$T/nccl/lib:$PWD/build/device/lib:${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH=$BASE
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT  # a call brings back 8 files at most
t0=$SECONDS
B=build/device/bin
note() { echo "$1 rc=$2 t=$((SECONDS - t0)) s ${3:-}" >>"$R/summary.txt"; }
timeout 80 $B/test_kernels --gtest_filter='*Flash*:*Attention*' >"$R/tests.txt" 2>&1
note test_kernels $? "$(grep -E '^\[  (PASSED|FAILED)  \]' "$R/tests.txt" | tail -1)"
for i in 1 2 3; do
  for v in new old; do
    lib=$BASE
    [ "$v" = old ] && lib=$PWD/.carry/keys128lib:$BASE
    LD_LIBRARY_PATH=$lib timeout 60 $B/flash_speed --out="$R/speed_${v}_$i.jsonl" \
      >"$R/speed_${v}_$i.txt" 2>&1
    note "speed $v $i" $?
  done
done
timeout 40 $B/test_llama_block --gtest_filter='Backends/LlamaGpu.*' >"$R/llama.txt" 2>&1
note test_llama_block $? "$(grep -E '^\[  (PASSED|FAILED)  \]' "$R/llama.txt" | tail -1)"
