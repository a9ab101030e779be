# Session 29 (2026-12-07), one call on one NVIDIA H100 80GB HBM3 (nvidia-h100-x1), branch
# flash-fwd-split (main 9d07b94 + the two head-dim-128 forwards below), built here, carried as
# build/s29flash:
#   B=build/s29flash/bin bash run.sh -> steps.log, test_flash.txt, sanitizer_*.txt, flash_speed.*
# test_kernels '*Flash*' 21/21 passed (FlashOverlapForwardIsTheLockstepOneBitForBit: the overlap,
# split and pingpong kernels each bit for bit the lockstep one); memcheck 0 errors, racecheck 0
# hazards, synccheck 0 errors on that test.
# flash_speed (best of 20 alternating launches, causal, bf16, no dropout), forward ms:
#   shape                      overlap  split   pingpong  lockstep  cuDNN
#   llama-3.1-8b s4096 b2      0.5864   0.5159  0.5037    0.6132    0.4678
#   llama-3.1-8b s8192 b1      1.0947   0.9606  0.9439    1.1692    0.9432
#   llama-3.2-3b s4096 b1      0.2285   0.2005  0.1963    0.2383    0.1992
#   (head dim 64, llama-3.2-1b and gpt2-medium: one kernel, the same times)
# split (mbarriers over three K/V stages, no __syncthreads a tile) -12.0..-12.3% against the
# overlap kernel with its barrier a tile; pingpong (split + FlashAttention-3's turns of the
# warpgroups issuing their products) -13.8..-14.1%: 546 TFLOPS causal at 8B s4096 b2, cuDNN
# 0.93x there, 1.00x at s8192, 1.015x cuDNN's speed at 3B s4096. Landed: pingpong as the only
# head-dim-128 forward (the lockstep kernel stays the test's oracle); split and the barrier-a-tile
# overlap are gone from the tree.
# Backward unchanged (0.65-0.80x cuDNN).
# The landed kernel (flash_forward_pingpong_kernel, d9c810a) is the measured template instance with
# its Split and PingPong flags folded away: nvcc -ptx of both sources gives the same PTX for all
# four instances (bf16/fp16, masked or not) but for the kernels' and their shared barriers' names.
