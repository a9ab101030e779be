#!/bin/sh
# TrainStep (issue #18) on one H100, xfbench and the PyTorch peer in one device call; JSON into $1.
# Run from the repository root with a carried device build in $2 (bin/, lib/).
set -u
out=$1 bin=$2/bin
head='(bert-large/bf16/seq:128/batch:64|bert-large/bf16/seq:512/batch:16|gpt2-medium/bf16/seq:1024/batch:8)/accum:1/ckpt:off/adamw:fused'
knobs='bert-large/(bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:unfused|bf16/seq:128/batch:64/accum:4/ckpt:off/adamw:fused|bf16/seq:128/batch:64/accum:1/ckpt:on/adamw:fused|(fp16|tf32)/seq:128/batch:64/accum:1/ckpt:off/adamw:fused)'
# The seeds' three headline cases, three repetitions each side.
timeout 150 "$bin/xfbench" --benchmark_filter="^TrainStep/fused/$head" --benchmark_repetitions=3 \
  --benchmark_out="$out/xf_headline.json" --benchmark_out_format=json
timeout 150 python3 reports/peer_torch.py --families TrainStep --filter "^TrainStep/torch-sdpa/$head" \
  --repetitions 3 --out "$out/torch_headline.json"
# Each knob alone around BERT-large s128 b64 bf16 (and the attention backends), once each side.
timeout 90 "$bin/xfbench" --benchmark_filter="^TrainStep/(fused/$knobs|(unfused|flash)/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused)" \
  --benchmark_out="$out/xf_knobs.json" --benchmark_out_format=json
timeout 90 python3 reports/peer_torch.py --families TrainStep --filter "^TrainStep/torch-sdpa/$knobs" \
  --repetitions 1 --out "$out/torch_knobs.json"
# Checkpointing off and on at the largest BERT-large s128 batch that fits each way (a case that
# does not fit is skipped with the plan's need); validated at smaller batches above; steps of
# up to 2 s, so a short burst (hot mode) rather than the steady protocol's 20 windows.
timeout 100 "$bin/xfbench" --benchmark_filter='^TrainStep/fused/bert-large/bf16/seq:128/' \
  --xfbench_train_models=bert-large --xfbench_train_seqs=128 --xfbench_train_batches=512,1024,2048 \
  --xfbench_train_ckpt=off,on --xfbench_validate=false --xfbench_mode=hot --xfbench_iterations=3 \
  --benchmark_out="$out/xf_ckpt.json" --benchmark_out_format=json
