# Issue 38 on 2x NVIDIA H200 (nvidia-h200-x2), session 20, 2026-11-28, one call: bash run.sh
# (127 s wall). bf16, s4096, fused AdamW, no checkpointing, steady protocol, 3 repetitions, medians.
#   llama-3.1-8b zero3 on 2 GPUs, batch 1 per GPU: 401.17 ms a step of 2 samples, 4.99 samples/s,
#     525.5 TFLOPS and 53.1% MFU per GPU, 88.8 GB per GPU; collectives 128 ms, 96.6% hidden;
#     validated on its first 2 of 32 layers against one GPU with 2x the batch (master weights
#     after 3 steps rel L2 1.2e-4). On 4 H200s (../../h200x4/train_step_llama_8b/zero3/, another
#     machine): 10.18 samples/s, 54.2% MFU, 57.8 GB: 2.04x the samples/s on 2x the GPUs (the
#     same work per GPU, its collectives hidden; the machines differ by ~1%).
#   llama-3.2-3b on one of the GPUs, batch 2: 333.04 ms, 6.005 samples/s, 578.1 TFLOPS, 58.4% MFU,
#     74.9 GB (batch 1, one H200, ../../h200/train_step_fp8/s20/: 5.48 samples/s, 53.3%, 63.9 GB).
