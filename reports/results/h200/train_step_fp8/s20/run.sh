#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 20, call B1, issue 34's training targets: TrainStep bf16 and fp8 (delayed) at
# llama-3.2-3b s4096 b1 and gpt2-xl s1024 b2 (target fp8 >= 1.35x bf16 samples/s), steady
# protocol, 3 repetitions; fp8 validates its loss after 30 and 200 steps against two bf16 runs.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
X=(--benchmark_repetitions=3 --benchmark_out_format=json --xfbench_train_precisions=bf16,fp8)
F=(--benchmark_filter='^TrainStep/fused/.*/ckpt:off/adamw:fused/iter')
XFBENCH_LOSSES=1 timeout 330 $B/xfbench "${X[@]}" "${F[@]}" --xfbench_train_models=llama-3.2-3b \
  --xfbench_train_seqs=4096 --xfbench_train_batches=1 --benchmark_out="$R/train_llama.json" >"$R/xf_llama.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf_llama.log"
XFBENCH_LOSSES=1 timeout $((570 - ($(date +%s) - t0))) $B/xfbench "${X[@]}" "${F[@]}" --xfbench_train_models=gpt2-xl \
  --xfbench_train_seqs=1024 --xfbench_train_batches=2 --benchmark_out="$R/train_gpt2.json" >"$R/xf_gpt2.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf_gpt2.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
