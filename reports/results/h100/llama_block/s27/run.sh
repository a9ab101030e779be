#!/usr/bin/env bash
# Session 27 (issue 36; written in session 26), one call on one H100: LlamaBlock bf16 beside HF LlamaDecoderLayer (sdpa,
# torch.compile of the sdpa layer), steady protocol, 3 repetitions each: llama-3.1-8b s4096 b2
# (fused, flash) and llama-3.2-1b s4096 b4 (fused, flash): issue 36's targets on the issue's GPU
# (the README's rows are an H200's).
# Carry: build/device/bin/xfbench build/device/lib
# Run: bash reports/results/h100/llama_block/s27/run.sh
# shellcheck disable=SC2054,SC2129  # flag values hold commas; one redirect a line: each step as it ran
set -uo pipefail
t0=$SECONDS
END=${END:-565}
el() { echo $((SECONDS - t0)); }
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
X=build/device/bin/xfbench
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
J=(--benchmark_out_format=json)

L=(--benchmark_repetitions=3 --xfbench_llama_dtypes=bf16 --xfbench_llama_backends=fused,flash)
timeout 150 "$X" "${L[@]}" --benchmark_filter='^LlamaBlock/(fused|flash)/bf16/.*/seq:4096/batch:2/' \
  "${J[@]}" --benchmark_out="$R/xf_llama8b.json" >>"$R/xf.log" 2>&1
echo "llama 8b rc=$? t=$(el) s" >>"$R/xf.log"
timeout 100 "$X" "${L[@]}" --xfbench_llama_model=llama-3.2-1b \
  --benchmark_filter='^LlamaBlock/(fused|flash)/bf16/.*/seq:4096/batch:4/' \
  "${J[@]}" --benchmark_out="$R/xf_llama1b.json" >>"$R/xf.log" 2>&1
echo "llama 1b rc=$? t=$(el) s" >>"$R/xf.log"

left=$((END - $(el)))
timeout $((left > 150 ? left : 150)) python3 reports/peer_torch.py --families LlamaBlock \
  --llama-models llama-3.1-8b,llama-3.2-1b --llama-dtypes bf16 --filter 'torch-(sdpa|compile)' \
  --repetitions 3 --out "$R/torch_llama.json" >"$R/torch.log" 2>&1
echo "peer rc=$? t=$(el) s" >>"$R/torch.log"
