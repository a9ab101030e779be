#!/usr/bin/env bash
# Issue 36: the flash backward at head dim 128. Builds (carried as tar.xz archives in build/):
#   s31main  main 009c94b: the baseline (the recompute backward as it was);
#   s36main  main 913ae1a: each step's log-sum-exp, D and dropout bits loaded before the S and dP
#            products (they stalled every tile pair after the products' wait);
#   s35desc  branch flash-bwd-wide dc91026: the wide dQ-by-reduction backward (session 32: 2.739
#            vs 2.118 ms at 8B s4096 b2, its fp32 dQ sums missing L2) with its causal tail capped
#            to the L2 and query tiles from the last down, the group's heads inside, so a (batch,
#            kv head) pair's blocks step together over a few tiles of sums;
#   s36wide  that branch with main's row inputs merged in (and in the wide kernel).
# Steps: s36wide's flash tests (the recompute and wide kernels against float64, dropout bits
# included) and memcheck; flash_speed of s31main, s36main, s35desc, s36wide; the Llama block's GPU
# tests of s36main (main's block; the unfused gated refactor) and s36wide (the wide backward in
# the block); LlamaBlock 8B s4096 b2 flash fwd+bwd s31main / s36main / s36wide alternating.
# LLAMA_UNTIL (seconds, default 400): no LlamaBlock run starts after it.
# Run: for a in s34carry s35desc s36carry; do tar -xJf build/$a.tar.xz -C build; done &&
#      bash reports/results/h100/flash_bwd_rows/run.sh
set -uo pipefail
# shellcheck source=SCRIPTDIR/../../call_preamble.sh
source "$(dirname "$0")/../../call_preamble.sh"
W=build/s36wide/bin
timeout 120 "$W/test_kernels" --gtest_filter='*Flash*' >"$R/test_flash.txt" 2>&1
step test_flash $?
speed() {
  timeout 90 "build/$1/bin/flash_speed" --out="$R/flash_speed_$1.jsonl" >"$R/flash_speed_$1.txt" 2>&1
  step "flash_speed $1" $?
}
llama_tests() {
  timeout 120 "build/$1/bin/test_llama_block" --gtest_filter='LlamaGpu*' >"$R/test_llama_$1.txt" 2>&1
  step "test_llama $1" $?
}
# The decisive steps first (a short call may stop after any of them).
speed s31main
speed s36main
speed s36wide
llama_tests s36main
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$W/test_kernels" \
  --gtest_filter='*FlashDqByReduction*:*FlashAgreesWithUnfusedUnderDropout*' \
  >"$R/sanitizer_memcheck.txt" 2>&1
step "sanitizer memcheck" $?
speed s35desc
llama_tests s36wide
passed() { grep -q "^\[  PASSED  \]" "$R/test_flash.txt" && ! grep -q "FAILED" "$R/test_flash.txt"; }
if passed; then
  for build in s31main s36main s36wide s31main s36main s36wide; do
    [ "$SECONDS" -lt "${LLAMA_UNTIL:-400}" ] || break  # each run ~22 s; the call's budget
    timeout 60 "build/$build/bin/xfbench" --xfbench_llama_dtypes=bf16 --xfbench_llama_backends=flash \
      --benchmark_filter='^LlamaBlock/flash/bf16/fwdbwd/seq:4096/batch:2/' \
      --benchmark_out_format=json --benchmark_out="$R/xf_llama_$build.$SECONDS.json" \
      >>"$R/xf_llama.log" 2>&1
    step "llama_8b_flash $build" $?
  done
fi
