#!/usr/bin/env bash
# shellcheck disable=SC2129  # one redirect a line: each step as it ran
# Session 14, device call B: LlamaBlock beside HF LlamaDecoderLayer (eager, sdpa, torch.compile),
# same machine, same steady protocol, 3 repetitions each (medians).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$OUT/gpu.txt"
X=("$B/xfbench" --benchmark_repetitions=3)
timeout 150 "${X[@]}" --benchmark_filter='^LlamaBlock/(fused|unfused)/bf16/.*/seq:4096/batch:2/' \
  --benchmark_out="$OUT/xf_llama8b.json" --benchmark_out_format=json >"$OUT/xf.log" 2>&1
timeout 90 "${X[@]}" --xfbench_llama_model=llama-3.2-1b --benchmark_filter='^LlamaBlock/(fused|flash)/bf16/.*/seq:4096/batch:4/' \
  --benchmark_out="$OUT/xf_llama1b.json" --benchmark_out_format=json >>"$OUT/xf.log" 2>&1
timeout 330 python3 reports/peer_torch.py --families LlamaBlock --llama-models llama-3.1-8b,llama-3.2-1b \
  --llama-dtypes bf16 --repetitions 3 --out "$OUT/torch_llama.json" >"$OUT/torch.log" 2>&1
echo "peer rc=$?" >>"$OUT/torch.log"
