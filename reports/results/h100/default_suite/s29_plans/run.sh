#!/usr/bin/env bash
# Session 29 (issue 32): the default suite and each case alone as ../s26/ ran them, with
# XFBENCH_GEMM_PLANS=plans.tsv for every process: the suite searches and writes its choices, each
# case alone reads them and searches nothing, so suite and alone run the same kernels and differ
# only by the GPU's state. First the GPU test of the file (two host runs).
# Carry: build/device/bin/xfbench build/device/bin/test_matmul build/device/lib
# Run: bash reports/results/h100/default_suite/s29_plans/run.sh
set -uo pipefail
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
mkdir -p "$OUT/r"
LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-} timeout 120 \
  build/device/bin/test_matmul --gtest_filter='*PlansFile*:GemmGpu.Search*' \
  >"$OUT/r/test_matmul.txt" 2>&1
echo "test_matmul rc=$?" >>"$OUT/r/test_matmul.txt"
export XFBENCH_GEMM_PLANS=$OUT/r/plans.tsv
ALONE_UNTIL=${ALONE_UNTIL:-430} bash reports/results/h100/default_suite/s26/run.sh
