#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 21, call C (one H200), issue 36: xfbench's flash attention BACKWARD at head dim 128
# against float64 (and memcheck), the Llama blocks on flash, then LlamaBlock llama-3.1-8b
# fwd+bwd on flash beside fused (cuDNN) and TrainStep llama-3.2-3b on both, in one call.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
left() { local l=$((570 - ($(date +%s) - t0))); echo $((l > 1 ? l : 1)); }
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
timeout 150 $B/test_kernels --gtest_filter='*Flash*' >"$R/tests.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/tests.log"
timeout 90 compute-sanitizer --tool memcheck $B/test_kernels --gtest_filter='Attention/1.FlashHeadDim128*' >"$R/memcheck.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/memcheck.log"
timeout 60 compute-sanitizer --tool racecheck $B/test_kernels --gtest_filter='Attention/1.FlashCausalIgnoresLaterPositions' >"$R/racecheck.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/racecheck.log"
timeout 120 $B/test_llama_block --gtest_filter='Backends/LlamaGpu.*:LlamaGpuCausal*' >>"$R/tests.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/tests.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|Failure|head dim|FAILED" "$R/tests.log" >"$R/tests_summary.txt"
timeout "$(left)" $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json \
  --xfbench_llama_seqs=4096,8192 --xfbench_llama_batches=1,2 --xfbench_llama_dtypes=bf16 \
  --benchmark_filter='^LlamaBlock/(fused|flash)/bf16/fwdbwd/(seq:4096/batch:2|seq:8192/batch:1)/iter' \
  --benchmark_out="$R/llama_8b.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout "$(left)" $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json --xfbench_suite=all \
  --xfbench_train_models=llama-3.2-3b --xfbench_train_seqs=4096 --xfbench_train_batches=1 \
  --xfbench_train_backends=fused,flash \
  --benchmark_filter='^TrainStep/(fused|flash)/llama-3.2-3b/bf16/seq:4096/batch:1/accum:1/ckpt:off/adamw:fused/iter' \
  --benchmark_out="$R/train_3b.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
