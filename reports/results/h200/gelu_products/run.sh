#!/usr/bin/env bash
# Session 22, call B: fused GELU products with the cheaper GELU math — kernel tests, speed against
# unfused, the layers' choice (labels) and before/after, alternating processes. Results in r.tgz.
set -u
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:$PWD/build/device/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
B=build/device/bin
trap 'tar -czf $OUT/r.tgz -C $OUT r' EXIT
nvidia-smi -L > "$R/gpu.txt"
start=$SECONDS
t() { echo "rc=$? t=$((SECONDS-start))"; }
timeout 120 $B/test_kernels --gtest_filter='*FusedGemm*:*Elementwise*:*Gated*:*Activation*' > "$R/test_kernels.txt" 2>&1; t >> "$R/test_kernels.txt"
timeout 90 $B/gelu_products_speed --out="$R/speed.jsonl" > "$R/speed.txt" 2>&1; t >> "$R/speed.txt"
timeout 100 $B/test_bert_layer --gtest_filter='*FfnProducts*:Parts/BertGpu.*' > "$R/test_bert.txt" 2>&1; t >> "$R/test_bert.txt"
timeout 100 $B/test_gpt2_block --gtest_filter='*Gpu*' > "$R/test_gpt2.txt" 2>&1; t >> "$R/test_gpt2.txt"
X=("$B/xfbench" --benchmark_repetitions=3 --benchmark_out_format=json)
for i in 1 2; do
  for mode in unfused search; do
    [ $((SECONDS-start)) -gt 400 ] && break 2
    timeout 100 "${X[@]}" --benchmark_filter='^BertLayer/fused/fp16/(fwd|fwdbwd)/seq:512/batch:64/' \
      --xfbench_bert_ffn_products=$mode --benchmark_out="$R/bert_${mode}_$i.json" > "$R/bert_${mode}_$i.txt" 2>&1
    timeout 100 "${X[@]}" --benchmark_filter='^GPT2Block/fused/(fp16/fwdbwd/seq:1024/batch:64|bf16/fwdbwd/seq:1024/batch:8)/' \
      --xfbench_gpt2_ffn_products=$mode --benchmark_out="$R/gpt2_${mode}_$i.json" > "$R/gpt2_${mode}_$i.txt" 2>&1
  done
done
echo "total $((SECONDS-start)) s" > "$R/done.txt"
