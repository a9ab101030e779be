#!/usr/bin/env bash
# Session 30 (issues 36, 34), one call on one H100, branch s30-try (main 5137062 + fp8-transposes +
# flash-hd64-pingpong + power-limit-capped + flash-dq-bulk; worktree /work/s28wt) built and
# stripped, carried as
# build/s30new (bin/: xfbench, test_kernels, flash_speed, test_{llama_block,gpt2_block,bert_layer,
# t5,train_step,steady_state}; lib/ without the static libraries) and build/s30old (bin/xfbench,
# lib/libxfbench_{kernels,models,sdk}.so* and lib/xfbench/plugins of main's build; the rest copied
# from s30new), as one
# archive build/s30carry.tar.xz:
#   flash: the flash tests (FlashForwardMatchesReference runs the head-dim-64 ping-pong kernel,
#     FlashDqByReductionMatchesReference the backward with dQ by bulk reduce-add), memcheck and
#     racecheck on both, flash_speed ("fwd flash pingpong64" vs "fwd flash" at head dim 64, "bwd
#     flash dq:reduce" vs "bwd flash" and cuDNN);
#   FP8: the producers' tests, every FP8 block's and the step's GPU tests;
#   LlamaBlock llama-3.1-8b s4096 b2: bf16 fused and flash (the ping-pong forward in the layer),
#     then fp8 delayed fwd+bwd old / new / old / new (main's FP8 code against the branch's).
# Run: tar -xJf build/s30carry.tar.xz -C build && cp -an build/s30new/lib/. build/s30old/lib/ &&
#      bash call1.sh (copied to reports/results/h100/<folder>/run.sh)
set -uo pipefail
t0=$SECONDS
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
B=build/s30new/bin
R=$OUT/r
mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
L=$R/steps.log
step() { echo "$1 rc=$2 t=$((SECONDS - t0)) s" >>"$L"; }
timeout 120 "$B/test_kernels" --gtest_filter='*Flash*' >"$R/test_flash.txt" 2>&1
step test_flash $?
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/test_kernels" \
    --gtest_filter='*FlashForwardMatchesReference*:*FlashDqByReduction*' \
    >"$R/sanitizer_$tool.txt" 2>&1
  step "sanitizer $tool" $?
done
timeout 90 "$B/flash_speed" --out="$R/flash_speed.jsonl" >"$R/flash_speed.txt" 2>&1
step flash_speed $?
timeout 60 "$B/test_kernels" --gtest_filter='*Fp8Producers*' >"$R/test_fp8_producers.txt" 2>&1
step test_fp8_producers $?
for t in test_llama_block test_gpt2_block test_bert_layer test_t5; do
  timeout 80 "$B/$t" >"$R/$t.txt" 2>&1
  step "$t" $?
done
timeout 60 "$B/test_train_step" --gtest_filter='TrainStepGpu.Fp8*' >"$R/test_train_step.txt" 2>&1
step test_train_step_fp8 $?
timeout 120 "$B/xfbench" --benchmark_repetitions=3 --xfbench_llama_dtypes=bf16 \
  --xfbench_llama_backends=fused,flash \
  --benchmark_filter='^LlamaBlock/(fused|flash)/bf16/.*/seq:4096/batch:2/' \
  --benchmark_out_format=json --benchmark_out="$R/xf_llama8b.json" >"$R/xf.log" 2>&1
step llama_8b $?
for build in s30old s30new s30old s30new; do
  timeout 60 "build/$build/bin/xfbench" --benchmark_repetitions=3 --xfbench_llama_dtypes=fp8 \
    --xfbench_llama_fp8_recipe=delayed --xfbench_llama_backends=fused \
    --benchmark_filter='^LlamaBlock/fused/fp8/.*/fwdbwd/seq:4096/batch:2/' \
    --benchmark_out_format=json --benchmark_out="$R/xf_fp8_$build.$SECONDS.json" >>"$R/xf.log" 2>&1
  step "llama_8b_fp8 $build" $?
done
