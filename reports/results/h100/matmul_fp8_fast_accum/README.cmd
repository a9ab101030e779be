# Session 25 (2026-12-07), one NVIDIA H100 80GB HBM3, the call after ../train_step_llmc/ on the
# same warm machine, main c6a5384 (device preset). Steady protocol, one repetition:
#   for f in false true; do build/device/bin/xfbench --xfbench_matmul_sweep=fp8 \
#     --xfbench_matmul_sweep_m=4096,8192 --xfbench_matmul_sweep_n=12288,16384 \
#     --xfbench_matmul_sweep_k=8192 --benchmark_filter='^Matmul/sweep/' \
#     --xfbench_matmul_fp8_fast_accum=$f --benchmark_out_format=json \
#     --benchmark_out=sweep_fast_$f.json > log_$f.txt 2>&1; done
# TFLOPS (all at the 700 W cap, sw_power_cap, SM 1.26-1.35 GHz):
#   m x n x k (NT)          fp8     fp8 accum:fast
#   4096 x 12288 x 8192    1257.4      1331.9
#   4096 x 16384 x 8192    1249.2      1330.9
#   8192 x 12288 x 8192    1246.7      1372.6
#   8192 x 16384 x 8192    1251.8      1363.1
# Fast accumulation +5.5..10%; the best, 1372.6, is 2% short of issue 34's 1,400 in the steady
# state (the 2026-11-22 hot-burst sweep, ../matmul_sweep.json, reached 1381.4 without it).
