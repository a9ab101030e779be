#!/usr/bin/env bash
# One GPU-machine call: run every test binary of a carried build folder (GPU tests included) and
# the given xfbench arguments, writing logs and JSON under $OUT. Used with the `device` preset:
#   tests/device_suite.sh build/device [xfbench args...]
set -uo pipefail
build="$1"; shift
out="${OUT:-/tmp/xfbench_out}"; mkdir -p "$out"
torch_libs=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH="$torch_libs/cudnn/lib:$torch_libs/nccl/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$out/gpu.txt"
status=0
GTEST_EXTRA=()
for t in $(find "$build/bin" -maxdepth 1 -type f -name 'test_*' | sort); do
  "$t" --gtest_brief=1 "${GTEST_EXTRA[@]}" >>"$out/tests.log" 2>&1 || { status=1; echo "FAILED: $t"; }
done
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED" "$out/tests.log" | tail -40
exit $status
