#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 20, call E (nvidia-h200-x4): llama-3.1-8b trained with tensor parallelism (issue 38):
# tp:4 and zero2 on all four GPUs, then tp:2 on GPUs 0,1, s4096 b1 bf16, steady protocol, 3
# repetitions; each case validates on its first 2 layers against one GPU (the whole 8B does not
# fit one GPU).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
nvidia-smi topo -m >"$R/topo.txt" 2>&1
X=(--benchmark_repetitions=3 --benchmark_out_format=json --xfbench_train_models=llama-3.1-8b
  --xfbench_train_seqs=4096 --xfbench_train_batches=1
  --benchmark_filter='^TrainStep/fused/llama-3.1-8b/bf16/seq:4096/batch:1/accum:1/ckpt:off/adamw:fused/(tp:[24]|zero2)/gpus:[24]/p2p:on')
timeout 330 $B/xfbench "${X[@]}" --xfbench_train_parallel=tp,zero2 --xfbench_gpus=0,1,2,3 --benchmark_out="$R/tp4.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout $((570 - ($(date +%s) - t0))) $B/xfbench "${X[@]}" --xfbench_train_parallel=tp --xfbench_gpus=0,1 --benchmark_out="$R/tp2.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
