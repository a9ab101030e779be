#!/usr/bin/env bash
# Session 23: xfbench's flash attention with the forward's key tiles of 128 at head dim 128 and the
# backward's tail sized by the heaviest block (grouped-query attention), against the library
# before them (.carry/oldlib: the same kernels as main 39fba9b) and cuDNN, one H200, one call.
# Carry: build/device/bin build/device/lib build/device/test_plugins .carry/oldlib
# Run: bash reports/results/h200/flash_keys128/run.sh
set -uo pipefail
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
BASE=$T/cudnn/lib:$T/nccl/lib:$PWD/build/device/lib:${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH=$BASE
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT  # a call brings back 8 files at most
t0=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv,noheader >"$R/gpu.txt" 2>&1
B=build/device/bin
# 1. Correctness: every attention test (float64 references).
timeout 200 $B/test_kernels --gtest_filter='*Attention*:*Flash*' >"$R/tests.txt" 2>&1
echo "tests rc=$? t=$((SECONDS - t0)) s" >>"$R/summary.txt"
# 2. Kernels alone: flash vs cuDNN, new and old library, alternating processes.
for i in 1 2; do
  for v in new old; do
    lib=$BASE
    [ "$v" = old ] && lib=$PWD/.carry/oldlib:$BASE
    LD_LIBRARY_PATH=$lib timeout 90 $B/flash_speed --out="$R/speed_${v}_$i.jsonl" \
      >"$R/speed_${v}_$i.txt" 2>&1
    echo "speed $v $i rc=$? t=$((SECONDS - t0)) s" >>"$R/summary.txt"
  done
done
# 3. In the layer (new library): llama-3.1-8b s4096 b2 and llama-3.2-1b s4096 b4, flash beside
# fused (cuDNN), forward and forward+backward, 3 repetitions.
for m in llama-3.1-8b llama-3.2-1b; do
  b=2
  [ "$m" = llama-3.2-1b ] && b=4
  [ $((SECONDS - t0)) -gt 300 ] && break
  timeout 150 $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json \
    --xfbench_llama_model=$m --xfbench_llama_seqs=4096 --xfbench_llama_batches=$b \
    --xfbench_llama_dtypes=bf16 --benchmark_filter='^LlamaBlock/(flash|fused)/bf16/' \
    --benchmark_out="$R/layer_$m.json" >"$R/layer_$m.txt" 2>&1
  echo "layer $m rc=$? t=$((SECONDS - t0)) s" >>"$R/summary.txt"
done
# 4. The host's tests that need the test plugins (session 23's first call did not carry them).
for t in test_cli test_bad_inputs; do
  [ $((SECONDS - t0)) -gt 420 ] && break
  timeout 110 $B/$t >"$R/$t.txt" 2>&1
  echo "$t rc=$? t=$((SECONDS - t0)) s $(grep -E '^\[  (PASSED|FAILED)  \]' "$R/$t.txt" | tr '\n' ' ')" >>"$R/summary.txt"
done
# 5. The sanitizers on head dim 128 (its float64 cases), while time is left.
CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck racecheck; do
  left=$((560 - (SECONDS - t0)))
  [ "$left" -lt 30 ] && break
  timeout "$left" $CS --tool $tool --error-exitcode 9 $B/test_kernels \
    --gtest_filter='Attention/1.FlashHeadDim128MatchesReference' >"$R/$tool.txt" 2>&1
  echo "$tool rc=$? t=$((SECONDS - t0)) s $(tail -2 "$R/$tool.txt" | tr '\n' ' ')" >>"$R/summary.txt"
done
