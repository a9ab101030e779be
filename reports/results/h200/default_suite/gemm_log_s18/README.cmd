# The default suite and four of its cases alone, each search's choice logged (XFBENCH_GEMM_LOG=1),
# one NVIDIA H200 (nvidia-h200), session 18, 2026-11-28, one call (bash run.sh: its first part,
# the FP8 loss curves, went to ../../train_step_fp8/s18/). Build: c7f92b9 + the fp8 loss printer.
#   suite.json / suite.log: the suite, 225.3 s wall (wall.txt), every search's choice in suite.log
#   alone/1-4.json, alone.log: TrainStep bert-large s128 b64, gpt2-medium s1024 b8, T5Decoder fused
#     fp16 fwd+bwd s512 b64, Matmul bf16 8192, each alone in its own process
# Suite against alone (same call): TrainStep bert -0.45%, gpt2 -0.86% (both within 1% this time;
#   +1.37% / +1.23% in session 17), T5Decoder fused fwd+bwd +1.11% (suite faster), Matmul bf16 8192
#   -2.69%. Of the 37 shapes both searched, 31 chose the same kernel; 6 did not:
#   Matmul bf16 NN 8192^3: suite cublasGemmEx, alone 256x128 (as in session 17: the case's 2.7%);
#   T5Decoder's fp16 TN 4096x1024x32768 (a weight gradient): suite cublasGemmEx, alone 128x128;
#   BERT's bf16 TN 1024x4096x8192 and 4096x1024x8192, NT 1216x1024x1024, TN 30528x1024x1216: other
#   tiles, each also differing between two searches of the same shape in one process (alone.log
#   searched 1024x4096x8192 twice: 128x128 then 256x128) - near-ties the final's 1% margin keeps
#   as noise, without a measurable effect on the step (bert within 0.45%).
# Reading: the Matmul 8192 search's steady final (five rounds of ~100 ms after 50 ms untimed,
#   incumbent cublasGemmEx, four wins by 1% to replace it) keeps the incumbent on a GPU the suite
#   has heated, and the challenger replaces it from a cool one; at the steady state the challenger
#   is 2.7% faster. Alternating runs of 150 ms share one power-limiter state, so they rank kernels
#   by time at a common clock, not by work per joule, which is what decides under the 700 W cap.
