# LlamaBlock llama-3.1-8b s4096 b2 in bf16 and fp8 (recipe delayed), and each linear layer by hand,
# one NVIDIA H200 (nvidia-h200), session 17, 2026-11-28, one device call: run_s17b.sh (build/device
# carried; the old fp8_linear_speed from main c6f8659 carried beside it).
#   xfbench --benchmark_repetitions=3 --xfbench_llama_seqs=4096 --xfbench_llama_batches=2 \
#     --xfbench_llama_dtypes=bf16,fp8 --benchmark_filter='^LlamaBlock/fused/(bf16|fp8/recipe:delayed)/fwdbwd/'
#                                                        -> llama8b_bf16_fp8_delayed.json
# Medians of 3 (steady protocol, power capped): fwd+bwd bf16 18.694 ms (661.7 TFLOPS, 3.81 GB),
# fp8 delayed 12.955 ms (954.8 TFLOPS, 5.38 GB): 1.44x (H100, session 15: 1.43x).
#
# fp8_linear_speed (tests/kernels, by hand, not the protocol): the four linear layers at T=8192,
#   fp8_linear_speed_c6f8659.jsonl              main c6f8659's casts
#   fp8_linear_speed_tiled128x64_reverted.jsonl a cast+transpose of 128x64 tiles (four loads in
#       flight a thread, a swizzled byte tile) with the plain cast and amax unrolled 4x: the dy
#       cast+transpose ran 4-10% SLOWER than c6f8659's 64x64 tiles (qkv 0.0991 vs 0.0890 ms,
#       gate_up 0.4049 vs 0.3841): reverted, not landed. Kept from it: the weight-gradient
#       product's recast of x reuses the forward's scale (fp8_cast_transpose recast=true), so the
#       current recipe no longer measures x's amax twice (its wgrad now costs what delayed's does:
#       down 0.9195 vs 0.9340 ms). Casts measured there (bytes read + written once): plain cast
#       2.9-3.3 TB/s, cast+transpose 2.0-2.3 TB/s of the H200's 4.8: the casts are ~11% of the
#       fp8 layer's time, the next thing to win back (norms and SiLU-mul writing FP8).
# tests_summary_s17.txt: the GPU tests of that call (test_kernels Fp8*/Elementwise* incl. widths
#   12288 and 16384, compute-sanitizer memcheck + racecheck on the cast+transpose, GPT2Block and
#   T5 in every precision and backend against float64, the steady GEMM final, BERT's wide QKV).
# After the revert, call C (../default_suite/suite_vs_alone_s17/run_callC.sh) ran test_kernels
# *Fp8* on the landed casts (c6f8659's kernels with the recast): 20 passed; and
# TrainStepGpu.Fp8Gpt2* (GPT-2's tiny LM in fp8, both recipes): worst gradient rel_l2 1.04e-1
# against float64 (limit 0.25).
