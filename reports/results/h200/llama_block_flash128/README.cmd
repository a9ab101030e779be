# xfbench's flash attention at head dim 128 (Hopper, forward and backward), session 21,
# 2026-11-28, two calls on one NVIDIA H200 (nvidia-h200) each:
#   run_b.sh (the forward alone, before the backward was written): test_kernels '*Flash*' 18/18
#     with FlashHeadDim128ForwardMatchesReference; LlamaBlock llama-3.1-8b bf16 fwd s4096 b2:
#     fused 6.128 ms (672.8 TFLOPS), flash 6.299 ms (654.6) -> llama_8b_fwd.json
#   run_c.sh (forward and backward): test_kernels '*Flash*' 18/18 (FlashHeadDim128MatchesReference:
#     GQA 4:2 and 4:1, causal and not, dropout with saved and redrawn masks, both layouts;
#     FlashCausalIgnoresLaterPositions at head dims 64 and 128), memcheck 0 errors, racecheck 0
#     hazards; test_llama_block Backends/LlamaGpu.* 19/19 with flash at head dim 128 forward and
#     backward (tests_summary.txt), then, steady protocol, 3 repetitions, medians:
#   xfbench --benchmark_repetitions=3 --xfbench_llama_seqs=4096,8192 --xfbench_llama_batches=1,2
#     --xfbench_llama_dtypes=bf16 --benchmark_filter='^LlamaBlock/(fused|flash)/bf16/fwdbwd/(seq:4096/batch:2|seq:8192/batch:1)/iter'
#     llama-3.1-8b fwd+bwd   fused (cuDNN)            flash
#     s4096 b2               19.163 ms, 645.5 TFLOPS  19.992 ms, 618.7 (0.96x), 3.54 vs 3.81 GB
#     s8192 b1               20.814 ms, 673.5         22.835 ms, 613.9 (0.91x)
#   xfbench --xfbench_suite=all --xfbench_train_models=llama-3.2-3b --xfbench_train_seqs=4096
#     --xfbench_train_batches=1 --xfbench_train_backends=fused,flash (bf16, ckpt off, fused AdamW)
#     fused 180.48 ms (53.9% MFU), flash 188.57 ms (51.6% MFU): 0.96x
