#!/usr/bin/env bash
# Session 29 (issue 36), branch flash-fwd-split built (rebased on main 9d07b94; build; strip):
# the head-dim-128 overlap forward with mbarriers instead of a barrier a tile (FlashKernel::split),
# (and FlashKernel::pingpong: split with FA3's turns) on one H100: the flash tests, compute-sanitizer
# memcheck, racecheck and synccheck on the
# bit-for-bit test, then flash_speed (overlap, lockstep, split, pingpong, cuDNN alternating).
# Carry: build/device/bin/test_kernels build/device/bin/flash_speed build/device/lib
# Run: bash reports/results/h100/flash_split/run.sh
set -uo pipefail
t0=$SECONDS
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
B=${B:-build/device/bin} # B=build/s29flash/bin: the branch build carried beside main's
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
L=$R/steps.log
step() { echo "$1 rc=$2 t=$((SECONDS - t0)) s" >>"$L"; }
timeout 120 "$B/test_kernels" --gtest_filter='*Flash*' >"$R/test_flash.txt" 2>&1
step test_flash $?
timeout 150 "$B/flash_speed" --out="$R/flash_speed.jsonl" >"$R/flash_speed.txt" 2>&1
step flash_speed $?
for tool in memcheck racecheck synccheck; do
  timeout 90 compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/test_kernels" \
    --gtest_filter='*FlashOverlapForward*' >"$R/sanitizer_$tool.txt" 2>&1
  step "sanitizer $tool" $?
done
