#!/usr/bin/env bash
# Session 24: the Hopper flash forward at head dim 128 with a loading warpgroup (session 23's,
# reports/results/h200/flash_ws/) plus FlashAttention-3's ping-pong (named barriers around each
# computing warpgroup's S product, so one warpgroup's products run during the other's softmax);
# the head-dim-64 forward with its tile in one function (consume_tile). Against main 6385a17's
# kernels (.carry/keys128lib) and cuDNN, one H200, one call.
# Carry: build/device/bin/{test_kernels,test_llama_block,flash_speed} build/device/lib .carry/keys128lib
# Run: bash reports/results/h200/flash_pingpong/run.sh
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
# 1. The head-dim-128 forward against float64 first, alone (a hang ends here, not below).
timeout 60 $B/test_kernels --gtest_filter='*FlashHeadDim128*' >"$R/tests.txt" 2>&1
rc=$?
note hd128 $rc "$(grep -E '^\[  (PASSED|FAILED)  \]' "$R/tests.txt" | tr '\n' ' ')"
[ "$rc" -eq 124 ] && exit 0
timeout 80 $B/test_kernels --gtest_filter='*Flash*:*Attention*' >>"$R/tests.txt" 2>&1
note test_kernels $? "$(grep -E '^\[  (PASSED|FAILED)  \]' "$R/tests.txt" | tail -1)"
# 2. Kernels alone: flash vs cuDNN, this library and main's, alternating processes.
for i in 1 2; do
  for v in new old; do
    lib=$BASE
    [ "$v" = old ] && lib=$PWD/.carry/keys128lib:$BASE
    LD_LIBRARY_PATH=$lib timeout 60 $B/flash_speed --out="$R/speed_${v}_$i.jsonl" \
      >"$R/speed_${v}_$i.txt" 2>&1
    note "speed $v $i" $?
  done
done
# 3. The sanitizers on head dim 128 (synccheck: barriers; racecheck: shared memory).
CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck synccheck; do
  [ $((SECONDS - t0)) -gt 170 ] && break
  timeout 60 $CS --tool $tool --error-exitcode 9 $B/test_kernels \
    --gtest_filter='Attention/1.FlashHeadDim128MatchesReference' >"$R/$tool.txt" 2>&1
  note "$tool" $? "$(tail -2 "$R/$tool.txt" | tr '\n' ' ')"
done
# 4. The Llama layer against float64 with flash at head dim 128.
timeout 40 $B/test_llama_block --gtest_filter='Backends/LlamaGpu.*' >"$R/llama.txt" 2>&1
note test_llama_block $? "$(grep -E '^\[  (PASSED|FAILED)  \]' "$R/llama.txt" | tail -1)"
