# Session 28 (2026-12-07), one call on one NVIDIA H100 80GB HBM3 (nvidia-h100-x1): ROUNDS=1 bash
# run.sh (after ../flash_s28/run.sh in the same call). "branch": one build of main 02039fb +
# norm-rms-sums (landed as ede8cff, dc6442c) + colsum-rows (NOT landed: colsum_rows.patch) +
# flash-dq-reduce + flash-fwd-overlap; "main": kernel_bandwidth and libraries of main 02039fb.
# test_kernels '*Norm*:*norm*' on the branch build: 34/34 passed (test_norm.txt).
# kernel_bandwidth us (main -> branch), one alternation main, branch:
#   rmsnorm_backward bf16 N=32768 C=1024       88.12 ->  82.55  -6.3%   (fp16 87.50 -> 82.57 -5.6%)
#   rmsnorm_backward bf16 N=8192 C=4096       115.92 ->  91.03 -21.5%   (Llama 8B width)
#   rmsnorm_backward bf16 N=8192 C=8192       315.50 -> 185.37 -41.2%   (Llama 70B width)
#   layernorm_backward(+dresidual) bf16 C=1024 121.35 -> 101.54 -16.3%  (fp16 -16.0%)
#   layernorm_backward bf16 C=1024             88.72 ->  86.91  -2.0%   (fp16 -1.7%)
#   the fused bias/dropout/residual LayerNorm backward lines and every forward: within +-0.7%.
# norm-rms-sums (RMSNorm backward without the bias sums; LayerNorm's dxbias sums only where
# wanted and, then, the residual gradient loaded before the row's sums): landed.
# colsum-rows (the column-sum passes two rows a thread, all loads before the stores):
#   bias_gelu_backward(erf,dbias) bf16 C=4096  286.36 -> 327.27 +14.3%  (tanh +15.2%, fp16 +13%)
#   dropout_bias_backward bf16 C=1024           57.17 ->  57.71  +0.9%  (fp16 +1.2%)
#   bias_backward bf16 C=1024                   34.54 ->  33.02  -4.4%  (fp16 -3.6%)
# slower where it was aimed (the GELU backward with its bias gradient, the largest of them; not
# profiled: two rows' values held across the GELU's arithmetic are the likely cost). Not landed.
