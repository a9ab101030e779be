# An experiment, not in main (ws_kernel.patch applies to b1f540a): the Hopper flash forward at
# head dim 128 with a third warpgroup that loads K and V (cp.async into two stages; an mbarrier
# per stage for "landed" (cp.async.mbarrier.arrive.noinc, 128 arrivals) and one for "read by
# both" (one arrival per computing warp)), so the two computing warpgroups no longer meet at a
# barrier every key tile; setmaxnreg gives the loader 24 registers and them 240 (the loader's
# copies one 64-row panel at a time: unrolled, its addresses spilled 308-516 bytes). The per-tile
# work became one function (consume_tile) that the head-dim-64 kernel calls too. Session 23,
# 2026-11-29, one NVIDIA H200 (nvidia-h200), one call: run.sh (carried test_kernels,
# test_llama_block, flash_speed, build/device/lib, and main b1f540a's library as the baseline).
# Correct: test_kernels '*Flash*:*Attention*' 36/36, test_llama_block Backends/LlamaGpu.* 18/18,
# compute-sanitizer memcheck 0 errors, racecheck 0 hazards, synccheck 0 errors
# (FlashHeadDim128MatchesReference, bf16).
# Speed (flash_speed, alternating processes, baseline -> experiment, ms):
#   head dim 128, the loading warpgroup: llama-3.1-8b b2 s4096 fwd 0.619 -> 0.640 (+3.5%),
#     b1 s8192 1.157 -> 1.202 (+3.9%), llama-3.2-3b b1 s4096 0.243 -> 0.251 (+3.4%): slower.
#   head dim 64, the same kernel as before with the tile's work in consume_tile (a different
#     register allocation, 126/124 registers): llama-3.2-1b b4 s2048 0.208 -> 0.203 (-2.4%),
#     s4096 0.760 -> 0.741 (-2.5%), s8192 2.910 -> 2.830 (-2.7%), gpt2-medium b64 s1024 0.466 ->
#     0.457 (-2.0%), b8 0.063 -> 0.062: faster. Backward unchanged (its code is).
# Not landed: the head-dim-128 loader is slower; with consume_tile alone the head-dim-128 kernel
# allocates 252-254 registers instead of 242-243 and that form never ran on a GPU.
