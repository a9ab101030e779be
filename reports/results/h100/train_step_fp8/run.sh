#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 15, call F (issue 34): llama-3.2-1b s4096 b4 fp8 with current scaling, validated (its
# mean loss against bf16's), and the delayed recipe timed without validation, beside bf16.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$OUT/gpu.txt"
X=(--xfbench_train_models=llama-3.2-1b --xfbench_train_batches=4 --benchmark_out_format=json)
timeout 60 $B/xfbench "${X[@]}" --xfbench_train_precisions=fp8 --xfbench_train_fp8_recipe=current \
  --benchmark_filter='^TrainStep/' --benchmark_out="$OUT/train_fp8_current.json" >"$OUT/xf.log" 2>&1
echo "rc=$?" >>"$OUT/xf.log"
timeout 80 $B/xfbench "${X[@]}" --xfbench_train_precisions=bf16,fp8 --xfbench_validate=false \
  --benchmark_filter='^TrainStep/' --benchmark_out="$OUT/train_fp8_speed.json" >>"$OUT/xf.log" 2>&1
echo "rc=$?" >>"$OUT/xf.log"
