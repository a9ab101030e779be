#!/usr/bin/env bash
# Session 24: xfbench TrainStep gpt2-xl seq 1024 batch 8 (bf16 and fp8 recipe:delayed) beside
# the torchao peer (torchao 0.18.0 float8 tensorwise = recipe:current, under torch.compile; and
# torch.compile bf16 when time is left), one H200, one call. Follows
# reports/results/h200/train_step_fp8/s20/run.sh (xfbench) and s21_torchao/run.sh (peer).
# Carry: reports/results/h200/train_step_fp8/s24_torchao_gpt2xl build/device/bin/xfbench build/device/lib .whl   Run: bash reports/results/h200/train_step_fp8/s24_torchao_gpt2xl/run.sh
# Everything goes to $OUT/r. Budget: the script ends by ~470 s (the call's 600 s less start-up).
set -uo pipefail
t0=$SECONDS
END=480 # seconds after the start by which the last part must be over
el() { echo $((SECONDS - t0)); }
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:$PWD/build/device/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT  # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt" 2>&1

# torchao 0.18.0 from the carried wheel (a failure is logged; xfbench runs regardless and the peer's
# fp8 case then becomes an error entry saying torchao is missing)
timeout 60 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/torchao-0.18.0-*.whl >"$R/pip.txt" 2>&1
rc=$?
echo "pip rc=$rc t=$(el) s" >>"$R/pip.txt"
[ "$rc" -eq 0 ] && export PYTHONPATH=/tmp/site

# xfbench first: bf16 (~35 s) then fp8 delayed (~135 s, its accuracy check included), 3 repetitions;
# s20 ran exactly these in 167 s. XFBENCH_LOSSES=1 prints the check's loss curves.
X=(--benchmark_repetitions=3 --benchmark_out_format=json '--xfbench_train_precisions=bf16,fp8'
  --xfbench_train_fp8_recipe=delayed --xfbench_train_models=gpt2-xl
  --xfbench_train_seqs=1024 --xfbench_train_batches=8)
F=(--benchmark_filter='^TrainStep/fused/.*/ckpt:off/adamw:fused/iter')
XFBENCH_LOSSES=1 timeout 300 "$B/xfbench" "${X[@]}" "${F[@]}" \
  --benchmark_out="$R/xfbench.json" >"$R/xfbench.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/xfbench.txt"

# The peer: fp8 (torchao-compile; s21: compiled in 151 s, ~170-190 s in all) with at least 170 s,
# more when xfbench ended early; then bf16 (torch-compile; ~75 s compile) only if >= 110 s remain.
P=(python3 reports/peer_torch.py --repetitions 3 --families TrainStep --train-models gpt2-xl
  --filter 'compile.*/seq:1024/batch:8/.*ckpt:off')
left=$((END - $(el)))
timeout $((left > 200 ? left : 200)) "${P[@]}" --train-precisions fp8 \
  --out "$R/torch_fp8.json" >"$R/peer_fp8.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/peer_fp8.txt"
left=$((END - $(el)))
if [ "$left" -ge 110 ]; then
  timeout "$left" "${P[@]}" --train-precisions bf16 \
    --out "$R/torch_bf16.json" >"$R/peer_bf16.txt" 2>&1
  echo "rc=$? t=$(el) s" >>"$R/peer_bf16.txt"
else
  echo "skipped: $left s left at t=$(el) s" >"$R/peer_bf16.txt"
fi
el >"$R/done.txt"
