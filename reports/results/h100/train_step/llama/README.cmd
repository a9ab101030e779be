# Llama TrainStep on one H100 80GB HBM3 (nvidia-h100-x1), 2026-11-28, session 15 (issue 38).
# Command: run.sh (xfbench, then the PyTorch peer on the same machine, same call):
#   xfbench --benchmark_filter='^TrainStep/fused/llama' --benchmark_repetitions=2
#   python3 reports/peer_torch.py --families TrainStep --train-models llama-3.2-1b,llama-3.2-3b \
#     --repetitions 2 --filter torch-sdpa|torch-compile
# (the compile run hit its 240 s time-out before its last case: 3B b2 ckpt:on has no compiled peer)
#
# bf16, seq 4096, accum 1, fused AdamW; medians of 2 repetitions; samples/s (tokens/s), mem_GB
#
# | case                    | xfbench          | MFU   | torch sdpa      | torch.compile    | vs compile |
# |-------------------------|------------------|-------|-----------------|------------------|-----------:|
# | 1B b4 ckpt:off          | 15.62 (64.0k) 46.3 GB | 58.4% | 9.93 (40.7k) 76.8 GB | 11.13 (45.6k) 53.9 GB | 1.40x |
# | 1B b4 ckpt:on           | 12.54 (51.4k) 28.6 GB | 62.5%*| 8.14 (33.3k) 43.1 GB | 9.14 (37.4k) 30.4 GB | 1.37x |
# | 3B b1 ckpt:off          | 5.29 (21.7k) 63.9 GB  | 51.5% | 3.34 (13.7k) 70.1 GB | 3.81 (15.6k) 61.0 GB | 1.39x |
# | 3B b2 ckpt:on           | 4.68 (19.2k) 57.3 GB  | 60.7%*| 3.14 (12.9k) 58.7 GB | —                | —     |
# (* with checkpointing the FLOP rule counts the recomputed forward: 4x instead of 3x)
#
# Validation (each xfbench case): first loss 12.18 (1B) / 12.35 (3B) against the expected
# ln V + hidden·0.02²/2 = 12.17 / 12.37, then ~0 after 30 steps on one batch. Before this session's
# fix the 3B b2 case failed its check against ln V alone (12.368 is 5.2% above 11.762).
# GPU tests on this machine (gpu_tests_summary.txt): test_train_step 11/11 incl.
# TrainStepGpu.LlamaGradientsMatchTheReference (worst gradient rel_l2 fp16 1.2e-3, bf16 8.6e-3),
# test_kernels Embedding/CrossEntropy 14/14 (position table absent, vocab 128256).
