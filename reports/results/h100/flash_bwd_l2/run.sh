#!/usr/bin/env bash
# Issue 36: the wide dQ-by-reduction backward against L2 misses (session 32's run, ../flash_bwd_wide/:
# 2.739 vs the recompute kernel's 2.118 ms at llama-3.1-8b s4096 b2; its 134 MB of fp32 dQ sums
# outran the 50 MB L2, DRAM 2.2 TB/s). Two builds of branch flash-bwd-wide:
#   build/s31wide (152fe57): the causal tail capped to the (batch, kv head) pairs whose sums fit
#     half the L2 (the balanced tail had 12 of 16 pairs in flight);
#   build/s35desc (dc91026): that, and query tiles from the last down with the group's heads
#     within each, so a pair's blocks step together over a few tiles of sums.
# The flash tests, memcheck and racecheck on s35desc; flash_speed of both; s35desc's block tests;
# LlamaBlock 8B s4096 b2 flash fwd+bwd main / s31wide / s35desc alternating; main 82cc508's Llama
# GPU tests (build/s35main: the unfused gated FFN passes after the refactor); ncu of s35desc's
# wide kernel if the time is left.
# Run: for a in s34carry s35carry s35desc; do tar -xJf build/$a.tar.xz -C build; done &&
#      bash reports/results/h100/flash_bwd_l2/run.sh
set -uo pipefail
# shellcheck source=SCRIPTDIR/../../call_preamble.sh
source "$(dirname "$0")/../../call_preamble.sh"
B=build/s35desc/bin
timeout 120 "$B/test_kernels" --gtest_filter='*Flash*' >"$R/test_flash.txt" 2>&1
step test_flash $?
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/test_kernels" \
    --gtest_filter='*FlashDqByReduction*' >"$R/sanitizer_$tool.txt" 2>&1
  step "sanitizer $tool" $?
done
for build in s31wide s35desc; do
  timeout 90 "build/$build/bin/flash_speed" --out="$R/flash_speed_$build.jsonl" \
    >"$R/flash_speed_$build.txt" 2>&1
  step "flash_speed $build" $?
done
passed() { grep -q "^\[  PASSED  \]" "$R/test_flash.txt" && ! grep -q "FAILED" "$R/test_flash.txt"; }
if passed; then
  timeout 90 "$B/test_llama_block" --gtest_filter='LlamaGpu*' >"$R/test_llama_desc.txt" 2>&1
  step test_llama_desc $?
  for build in s31main s31wide s35desc s31main s35desc s31wide; do
    timeout 60 "build/$build/bin/xfbench" --xfbench_llama_dtypes=bf16 --xfbench_llama_backends=flash \
      --benchmark_filter='^LlamaBlock/flash/bf16/fwdbwd/seq:4096/batch:2/' \
      --benchmark_out_format=json --benchmark_out="$R/xf_llama_$build.$SECONDS.json" \
      >>"$R/xf_llama.log" 2>&1
    step "llama_8b_flash $build" $?
  done
fi
timeout 150 build/s35main/bin/test_llama_block --gtest_filter='LlamaGpu*' \
  >"$R/test_llama_main.txt" 2>&1
step test_llama_main $?
if passed && [ "$SECONDS" -lt 460 ]; then
  FLASH_SPEED=$B/flash_speed KERNELS="backward_wide_kernel:2" \
    bash reports/results/h100/flash_hd128_ncu/run.sh
  step ncu $?
fi
