# Session 28 (2026-12-07), one call on one NVIDIA H100 80GB HBM3 (nvidia-h100-x1), main 820e92f
# (the head-dim-128 flash forward overlap, the RMSNorm/LayerNorm backward changes):
#   bash run.sh -> steps.log, test_*.txt, xf.log, xf_llama8b.json
# GPU tests: test_llama_block 26/26 and test_gpt2_block 32/32 passed (every backend against the
# float64 references, forward and gradients, fp8 too). test_matmul '*PlansFile*': the GPU test of
# XFBENCH_GEMM_PLANS failed on its own expectation, not on the file: it looked for the first run's
# search line with "out=fp16" where the product's description says "out=f16" (bf16 passed); the
# lines it printed show both runs on the same kernel for fp16 too (algo=66 tile=#395 cluster=2x4x1,
# heur=4/9). The test now compares what follows " -> " on the two lines (the next commit; not yet
# run on a GPU again: no device time left).
# LlamaBlock llama-3.1-8b s4096 b2 bf16, steady protocol, medians of 3, TFLOPS by the rule
# (full square), every case at the 700 W cap:
#   fused fwd 678.6 (6.076 ms), fwd+bwd 656.9 (18.83 ms)
#   flash fwd 666.4 (6.188 ms), fwd+bwd 627.0 (19.73 ms)
#   flash / fused: fwd 0.982x, fwd+bwd 0.954x (session 27's call, before both changes: 0.983x,
#   0.947x; fused 664.3 / 652.9, flash 652.9 / 618.2 then, another H100 and call). No PyTorch
#   peer in this call (../s27/ has torch.compile 664.1 / 629.2 on the same kind of machine).
