#!/usr/bin/env bash
# Session 25, one call:
#  1. where a training step's time goes (XFBENCH_STEP_PARTS=1, new): its GPU test, then gpt2-xl
#     s1024 b8 bf16 and fp8 delayed (issue 34: what FP8 does not speed up), not validated;
#  2. issue 33: karpathy/llm.c's train_gpt2cu (f1e2ace, built on the build machine by
#     `python3 reports/peer_llmc.py build --src .gl/llm.c`, .gl/ git-ignored and carried: bf16, cuDNN
#     attention, -ge 2, -r 0) beside xfbench TrainStep bf16 with dropout 0 (llm.c has none) at
#     gpt2 b16, gpt2-medium b8 and b16, seq 1024: the runner's first GPU run, and the 1.15x target;
#  3. issue 34 (time left): Matmul's fp8 sweep near its best shapes (NT, k 8192), with and without
#     fast accumulation (accum:fast in the name): the GEMM figure (>= 1,400 TFLOPS on an H100).
# Carry: build/device/bin/xfbench build/device/bin/test_train_step build/device/lib
#        .gl/llm.c/train_gpt2cu
# Run: bash reports/results/h100/train_step_llmc/run.sh
#   (REPS=1 SWEEP=0: one repetition a side, no sweep: ~3 minutes)
# shellcheck disable=SC2054,SC2129  # flag values hold commas; one redirect a line: each step as it ran
set -uo pipefail
t0=$SECONDS
el() { echo $((SECONDS - t0)); }
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
X=build/device/bin/xfbench
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
J=(--benchmark_out_format=json)
REPS=${REPS:-3}

timeout 40 build/device/bin/test_train_step --gtest_filter='TrainStepGpu.StepPartsAreMarkedInOrder' \
  >"$R/test_step_parts.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/test_step_parts.txt"
XFBENCH_STEP_PARTS=1 timeout 80 "$X" --xfbench_validate=false '--xfbench_train_precisions=bf16,fp8' \
  --xfbench_train_fp8_recipe=delayed --xfbench_train_models=gpt2-xl --xfbench_train_seqs=1024 \
  --xfbench_train_batches=8 --benchmark_filter='^TrainStep/fused/.*/ckpt:off/adamw:fused/iter' \
  "${J[@]}" --benchmark_out="$R/gpt2xl_parts.json" >"$R/gpt2xl_parts.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/gpt2xl_parts.txt"

# xfbench first (its step's GEMM searches and validation included), 3 repetitions
timeout 80 "$X" --benchmark_repetitions="$REPS" --xfbench_train_models=gpt2,gpt2-medium \
  --xfbench_train_seqs=1024 --xfbench_train_batches=8,16 --xfbench_train_precisions=bf16 \
  --xfbench_train_dropout_pct=0 \
  --benchmark_filter='^TrainStep/fused/(gpt2/.*/batch:16|gpt2-medium/.*/batch:(8|16))/.*ckpt:off/adamw:fused' \
  "${J[@]}" --benchmark_out="$R/xfbench_train.json" >"$R/xfbench_train.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/xfbench_train.txt"

L=(python3 reports/peer_llmc.py run --bin .gl/llm.c/train_gpt2cu --commit f1e2ace --repetitions "$REPS"
  --timeout 120)
timeout 45 "${L[@]}" --models gpt2 --batches 16 --out "$R/llmc_gpt2.json" >"$R/llmc.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/llmc.txt"
timeout 70 "${L[@]}" --models gpt2-medium --batches 8,16 --out "$R/llmc_gpt2_medium.json" \
  >>"$R/llmc.txt" 2>&1
echo "rc=$? t=$(el) s" >>"$R/llmc.txt"

S=(--xfbench_matmul_sweep=fp8 --xfbench_matmul_sweep_m=4096,6144,8192
  --xfbench_matmul_sweep_n=12288,16384 --xfbench_matmul_sweep_k=8192
  --benchmark_filter='^Matmul/sweep/')
for fast in false true; do
  if [ "${SWEEP:-1}" = 0 ] || [ "$(el)" -gt 300 ]; then echo "matmul fast_accum=$fast skipped: time" >>"$R/xf.log"; continue; fi
  timeout 60 "$X" "${S[@]}" --xfbench_matmul_fp8_fast_accum=$fast "${J[@]}" \
    --benchmark_out="$R/matmul_fp8_sweep_fast_$fast.json" >>"$R/xf.log" 2>&1
  echo "matmul fast_accum=$fast rc=$? t=$(el) s" >>"$R/xf.log"
done
