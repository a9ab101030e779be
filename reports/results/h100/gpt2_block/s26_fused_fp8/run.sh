#!/usr/bin/env bash
# Session 26 (issue 34): the FP8 block's gradient passes fused (the GELU's backward writing wi's
# e5m2 dy, its transpose and the bias gradient in one tile pass; dqkv's cast with its bias
# gradient; the delayed scale update a warp per tensor), on one H100:
#   1. the GPU tests of what changed (FP8 casts and producers, the GPT-2 and BERT FP8 blocks and
#      steps against float64), compute-sanitizer (racecheck, memcheck) on the new tile pass
#   2. ncu over the fp8 gpt2-xl block's timed launches (as ../s26_kernels/)
#   3. GPT2Block gpt2-xl s1024 b8 fused fwd+bwd bf16 and fp8 delayed, steady, 3 repetitions
#   4. TrainStep gpt2-xl s1024 b8 bf16 and fp8 delayed, validated, 3 repetitions, step parts
#   5. (issue 32) the four default-suite cases over 1% from their suite numbers, alone twice
#      more each with the GEMM searches' choices logged, until END
# Carry: build/device/bin/{xfbench,test_kernels,test_gpt2_block,test_train_step} build/device/lib
# Run: bash reports/results/h100/gpt2_block/s26_fused_fp8/run.sh
set -uo pipefail
t0=$SECONDS
END=${END:-400}
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

timeout 120 "$B/test_kernels" --gtest_filter='Fp8*:Elementwise.BiasGelu*' >"$R/test_kernels.txt" 2>&1
step test_kernels $?
timeout 90 "$B/test_gpt2_block" --gtest_filter='*Fp8*' >"$R/test_gpt2_block.txt" 2>&1
step test_gpt2_block $?
timeout 150 "$B/test_train_step" --gtest_filter='TrainStepGpu.Fp8*' >"$R/test_train_step.txt" 2>&1
step test_train_step $?
F='Fp8Gpu.CastTransposeMatchesCast:Fp8ProducersGpu.GeluBackward*'
for tool in racecheck memcheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 "$B/test_kernels" \
    --gtest_filter="$F" >"$R/sanitizer_$tool.txt" 2>&1
  step "sanitizer $tool" $?
done

NCU=$(command -v ncu)
[ -n "$NCU" ] || NCU=/usr/local/cuda/bin/ncu
G=(--xfbench_gpt2_model=gpt2-xl --xfbench_gpt2_seqs=1024 --xfbench_gpt2_batches=8
  --xfbench_gpt2_fp8_recipe=delayed --xfbench_gpt2_backends=fused
  --benchmark_filter='^GPT2Block/fused/.*/fwdbwd/')
timeout 90 "$NCU" --profile-from-start off --clock-control none --cache-control none \
  --metrics gpu__time_duration.sum --launch-count 400 --csv --page raw --log-file "$R/fp8.csv" \
  "$B/xfbench" --xfbench_mode=hot --xfbench_validate=false --xfbench_gpt2_dtypes=fp8 "${G[@]}" \
  >"$R/ncu_fp8.txt" 2>&1
step ncu $?

timeout 90 "$B/xfbench" "${G[@]}" --xfbench_gpt2_dtypes=bf16,fp8 --benchmark_repetitions=3 \
  --benchmark_out_format=json --benchmark_out="$R/block.json" >"$R/block.txt" 2>&1
step block $?

X=(--benchmark_repetitions=3 --benchmark_out_format=json '--xfbench_train_precisions=bf16,fp8'
  --xfbench_train_fp8_recipe=delayed --xfbench_train_models=gpt2-xl
  --xfbench_train_seqs=1024 --xfbench_train_batches=8
  --benchmark_filter='^TrainStep/fused/.*/ckpt:off/adamw:fused/iter')
XFBENCH_STEP_PARTS=1 timeout 200 "$B/xfbench" "${X[@]}" --benchmark_out="$R/step.json" \
  >"$R/step.txt" 2>&1
step trainstep $?

i=0
for name in 'TrainStep/fused/gpt2-medium/bf16/seq:1024/batch:8/accum:1/ckpt:off/adamw:fused/iterations:1/manual_time' \
  'TrainStep/fused/bert-large/bf16/seq:512/batch:16/accum:1/ckpt:off/adamw:fused/iterations:1/manual_time' \
  'T5Encoder/fused/fp16/fwdbwd/seq:512/batch:64/iterations:1/manual_time'; do
  for again in 1 2; do
    [ $((SECONDS - t0)) -lt "$END" ] || break 2
    i=$((i + 1))
    XFBENCH_GEMM_LOG=1 timeout 40 "$B/xfbench" --benchmark_filter="^${name}\$" \
      --benchmark_out="$R/alone_$i.json" --benchmark_out_format=json >"$R/alone_$i.txt" 2>&1
    step "alone $again $name" $?
  done
done
