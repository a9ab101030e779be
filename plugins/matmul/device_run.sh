#!/usr/bin/env bash
# One GPU-machine call for the Matmul plugin: its tests (and compute-sanitizer on a small fp8
# case), then torch.matmul and xfbench on the same case names, alternating twice (torch, xfbench,
# torch, xfbench) so neither side always runs on the warmer GPU, then the sweep and the table.
#   [PASSES=N] [SKIP_TESTS=1] [XF_ARGS='--xfbench_...'] plugins/matmul/device_run.sh BUILD_DIR FILTER SWEEP_DTYPES
# PASSES (default 2) alternating passes per side; the table takes each case's median over them.
# Writes under $OUT: tests.log, run.log, matmul_{xfbench,torch}_{1,2}.json, matmul_sweep.json,
# matmul_compare.txt (the first pass of each side by `reports compare`, the sweep's table). The
# torch side is reports/peer_torch.py on the listed names in the hot protocol (xfbench's hot mode:
# pass XF_ARGS=--xfbench_mode=hot for the same on xfbench's side).
set -uo pipefail
build="$1"
filter="$2"
sweep="$3"
out="${OUT:-/tmp/matmul_out}"
mkdir -p "$out"
nv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH="$nv/cudnn/lib:$nv/nccl/lib:${LD_LIBRARY_PATH:-}"
log="$out/run.log"
read -ra xf_args <<<"${XF_ARGS:-}"  # extra xfbench flags, separated by spaces
gpu() { nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader | tee -a "$log"; }
gpu

if [ -z "${SKIP_TESTS:-}" ]; then
  timeout 180 "$build/bin/test_matmul" --gtest_brief=1 >"$out/tests.log" 2>&1
  echo "test_matmul exit $?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|rror" "$out/tests.log" | head -20
  CUBLASLT_LOG_LEVEL=1 timeout 120 compute-sanitizer --tool memcheck --print-limit 5 \
    "$build/bin/xfbench" --benchmark_filter='Matmul/fp8/NT/m:512/' --xfbench_iterations=2 \
    >>"$out/tests.log" 2>&1
  echo "memcheck exit $?"
  grep -E "ERROR SUMMARY|cublasLt.*Error" "$out/tests.log" | head -5
fi

names=/tmp/matmul_names.txt
"$build/bin/xfbench" --benchmark_list_tests=true --benchmark_filter="$filter" >"$names"
echo "$(wc -l <"$names") cases"
for pass in $(seq 1 "${PASSES:-2}"); do
  timeout 200 python3 reports/peer_torch.py --names "$names" --filter '^Matmul/(?!sweep/)' \
    --mode hot --repetitions 1 --out "$out/matmul_torch_$pass.json" >>"$log" 2>&1
  echo "torch pass $pass exit $?"
  timeout 200 "$build/bin/xfbench" --benchmark_filter="$filter" "${xf_args[@]}" \
    --benchmark_out="$out/matmul_xfbench_$pass.json" --benchmark_out_format=json >>"$log" 2>&1
  echo "xfbench pass $pass exit $?"
  gpu
done
sweep_json=()
if [ -n "$sweep" ]; then
  sweep_json=("$out/matmul_sweep.json")
  timeout 200 "$build/bin/xfbench" --benchmark_filter='Matmul/sweep/' --xfbench_matmul_sweep="$sweep" \
    --benchmark_out="$out/matmul_sweep.json" --benchmark_out_format=json >>"$log" 2>&1
  echo "sweep exit $?"
fi
grep -E "ERROR OCCURRED" "$log" | head -10
python3 -m reports compare --labels torch,xfbench --family Matmul "$out"/matmul_torch_1.json \
  "$out"/matmul_xfbench_1.json >"$out/matmul_compare.txt" 2>&1
if [ -n "$sweep" ]; then python3 -m reports table "${sweep_json[@]}" >>"$out/matmul_compare.txt" 2>&1; fi
cat "$out/matmul_compare.txt"
