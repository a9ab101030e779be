#!/usr/bin/env bash
# Session 28 (issues 36, 32), one call on one H100, main with the head-dim-128 flash overlap and the
# RMSNorm/LayerNorm backward changes: the Llama and GPT-2 blocks' GPU tests (float64 references,
# every backend), the GPU test of XFBENCH_GEMM_PLANS, then LlamaBlock llama-3.1-8b s4096 b2 bf16
# fused and flash, forward and forward+backward, steady protocol, 3 repetitions.
# Carry: build/device/bin/{xfbench,test_llama_block,test_gpt2_block,test_matmul} build/device/lib
# Run: bash reports/results/h100/llama_block/s28/run.sh
set -uo pipefail
t0=$SECONDS
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
B=build/device/bin
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
L=$R/steps.log
step() { echo "$1 rc=$2 t=$((SECONDS - t0)) s" >>"$L"; }
timeout 60 "$B/test_matmul" --gtest_filter='*PlansFile*' >"$R/test_matmul.txt" 2>&1
step test_matmul_plans $?
timeout 80 "$B/test_llama_block" >"$R/test_llama_block.txt" 2>&1
step test_llama_block $?
timeout 60 "$B/test_gpt2_block" >"$R/test_gpt2_block.txt" 2>&1
step test_gpt2_block $?
timeout 100 "$B/xfbench" --benchmark_repetitions=3 --xfbench_llama_dtypes=bf16 \
  --xfbench_llama_backends=fused,flash \
  --benchmark_filter='^LlamaBlock/(fused|flash)/bf16/.*/seq:4096/batch:2/' \
  --benchmark_out_format=json --benchmark_out="$R/xf_llama8b.json" >"$R/xf.log" 2>&1
step llama_8b $?
