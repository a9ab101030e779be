# The FP8 block's gradient passes fused, second call (one NVIDIA H100 80GB HBM3, asked as
# nvidia-h200, session 26, 2026-12-07): as ../s26_fused_fp8/, with the tile pass taking a few
# tiles per block (about four waves of blocks; the trailing barrier only between tiles) — the
# committed change.
#   bash run.sh -> steps.log; test_*.txt, sanitizer_*.txt; fp8_kernels.csv (ncu, trimmed);
#                  block.json/.txt; step.json/.txt (with the step parts)
# Tests: test_kernels '*Fp8*:*BiasGelu*' 36 passed (Recipes/Fp8ProducersGpu.GeluBackwardWrites-
#   ItsGradientTransposeAndBiasGradient/{delayed,current}, Recipes/Fp8LinearGpu.*, the typed
#   Elementwise/*.BiasGeluForwardBackward among them); racecheck 0 hazards and memcheck 0 errors on
#   the GELU backward's and the cast's tile passes; Gpt2GpuFp8 against float64 and
#   TrainStepGpu.Fp8* passed.
# Kernels (ncu): the GELU backward's pass 134 -> 124 us (100 x 43 blocks), dqkv's cast with its
#   bias gradient 69 -> 65 us; the other casts as before.
# GPT2Block gpt2-xl s1024 b8 fused fwd+bwd, steady, medians of 3: bf16 3425 us (487.8 TFLOPS),
#   fp8 delayed 2594 us (644.1): 1.320x.
# TrainStep gpt2-xl s1024 b8, medians of 3, --xfbench_validate=false (the first call validated
#   both; device time): bf16 188.8 ms (42.38 samples/s), fp8 delayed 148.1 ms (54.01 samples/s):
#   1.274x. Step parts bf16 -> fp8: blocks forward 54.3-55.5 -> 42.2-42.5 ms, backward
#   111.0-112.3 -> 83.1-83.9, head and loss 5.9 -> 5.8, optimizer 16.1 both.
