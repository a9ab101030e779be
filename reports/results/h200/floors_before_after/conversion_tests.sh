#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 18, call G (issue 35): one set of element conversions (xfbench/convert.hpp) and the SDK's
# download_as_double: the GPU tests of every user (fills, vector and copy kernels, the norm /
# elementwise / softmax / cross-entropy kernels through detail/vec.cuh, the GEMM check, block
# validation's and the language model's downloads).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
L="$R/tests.log"
run() {
  local left=$((95 - ($(date +%s) - t0)))
  if [ $left -lt 3 ]; then echo "=== ${*:2}: no time" >>"$L"; return; fi
  echo "=== ${*:2} ($(($(date +%s) - t0)) s)" >>"$L"
  timeout $((left < $1 ? left : $1)) "${@:2}" >>"$L" 2>&1; echo "rc=$?" >>"$L"
}
run 10 $B/test_gpu_timer --gtest_filter='*Fill*:*Download*'
run 15 $B/test_vector --gtest_filter='VectorGpu.KernelsMatch*'
run 10 $B/test_transfer --gtest_filter='TransferGpu.SmCopy*'
run 20 $B/test_gpt2_block --gtest_filter='Backends/*'
run 20 $B/test_kernels --gtest_filter='Norm/*:Elementwise/*:Softmax/*:CrossEntropy/*'
run 25 $B/test_train_step --gtest_filter='*EveryGradient*'
run 20 $B/test_matmul --gtest_filter='GemmGpu.*'
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|^===|Failure" "$L" >"$R/tests_summary.txt"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
