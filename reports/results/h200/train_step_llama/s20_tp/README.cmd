# Tensor parallelism with grouped-query attention (issue 38), one NVIDIA H200 (nvidia-h200),
# session 20, 2026-11-28, in one call: bash run.sh. test_tensor_parallel (two ranks on one GPU):
# every block kind's shards against the whole block (fp32 1e-5, bf16 fused/flash 2e-2; the new
# LlamaShardsEqualTheWholeBlock: 4 query heads over 2 key/value heads of 64, each rank 2 over 1,
# fused 5.5e-3, flash 4.9e-3), and two ranks of a language model against one GPU's (the tiny
# Llama tied and untied: loss within 6e-5, worst gradient 8.5e-3, master weights after 3 steps
# 1.7e-4): 5/5 pass (tests_summary.txt).
# The same call measured gpt2-xl s1024 b8 (issue 34): ../../train_step_fp8/s20/gpt2_b8/.
