# Matmul on nvidia-h100-x1 (NVIDIA H100 80GB HBM3, driver 580.159.04, power limit 700 W), 2026-11-22.
# cuBLASLt 13.1.0 on both sides (xfbench: /usr/local/cuda; torch 2.11.0+cu130: its own nvidia/cu13 copy).
# Build (here, carried to the device in build/matmul):
cmake -S . -B build/matmul -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DXFBENCH_BUNDLE_BENCHMARK=ON
cmake --build build/matmul -j2 --target test_matmul xfbench_plugin_matmul xfbench
# Device command (one call): test_matmul + compute-sanitizer, then torch pass 1, xfbench pass 1,
# torch pass 2, xfbench pass 2 on the same 73 default case names, then the sweep:
plugins/matmul/device_run.sh build/matmul 'Matmul/' bf16,fp16,fp8
#   = python3 plugins/matmul/torch_peer.py run --names <names> --out matmul_torch_{1,2}.json
#     build/matmul/bin/xfbench --benchmark_filter=Matmul/ --benchmark_out=matmul_xfbench_{1,2}.json --benchmark_out_format=json
#     build/matmul/bin/xfbench --benchmark_filter=Matmul/sweep/ --xfbench_matmul_sweep=bf16,fp16,fp8 --benchmark_out=matmul_sweep.json --benchmark_out_format=json
# Table (medians of the two passes per side, ratios, sweep bests):
python3 plugins/matmul/torch_peer.py compare --ours reports/results/h100/matmul_xfbench_*.json reports/results/h100/matmul_sweep.json --peer reports/results/h100/matmul_torch_*.json
