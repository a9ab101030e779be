#!/usr/bin/env bash
# Session 25 (issue 34): xfbench TrainStep gpt2-xl seq 1024 batch 8 (bf16 and fp8 recipe:delayed,
# validated: the fp8 loss after 30 and 200 steps beside bf16's) and the torchao peer (torchao 0.18.0
# float8 tensorwise = recipe:current, under torch.compile, with the loss named since 5054096: no
# graph break) side by side in one call on one H100. Session 24's H200 calls are
# reports/results/h200/train_step_fp8/s24_torchao_gpt2xl/ and s24b_torchao_gpt2xl/.
# Carry: build/device/bin/xfbench build/device/lib .whl
# Run: bash reports/results/h100/train_step_fp8/s27_torchao_gpt2xl/run.sh
set -uo pipefail
t0=$SECONDS
END=530 # seconds after the start by which the last part must be over
el() { echo $((SECONDS - t0)); }
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:$PWD/build/device/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt" 2>&1

timeout 60 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/torchao-0.18.0-*.whl >"$R/pip.txt" 2>&1
rc=$?
echo "pip rc=$rc t=$(el) s" >>"$R/pip.txt"
[ "$rc" -eq 0 ] && export PYTHONPATH=/tmp/site

# xfbench: bf16 then fp8 delayed (its accuracy check: 30 and 200 steps), 3 repetitions.
X=(--benchmark_repetitions=3 --benchmark_out_format=json '--xfbench_train_precisions=bf16,fp8'
  --xfbench_train_fp8_recipe=delayed --xfbench_train_models=gpt2-xl
  --xfbench_train_seqs=1024 --xfbench_train_batches=8)
F=(--benchmark_filter='^TrainStep/fused/.*/ckpt:off/adamw:fused/iter')
XFBENCH_LOSSES=1 timeout 260 "$B/xfbench" "${X[@]}" "${F[@]}" \
  --benchmark_out="$R/xfbench.json" >"$R/xfbench.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/xfbench.txt"

# Where the step's time goes: one gpt2-xl block (fused, the step's) fwd+bwd at the step's shape,
# bf16 and fp8 delayed (x 48 layers: the blocks' share; the rest is embeddings, LM head, AdamW).
G=(--xfbench_gpt2_model=gpt2-xl --xfbench_gpt2_seqs=1024 --xfbench_gpt2_batches=8
  '--xfbench_gpt2_dtypes=bf16,fp8' --xfbench_gpt2_fp8_recipe=delayed --xfbench_gpt2_backends=fused
  --benchmark_filter='^GPT2Block/fused/.*/fwdbwd/')
timeout 60 "$B/xfbench" "${G[@]}" --benchmark_out_format=json --benchmark_out="$R/block.json" \
  >"$R/block.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/block.txt"

# The peer's fp8 (torchao under torch.compile), graph breaks and recompiles logged.
P=(python3 reports/peer_torch.py --repetitions 3 --families TrainStep --train-models gpt2-xl
  --filter 'compile.*/seq:1024/batch:8/.*ckpt:off')
left=$((END - $(el)))
TORCH_LOGS=graph_breaks,recompiles timeout $((left > 240 ? left : 240)) "${P[@]}" \
  --train-precisions fp8 --out "$R/torch_fp8.json" >"$R/peer_fp8.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/peer_fp8.txt"
el >"$R/done.txt"
