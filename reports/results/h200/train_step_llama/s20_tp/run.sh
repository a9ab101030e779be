#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 20, call D (one H200): tensor parallelism with grouped-query attention (issue 38):
# test_tensor_parallel (two ranks on one GPU against the whole block / one GPU's model, the tiny
# Llama included); then issue 34: gpt2-xl s1024 b8 bf16 and fp8 delayed (a larger batch than b2).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
timeout 150 $B/test_tensor_parallel >"$R/tests.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/tests.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED|       OK) |^rc=|Failure|worst|rank [01]" "$R/tests.log" >"$R/tests_summary.txt"
XFBENCH_LOSSES=1 timeout $((570 - ($(date +%s) - t0))) $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json \
  --xfbench_train_precisions=bf16,fp8 --xfbench_train_models=gpt2-xl --xfbench_train_seqs=1024 --xfbench_train_batches=8 \
  --benchmark_filter='^TrainStep/fused/.*/ckpt:off/adamw:fused/iter' --benchmark_out="$R/train_gpt2_b8.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
