# The FFN's GELU products, fused (CUTLASS, kernels/gemm_fused.hpp) and unfused (cuBLASLt + our GELU
# kernel), session 22, 2026-11-29, one NVIDIA H200 (nvidia-h200), one call: run.sh (carried:
# build/device/bin/{xfbench,test_kernels,gelu_products_speed,test_bert_layer,test_gpt2_block},
# build/device/lib). The build of commit "CUTLASS products with the GELU in their epilogue".
#   gelu_products_speed --out=speed.jsonl      each pair alone, best of 3 x 30 launches
#   xfbench --benchmark_repetitions=3 --benchmark_filter=<BertLayer fused fp16 s512 b64 fwd, fwdbwd |
#     GPT2Block fused fp16 fwdbwd s1024 b64, bf16 s1024 b8> --xfbench_{bert,gpt2}_ffn_products=unfused|search
#     alternating processes, twice each (bert_<mode>_<i>.json, gpt2_<mode>_<i>.json)
# speed.jsonl, ms (TFLOPS of the product), T x 4096 x 1024 fp16:
#   T=32768 forward: cuBLASLt product alone 0.355, unfused pair 0.510, fused 0.562
#           backward: product alone 0.367, unfused pair 0.543, fused 0.516
# Layers (TFLOPS, median of 3 repetitions, two processes each): the search keeps unfused everywhere
# (labels: "ffn gelu unfused: fused 6.0-6.6% slower" BertLayer fwd, "10.4-11.6%" fwdbwd, "7.8%"
# GPT2Block fp16 b64, "2.4-2.9%" bf16 b8):
#   BertLayer fwd s512 b64     unfused 444.5 / 444.2   search 443.7 / 445.2
#   BertLayer fwdbwd s512 b64  unfused 444.7 / 447.1   search 447.3 / 446.9
#   GPT2Block fp16 fwdbwd b64  unfused 463.7 / 465.7   search 476.2 / 475.0  (same kernels chosen;
#     the difference is the cuBLASLt searches' choices, made at other moments of the process)
#   GPT2Block bf16 fwdbwd b8   unfused 457.8 / 457.3   search 450.0 / 454.5
# Tests in the same call: test_kernels FusedGemm/Elementwise 20 passed, test_bert_layer
# FfnProducts + Parts/BertGpu 47 passed (every GELU part validated fused and unfused against
# float64), test_gpt2_block Gpu 27 passed.
