# Where one gpt2-xl block's fwd+bwd spends its time, kernel by kernel, bf16 against fp8 (recipe
# delayed), at the training step's shape (seq 1024, batch 8; the step runs 48 of them): ncu with
# --profile-from-start off (since 06d76ce the SDK opens the capture around the timed launches
# only), --clock-control none, 400 launches each, hot mode, not validated. One NVIDIA H100 80GB
# HBM3, session 26, 2026-12-07 (second call on that machine; main 06d76ce).
#   bash run.sh -> bf16_kernels.csv, fp8_kernels.csv (id, kernel, grid, block, ns; trimmed from
#                  ncu's --csv --page raw), bf16.txt, fp8.txt (the host's output), ncu.txt
# ncu serialises kernels (the backward's side stream overlaps nothing here), so the sums are a
# little above the block's time.
#
# Per fwd+bwd (python3 -m reports kernels bf16_kernels.csv fp8_kernels.csv: bf16 31 kernels, 12
# whole iterations; fp8 45 kernels, 8), microseconds:
#                       bf16    fp8
#   products (GEMM)     2042   1170   (1.75x)
#   attention (cuDNN)    571    568   (bf16 in both, as TransformerEngine)
#   activations (GELU)   172    171
#   FP8 casts, transposes, scale update
#                          -    428   (weights 64, x/dy cast_transpose 214, FP8 transposes 80,
#                                      attention output cast 14, update_delayed_kernel 56: one warp)
#   norms                183    193
#   column sums (bias gradients, dropout backward)
#                        158    161
#   other element-wise    27     26
#   sum                 3153   2717   (1.16x)
# The fp8 block's largest kernels besides the products and attention: BiasGeluBackward 104 us, then
# dpre's cast_transpose 83 us and its column sum (FC1's bias gradient) 62 us: three passes over the
# 8192x6400 gradient that TransformerEngine does in one (cast_transpose_dbias_dgelu); dqkv's
# cast_transpose 62 + column sum 51; the scale update 56 us in a single warp.
