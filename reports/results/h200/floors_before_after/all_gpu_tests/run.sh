#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 19, call 5 (reports/results/h200/floors_before_after/all_gpu_tests; issue 35's invariant "every test passes on the GPU"): every test binary of
# this tree that has GPU tests, one after another, each under a cap, the whole under 540 s; the
# CPU-only binaries ran in CI. A summary line per binary, the failures' logs kept.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R/logs"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
S="$R/summary.txt"
for entry in test_sdk:30 test_gpu_timer:40 test_steady_state:20 test_steady_ranks:30 \
  test_vector:40 test_matmul:90 test_transfer:40 test_nccl_wait:30 test_rope:20 \
  test_rank_threads:10 test_t5_kernels:30 test_relative_position:20 test_block_placement:30 \
  test_t5:60 test_bert_layer:60 test_gpt2_block:60 test_llama_block:60 test_kernels:120 \
  test_tensor_parallel:30 test_parallel:30 test_train_step:150 test_burn:90 test_launcher:20 \
  test_loader:20 test_case_list:20 test_cli:120 test_bad_inputs:120; do
  b=${entry%%:*}; cap=${entry##*:}
  l=$((540 - ($(date +%s) - t0)))
  if [ $l -lt 5 ]; then echo "$b: not run (no time)" >>"$S"; continue; fi
  [ $l -lt "$cap" ] || l=$cap
  s=$(date +%s)
  timeout "$l" "$B/$b" --gtest_brief=1 >"$R/logs/$b.log" 2>&1; rc=$?
  res=$(grep -E "^\[  (PASSED|FAILED) " "$R/logs/$b.log" | tr '\n' ' ')
  echo "$b: rc=$rc $(($(date +%s) - s)) s $res" >>"$S"
  [ $rc -eq 0 ] && rm -f "$R/logs/$b.log"
done
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
