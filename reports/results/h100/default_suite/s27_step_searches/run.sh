#!/usr/bin/env bash
# Session 27 (issue 32): why the gpt2-medium step is faster in the default suite than alone
# (reports/results/h100/default_suite/s26/: 170.7 vs 167.6 samples/s at a lower clock). In the
# suite it reuses the GEMM plans the bert-large s128 b64 step searched first (the same T=8192,
# H=1024, I=4096 products); alone it searches its own, from a cool GPU. Each way twice, and after
# a Matmul case that only heats the GPU (no shared product), GEMM choices logged.
# Carry: build/device/bin/xfbench build/device/lib
# Run: bash reports/results/h100/default_suite/s27_step_searches/run.sh
set -uo pipefail
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
X=build/device/bin/xfbench
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
G='TrainStep/fused/gpt2-medium/bf16/seq:1024/batch:8/accum:1/ckpt:off/adamw:fused/iterations:1/manual_time'
B='TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/iterations:1/manual_time'
M='Matmul/bf16/NN/m:8192/n:8192/k:8192/iterations:1/manual_time'
for k in 1 2; do
  XFBENCH_GEMM_LOG=1 timeout 60 "$X" --benchmark_filter="^${G}\$" --benchmark_out_format=json \
    --benchmark_out="$R/alone_$k.json" >"$R/alone_$k.txt" 2>&1
  XFBENCH_GEMM_LOG=1 timeout 90 "$X" --benchmark_filter="^(${B}|${G})\$" \
    --benchmark_out_format=json --benchmark_out="$R/after_bert_$k.json" >"$R/after_bert_$k.txt" 2>&1
  XFBENCH_GEMM_LOG=1 timeout 90 "$X" --benchmark_filter="^(${M}|${G})\$" \
    --benchmark_out_format=json --benchmark_out="$R/after_heat_$k.json" >"$R/after_heat_$k.txt" 2>&1
done
