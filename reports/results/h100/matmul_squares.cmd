# H100 80GB HBM3, 2026-11-22, after cublasGemmEx joined the algorithm search as one more candidate.
# Same call: torch pass 1, xfbench pass 1, torch pass 2, xfbench pass 2 on the 12 squares >= 2048:
plugins/matmul/device_run.sh build 'Matmul/(bf16|fp16|tf32)/NN/m:(2048|4096|8192|16384)/' ''
# -> matmul_squares_{xfbench,torch}_{1,2}.json; table (medians of the two passes): matmul_squares_compare.txt
# 9 of 12 at or above torch; the others 0.973 (tf32 8192), 0.994 (bf16 2048), 0.995 (bf16 8192).
# Spread between the two xfbench passes of one case reaches 3.3% (tf32 8192: 385.0 vs 372.7).
