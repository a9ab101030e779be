#!/bin/sh
# TrainStep's precision knob (issue #18: bf16 vs fp16 vs tf32) around BERT-large s128 b64 fused
# AdamW on one H100, xfbench and the PyTorch peer in one device call; JSON into $1. Run from the
# repository root with a carried device build in $2 (bin/, lib/).
# tf32 runs on the unfused attention (cuDNN SDPA and xfbench's flash take fp16/bf16 only: the
# fused tf32 case is listed and skips, saying so), so bf16 is measured on both backends.
set -u
out=$1 bin=$2/bin
tail='bert-large/(bf16|fp16|tf32)/seq:128/batch:64/accum:1/ckpt:off/adamw:fused'
timeout 240 "$bin/xfbench" --benchmark_filter="^TrainStep/(fused/$tail|unfused/bert-large/(bf16|tf32)/)" \
  --xfbench_train_models=bert-large --xfbench_train_seqs=128 --xfbench_train_batches=64 \
  --xfbench_train_precisions=bf16,fp16,tf32 --xfbench_train_backends=fused,unfused \
  --benchmark_out="$out/xf_tf32.json" --benchmark_out_format=json
# The peer's tf32: HF's fp32 model with TF32 products (allow_tf32), AdamW fused=True; its sdpa
# attention (torch's own fp32 path) and its eager attention (the unfused algorithm).
timeout 150 python3 reports/peer_torch.py --families TrainStep \
  --filter "^TrainStep/torch-(sdpa|eager)/bert-large/tf32/seq:128/batch:64/accum:1/ckpt:off/adamw:fused" \
  --repetitions 1 --out "$out/torch_tf32.json"
