#!/usr/bin/env bash
# Session 22, call C: the GELU math (kernels/detail/gelu.cuh: A-S erf and exp-based tanh) against
# the previous erff/tanhf, the same build otherwise (.carry/oldlib: libxfbench_kernels.so with the
# old gelu.cu and activation.cu objects), the FFN products unfused in both, alternating processes.
set -u
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
BASE=$T/cudnn/lib:$T/nccl/lib:$PWD/build/device/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT
nvidia-smi -L > "$R/gpu.txt"
start=$SECONDS
F='^(BertLayer/fused/fp16/(fwd|fwdbwd)/seq:512/batch:64|GPT2Block/fused/fp16/fwdbwd/seq:1024/batch:64)/'
for i in 1 2 3; do
  for v in old new; do
    [ $((SECONDS-start)) -gt 250 ] && break 2
    lib=$BASE; [ "$v" = old ] && lib=$PWD/.carry/oldlib:$BASE
    LD_LIBRARY_PATH=$lib timeout 100 build/device/bin/xfbench --benchmark_repetitions=3 \
      --benchmark_out_format=json --benchmark_filter="$F" --xfbench_bert_ffn_products=unfused \
      --xfbench_gpt2_ffn_products=unfused --benchmark_out="$R/${v}_$i.json" > "$R/${v}_$i.txt" 2>&1
  done
done
echo "total $((SECONDS-start)) s" > "$R/done.txt"
