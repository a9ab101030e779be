# H100 80GB HBM3 (device tool), 2026-11-22, build: cmake --preset device (sm_90), carried build folder.
build/dev/bin/xfbench --benchmark_filter='^Vector/' --benchmark_repetitions=5 --benchmark_out=vector.json --benchmark_out_format=json
# PyTorch peer in the same call (torch 2.11):
python3 reports/peer_torch.py --families Vector --out vector_torch.json
