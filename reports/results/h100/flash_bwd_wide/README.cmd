# Session 32, one call on one H100 (NVIDIA H100 80GB HBM3, nvidia-h100-x1): branch flash-bwd-wide
# 2556217's build as build/s31wide and main 009c94b's as build/s31main (archive build/s33carry.tar.xz):
#   tar -xJf build/s33carry.tar.xz -C build && bash reports/results/h100/flash_bwd_wide/run.sh
# test_flash.txt 24/24 (the wide dQ-by-reduction backward, the head-dim-64 ping-pong forward and the
# exp2-polynomial forward against float64), sanitizer_memcheck 0 errors, racecheck 0 hazards.
# flash_speed.jsonl (ms, alternating, best of 3 x 20; causal bf16):
#   head dim 128 backward, recompute / dq:reduce (wide) / cuDNN: 8B s4096 b2 2.118 / 2.739 / 1.538;
#     8B s8192 b1 4.331 / 4.380 / 2.756; 3B s4096 b1 0.776 / 0.867 / 0.640: the wide kernel is slower.
#   head dim 64 forward, lockstep (flash) / ping-pong / exp2 poly / cuDNN: 1B s2048 b4 0.206 / 0.204 /
#     0.211 / 0.179; s4096 0.754 / 0.728 / 0.773 / 0.625; s8192 2.904 / 2.812 / 3.044 / 2.411;
#     gpt2-medium b64 0.458 / 0.476 / 0.469 / 0.389; b8 0.0638 / 0.0663 / 0.0646 / 0.0593.
#     exp2 poly 2-5% slower everywhere; ping-pong 3% faster at the 1B GQA shapes, 4% slower at GPT-2.
# xf_llama_*.json: LlamaBlock llama-3.1-8b s4096 b2 flash bf16 fwd+bwd, steady protocol, main /
#   wide alternating: 631.5, 626.9 / 617.6, 618.6 TFLOPS: the wide backward 1.6% slower in the block.
# ncu_flash/: the wide kernel alone (serialised): 2.33 ms, DRAM 2.20 TB/s (65.5%), issue slots 19.6%,
#   one block an SM: its fp32 dQ sums (134 MB at this shape) do not stay in the 50 MB L2, so the
#   bulk reduce-adds go to DRAM. (The recompute kernel's regex matched nothing.)
# gpt2_h4096.json (issue 34): GPT2Block hidden 4096 heads 32 seq 2048 batch 8 fused fwd+bwd, 3
#   repetitions, medians: bf16 35.45 ms (604.8 TFLOPS), fp8 delayed 22.23 ms (964.5): 1.595x.
# test_llama_wide.txt: LlamaGpu* 4/4 with the wide backward in the block; test_llama_fp8.txt (main's
#   build): LlamaGpuFp8.* 2/2, the head-dim-24 RoPE fallback (009c94b) included.
