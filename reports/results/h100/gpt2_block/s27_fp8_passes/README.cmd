# Two more FP8 passes folded into their producers (one NVIDIA H100 80GB HBM3, asked as
# nvidia-h200, session 27, 2026-12-07): the GELU forward writes act (FC2's input) and its
# transpose in one tile pass, so FC2's weight gradient needs no FP8 transpose; the last residual
# in reverse writes do2 in FP8 with its transpose and dbout, so wout needs no cast.
#   bash run.sh -> steps.log; test_*.txt, sanitizer_*.txt; fp8_kernels.csv (ncu, trimmed to
#                  ID, name, grid, block, time); block.json/.txt; step.json/.txt (with step parts)
# Tests: test_kernels '*Fp8*:*BiasGelu*' 40 passed (new: Recipes/Fp8ProducersGpu.GeluForward-
#   WritesItsTransposeToo/*, DropoutBackwardWrites*, Fp8Linear input_transposed bit-equality);
#   racecheck 0 hazards, memcheck 0 errors on the tile passes; Gpt2GpuFp8 against float64 and
#   TrainStepGpu.Fp8* passed.
# Kernels (python3 -m reports kernels fp8_kernels.csv ../s26_fused_fp8b/fp8_kernels.csv): a
#   block's fwd+bwd 2532 -> 2480 us, 42 -> 40 kernels; GELU forward 68 -> 93 us (it writes the
#   transpose), FP8 casts/transposes 314 -> 267, column sums 48 -> 22.
# GPT2Block gpt2-xl s1024 b8 fused fwd+bwd, steady, medians of 3, validated: bf16 3392 us
#   (492.6 TFLOPS), fp8 delayed 2540 us (657.8): 1.335x (session 26: 1.303x, 1.320x).
# TrainStep gpt2-xl s1024 b8, medians of 3, validated (loss after 30 steps bf16 5.079, fp8
#   5.176; bf16 moves 5.08-5.15 from call to call): bf16 188.2 ms (42.51 samples/s), fp8 delayed
#   146.0 ms (54.80 samples/s): 1.289x (session 26: 1.251x, 1.274x). Step parts bf16 -> fp8:
#   blocks forward 53.6-53.8 -> 43.8-44.0 ms, backward 111.3-111.4 -> 79.6-79.9, head and loss
#   5.9 -> 5.8, optimizer 16.1 both.
