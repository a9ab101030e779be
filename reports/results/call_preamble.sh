#!/usr/bin/env bash
# Sourced by the device-call scripts under reports/results/ (source "$(dirname "$0")/../..."): the
# GPU machine's cuDNN and NCCL first on the loader path; $R (= $OUT/r) for the results, packed into
# $OUT/r.tgz on exit (a call brings back 8 files at most); the GPU's state before the call in
# $R/gpu.txt; `step NAME RC` logs a step's exit code and the seconds since the start to
# $R/steps.log. Scripts that ran before it (session 30 and earlier) keep their own copy of this.
t0=$SECONDS
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
step() { echo "$1 rc=$2 t=$((SECONDS - t0)) s" >>"$R/steps.log"; }
