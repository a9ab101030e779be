#!/usr/bin/env bash
# shellcheck disable=SC2129  # one redirect a line: each step as it ran
# Session 14, device call D: GPU tests of the Llama parts and the faster float64 reference, the
# parts at the headline shape, llama-3.2-1b flash vs cuDNN attention at seq 2048 and 8192, and the
# default suite's two LlamaBlock cases timed end to end (validation included).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$OUT/gpu.txt"
L="$OUT/tests.log"
run() { echo "=== $*" >>"$L"; timeout 200 "$@" >>"$L" 2>&1; echo "rc=$?" >>"$L"; }
run $B/test_llama_block
run $B/test_bert_layer
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|^===|Failure|worst|skipped|  (attention|ffn|norm_qkv) " "$L" | head -80 >"$OUT/tests_summary.txt"
s=$(date +%s.%N)
timeout 60 $B/xfbench --benchmark_filter='^LlamaBlock/fused/bf16/fwd(bwd)?/seq:4096/batch:2/' \
  --benchmark_out="$OUT/llama_default.json" --benchmark_out_format=json >"$OUT/xf.log" 2>&1
echo "LlamaBlock default cases wall: $(python3 -c "print(round($(date +%s.%N) - $s, 1))") s" >>"$OUT/xf.log"
timeout 120 $B/xfbench --benchmark_filter='^LlamaBlock/part:' --xfbench_llama_dtypes=bf16 \
  --benchmark_out="$OUT/llama_parts.json" --benchmark_out_format=json >>"$OUT/xf.log" 2>&1
timeout 150 $B/xfbench --xfbench_llama_model=llama-3.2-1b --xfbench_llama_seqs=2048,8192 \
  --xfbench_llama_batches=4 --xfbench_llama_dtypes=bf16 --xfbench_llama_backends=fused,flash \
  --benchmark_filter='^LlamaBlock/(fused|flash)/' \
  --benchmark_out="$OUT/llama1b_seqs.json" --benchmark_out_format=json >>"$OUT/xf.log" 2>&1
