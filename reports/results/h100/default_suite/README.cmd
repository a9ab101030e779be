# The default suite's wall time on one H100 80GB HBM3 (2026-11-28, main 4db9a2a + abcff9a), in two
# calls of one session (the command lines are run1.sh and run2.sh beside this file):
#
#   run1.sh: GPU tests of the edges work, then the default suite stopped by `timeout -s TERM 400`:
#     54 of 122 cases done; interrupted_at_400s.json is the JSON the host closed on SIGTERM
#     ("interrupted": "interrupted by SIGTERM after 54 of 122 cases"), every line timestamped in
#     interrupted_at_400s.log.
#   run2.sh: the 44 default cases run1 did not reach (one filter that lists exactly them), same
#     protocol, rest_of_suite.json/.log; and the faulty-GPU exit codes through the SDK call.
#
# Wall seconds per family (cases; seconds in the timed protocol = 2 x warmup_s; power-capped):
#   BertLayer 18: 137 s (114 timed, 17 capped)     GPT2Block 12: 93 s (75, 12)
#   Matmul    23: 156 s (134, 22)                  T5Encoder 6 + T5Decoder 6: 115 s (73, 13)
#   TrainStep  3:  36 s                            Memcpy 6: 13 s          Vector 23: 17 s
#   (P2P: 25 cases left out on one GPU.) In all ~570 s, 84% of it inside the steady protocol.
#
# Why: a power-capped case's windows wander by 1-2%, so only the batch-means ci can decide, and it
# is trusted once the measured span lasts 10 groups x 0.3 s = 3 s; the span is the later half of
# the run, so every capped case times >= 6 s (warmup_s 2.99 on most). Setup (searches,
# validation) is the other 16%. Four minutes needs both fewer heavy cases and a warm-up of the
# capped floor (1.5 s) instead of half the run (issue 32's note).

# --- Protocol v4 and a 44-case default suite (same session, two more calls, two machines) ---
# v4: once the GPU reports its power cap, the span is every window after the 1.5 s capped
# warm-up (v3: the later half of the run). Default suite cut to the headline cases (README,
# "The default suite").
#   run3.sh suite '^(Vector|Memcpy|Matmul)/' a    machine A (H100 80GB HBM3): the 47-case cut
#     (Memcpy SM copies and BertLayer flash seq 128 still in) 283.5 s wall, process start included;
#     4 pinned PCIe copies ran into the 10 s time-out (noisy): 40 s of it. v4_47cases_machineA.*,
#     then each Vector/Memcpy/Matmul case alone in its own process: v4_alone_machineA.json.
#   run3.sh suite '^(BertLayer|GPT2Block|T5Encoder|T5Decoder|TrainStep)/' b   machine B (another
#     H100 80GB HBM3, fresh start): the 44-case suite 249.9 s wall (4:10); v4_44cases_machineB.*,
#     then each layer and TrainStep case alone: v4_alone_machineB.json.
# Wall per family on B: BertLayer 72 s, TrainStep 35, GPT2Block 31, T5Encoder 30, T5Decoder 29,
#   Matmul 29, Memcpy 12, Vector 9 (setup: validation, searches, cuDNN plans ~40% of a layer case).
# Suite vs alone, same machine (TFLOPS or GB/s; + = faster in the suite):
#   within 1%: 17 of 21 layer/TrainStep cases (B), Matmul fp32/bf16, Vector >= 16M elements,
#     Memcpy d2d (A).
#   1-2%: BertLayer fused fwdbwd s512 +1.05, T5Encoder fused fwdbwd +1.53, T5Decoder fused
#     fwdbwd +1.04 (B); Matmul tf32 -0.95, fp8 -0.82 (A).
#   more: BertLayer part:attention -2.06 (B); Matmul fp16 8192 -2.27 (A; the search chose
#     another kernel in the suite: tile #495 heur 6/9 vs 128x256 heur 2/9); Vector scale fp32 at
#     16K-1M elements (L2-resident, ~2 us launches) -7 to -13% in the suite at the same 1980 MHz
#     and in both suite runs: a context effect not explained yet; pinned PCIe copies noisy (VM).
