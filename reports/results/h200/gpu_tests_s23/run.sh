#!/usr/bin/env bash
# Session 23: the GPU tests of main 39fba9b on one H200 (nvidia-h200), the test binaries that hold
# what session 22 changed without a GPU run: ChooseFasterGpu and the GEMM search's time_rounds
# (test_kernels, test_matmul), the GELU math (test_t5, test_train_step, test_bert_layer,
# test_gpt2_block), TrainStep's label (test_train_step), the host (test_cli, test_bad_inputs).
# Carry: build/device/bin build/device/lib   Run: bash reports/results/h200/gpu_tests_s23/run.sh
set -uo pipefail
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:$PWD/build/device/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT  # a call brings back 8 files at most
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv,noheader >"$R/gpu.txt" 2>&1
run() {  # name, time-out, arguments
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  timeout "$limit" "build/device/bin/$name" "$@" >"$R/$name.txt" 2>&1
  local rc=$?
  echo "$name: rc=$rc $((SECONDS - t0)) s $(grep -E '^\[  (PASSED|FAILED)  \]' "$R/$name.txt" | tr '\n' ' ')" >>"$R/summary.txt"
}
run test_train_step 120
run test_t5 120
run test_bert_layer 120
run test_gpt2_block 120
run test_matmul 120
run test_kernels 240
run test_cli 150
run test_bad_inputs 150
