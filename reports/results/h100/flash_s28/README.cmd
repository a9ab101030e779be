# Session 28 (2026-12-07), two chained calls on one NVIDIA H100 80GB HBM3 (nvidia-h100-x1), one
# build of main 02039fb + the branches flash-fwd-overlap (landed as cc9ad75),
# flash-dq-reduce (NOT landed: dq_reduce.patch), norm-rms-sums and colsum-rows (../norm_rms_sums/).
# Call 1: bash run.sh with SANITIZE='*FlashOverlapForward*' (call1/); call 2, same machine:
# SANITIZE='*FlashDqByReductionMatchesReference*' TOOLS=memcheck bash run.sh, then
# bash ../flash_hd128_ncu/run.sh (call2/, call2/ncu/: a summary of ncu's full set on one launch
# of the overlap forward at llama-3.1-8b s4096 b2; the raw report is not kept).
# Correct: test_kernels '*Flash*' 24/24 both calls (FlashOverlapForwardIsTheLockstepOneBitForBit
# and FlashDqByReductionMatchesReference among them); overlap test under memcheck 0 errors and
# racecheck 0 hazards; dQ-reduction test under memcheck 0 errors.
# flash_speed, ms (best of 3 rounds of 20 launches, alternating in one process), call 1 / call 2:
#   shape (causal, bf16)       fwd overlap    lockstep       change       cuDNN  | bwd recompute  reduce       cuDNN
#   llama-3.2-1b B=4 S=2048    0.2061/0.2056  0.2060/0.2056  (same kernel: head dim 64)  0.1790 | 0.744/0.743  1.052/1.054  0.600
#   llama-3.2-1b B=4 S=4096    0.7517/0.7512  0.7515/0.7514  (same kernel)       0.6207 | 2.755/2.773  4.077/4.056  1.848
#   llama-3.2-1b B=4 S=8192    2.9214/2.9064  2.9289/2.8838  (same kernel)       2.3649 | 10.64/10.67  14.79/14.79  7.176
#   llama-3.1-8b B=2 S=4096    0.5921/0.5805  0.6175/0.6101  -4.1% / -4.9%       0.4633 | 2.000/2.055  4.170/4.181  1.508
#   llama-3.1-8b B=1 S=8192    1.1152/1.1059  1.1667/1.1569  -4.4% / -4.4%       0.8890 | 4.110/4.233  7.236/7.192  2.708
#   llama-3.2-3b B=1 S=4096    0.2326/0.2286  0.2422/0.2382  -4.0% / -4.0%       0.1997 | 0.778/0.766  1.061/1.059  0.639
#   gpt2-medium B=64 S=1024    0.4583/0.4551  0.4612/0.4592  (same kernel)       0.3832 | 1.712/1.731  2.258/2.260  1.437
#   gpt2-medium B=8 S=1024     0.0636/0.0626  0.0635/0.0627  (same kernel)       0.0592 | 0.228/0.225  0.307/0.307  0.207
# The overlap: head dim 128 forward 4.0-4.9% faster (8B s4096 b2 474 TFLOPS causal, cuDNN 590);
# flash / cuDNN forward at head dim 128 0.78-0.80x (was 0.75-0.76x). Landed.
# dQ by reduction: 1.4-2.1x SLOWER than recompute (8B s4096 b2 4.17 vs 2.00 ms): the fp32
# atomicAdd(float2) traffic into [B, NH, Sq, HD] (4.4 GB at that shape) costs more than the two
# products a tile pair it saves. Not landed; kernels/PERF_attention.md says what would be needed.
