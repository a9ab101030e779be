#!/usr/bin/env bash
# Session 24, third call: the torchao peer of gpt2-xl s1024 b8 alone (the first call,
# ../s24_torchao_gpt2xl/, gave it 321 s and it printed nothing: compiled past that?), with its
# main thread's stack every minute (stacks.py) and dynamo's graph breaks and recompiles logged.
# (The second call, first/, also ran xfbench's bf16 and fp8 delayed cases of that shape, not
# validated again; its peer crashed at 60 s in the stack dumper, faulthandler, since replaced.)
# Carry: .whl
# Run: bash reports/results/h200/train_step_fp8/s24b_torchao_gpt2xl/run.sh
set -uo pipefail
t0=$SECONDS
el() { echo $((SECONDS - t0)); }
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:$PWD/build/device/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
R=$OUT/r
D=reports/results/h200/train_step_fp8/s24b_torchao_gpt2xl
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT  # a call brings back 8 files at most
timeout 60 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/torchao-0.18.0-*.whl >"$R/pip.txt" 2>&1
rc=$?
echo "pip rc=$rc t=$(el) s" >>"$R/pip.txt"
[ "$rc" -eq 0 ] && export PYTHONPATH=/tmp/site
TORCH_LOGS=graph_breaks,recompiles timeout 550 python3 "$D/stacks.py" "$R/stacks.txt" \
  reports/peer_torch.py --repetitions 3 --families TrainStep --train-models gpt2-xl \
  --filter 'compile.*/seq:1024/batch:8/.*ckpt:off' --train-precisions fp8 \
  --out "$R/torch_fp8.json" >"$R/peer_fp8.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/peer_fp8.txt"
