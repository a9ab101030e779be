#!/usr/bin/env bash
# Session 27 (issue 34), with .carry/s26_fp8_passes.patch applied (the GELU forward writes act and
# its transpose in one tile pass, so the FC2 weight gradient needs no FP8 transpose; the last
# residual in reverse writes do2 in FP8 with its transpose and dbout, so wout needs no cast), on
# one H100:
#   1. the GPU tests of the FP8 casts and producers, compute-sanitizer (racecheck, memcheck) on the GELU
#      backward's and the cast's tile passes; the GPT-2 and BERT FP8 blocks and steps
#   2. ncu over the fp8 gpt2-xl block's timed launches
#   3. GPT2Block gpt2-xl s1024 b8 fused fwd+bwd bf16 and fp8 delayed, steady, 3 repetitions
#   4. TrainStep gpt2-xl s1024 b8 bf16 and fp8 delayed, validated, 3 repetitions, step parts
# Carry: build/device/bin/{xfbench,test_kernels,test_gpt2_block,test_train_step} build/device/lib
# Run: bash reports/results/h100/gpt2_block/s27_fp8_passes/run.sh
set -uo pipefail
t0=$SECONDS
el() { echo $((SECONDS - t0)); }
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
B=build/device/bin
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
L=$R/steps.log
step() { echo "$1 rc=$2 t=$(el) s" >>"$L"; }

timeout 60 "$B/test_kernels" --gtest_filter='*Fp8*:*BiasGelu*' >"$R/test_kernels.txt" 2>&1
step test_kernels $?
F='*Fp8ProducersGpu.Gelu*:*Fp8ProducersGpu.Dropout*:Fp8Gpu.CastTransposeMatchesCast'
for tool in racecheck memcheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 "$B/test_kernels" \
    --gtest_filter="$F" >"$R/sanitizer_$tool.txt" 2>&1
  step "sanitizer $tool" $?
done
timeout 40 "$B/test_gpt2_block" --gtest_filter='*Fp8*' >"$R/test_gpt2_block.txt" 2>&1
step test_gpt2_block $?
timeout 40 "$B/test_train_step" --gtest_filter='TrainStepGpu.Fp8*' >"$R/test_train_step.txt" 2>&1
step test_train_step $?

NCU=$(command -v ncu)
[ -n "$NCU" ] || NCU=/usr/local/cuda/bin/ncu
G=(--xfbench_gpt2_model=gpt2-xl --xfbench_gpt2_seqs=1024 --xfbench_gpt2_batches=8
  --xfbench_gpt2_fp8_recipe=delayed --xfbench_gpt2_backends=fused
  --benchmark_filter='^GPT2Block/fused/.*/fwdbwd/')
timeout 60 "$NCU" --profile-from-start off --clock-control none --cache-control none \
  --metrics gpu__time_duration.sum --launch-count 400 --csv --page raw --log-file "$R/fp8.csv" \
  "$B/xfbench" --xfbench_mode=hot --xfbench_validate=false --xfbench_gpt2_dtypes=fp8 "${G[@]}" \
  >"$R/ncu_fp8.txt" 2>&1
step ncu $?

timeout 70 "$B/xfbench" "${G[@]}" --xfbench_gpt2_dtypes=bf16,fp8 --benchmark_repetitions=3 \
  --benchmark_out_format=json --benchmark_out="$R/block.json" >"$R/block.txt" 2>&1
step block $?

X=(--benchmark_repetitions=3 --benchmark_out_format=json '--xfbench_train_precisions=bf16,fp8'
  --xfbench_train_fp8_recipe=delayed --xfbench_train_models=gpt2-xl
  --xfbench_train_seqs=1024 --xfbench_train_batches=8
  --benchmark_filter='^TrainStep/fused/.*/ckpt:off/adamw:fused/iter')
XFBENCH_STEP_PARTS=1 timeout 200 "$B/xfbench" "${X[@]}" --benchmark_out="$R/step.json" \
  >"$R/step.txt" 2>&1
step trainstep $?
