# Does keeping the incumbent (cublasGemmEx) for the side-stream weight-gradient products steady the
# steps from process to process? One NVIDIA H100 80GB HBM3 (nvidia-h100-x1; another machine than
# ../s27_step_searches/), session 27, 2026-12-07, main 9b4805e + an experiment switch in
# Gemm::tune (XFBENCH_EXP_SIDE_INCUMBENT: a plan with a private workspace, i.e. on the side
# stream, skips the final and keeps the incumbent; not landed). Each case alone in its own
# process, alternating A (as main), B (the switch), C (--xfbench_train_search=false).
#   bash run.sh -> steps.log, <case>_<A|B|C><k>.{json,txt} (XFBENCH_GEMM_LOG=1)
# samples/s (sm_MHz):
#   gpt2-medium s1024 b8   A 169.0 (1775), 169.3 (1772); B 169.9 (1778), 167.3 (1787);
#                          C 168.4 (1828), 167.9 (1805)
#   bert-large s512 b16    A 380.1, 380.4; B 380.6, 380.0
#   bert-large s128 b64    A 1679.5, 1668.0; B 1681.2, 1686.7
#   T5Encoder fused fp16 fwd+bwd s512 b64  A 9374, B 9531 (one each)
# On this machine A's FC1 weight gradient (TN m=1024 n=4096 k=8192) took cublasGemmEx both times
#   and the step ran at the fast level (169); B's 167.3 took cublasGemmEx for every side product
#   and was slow: the side products' choice is not the whole story. Keeping the incumbent does not
#   remove the process-to-process spread (B 1.5% apart); no search at all (C) is no steadier and
#   no faster. Not landed.
