#!/usr/bin/env bash
# shellcheck disable=SC2129
# Issue 34: xfbench's fp8 cases beside their PyTorch peer in one call, on the same names: torchao's
# float8 training (recipe tensorwise: dynamic per-tensor scales from each cast's amax = xfbench's
# recipe:current) of HF's Llama under torch.compile (backend torchao-compile), and bf16 on both
# sides for the ratio. Part "layer": LlamaBlock llama-3.1-8b s4096 b2, forward and forward+backward;
# part "train": TrainStep llama-3.2-1b s4096 b4 (xfbench validates fp8 against bf16: ~105 s).
# torchao 0.18.0 travels as a wheel: copy torchao-0.18.0-*.whl into .whl/ (ignored), carry .whl
# and build/device; JSON and logs to $OUT.   Usage: bash run.sh layer|train
set -uo pipefail
part=${1:-layer}
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export PYTHONUNBUFFERED=1
L="$OUT/$part.log"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$OUT/gpu.txt"
python3 -c 'import torch, torchao, transformers; print("torch", torch.__version__, "torchao", torchao.__version__, "transformers", transformers.__version__)' >"$L" 2>&1
P=(python3 reports/peer_torch.py --repetitions 3)
X=("$B/xfbench" --benchmark_repetitions=3 --benchmark_out_format=json)
if [ "$part" = layer ]; then
  timeout 150 "${X[@]}" --benchmark_filter='^LlamaBlock/fused/(bf16|fp8/recipe:current)/fwd(bwd)?/seq:4096/batch:2/' \
    --xfbench_llama_dtypes=bf16,fp8 --xfbench_llama_fp8_recipe=current --benchmark_out="$OUT/xf_llama.json" >>"$L" 2>&1
  echo "xfbench rc=$?" >>"$L"
  timeout 400 "${P[@]}" --families LlamaBlock --llama-models llama-3.1-8b --llama-shapes 4096x2 \
    --llama-dtypes bf16,fp8 --filter 'torch-compile|torchao-compile' --out "$OUT/torch_llama.json" >>"$L" 2>&1
  echo "peer rc=$?" >>"$L"
else
  timeout 250 "${X[@]}" --benchmark_filter='^TrainStep/' --xfbench_train_models=llama-3.2-1b \
    --xfbench_train_batches=4 --xfbench_train_precisions=bf16,fp8 --xfbench_train_fp8_recipe=current \
    --benchmark_out="$OUT/xf_train.json" >>"$L" 2>&1
  echo "xfbench rc=$?" >>"$L"
  timeout 300 "${P[@]}" --families TrainStep --train-models llama-3.2-1b --train-precisions bf16,fp8 \
    --filter 'compile.*ckpt:off' --out "$OUT/torch_train.json" >>"$L" 2>&1
  echo "peer rc=$?" >>"$L"
fi
