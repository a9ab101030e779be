#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 19, call 3 (nvidia-h200-x2; reports/results/h200/floors_before_after/tests_x2), issue 35: the comm floor's RankThreads (start/wait) under the
# parallel trainer, the transfer cases' device guard and the burn; the telemetry header made
# public; GemmGpu (timed out at 20 s in call 1); the multi-GPU tests on two GPUs after the floors.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
L="$R/tests.log"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
nvidia-smi topo -m >>"$R/gpu.txt" 2>&1
run() {
  local left=$((540 - ($(date +%s) - t0)))
  if [ $left -lt 5 ]; then echo "=== ${*:2}: no time" >>"$L"; return; fi
  echo "=== ${*:2} ($(($(date +%s) - t0)) s)" >>"$L"
  timeout $((left < $1 ? left : $1)) "${@:2}" >>"$L" 2>&1; echo "rc=$? ($(($(date +%s) - t0)) s)" >>"$L"
}
run 20 $B/test_rank_threads
run 120 $B/test_parallel --gtest_filter='ParallelGpu.*'
run 90 $B/test_tensor_parallel
run 60 $B/test_transfer --gtest_filter='Transfer*Gpu*.*:TransferGpu.*:TransferTwoGpus.*'
run 150 $B/test_burn --gtest_filter='BurnGpu.*'
run 90 $B/test_matmul --gtest_filter='GemmGpu.*'
run 40 $B/test_steady_state
run 40 $B/test_cli --gtest_filter='Cli.Telemetry*:Cli.GpuFaults*'
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|^===|Failure" "$L" >"$R/tests_summary.txt"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
