#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 15, call B (issue 38): the Llama TrainStep cases (one GPU, bf16, seq 4096) beside the
# PyTorch peer on the same names: HF LlamaForCausalLM with sdpa, and under torch.compile.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$OUT/gpu.txt"
s=$(date +%s)
timeout 190 $B/xfbench --benchmark_filter='^TrainStep/fused/llama' --benchmark_repetitions=2 \
  --benchmark_out="$OUT/train_llama.json" --benchmark_out_format=json >"$OUT/xf.log" 2>&1
echo "rc=$? wall $(( $(date +%s) - s )) s" >>"$OUT/xf.log"
M=llama-3.2-1b,llama-3.2-3b
P=(python3 reports/peer_torch.py --families TrainStep --train-models "$M" --repetitions 2)
s=$(date +%s)
timeout 150 "${P[@]}" --filter 'torch-sdpa' --out "$OUT/torch_train_llama_sdpa.json" >"$OUT/peer.log" 2>&1
echo "rc=$? wall $(( $(date +%s) - s )) s" >>"$OUT/peer.log"
s=$(date +%s)
timeout 240 "${P[@]}" --filter 'torch-compile' --out "$OUT/torch_train_llama_compile.json" >>"$OUT/peer.log" 2>&1
echo "rc=$? wall $(( $(date +%s) - s )) s" >>"$OUT/peer.log"
