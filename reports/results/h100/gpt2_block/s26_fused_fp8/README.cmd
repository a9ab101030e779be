# The FP8 block's gradient passes fused, first call (one NVIDIA H100 80GB HBM3, asked as
# nvidia-h200, session 26, 2026-12-07; main b23d60c + the change, committed after both calls):
# the GELU's backward writes the up projection's e5m2 gradient, its transpose and the bias gradient
# in one 64x64-tile pass (kernels/detail/cast_transpose.cuh, the pass fp8_cast_transpose now runs
# too); dqkv's cast takes its bias gradient along; the delayed scale update reads each amax
# history with a warp.
#   END=380 bash run.sh -> steps.log; test_*.txt, sanitizer_*.txt; fp8_kernels.csv (ncu, trimmed);
#                          block.json/.txt; step.json/.txt (with the step parts); alone/ (issue 32)
# Tests: test_kernels 'Fp8*:Elementwise.BiasGelu*' 21 passed (that filter missed the
#   parameterised Recipes/... and typed Elementwise/... tests: run in ../s26_fused_fp8b/),
#   Gpt2GpuFp8.CurrentScalingMatchesFloat64Reference, TrainStepGpu.Fp8Gpt2AndBertGradientsMatch-
#   TheReference and Fp8LlamaTrainsAsBf16Does passed; racecheck 0 hazards, memcheck 0 errors on
#   Fp8Gpu.CastTransposeMatchesCast (the tile pass with and without the bias gradient).
# Kernels (ncu, fp8 block fwd+bwd, us): GELU backward + cast_transpose + column sum 104+83+62 ->
#   one pass 134; dqkv cast_transpose + column sum 62+51 -> 69; update_delayed_kernel 56 -> 7.
#   Sum over one fwd+bwd (python3 -m reports kernels) 2717 -> 2520 us (../s26_kernels/ before).
# GPT2Block gpt2-xl s1024 b8 fused fwd+bwd, steady, medians of 3: bf16 3384 us (493.8 TFLOPS),
#   fp8 delayed 2597 us (643.5): 1.303x.
# TrainStep gpt2-xl s1024 b8, validated, medians of 3: bf16 185.7 ms (43.08 samples/s, 46.9 GB),
#   fp8 delayed 148.4 ms (53.89 samples/s, 46.5 GB): 1.251x (session 25: 187.6 / 155.6 ms, 1.206x).
#   Step parts, fp8: blocks forward 42.2-42.6 ms, backward 83.6-83.7 (91.6 before), head and loss
#   5.8, optimizer 16.1.
# Issue 32, alone/: the three default-suite cases over 1% from their suite numbers
#   (../../default_suite/s26/), each alone twice more, GEMM choices logged (XFBENCH_GEMM_LOG=1):
#   gpt2-medium s1024 b8 step: alone 167.6 / 168.7 / 169.8 samples/s (1.4% spread), suite 170.7;
#   bert-large s512 b16 step: alone 385.5 / 382.1 / 377.4 (2.2%), suite 381.2 (inside);
#   T5Encoder fused fwd+bwd: alone 9483 / 9533 / 9556 (0.8%), suite 9600.
#   Two alone runs of the gpt2-medium step chose other kernels for 2 of 15 products (near-ties:
#   cublasGemmEx against a 128x128 tile, both ways). These cases vary about as much from process
#   to process as the suite differs from them.
