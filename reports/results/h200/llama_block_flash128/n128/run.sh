#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 21, call E (one H200), issue 36: the head-dim-128 flash kernels with one n128 wgmma
# where an operand spans both panels (P·V forward; dV, dK, dQ backward) against float64 and under
# memcheck, then LlamaBlock llama-3.1-8b on flash beside fused, as call C measured them.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
left() { local l=$((560 - ($(date +%s) - t0))); echo $((l > 1 ? l : 1)); }
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
timeout 150 $B/test_kernels --gtest_filter='*Flash*' >"$R/tests.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/tests.log"
timeout 90 compute-sanitizer --tool memcheck $B/test_kernels --gtest_filter='Attention/1.FlashHeadDim128*' >"$R/memcheck.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/memcheck.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|Failure|FAILED" "$R/tests.log" >"$R/tests_summary.txt"
timeout "$(left)" $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json \
  --xfbench_llama_seqs=4096,8192 --xfbench_llama_batches=1,2 --xfbench_llama_dtypes=bf16 \
  --benchmark_filter='^LlamaBlock/(fused|flash)/bf16/(fwdbwd/(seq:4096/batch:2|seq:8192/batch:1)|fwd/seq:4096/batch:2)/iter' \
  --benchmark_out="$R/llama_8b.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
