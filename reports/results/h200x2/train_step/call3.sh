#!/bin/sh
# One device call of README.cmd (2x H200, 2026-11-27), as it ran: sh <this> with $OUT set.
S=$(date +%s); B=build/c10; L=/opt/torch/.venv/lib/python3.12/site-packages/nvidia; export LD_LIBRARY_PATH="$L/cudnn/lib:$L/nccl/lib:$LD_LIBRARY_PATH" NCCL_NVLS_ENABLE=0
t() { echo "== $1 rc=$2 at $(( $(date +%s) - S ))s"; }
M='(bert-large/bf16/seq:128/batch:64|gpt2-large/bf16/seq:1024/batch:4)/accum:1/ckpt:off/adamw:fused'
NCCL_P2P_DISABLE=1 timeout 200 "$B"/bin/xfbench --xfbench_gpus=0,1 --benchmark_filter="^TrainStep/fused/$M/(dp|zero2|tp:2)/gpus:2/p2p:off/iterations" --benchmark_out="$OUT"/train_off.json --benchmark_out_format=json > "$OUT"/train_off.txt 2>&1; t train_off $?
NCCL_P2P_DISABLE=1 timeout 130 torchrun --nproc-per-node=2 reports/peer_torch.py --families TrainStep --gpus 2 --repetitions 1 --out "$OUT"/peer_off.json > "$OUT"/peer_off.txt 2>&1; t peer_off $?
BM='bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused'
timeout 40 "$B"/bin/xfbench --xfbench_gpus=0,1 --xfbench_validate=false --benchmark_out_format=json --benchmark_filter="^TrainStep/fused/$BM(/dp/gpus:2/p2p:on)?/iter" --benchmark_out="$OUT"/dpx_default.json > "$OUT"/dpx.txt 2>&1; t dpx_default $?
timeout 30 "$B"/bin/xfbench --xfbench_gpus=0,1 --xfbench_validate=false --benchmark_out_format=json --benchmark_filter="^TrainStep/fused/$BM/dp/gpus:2/p2p:on/iter" --xfbench_train_bucket_mb=100 --benchmark_out="$OUT"/dpx_b100.json >> "$OUT"/dpx.txt 2>&1; t dpx_b100 $?
NCCL_MAX_NCHANNELS=8 timeout 30 "$B"/bin/xfbench --xfbench_gpus=0,1 --xfbench_validate=false --benchmark_out_format=json --benchmark_filter="^TrainStep/fused/$BM/dp/gpus:2/p2p:on/iter" --benchmark_out="$OUT"/dpx_ch8.json >> "$OUT"/dpx.txt 2>&1; t dpx_ch8 $?
NCCL_MAX_NCHANNELS=4 timeout 30 "$B"/bin/xfbench --xfbench_gpus=0,1 --xfbench_validate=false --benchmark_out_format=json --benchmark_filter="^TrainStep/fused/$BM/dp/gpus:2/p2p:on/iter" --benchmark_out="$OUT"/dpx_ch4.json >> "$OUT"/dpx.txt 2>&1; t dpx_ch4 $?
timeout 70 "$B"/bin/xfbench --benchmark_filter='Burn/(fp64|bf16)' --xfbench_burn_dtypes=fp64,bf16 --xfbench_burn_seconds=20 --xfbench_gpus=0,1 --benchmark_out="$OUT"/burn2.json --benchmark_out_format=json > "$OUT"/burn2.txt 2>&1; t burn2 $?
XFBENCH_BURN_TEST_FAULTS=1:2:7:14 timeout 30 "$B"/bin/xfbench --benchmark_filter='Burn/fp16' --xfbench_burn_dtypes=fp16 --xfbench_burn_seconds=4 --xfbench_burn_mem_pct=20 --xfbench_gpus=0,1 --benchmark_out="$OUT"/burn2_fault.json --benchmark_out_format=json > "$OUT"/burn2_fault.txt 2>&1; t burn2_fault $?
grep -h "_median\|ERROR" "$OUT"/train_off.txt | cut -c1-160; grep -v -i warn "$OUT"/peer_off.txt | grep TrainStep | cut -c1-200; grep -h "manual_time " "$OUT"/dpx.txt | cut -c1-200; grep -v "^\[" "$OUT"/burn2.txt | tail -12 | cut -c1-250; tail -5 "$OUT"/burn2_fault.txt | cut -c1-250
