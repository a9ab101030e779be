#!/usr/bin/env bash
# Issue 36: the backward's dQ by reduction in blocks of two warpgroups and 128 keys at head dim 128
# (dkdv_wide_block, branch flash-bwd-wide). One call on one H100, the branch's build carried as
# build/s31wide (bin/test_kernels, flash_speed, xfbench, test_llama_block; lib/ with the llama plugin):
#   the flash tests (FlashDqByReductionMatchesReference runs the wide kernel at S 256 and 512,
#   causal and not, GQA, dropout; the 64-key one at S 64 and 192; FlashForwardMatchesReference the
#   head-dim-64 ping-pong forward with key tiles of 64, two blocks an SM), memcheck and racecheck
#   on both, then flash_speed ("bwd flash dq:reduce" against "bwd flash" and cuDNN, "fwd flash
#   pingpong64" against "fwd flash" at head dim 64).
# Run: bash reports/results/h100/flash_bwd_wide/run.sh
set -uo pipefail
# shellcheck source=SCRIPTDIR/../../call_preamble.sh
source "$(dirname "$0")/../../call_preamble.sh"
B=build/s31wide/bin
timeout 120 "$B/test_kernels" --gtest_filter='*Flash*' >"$R/test_flash.txt" 2>&1
step test_flash $?
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/test_kernels" \
    --gtest_filter='*FlashDqByReduction*:*FlashForwardMatchesReference*' \
    >"$R/sanitizer_$tool.txt" 2>&1
  step "sanitizer $tool" $?
done
timeout 90 "$B/flash_speed" --out="$R/flash_speed.jsonl" >"$R/flash_speed.txt" 2>&1
step flash_speed $?
passed() { grep -q "^\[  PASSED  \]" "$R/test_flash.txt" && ! grep -q "FAILED" "$R/test_flash.txt"; }
# The block with the wide backward (s31wide's xfbench and llama plugin: dQ by reduction where the
# shape allows, transformer_block.cu): its GPU tests (the flash block at head dim 128 against
# float64), then LlamaBlock llama-3.1-8b s4096 b2 flash fwd+bwd against main's build (recompute),
# alternating, steady protocol.
if passed; then
  timeout 90 "$B/test_llama_block" --gtest_filter='LlamaGpu*' >"$R/test_llama_wide.txt" 2>&1
  step test_llama_wide $?
  for build in s31main s31wide s31main s31wide; do
    timeout 60 "build/$build/bin/xfbench" --xfbench_llama_dtypes=bf16 --xfbench_llama_backends=flash \
      --benchmark_filter='^LlamaBlock/flash/bf16/fwdbwd/seq:4096/batch:2/' \
      --benchmark_out_format=json --benchmark_out="$R/xf_llama_$build.$SECONDS.json" \
      >>"$R/xf_llama.log" 2>&1
    step "llama_8b_flash $build" $?
  done
fi
# Issue 34 beside it (main's build, build/s31main): GPT2Block at hidden 4096, seq 2048, batch 8,
# fused fwd+bwd, bf16 and fp8 delayed, steady, 3 repetitions (1.54x on an H200 in session 19).
timeout 150 build/s31main/bin/xfbench --xfbench_gpt2_hidden=4096 --xfbench_gpt2_heads=32 \
  --xfbench_gpt2_seqs=2048 --xfbench_gpt2_batches=8 --xfbench_gpt2_backends=fused \
  --xfbench_gpt2_dtypes=bf16,fp8 --benchmark_filter='^GPT2Block/fused/.*/fwdbwd/' \
  --benchmark_repetitions=3 --benchmark_out_format=json --benchmark_out="$R/gpt2_h4096.json" \
  >"$R/xf.log" 2>&1
step gpt2_h4096 $?
# Where the backward's time goes, if the flash tests passed: Nsight Compute's full set on one
# launch of the wide kernel and of the recompute one at llama-3.1-8b s4096 b2 (flash_speed's
# first head-dim-128 shape), into $R/ncu_flash; only if the call has the time left.
if passed && [ "$SECONDS" -lt 430 ]; then
  FLASH_SPEED=$B/flash_speed KERNELS="backward_wide_kernel:2 backward_kernel<.*128,.false>:2" \
    bash reports/results/h100/flash_hd128_ncu/run.sh
  step ncu $?
fi
# Main's FP8 Llama tests (build/s31main, main 009c94b): LlamaGpuFp8.HeadDimWhoseHalfIsNoMultipleOf8
# (RoPE's backward falls back to rotate-then-cast at head dim 24) and current scaling.
timeout 90 build/s31main/bin/test_llama_block --gtest_filter='LlamaGpuFp8.*' \
  >"$R/test_llama_fp8.txt" 2>&1
step test_llama_fp8 $?
