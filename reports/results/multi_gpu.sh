#!/bin/sh
# The multi-GPU runs of issues #20 (two GPUs) and #19 (four and eight), one part per device call
# (each part fits the 10-minute limit on 2x H200; on 4 and 8 split `train` by model and `scaling`
# by GPU count):
#
#   sh reports/results/multi_gpu.sh <part> <out dir> <build dir with bin/, lib/> [N] [counts|model]
#
# Times on 2x H200 (2026-11-27, reports/results/h200x2/train_step/README.cmd): tests ~20 s;
# train 414 s (8 cases x 3 repetitions, validated); train-off > 200 s validated, 86 s with
# --xfbench_validate=false; peer 181 s. On 4x H200 (reports/results/h200x4/README.cmd): tests
# 77 s, p2p 162 s, nccl 358 s. The device tool brings back at most 8 files per call.
#
#   tests       the multi-GPU tests (test_parallel, test_tensor_parallel, test_transfer,
#               test_nccl_wait, test_burn) and the inventory (xfbench --xfbench_devices, nvidia-smi)
#   p2p         P2P uni/bi, peer/nopeer, latency for every ordered pair; a 5th argument picks the
#               cases after "P2P/" (a regex): on 4 GPUs all took 162 s, most of it the latency
#               through the host (up to the 10 s time-out each), so on 8 run '(uni|bi)/', then
#               'latency/.*/src:[0-3]/' and 'latency/.*/src:[4-7]/' (p2p_<n>.json each)
#   nccl        NCCL all-reduce, all-gather, reduce-scatter, all-to-all fp32 8 B..4 GiB on all GPUs,
#               then torch.distributed on the same cases (reports/peer_torch.py under torchrun):
#               both sides in one call, as a ratio needs
#   train       TrainStep BERT-large s128 b64 and gpt2-large s1024 b4: the one-GPU case, then dp,
#               zero2 and tp over all GPUs, NVLink/P2P on (3 repetitions); a 5th argument, bert
#               or gpt2, runs one model (on 4 GPUs each took 265 s and 313 s: one per call)
#   train-off   the same multi-GPU cases with NCCL_P2P_DISABLE=1 (`p2p:off`, the seeds' NVLink off;
#               one repetition, 5th argument as train; gpt2 on 4 GPUs needs more than 150 s)
#   scaling     dp and zero2 on 1, 2, 4, ... N GPUs (N: the 4th argument, default all visible;
#               a 5th argument picks the counts, e.g. "1 2" then "4": one xfbench run of ~3 minutes
#               each, validation included, so a call of 10 minutes holds about three)
#   peer        torchrun DDP / FSDP (ZeRO-2) on the same TrainStep names, P2P on and off
#   mpi         the MPI build (cmake --preset mpi, sm_90; its folder as the build dir) under mpirun,
#               one rank per GPU: NCCL all-reduce 1 MiB / 1 GiB and TrainStep BERT-large dp
#               (mpirun must work there: an Open MPI of the same major version as the build's)
#
# JSON lands in <out dir> as <part>*.json. NVLink multicast stays off (NCCL_NVLS_ENABLE=0).
set -u
part=$1 out=$2 build=$3
bin=$build/bin
torch_libs=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH="$torch_libs/cudnn/lib:$torch_libs/nccl/lib:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=0
gpus=${4:-$(nvidia-smi -L | wc -l)}
all=$(seq -s, 0 $((gpus - 1)))
bert=bert-large/bf16/seq:128/batch:64 gpt2=gpt2-large/bf16/seq:1024/batch:4
case ${5:-} in
bert) models=$bert ;;
gpt2) models=$gpt2 ;;
*) models="($bert|$gpt2)" ;;
esac
models="$models/accum:1/ckpt:off/adamw:fused"

