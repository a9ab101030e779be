#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 21, call A (nvidia-h200-x2 or -x4), issue 38: zero3 with gradient accumulation on two
# GPUs (test_parallel), then the one-GPU Llama cases (llama-3.2-1b s4096 b4, llama-3.2-3b s4096
# b1) on one GPU and dp / zero2 / zero3 on all N GPUs, and 1b's zero3 on N GPUs under mpirun (the
# MPI build, one rank per GPU), in one call of at most ~460 s.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
left() { local l=$((455 - ($(date +%s) - t0))); echo $((l > 1 ? l : 1)); }
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
nvidia-smi topo -m >>"$R/gpu.txt" 2>&1
N=$(nvidia-smi -L | wc -l)
GPUS=$(seq -s, 0 $((N - 1)))
timeout 100 $B/test_parallel >"$R/tests.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/tests.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|^rc=|Failure|zero3|accum|master rel" "$R/tests.log" >"$R/tests_summary.txt"
scaling() {  # model batch part
  local base="TrainStep/fused/$1/bf16/seq:4096/batch:$2/accum:1/ckpt:off/adamw:fused"
  timeout "$(left)" $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json --xfbench_suite=all \
    --xfbench_train_models="$1" --xfbench_train_seqs=4096 --xfbench_train_batches="$2" \
    --xfbench_train_parallel=dp,zero2,zero3 --xfbench_gpus="$GPUS" \
    --benchmark_filter="^$base/(iter|(dp|zero2|zero3)/gpus:$N/p2p:on)" \
    --benchmark_out="$R/xf_$3.json" >>"$R/xf.log" 2>&1
  echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
}
scaling llama-3.2-1b 4 1b
ldd build/mpi/lib/libxfbench_nccl.so build/mpi/bin/xfbench 2>&1 | grep -E "mpi|not found|bench" >"$R/mpi_ldd.txt"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
timeout 90 mpirun -np "$N" --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE build/mpi/bin/xfbench \
  --benchmark_repetitions=1 --benchmark_out_format=json --xfbench_suite=all \
  --xfbench_train_models=llama-3.2-1b --xfbench_train_seqs=4096 --xfbench_train_batches=4 \
  --xfbench_train_parallel=zero3 \
  --benchmark_filter="^TrainStep/fused/llama-3.2-1b/bf16/seq:4096/batch:4/accum:1/ckpt:off/adamw:fused/zero3/" \
  --benchmark_out="$R/xf_1b_mpi.json" >"$R/mpi.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/mpi.log"
scaling llama-3.2-3b 1 3b
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
