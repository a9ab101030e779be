#!/usr/bin/env bash
# Session 28, branch norm-rms-sums against main (a2a2585): the RMSNorm backward keeps only
# dweight's column sums. Before the call: build main, copy build/device/bin/kernel_bandwidth and
# build/device/lib to build/main_copy/{bin,lib}; then build the branch (strip both libs).
# Runs the branch's norm tests, then kernel_bandwidth of main and of the branch, alternating, twice.
# Carry: build/device/bin/test_kernels build/device/bin/kernel_bandwidth build/device/lib
#        build/main_copy
# Run: bash reports/results/h100/norm_rms_sums/run.sh
set -uo pipefail
t0=$SECONDS
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
L=$R/steps.log
step() { echo "$1 rc=$2 t=$((SECONDS - t0)) s" >>"$L"; }
timeout 120 build/device/bin/test_kernels --gtest_filter='*Norm*:*norm*' >"$R/test_norm.txt" 2>&1
step test_norm $?
for k in $(seq "${ROUNDS:-2}"); do  # ROUNDS: main/branch alternations
  timeout 90 build/main_copy/bin/kernel_bandwidth --out="$R/main_$k.jsonl" >/dev/null 2>&1
  step "main $k" $?
  timeout 90 build/device/bin/kernel_bandwidth --out="$R/branch_$k.jsonl" >/dev/null 2>&1
  step "branch $k" $?
done
