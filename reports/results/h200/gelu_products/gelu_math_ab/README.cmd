# The GELU math of kernels/detail/gelu.cuh (Abramowitz-Stegun erf, exp-based tanh: one exponential
# and one reciprocal each, no branch) against erff/tanhf, same build otherwise, session 22,
# 2026-11-29, one NVIDIA H200 (nvidia-h200), one call: run.sh. "old" runs a libxfbench_kernels.so
# linked from the same objects but gelu.cu and activation.cu compiled with the previous gelu.cuh
# (.carry/oldlib, not in the tree), first on LD_LIBRARY_PATH; the FFN products unfused in both.
#   xfbench --benchmark_repetitions=3 --benchmark_filter=<BertLayer fused fp16 fwd, fwdbwd s512
#     b64 | GPT2Block fused fp16 fwdbwd s1024 b64> --xfbench_{bert,gpt2}_ffn_products=unfused
#   alternating processes old, new, old, new, old (the time cap ended the third new one)
# Medians of 3 repetitions, ms:
#   BertLayer fwd s512 b64      new 2.0837 / 2.0851            old 2.1140 / 2.1000 / 2.1014
#   BertLayer fwdbwd s512 b64   new 6.1951 / 6.2054            old 6.2209 / 6.2173 / 6.2786
#   GPT2Block fwdbwd s1024 b64  new 12.8176 / 12.6061          old 12.5969 / 12.9255 / 12.6619
# BertLayer 0.5-1% faster (erf-GELU); GPT2Block (tanh-GELU) within its spread.
