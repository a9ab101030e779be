# H100 80GB HBM3 (device tool, nvidia-h100-x1), 2026-11-22, PCIe Gen5 x16; build: build/transfer
# (cmake -DCMAKE_CUDA_ARCHITECTURES=90 -DXFBENCH_BUNDLE_BENCHMARK=ON, targets xfbench,
# xfbench_plugin_transfer, test_transfer), carried; NCCL 2.28.9 from the torch venv.
# All of it is one call: tests/transfer/device_run.sh h100, i.e.
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:$LD_LIBRARY_PATH
build/transfer/bin/test_transfer                                      # 15 passed, 2 skipped (two-GPU)
build/transfer/bin/xfbench --benchmark_filter='^(Memcpy/|P2P/topology)' --benchmark_out=transfer_memcpy.json --benchmark_out_format=json
build/transfer/bin/xfbench --benchmark_filter='^Memcpy/.*/bytes:268435456/' --benchmark_repetitions=5 --benchmark_out=transfer_memcpy_256MiB.json --benchmark_out_format=json
# PyTorch peer in the same call (torch 2.11; d2d counted read + write like xfbench):
python3 reports/peer_torch.py --families Memcpy --out transfer_torch_memcpy.json
build/transfer/bin/xfbench --benchmark_filter='^NCCL/' --benchmark_out=transfer_nccl_1rank.json --benchmark_out_format=json
compute-sanitizer --tool memcheck --report-api-errors no build/transfer/bin/xfbench --xfbench_iterations=1 --benchmark_filter='^Memcpy/.*/bytes:(4096|1048576)/'   # 0 errors
