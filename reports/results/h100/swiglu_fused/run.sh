#!/usr/bin/env bash
# Issue 33 (and 36): Llama's SwiGLU in the products' epilogues (branch swiglu-fused:
# gemm_fused.hpp's gated, gated_aux and dgated products; the block's ffn_products for gated FFNs).
# One call on one H100, the branch's build carried as build/s33swiglu (bin/test_kernels,
# test_llama_block, test_bert_layer, ffn_products_speed, xfbench; lib/ with the plugins) beside
# main's build/s31main:
#   the fused products' tests (FusedGemmGpu.*: the gated forward and backward against float64 at
#   each gate, partial tiles in m, n and k; the GELU ones as before), memcheck on the gated ones,
#   the blocks' (LlamaGpuFfnProducts.*: the layer and the MLP with fused products against float64,
#   and the plan-time choice; BERT's GELU ones as before), ffn_products_speed (fused against
#   unfused at the Llama 8B/3B/1B MLP shapes and the GELU ones), then LlamaBlock llama-3.1-8b s4096
#   b2 fused bf16 forward and forward+backward: the branch (ffn_products=search, its label names the
#   choice) against main's build, alternating, steady protocol.
# Run: bash reports/results/h100/swiglu_fused/run.sh
set -uo pipefail
# shellcheck source=SCRIPTDIR/../../call_preamble.sh
source "$(dirname "$0")/../../call_preamble.sh"
B=build/s33swiglu/bin
timeout 120 "$B/test_kernels" --gtest_filter='FusedGemm*:ChooseFaster*' >"$R/test_fused.txt" 2>&1
step test_fused $?
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$B/test_kernels" \
  --gtest_filter='FusedGemmGpu/1.Gated*' >"$R/sanitizer_memcheck.txt" 2>&1
step "sanitizer memcheck" $?
timeout 120 "$B/test_llama_block" --gtest_filter='LlamaGpuFfnProducts.*:LlamaGpuParts.*' \
  >"$R/test_llama.txt" 2>&1
step test_llama $?
timeout 90 "$B/test_bert_layer" --gtest_filter='*FfnProducts*' >"$R/test_bert.txt" 2>&1
step test_bert $?
timeout 120 "$B/ffn_products_speed" --out="$R/speed.jsonl" >"$R/speed.txt" 2>&1
step ffn_products_speed $?
passed() { grep -q "^\[  PASSED  \]" "$R/test_llama.txt" && ! grep -q "FAILED" "$R/test_llama.txt"; }
if passed; then
  for build in s31main s33swiglu s31main s33swiglu; do
    timeout 90 "build/$build/bin/xfbench" --xfbench_llama_dtypes=bf16 --xfbench_llama_backends=fused \
      --benchmark_filter='^LlamaBlock/fused/bf16/.*/seq:4096/batch:2/' \
      --benchmark_out_format=json --benchmark_out="$R/xf_llama_$build.$SECONDS.json" \
      >>"$R/xf_llama.log" 2>&1
    step "llama_8b $build" $?
  done
fi
# If the call has the time: the llama-3.2-1b training step (s4096 b4 bf16, its layers' FFN choice
# in the label) on the branch and on main, once each.
if passed && [ "$SECONDS" -lt 400 ]; then
  for build in s33swiglu s31main; do
    timeout 95 "build/$build/bin/xfbench" \
      --benchmark_filter='^TrainStep/fused/llama-3.2-1b/bf16/seq:4096/batch:4/' \
      --benchmark_out_format=json --benchmark_out="$R/xf_train_$build.json" >>"$R/xf_train.log" 2>&1
    step "train_1b $build" $?
  done
fi
