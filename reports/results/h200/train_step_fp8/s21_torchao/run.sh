#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 21, call D (one H200; prepared as s20b2 in session 20), issue 34: xfbench fp8 recipe:current beside torchao float8 (tensorwise, HF
# model under torch.compile) at llama-3.2-3b s4096 b1 and gpt2-xl s1024 b2 (target >= 1.2x).
# Carry .whl (torchao 0.18.0) and build/device.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
python3 -c 'import torch, torchao, transformers; print("torch", torch.__version__, "torchao", torchao.__version__, "transformers", transformers.__version__)' >"$R/versions.txt" 2>&1
X=(--benchmark_repetitions=3 --benchmark_out_format=json --xfbench_train_precisions=fp8 --xfbench_train_fp8_recipe=current)
F=(--benchmark_filter='^TrainStep/fused/.*/ckpt:off/adamw:fused/iter')
timeout 200 $B/xfbench "${X[@]}" "${F[@]}" --xfbench_train_models=llama-3.2-3b \
  --xfbench_train_seqs=4096 --xfbench_train_batches=1 --benchmark_out="$R/xf_llama.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout 100 $B/xfbench "${X[@]}" "${F[@]}" --xfbench_train_models=gpt2-xl \
  --xfbench_train_seqs=1024 --xfbench_train_batches=2 --benchmark_out="$R/xf_gpt2.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout $((575 - ($(date +%s) - t0))) python3 reports/peer_torch.py --repetitions 3 --families TrainStep \
  --train-models llama-3.2-3b,gpt2-xl --train-precisions fp8 --out "$R/torch.json" >"$R/peer.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/peer.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
