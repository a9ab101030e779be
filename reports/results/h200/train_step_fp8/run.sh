#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 16, calls B and C (the fp8 part): TrainStep llama-3.2-1b fp8, validated (the check
# against bf16 on the language stream), each recipe in its own process.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
export XFBENCH_PHASES=1
for r in current delayed; do
  timeout 300 $B/xfbench --benchmark_filter='^TrainStep/' --xfbench_train_models=llama-3.2-1b \
    --xfbench_train_batches=4 --xfbench_train_precisions=fp8 --xfbench_train_fp8_recipe=$r \
    --benchmark_out="$OUT/train_fp8_$r.json" --benchmark_out_format=json >>"$OUT/fp8.log" 2>&1
  echo "rc=$?" >>"$OUT/fp8.log"
done
