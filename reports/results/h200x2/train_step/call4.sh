#!/bin/sh
# One device call of README.cmd (2x H200, 2026-11-27), as it ran: sh <this> with $OUT set.
S=$(date +%s); B=build/c10; L=/opt/torch/.venv/lib/python3.12/site-packages/nvidia; export LD_LIBRARY_PATH="$L/cudnn/lib:$L/nccl/lib:$LD_LIBRARY_PATH" NCCL_NVLS_ENABLE=0
t() { echo "== $1 rc=$2 at $(( $(date +%s) - S ))s"; }
M='(bert-large/bf16/seq:128/batch:64|gpt2-large/bf16/seq:1024/batch:4)/accum:1/ckpt:off/adamw:fused'
mkdir -p /tmp/o
NCCL_P2P_DISABLE=1 timeout 210 "$B"/bin/xfbench --xfbench_gpus=0,1 --xfbench_validate=false --benchmark_filter="^TrainStep/fused/$M/(dp|zero2|tp:2)/gpus:2/p2p:off/iterations" --benchmark_out=/tmp/o/train_off.json --benchmark_out_format=json > /tmp/o/train_off.txt 2>&1; t train_off $?
NCCL_P2P_DISABLE=1 timeout 140 torchrun --nproc-per-node=2 reports/peer_torch.py --families TrainStep --gpus 2 --repetitions 1 --out /tmp/o/peer_off.json > /tmp/o/peer_off.txt 2>&1; t peer_off $?
tar czf "$OUT"/off.tgz -C /tmp/o .
grep -h "manual_time " /tmp/o/train_off.txt | cut -c1-200; grep TrainStep /tmp/o/peer_off.txt | cut -c1-200
