# xfbench's flash forward with a key tile's work in one function (consume_tile), both head dims,
# session 24 (2026-11-29), one call on one NVIDIA H200 (nvidia-h200): run.sh. An experiment, NOT
# landed (consume_tile.patch, against main 6385a17).
# Correct: test_kernels '*Flash*:*Attention*' 36/36, test_llama_block Backends/LlamaGpu.* 18/18.
# flash_speed, this library ("new") and main's ("old"), alternating processes three times each;
# ms, flash forward (the backward's code is the same; it moved within its spread):
#   shape (causal)                 old              new              change
#   llama-3.2-1b b4 s2048 (hd 64)  0.2087-0.2092    0.2039-0.2046    -2.3%
#   llama-3.2-1b b4 s4096          0.7647-0.7650    0.7421-0.7469    -2.9%
#   llama-3.2-1b b4 s8192          2.9286-2.9317    2.8491-2.8531    -2.7%
#   llama-3.1-8b b2 s4096 (hd 128) 0.6225-0.6234    0.6263-0.6282    +0.6%
#   llama-3.1-8b b1 s8192          1.1650-1.1662    1.1726-1.1738    +0.7%
#   llama-3.2-3b b1 s4096          0.2439-0.2448    0.2457-0.2459    +0.7%
#   gpt2-medium b64 s1024 (hd 64)  0.4688-0.4691    0.4570-0.4608    -2.5%
#   gpt2-medium b8 s1024           0.0633-0.0637    0.0626-0.0628    -1.1%
# Why: not the source's meaning. The PTX of both forms differs only in the order of two
# initialisations (O's zeros and the row maxima's -inf) and one mask ((tid & 28) >> 2 for
# (tid & 31) >> 2, the same value), so ptxas allocates differently: registers 126/124 (hd 64) and 254/252
# (hd 128) against main's 124/123 and 252/252. Head dim 64 gains 2-3%, head dim 128 loses 0.7%:
# not landed (a register-allocation accident that any later edit may undo, one way or the other;
# the head-dim-64 forward is ~5% of a LlamaBlock llama-3.2-1b forward+backward, so 0.1% there).
