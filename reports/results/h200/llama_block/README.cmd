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
# --- Device call B (run2.sh, same session, another H200): side by side, 3 repetitions, medians ---
#   llama-3.1-8b s4096 b2 fwd / fwd+bwd: fused 677.7 / 654.1, unfused 502.3 / 524.7;
#     HF LlamaDecoderLayer torch.compile 665.8 / 639.2, sdpa 551.6 / 537.2, eager 204.4 / 261.8
#   llama-3.2-1b s4096 b4: fused 638.9 / 609.9, flash 621.4 / 561.0;
#     compile 618.5 / 598.6, sdpa 470.4 / 459.3, eager 80.2 / 112.3
#   side_by_side_xf_llama8b.json, side_by_side_xf_llama1b.json, side_by_side_torch.json
#   (torch 2.11, transformers 5.17; the peer: python3 reports/peer_torch.py --families LlamaBlock ...)
# --- Device call D (run4.sh, another H200, 1 repetition each) ---
#   GPU tests: test_llama_block 19/19 (parts against float64 in fp16/bf16), test_bert_layer 49/49
#   (gpu_tests_summary_call4.txt). The default suite's two LlamaBlock cases: 28.1 s wall with the
#   faster float64 reference (43.2 s in call C). llama_default.json, then
#   parts (8B s4096 b2 bf16 fwd): attention (unfused) 327.3, attention_fused 779.8, attention_flash
#   skipped (head dim 128), mlp 660.6, rmsnorm_qkv 648.3 TFLOPS (llama_parts.json);
#   llama-3.2-1b b4 fused vs flash, fwd / fwd+bwd: seq 2048 598.9 / 579.1 vs 591.0 / 552.6,
#   seq 8192 670.6 / 631.9 vs 631.7 / 544.8 (llama1b_seqs.json).
