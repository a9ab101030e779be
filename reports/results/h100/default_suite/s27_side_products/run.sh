#!/usr/bin/env bash
# Session 27 (issue 32): the weight-gradient products run on a side stream, beside the data-gradient
# chain, but their GEMM search times them alone. In s27_step_searches/ one choice separated the fast
# gpt2-medium step runs from the slow ones (TN m=1024 n=4096 k=8192: 128x128 in the three slow
# runs, cublasGemmEx or 128x256 in the fast). Each case alone in its own process, alternating:
#   A: as main (every product searched)
#   B: XFBENCH_EXP_SIDE_INCUMBENT=1, an experiment build: side-stream products keep the incumbent
#      (cublasGemmEx) without a search
#   C: --xfbench_train_search=false (no search at all; the gpt2-medium step only)
# Carry: build/device/bin/xfbench build/device/lib
# Run: bash reports/results/h100/default_suite/s27_side_products/run.sh
set -uo pipefail
t0=$SECONDS
END=${END:-250}
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
export XFBENCH_GEMM_LOG=1
X=build/device/bin/xfbench
R=$OUT/r
mkdir -p "$R/runs"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
S='accum:1/ckpt:off/adamw:fused/iterations:1/manual_time'
declare -A C=(
  [gpt2m]="TrainStep/fused/gpt2-medium/bf16/seq:1024/batch:8/$S"
  [bert512]="TrainStep/fused/bert-large/bf16/seq:512/batch:16/$S"
  [bert128]="TrainStep/fused/bert-large/bf16/seq:128/batch:64/$S"
  [t5enc]="T5Encoder/fused/fp16/fwdbwd/seq:512/batch:64/iterations:1/manual_time"
)
run() { # tag case extra...
  local tag=$1 c=$2
  shift 2
  if ((SECONDS - t0 > END)); then
    echo "$tag $c skipped: time" >>"$R/steps.log"
    return
  fi
  timeout 60 "$X" --benchmark_filter="^${C[$c]}\$" --benchmark_out_format=json \
    --benchmark_out="$R/runs/${c}_$tag.json" "$@" >"$R/runs/${c}_$tag.txt" 2>&1
  echo "$tag $c rc=$? t=$((SECONDS - t0)) s" >>"$R/steps.log"
}
for k in 1 2; do
  for c in gpt2m bert512 bert128; do
    run "A$k" $c
    XFBENCH_EXP_SIDE_INCUMBENT=1 run "B$k" $c
    [ $c = gpt2m ] && run "C$k" $c --xfbench_train_search=false
  done
done
run A1 t5enc
XFBENCH_EXP_SIDE_INCUMBENT=1 run B1 t5enc
