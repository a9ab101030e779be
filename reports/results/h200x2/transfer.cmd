# 2x NVIDIA H200 (device tool, nvidia-h200-x2), 2026-11-22: GPUs joined by NV18, PCIe Gen5 x16 each;
# NCCL 2.28.9 (torch venv), NCCL_NVLS_ENABLE=0 as set on the machine, no other NCCL tuning.
# Build: build/transfer (sm_90, carried). Call 1: tests/transfer/device_run.sh h200x2, i.e.
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:$LD_LIBRARY_PATH
build/transfer/bin/test_transfer                       # 17 passed (two-GPU tests included)
# P2P tuning sweep at 1 GiB, one xfbench run per setting (-> transfer_p2p_sweep.json, keyed by name):
#   default | pull: --xfbench_p2p_copy_by=dst | ce2/ce4: --xfbench_p2p_ce_streams=2/4 |
#   sm1/sm4: --xfbench_p2p_blocks_per_sm=1/4
build/transfer/bin/xfbench --benchmark_filter='^P2P/(uni|bi)/peer/(ce|sm)/src:0/dst:1/bytes:1073741824/' [setting]
build/transfer/bin/xfbench --benchmark_filter='^P2P/' --benchmark_out=transfer_p2p.json --benchmark_out_format=json
build/transfer/bin/xfbench --benchmark_filter='^NCCL/([a-z]+/fp32/|allreduce/|[a-z]+/(fp16|bf16)/gpus:2/bytes:(1048576|1073741824)/)' --benchmark_out=transfer_nccl.json --benchmark_out_format=json
# Call 2 (the same warm machine; xfbench and the PyTorch peer side by side):
build/transfer/bin/xfbench --benchmark_repetitions=5 --benchmark_filter='^NCCL/allreduce/fp32/gpus:2/bytes:(1048576|67108864|1073741824|4294967296)/' --benchmark_out=transfer_allreduce.json --benchmark_out_format=json
python3 plugins/transfer/torch_allreduce.py --p2p --out transfer_torch_nccl.json --sizes 1MiB,64MiB,1GiB,4GiB
