# Where a llama-3.1-8b block's fwd+bwd (seq 4096, batch 2, fused, recipe delayed) spends its time,
# kernel by kernel, bf16 against fp8: ncu with --profile-from-start off (the SDK opens the capture
# around the timed launches only), --clock-control none, 400 launches each, hot mode, not
# validated. One NVIDIA H100 80GB HBM3, session 29, 2026-12-07 (the first call of the session;
# the branch build of ../../flash_split/, whose FP8 code is main 9d07b94's):
#   B=build/s29flash/bin NCU_S=110 bash run.sh -> bf16_kernels.csv, fp8_kernels.csv (id, kernel,
#   grid, block, ns; trimmed from ncu's --csv --page raw), bf16.txt, fp8.txt, ncu.txt
#   python3 -m reports kernels bf16_kernels.csv fp8_kernels.csv
# Per iteration, serialised (the side stream's overlap lost): bf16 16.70 ms, fp8 11.40 ms (1.46x).
#   products 13.47 -> 7.29 ms (1.85x), attention 2.00 -> 2.00 (cuDNN bf16 in both), activations
#   0.64 -> 0.55, FP8 casts, transposes and scales 0 -> 1.03 ms (9%), norms 0.35, other 0.22 -> 0.18.
# The 1.03 ms: the weights' casts with their transposes (W_gate_up 183 us, W_down 95, W_qkv 44,
#   W_o 31: once a step, as TransformerEngine), transposes of FP8 bytes in the backward 384 us
#   (the gated FFN's output act [8192, 14336] 107 us for W_down's weight gradient, the gated
#   backward's dpre [8192, 28672] 210 us for W_gate_up's, the two norms' outputs 33 + 34 us), casts
#   of bf16 gradients with transposes 186 us (dy of W_down and W_o, dqkv after RoPE's backward).
# What could follow: the producers writing those transposes themselves (the gated forward act's,
#   as the GELU's forward already does; the gated backward dpre's, with wout's gradient copies in a
#   dy slot of their own so it need not wait for wout's weight gradient; RoPE's backward writing
#   wqkv's dy and dyᵀ from the rotated heads' gradient): written in session 29, not yet run on a
#   GPU (no device time was left).
