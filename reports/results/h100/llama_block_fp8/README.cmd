# LlamaBlock in FP8 against bf16, one H100 80GB HBM3 (nvidia-h100-x1), 2026-11-28, session 15
# (issue 34). Command: run.sh (device call D; call C before it gave the same picture without the
# forward's fast accumulation: fp8 delayed fwd+bwd 907.4 TFLOPS, 1.38x):
#   xfbench --benchmark_filter='^LlamaBlock/fused/' --xfbench_llama_seqs=4096 --xfbench_llama_batches=2 \
#     --benchmark_repetitions=3 --xfbench_llama_dtypes=bf16,fp8                 (llama_fp8_delayed.json)
#   xfbench ... --xfbench_llama_dtypes=fp8 --xfbench_llama_fp8_recipe=current   (llama_fp8_current.json)
#   fp8_linear_speed                    (each linear layer of the 8B block, by hand: fp8_linear_speed.jsonl)
#
# llama-3.1-8b s4096 b2, cuDNN attention, medians of 3 (ms; TFLOPS by the layer's rule; mem_GB):
# | pass    | bf16                 | fp8 delayed                 | fp8 current          |
# | fwd     | 6.167 (668.6) 1.82   | 4.278 (963.7) 3.40  1.44x   |                      |
# | fwd+bwd | 19.088 (648.0) 3.81  | 13.337 (927.5) 5.38 1.43x   | 13.888 (890.7) 1.37x |
#
# Linear layers alone (T=8192; fp8 = casts + products, the weight's cast apart), fwd+bwd speed-up:
# qkv 4096->6144 1.61x, o_proj 4096->4096 1.46x, gate_up 4096->28672 1.69x, down 14336->4096 1.53x.
# Casts: dy cast+transpose 1.57-1.74 TB/s, W cast+transpose 2.0-2.2 TB/s (bytes read+written once).
#
# Tests on this machine (tests_summary.txt): test_kernels *Fp8* 20/20 (casts bit for bit against the
# CPU reference, amax, overflow, delayed history ring, mixed e5m2 x e4m3 GEMM, Fp8Linear against
# float64: relative L2 y 3.6%, dx 5.7%, dW 5.7%), test_llama_block fp8 (layer out 1.6%, gradients
# up to 9.7%; current recipe 9.5% in dln2_w; parts out up to 5.2%), compute-sanitizer memcheck on
# the casts and the FP8 layer: 0 errors (call C).
