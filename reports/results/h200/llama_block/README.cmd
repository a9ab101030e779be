# LlamaBlock, first GPU run (session 14, 2026-11-28): device call A landed on one NVIDIA H200
# (141 GB; the run tool gave an H200 for the default kind), main + the Llama change.
#   bash run1.sh   (the script beside this file; build/device carried)
# GPU tests: test_rope 19/19, test_kernels *Attention*:*Norm* 62/62 (GQA in the three backends,
# norms up to 8192 wide), test_t5_kernels 12/12 (gated GELU and SiLU), test_llama_block 18/18,
# test_gpt2_block 24/24 (gpu_tests_summary.txt).
# xfbench (steady protocol, 3 repetitions, medians; TFLOPS by the README's rule, power-capped):
#   llama-3.1-8b s4096 b2 bf16   fwd / fwd+bwd: fused 680.2 / 652.6, unfused 499.8 / 523.2;
#                                flash: head dim 128 not taken yet (skipped with the reason)
#   llama-3.2-1b s4096 b4 bf16   fused 635.7 / 610.6, flash 617.1 / 560.5, unfused 300.8 / 333.9
# No PyTorch peer in this call: the side-by-side numbers are in a later call.
