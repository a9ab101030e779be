# The default suite (36 cases on one GPU) against each of its cases run alone, one NVIDIA H200
# (nvidia-h200; no H100 kind was lent this session), session 16, 2026-11-28, one device call:
#   bash run.sh   (beside this file; build/device carried): the suite timed end to end (process
#   start included, every line timestamped: suite.log), then each case in its own process in the
#   suite's order (alone.json, the per-case files joined). Same machine, build and protocol.
# Build: main after 1e7ce25 with this session's changes except the search's tie rule (kernels/
#   gemm.cu choose_by_rounds: king of the hill in cuBLASLt's order), which came after this call and
#   was not run on a GPU (no device time left).
#
# Wall: 212.5 s (wall.txt; 3:33). An earlier call of the same session, same build but the tie rule
# and two Vector sizes, timed it at 223.4 s with XFBENCH_PHASES=1 (suite_with_phases.log: each
# case's validate / build / tune / timed seconds): timed windows 144 s, the rest setup, of which
# the LlamaBlock 8B float64 validation (forward and backward, once for both cases) 16.8 s.
#
# Suite vs alone (python3 -m reports compare alone.json suite.json): 31 of 36 within 1%.
#   Over 1%:  Matmul bf16 16384   -1.90%  the search chose another kernel (suite 128x160 heur 6/9,
#                                         alone 256x128 heur 2/9): the tie rule above is the fix
#             Matmul fp32 8192    -1.51%  the same (suite cublasGemmEx, alone algo 20 splitK 3)
#             T5Encoder flash fwdbwd -2.10%, BertLayer fused fwdbwd s128 +1.15%: both power
#                                         capped (sw_power_cap, ~1450-1530 MHz), cv 1.5-2.3% per
#                                         window; the capped clock's wander, not the code
#             Vector scale fp32 2^24 -1.35% (64 MiB: 1.3x the L2; 3809 vs 3861 GB/s)
#   Matmul fp16 8192 also chose differently (suite #495 heur 6/9, alone 128x160 heur 7/9), +0.69%.
