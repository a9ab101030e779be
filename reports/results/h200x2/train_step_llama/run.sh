#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 20, call G (nvidia-h200-x2), issue 38: llama-3.1-8b zero3 on 2 GPUs (the 4-GPU number
# is in ../zero3: the scaling between them), then llama-3.2-3b s4096 b2 bf16 on one GPU (MFU).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
timeout 130 $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json --xfbench_train_models=llama-3.1-8b \
  --xfbench_train_seqs=4096 --xfbench_train_batches=1 --xfbench_train_parallel=zero3 --xfbench_gpus=0,1 \
  --benchmark_filter='^TrainStep/fused/llama-3.1-8b/bf16/seq:4096/batch:1/accum:1/ckpt:off/adamw:fused/zero3/gpus:2/p2p:on' \
  --benchmark_out="$R/zero3_gpus2.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout $((200 - ($(date +%s) - t0))) $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json --xfbench_suite=all \
  --xfbench_train_models=llama-3.2-3b --xfbench_train_seqs=4096 --xfbench_train_batches=2 \
  --benchmark_filter='^TrainStep/fused/llama-3.2-3b/bf16/seq:4096/batch:2/accum:1/ckpt:off/adamw:fused/iter' \
  --benchmark_out="$R/train_3b_b2.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