case $part in
tests)
  nvidia-smi topo -m > "$out/topo.txt" 2>&1
  "$bin/xfbench" --xfbench_devices > "$out/devices.txt" 2>&1
  for t in test_parallel test_tensor_parallel test_transfer test_nccl_wait test_burn; do
    timeout 240 "$bin/$t" --gtest_brief=1 >> "$out/tests.log" 2>&1
    echo "$t rc=$?" | tee -a "$out/tests.log"
  done ;;
p2p)
  n=$(find "$out" -maxdepth 1 -name "p2p*.json" | wc -l)
  timeout 580 "$bin/xfbench" --benchmark_filter="^P2P/${5:-}" --xfbench_gpus="$all" \
    --xfbench_p2p_sizes=256MiB --benchmark_out="$out/p2p${5:+_$n}.json" --benchmark_out_format=json ;;
nccl)
  sizes=8B,1KiB,64KiB,1MiB,16MiB,64MiB,256MiB,1GiB,4GiB
  timeout 270 "$bin/xfbench" --benchmark_filter="^NCCL/(allreduce|allgather|reducescatter|alltoall)/fp32/gpus:$gpus/" \
    --xfbench_gpus="$all" --xfbench_nccl_dtypes=fp32 --xfbench_nccl_sizes="$sizes" \
    --benchmark_out="$out/nccl.json" --benchmark_out_format=json
  timeout 270 torchrun --nproc-per-node="$gpus" reports/peer_torch.py --families NCCL \
    --nccl-ops allreduce,allgather,reducescatter,alltoall --nccl-dtypes fp32 --repetitions 1 \
    --nccl-sizes "$sizes" --out "$out/nccl_torch.json" ;;
train)
  timeout 580 "$bin/xfbench" --xfbench_gpus="$all" --benchmark_repetitions=3 \
    --benchmark_filter="^TrainStep/fused/$models(/(dp|zero2|tp:$gpus)/gpus:$gpus/p2p:on)?/iterations" \
    --benchmark_out="$out/train${5:+_$5}.json" --benchmark_out_format=json ;;
train-off)
  NCCL_P2P_DISABLE=1 timeout 580 "$bin/xfbench" --xfbench_gpus="$all" \
    --benchmark_filter="^TrainStep/fused/$models(/(dp|zero2|tp:$gpus)/gpus:$gpus/p2p:off)?/iterations" \
    --benchmark_out="$out/train_off${5:+_$5}.json" --benchmark_out_format=json ;;
scaling)
  counts=${5:-}
  if [ -z "$counts" ]; then
    n=1
    while [ "$n" -le "$gpus" ]; do counts="$counts $n"; n=$((n * 2)); done
  fi
  for n in $counts; do
    timeout 280 "$bin/xfbench" --xfbench_gpus="$(seq -s, 0 $((n - 1)))" \
      --xfbench_train_parallel=dp,zero2 \
      --benchmark_filter="^TrainStep/fused/$models(/(dp|zero2)/gpus:$n/p2p:on)?/iterations" \
      --benchmark_out="$out/scaling_gpus$n.json" --benchmark_out_format=json
  done ;;
peer)
  timeout 280 torchrun --nproc-per-node="$gpus" reports/peer_torch.py --families TrainStep \
    --gpus "$gpus" --repetitions 3 --out "$out/peer.json"
  NCCL_P2P_DISABLE=1 timeout 280 torchrun --nproc-per-node="$gpus" reports/peer_torch.py \
    --families TrainStep --gpus "$gpus" --repetitions 1 --out "$out/peer_off.json" ;;
mpi)
  timeout 580 mpirun -np "$gpus" --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE \
    "$bin/xfbench" --benchmark_filter="^(NCCL/allreduce/fp32/gpus:$gpus/bytes:(1048576|1073741824)|TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/dp/gpus:$gpus/p2p:on)/" \
    --benchmark_out="$out/mpi.json" --benchmark_out_format=json ;;
*)
  echo "unknown part '$part': tests, p2p, nccl, train, train-off, scaling, peer or mpi" >&2
  exit 2 ;;
esac
