# llama-3.1-8b trained across GPUs (issue 38), 4x NVIDIA H200 (nvidia-h200-x4, NV18 between every
# pair), session 20, 2026-11-28, one call: bash run.sh (439 s wall). bf16, s4096, batch 1 per
# GPU (tp: the batch the GPUs share), fused AdamW, no checkpointing, steady protocol, 3
# repetitions, medians (cv 0.16-0.5%). Each case validated on the model's first 2 of 32 layers
# against one GPU (the whole 8B, 16 bytes a parameter, does not fit one GPU); labels in xf.log.
#   zero2, 4 GPUs: 401.0 ms a step of 4 samples, 9.97 samples/s (40.9k tokens/s), 525.7 TFLOPS
#     and 53.1% MFU per GPU, 77.0 GB per GPU; gradient reduce-scatters 65.9 ms, 69.5% hidden.
#   tp:4: 150.3 ms a step of 1 sample, 6.65 samples/s, 350.6 TFLOPS and 35.4% MFU per GPU,
#     54.5 GB per GPU; the blocks' all-reduces 33.8 ms, on the compute stream (none hidden).
#   tp:2 (GPUs 0,1): 236.7 ms, 4.22 samples/s, 445.3 TFLOPS and 45.0% MFU per GPU, 86.1 GB.
#   tp:2 -> tp:4: 1.57x the samples/s on 2x the GPUs (0.79 of linear): tp's all-reduces grow
#     with the GPUs while each GPU's products shrink.
