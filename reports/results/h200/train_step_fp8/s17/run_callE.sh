#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 17, call E (issue 34, 35): TrainStep gpt2-medium s1024 b8 bf16 vs fp8 with the FP8 check
# against two bf16 runs; GPU tests after the precision vocabulary moved (GEMMs, casts, TrainStep).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
L="$R/tests.log"
run() { echo "=== ${*:2} ($(($(date +%s) - t0)) s)" >>"$L"; timeout "$1" "${@:2}" >>"$L" 2>&1; echo "rc=$?" >>"$L"; }
run 30 $B/test_kernels --gtest_filter='*Fp8*'
run 40 $B/test_matmul --gtest_filter='GemmGpu.*:-GemmGpu.Search*'
run 30 $B/test_train_step --gtest_filter='TrainStepGpu.EveryGradient*:TrainStepGpu.Fp8Gpt2*'
X=(--benchmark_repetitions=3 --benchmark_out_format=json)
timeout $((235 - ($(date +%s) - t0))) $B/xfbench "${X[@]}" --xfbench_train_models=gpt2-medium --xfbench_train_seqs=1024 --xfbench_train_batches=8 --xfbench_train_precisions=bf16,fp8 --benchmark_filter='^TrainStep/fused/gpt2-medium/' --benchmark_out="$R/train_gpt2_fp8.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
