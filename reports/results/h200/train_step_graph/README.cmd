# One CUDA graph per training step (--xfbench_train_graph=true), session 21, 2026-11-28, one
# NVIDIA H200 (nvidia-h200), one call (../llama_block_flash128/run_b.sh: its TrainStep part; the rest
# of that call was the flash attention tests):
#   xfbench --benchmark_repetitions=3 --xfbench_train_models=gpt2 --xfbench_train_batches=4,8
#     --xfbench_train_seqs=1024 --xfbench_train_dropout_pct=0 --xfbench_train_graph=false|true
# bf16, fused AdamW, steady protocol, medians of 3 (cv <= 0.22%), every case validated:
#   gpt2 s1024 b4: 9.542 ms launched -> 9.109 ms as one graph replay: 429.3k -> 449.7k tokens/s (+4.8%)
#   gpt2 s1024 b8: 16.760 ms -> 16.440 ms: 488.8k -> 498.3k tokens/s (+1.9%)
# Replayed as one graph, no launch of the step waits on the host: the gain shrinks as
# the batch (and each kernel's time) grows.
