# xfbench's flash forward with a loading warpgroup plus FlashAttention-3's ping-pong, session 24
# (2026-11-29), one call on one NVIDIA H200 (nvidia-h200): run.sh. An experiment, NOT landed
# (pingpong.patch, against main 6385a17): at head dim 128 a third warpgroup loads K and V
# (cp.async, two stages, mbarriers "landed" / "read by both", setmaxnreg 24/240; session 23's,
# ../flash_ws/) and the two computing warpgroups take turns issuing their S products (named
# barriers 3 + wg: one's products run during the other's softmax); at head dim 64 the kernel of
# main with a key tile's work in one function (consume_tile).
# Correct: test_kernels '*Flash*:*Attention*' 36/36, FlashHeadDim128 under memcheck (0 errors),
# racecheck (0 hazards) and synccheck (0 errors), test_llama_block Backends/LlamaGpu.* 18/18.
# flash_speed, this library ("new") and main's (.carry/keys128lib, "old"), alternating processes
# new, old, new, old; ms (best of three rounds of 20 launches), flash forward:
#   shape (causal)                 old              new              change
#   llama-3.2-1b b4 s2048 (hd 64)  0.2072-0.2076    0.2029-0.2033    -2.1%
#   llama-3.2-1b b4 s4096          0.7591-0.7592    0.7403-0.7406    -2.5%
#   llama-3.2-1b b4 s8192          2.9073-2.9077    2.8282-2.8352    -2.7%
#   llama-3.1-8b b2 s4096 (hd 128) 0.6182           0.6142-0.6143    -0.6%
#   llama-3.1-8b b1 s8192          1.1560-1.1563    1.1509-1.1548    -0.4%
#   llama-3.2-3b b1 s4096          0.2403-0.2423    0.2415-0.2418    +0.5%
#   gpt2-medium b64 s1024 (hd 64)  0.4656-0.4657    0.4564-0.4567    -2.0%
#   gpt2-medium b8 s1024           0.0634-0.0638    0.0624-0.0626    -1.7%
# cuDNN in the same processes: 8B s4096 0.461 ms. The loader alone was 3.4-3.9% slower than main
# (../flash_ws/); the ping-pong wins that back and no more: at head dim 128 within +-0.6% of main,
# for 243 more lines (mbarriers, register reallocation, a third warpgroup). Not landed. The head-
# dim-64 part: ../flash_consume_tile/.
