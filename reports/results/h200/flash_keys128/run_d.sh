#!/usr/bin/env bash
# Session 23, second call: the forward's keep bits no longer written for the empty half of a last
# 128-key tile (compute-sanitizer's memcheck found 16 writes past the buffer in run.sh's call; the
# test now keeps a guard after the bits), the flash tests, the Llama layer against float64 with
# flash, and TrainStep llama-3.2-3b flash beside fused (cuDNN), one H200.
# Carry: build/device/bin/{test_kernels,test_llama_block,xfbench} build/device/lib
# Run: bash reports/results/h200/flash_keys128/run_d.sh
set -uo pipefail
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:$PWD/build/device/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT  # a call brings back 8 files at most
t0=$SECONDS
B=build/device/bin
note() { echo "$1 rc=$2 t=$((SECONDS - t0)) s ${3:-}" >>"$R/summary.txt"; }
CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck; do
  for f in Attention/1.FlashHeadDim128MatchesReference Attention/0.FlashGqaMatchesReference; do
    timeout 120 $CS --tool $tool --error-exitcode 9 $B/test_kernels --gtest_filter="$f" \
      >"$R/sanitizers.txt.part" 2>&1
    note "$tool $f" $? "$(tail -2 "$R/sanitizers.txt.part" | tr '\n' ' ')"
    cat "$R/sanitizers.txt.part" >>"$R/sanitizers.txt"
  done
done
rm -f "$R/sanitizers.txt.part"
timeout 150 $B/test_kernels --gtest_filter='*Flash*:*Attention*' >"$R/tests.txt" 2>&1
note test_kernels $? "$(grep -E '^\[  (PASSED|FAILED)  \]' "$R/tests.txt" | tr '\n' ' ')"
timeout 150 $B/test_llama_block --gtest_filter='Backends/LlamaGpu.*:LlamaGpuCausal*' \
  >>"$R/tests.txt" 2>&1
note test_llama_block $? "$(grep -E '^\[  (PASSED|FAILED)  \]' "$R/tests.txt" | tail -1)"
left=$((540 - (SECONDS - t0)))
timeout "$left" $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json \
  --xfbench_suite=all --xfbench_train_models=llama-3.2-3b --xfbench_train_seqs=4096 \
  --xfbench_train_batches=1 --xfbench_train_backends=fused,flash \
  --benchmark_filter='^TrainStep/(fused|flash)/llama-3.2-3b/bf16/seq:4096/batch:1/accum:1/ckpt:off/adamw:fused/iter' \
  --benchmark_out="$R/train_3b.json" >"$R/train_3b.txt" 2>&1
note train_3b $?
