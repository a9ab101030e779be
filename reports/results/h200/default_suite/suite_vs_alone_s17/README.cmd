# The default suite against each of its cases run alone, one NVIDIA H200 (nvidia-h200; no H100
# kind was lent), session 17, 2026-11-28, two device calls (each comparison within one call):
#   call A: bash run_callA.sh  -- the suite end to end (suite_callA.json, 205.4 s wall), then each
#           case alone in its own process (alone_callA.json: 30 of 35 before the call's time ran
#           out), then two capped cases alone again (again_callA.json). Build: main c6f8659 (the
#           GEMM search's tie rule by cuBLASLt's rank).
#   call C: bash run_callC.sh  -- the suite again (suite_callC.json, 223.5 s wall) with the steady
#           GEMM final (GemmTuneOptions::final_ms = 100 for Matmul's products >= 1e10 FLOPs), then
#           the six Matmul cases and the five Vector cases call A had no time for, each alone
#           (alone_callC.json).
# Compare: python3 -m reports compare alone_callA.json suite_callA.json (and callC).
#
# Call A, 30 cases (all but Matmul and Vector's five): 25 within 1%. Over: Matmul fp16 8192 -3.11%
#   and bf16 8192 -2.81% (the search chose #495 heur 6/9 in the suite, 256x128 heur 1/9 alone),
#   TrainStep bert-large s128 +1.37%, gpt2-medium s1024 +1.23%, T5Decoder fused fwd+bwd +1.42%
#   (the suite faster: these reuse GEMM plans searched by earlier cases; which kernels their searches
#   chose is not in the label, to check next). Capped cases alone twice: BertLayer fused fwd+bwd
#   s128 450.8 / 451.2 / 451.4 (alone is reproducible within 0.2%), T5Encoder flash 417.6 / 414.1.
# Call C, 11 cases: the five Vector cases within 0.2%; Matmul fp32 +0.03%, fp8 -0.05%, fp16 -0.30%
#   (both 256x128 now), tf32 -1.09% (the same kernel both ways), bf16 8192 -2.86% (suite: the
#   incumbent cublasGemmEx kept, the challenger 256x128 did not win 4 of 5 steady rounds by 1%;
#   alone: 256x128), bf16 16384 -1.14% (128x256 vs 256x128). Runs of 100 ms after 50 ms untimed do
#   not yet rank kernels as the multi-second steady state under the power cap does; longer rounds
#   cost the suite's 4 minutes (3 s a search at 100 ms, six searches). The floor stands at ~3% on
#   one of six Matmul cases. The suite took 223.5 s (3:44) with the steady final, 205.4 s without.
