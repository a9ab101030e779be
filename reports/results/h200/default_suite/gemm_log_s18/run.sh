#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 18, call C: (1) FP8 GPT-2 accuracy: the loss curves (XFBENCH_LOSSES=1) of gpt2-medium
# s1024 b8 fp8 with dropout 0 (current recipe) and with the default dropout (delayed);
# (2) issue 32: the default suite with XFBENCH_GEMM_LOG=1, then the cases over 1% alone with it.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R/alone"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
G="--xfbench_train_models=gpt2-medium --xfbench_train_seqs=1024 --xfbench_train_batches=8 --xfbench_train_precisions=fp8"
# shellcheck disable=SC2086
XFBENCH_LOSSES=1 timeout 100 $B/xfbench --benchmark_repetitions=1 $G --xfbench_train_dropout_pct=0 \
  --xfbench_train_fp8_recipe=current --benchmark_filter='^TrainStep/' >"$R/losses.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/losses.log"
# shellcheck disable=SC2086
XFBENCH_LOSSES=1 timeout 100 $B/xfbench --benchmark_repetitions=1 $G \
  --benchmark_filter='^TrainStep/' >>"$R/losses.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/losses.log"
start=$(date +%s.%N)
XFBENCH_GEMM_LOG=1 timeout 260 $B/xfbench --benchmark_out="$R"/suite.json --benchmark_out_format=json >"$R"/suite.log 2>&1
end=$(date +%s.%N)
echo "default suite wall: $(python3 -c "print(round($end - $start, 1))") s" >"$R"/wall.txt
i=0
for name in 'TrainStep/fused/bert-large/bf16/seq:128/batch:64' 'TrainStep/fused/gpt2-medium/bf16/seq:1024/batch:8' \
  'T5Decoder/fused/fp16/fwdbwd/seq:512/batch:64' 'Matmul/bf16/NN/m:8192/n:8192/k:8192'; do
  i=$((i + 1))
  if [ $(($(date +%s) - t0)) -gt 540 ]; then echo "stopped before $name: time" >>"$R/alone.log"; break; fi
  XFBENCH_GEMM_LOG=1 timeout 50 $B/xfbench --benchmark_filter="^${name}/" --benchmark_out="$R/alone/$i.json" \
    --benchmark_out_format=json >>"$R/alone.log" 2>&1
done
echo "total $(($(date +%s) - t0)) s" >>"$R/wall.txt"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
