#!/usr/bin/env bash
# Session 28 (issue 36), branches flash-dq-reduce and flash-fwd-overlap built together (s28-try2):
# FlashDq::reduce (the dK/dV blocks add dS·K into an fp32 dQ with atomics; no dQ blocks) and the
# head-dim-128 forward's intra-warpgroup overlap, on one H100: the flash tests (the new
# FlashDqByReductionMatchesReference and FlashOverlapForwardIsTheLockstepOneBitForBit among them),
# compute-sanitizer memcheck and racecheck on both, then flash_speed (forward overlap, lockstep and
# cuDNN; backward recompute, reduce and cuDNN; alternating).
# Carry: build/device/bin/test_kernels build/device/bin/flash_speed build/device/lib
# Run: bash reports/results/h100/flash_s28/run.sh
set -uo pipefail
t0=$SECONDS
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
B=build/device/bin
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
L=$R/steps.log
step() { echo "$1 rc=$2 t=$((SECONDS - t0)) s" >>"$L"; }
timeout 150 "$B/test_kernels" --gtest_filter='*Flash*' >"$R/test_flash.txt" 2>&1
step test_flash $?
timeout 150 "$B/flash_speed" --out="$R/flash_speed.jsonl" >"$R/flash_speed.txt" 2>&1
step flash_speed $?
# (SANITIZE: the test filters to run under the sanitizers, TOOLS: which; both lists)
read -ra TOOLS <<<"${TOOLS:-memcheck racecheck}"
read -ra FILTERS <<<"${SANITIZE:-*FlashOverlapForward* *FlashDqByReductionMatchesReference*}"
for tool in "${TOOLS[@]}"; do
  for F in "${FILTERS[@]}"; do
    timeout 90 compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/test_kernels" \
      --gtest_filter="$F" >"$R/sanitizer_${tool}_${F//[^A-Za-z]/}.txt" 2>&1
    step "sanitizer $tool $F" $?
  done
done
