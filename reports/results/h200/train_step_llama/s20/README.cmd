# The causal LM head in chunks (issue 38, 2ad4539): TrainStep llama-3.2-1b s4096 b4 bf16 on one
# NVIDIA H200, session 20, 2026-11-28, in the call of ../../llama_block_fp8/s20/run.sh (its last
# command; its GPU test ChunkedHeadGivesTheSameGradients passed in the same call).
#   15.88 samples/s, 586.9 TFLOPS (59.3% MFU), 43.2 GB: the logits of one chunk of 4,096 rows
#   (1.05 GB) instead of the micro-batch's 16,384 (4.2 GB). Before the chunks (one H100, session
#   15): 15.62 samples/s, 46.3 GB.
