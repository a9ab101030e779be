# The gated FFN's backward writing wi's gradient in e5m2 (issue 34, 80dde4c: no bf16 dpre exists
# in FP8 Llama/T5 v1.1 blocks) and the chunked LM head's GPU test (issue 38, 2ad4539). One NVIDIA
# H200 (nvidia-h200), session 20, 2026-11-28, one call: bash run.sh (129 s wall).
#   tests_summary.txt: test_train_step *Chunked*/*Llama*/*Fp8*/*EveryGradient*/*Accumulation* (8,
#     with TrainStepGpu.ChunkedHeadGivesTheSameGradients: tied 2.7e-3, untied 3.4e-3 worst relative
#     L2 against the float64 reference), TrainLayout (2), test_t5 Backends (36): all pass.
#   medians of 3 (cv of the repetitions 0.11-0.21%), LlamaBlock llama-3.1-8b s4096 b2 fused fwd+bwd:
#     bf16 19.005 ms (650.9 TFLOPS, 3.81 GB); fp8 delayed 12.693 ms (974.5 TFLOPS, 4.17 GB): 1.50x
#     (1.497; session 19: 1.47x, 4.64 GB); fp8 current 13.357 ms (926.1 TFLOPS, 4.17 GB): 1.42x.
#   The step's result (TrainStep llama-3.2-1b s4096 b4 bf16, 4 head chunks of 4096 rows) is in
#     ../../train_step_llama/s20/.
