# Why the gpt2-medium step is faster in the default suite than alone (s26: 170.7 vs 167.6
# samples/s at a lower clock): the step alone, after the bert-large s128 b64 step (which searches
# the same T=8192, H=1024, I=4096 products first) and after Matmul bf16 8192 (heat only), twice
# each in its own process, XFBENCH_GEMM_LOG=1; one NVIDIA H100 80GB HBM3 (asked as nvidia-h200),
# session 27, 2026-12-07, the same call as ../../gpt2_block/s27_fp8_passes/ (after it).
#   bash run.sh -> {alone,after_bert,after_heat}_{1,2}.{json,txt}
# gpt2-medium step samples/s (sm_MHz): alone 166.9 (1759), 167.1 (1758); after bert 169.3 (1770),
#   169.2 (1774); after heat 170.0 (1770), 166.9 (1758). Heating first does not decide it.
# The searches' choices flip between processes for 3-7 of the 15 shapes (near-ties), but one
#   choice separates the three slow runs from the three fast: the FC1 weight gradient
#   (TN m=1024 n=4096 k=8192) took a 128x128 tile in all three slow runs and cublasGemmEx or a
#   128x256 tile in the fast ones. Weight gradients run on a side stream beside the data-gradient
#   chain; the search times them alone. Next: ../s27_side_products/.
