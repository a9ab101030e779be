#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 20, call F (nvidia-h200-x4), issue 38: ZeRO-3 (sharded weights) tests on two GPUs,
# then llama-3.1-8b zero2 and zero3 on 4 GPUs beside the PyTorch peer (FSDP SHARD_GRAD_OP and
# FSDP2 fully_shard) in the same call, s4096, batch 1 per GPU, bf16.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
left() { local l=$((575 - ($(date +%s) - t0))); echo $((l > 1 ? l : 1)); }
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
timeout 90 $B/test_parallel >"$R/tests.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/tests.log"
timeout 40 $B/test_train_step --gtest_filter='*Chunked*:*Llama*:*Accumulation*' >>"$R/tests.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/tests.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|^rc=|Failure|zero3|zero2 vs|master rel" "$R/tests.log" >"$R/tests_summary.txt"
timeout 200 $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json --xfbench_train_models=llama-3.1-8b \
  --xfbench_train_seqs=4096 --xfbench_train_batches=1 --xfbench_train_parallel=zero2,zero3 --xfbench_gpus=0,1,2,3 \
  --benchmark_filter='^TrainStep/fused/llama-3.1-8b/bf16/seq:4096/batch:1/accum:1/ckpt:off/adamw:fused/zero[23]/gpus:4/p2p:on' \
  --benchmark_out="$R/xf_8b.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout "$(left)" python3 -m torch.distributed.run --nproc-per-node=4 reports/peer_torch.py --families TrainStep \
  --train-models llama-3.1-8b --gpus 4 --repetitions 3 --out "$R/torch_8b.json" >"$R/peer.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/peer.log"
python3 -m reports compare "$R/torch_8b.json" "$R/xf_8b.json" --match-backend torch-sdpa=fused >"$R/compare.txt" 2>&1
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
