#!/usr/bin/env bash
# shellcheck disable=SC2129
# Issue 34: the PyTorch peer of xfbench's fp8 cases, on the same names: torchao's float8 training
# (recipe tensorwise: dynamic per-tensor scales from each cast's amax = xfbench's recipe:current)
# of HF's Llama under torch.compile (backend torchao-compile). LlamaBlock llama-3.1-8b s4096 b2 fp8
# forward and forward+backward; TrainStep llama-3.2-1b s4096 b4 fp8. torchao 0.18.0 travels as a
# wheel: copy torchao-0.18.0-*.whl into .whl/ (ignored) and carry .whl; JSON and logs to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export PYTHONUNBUFFERED=1
L="$OUT/peer.log"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$OUT/gpu.txt"
python3 -c 'import torch, torchao, transformers; print("torch", torch.__version__, "torchao", torchao.__version__, "transformers", transformers.__version__)' >"$L" 2>&1
P=(python3 reports/peer_torch.py --repetitions 3)
LLAMA=(--families LlamaBlock --llama-models llama-3.1-8b --llama-shapes 4096x2 --llama-dtypes fp8)
TRAIN=(--families TrainStep --train-models llama-3.2-1b --train-precisions fp8)
"${P[@]}" --list "${LLAMA[@]}" >>"$L" 2>&1
"${P[@]}" --list "${TRAIN[@]}" >>"$L" 2>&1
s=$(date +%s)
timeout 270 "${P[@]}" "${LLAMA[@]}" --out "$OUT/torch_llama_fp8.json" >>"$L" 2>&1
echo "rc=$? wall $(( $(date +%s) - s )) s" >>"$L"
s=$(date +%s)
timeout 270 "${P[@]}" "${TRAIN[@]}" --out "$OUT/torch_train_fp8.json" >>"$L" 2>&1
echo "rc=$? wall $(( $(date +%s) - s )) s" >>"$L"
