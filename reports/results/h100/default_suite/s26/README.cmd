# The default suite (the README's main command without its build) end to end on one H100, then each
# of its cases alone in its own process; one call, one NVIDIA H100 80GB HBM3 (asked as nvidia-h200,
# served by an H100), session 26, 2026-12-07, main 06d76ce (+ the by-hand gemm_settle_speed tool,
# not used here).
#   bash run.sh  -> suite.json / suite.log (every line timestamped), wall.txt, alone.json (35 cases,
#                   each alone), alone.log, cases.txt, gpu.txt
# Compare: python3 -m reports compare alone.json suite.json
#
# Wall: 210.5 s (3:31), process start included, 35 cases on one GPU (24 two-GPU cases left out),
#   0 errors. Per family: BertLayer 38 s, GPT2Block 24, LlamaBlock 32 (its fwd case ran into the
#   10 s noise time-out: 23.9 s), Matmul 43, T5Encoder 20, T5Decoder 22, TrainStep 20, Memcpy 4,
#   Vector 5.
# Suite against alone (TFLOPS, samples/s or GB/s; + = faster in the suite): 31 of 35 within 1%
#   (all six Matmul cases: bf16 8192 -0.0%, bf16 16384 +0.8%, fp16 8192 -0.0%, tf32 -0.2%, fp32
#   -0.7%, fp8 +0.1%; every Vector and Memcpy case within 0.4%), T5Decoder fused fwd+bwd +1.0%;
#   over: T5Encoder fused fwd+bwd +1.2%, TrainStep bert-large s512 b16 -1.1%, gpt2-medium s1024 b8
#   +1.9% (one repetition each side; session 18 on an H200 had these two steps at -0.45% / -0.86%
#   and session 17 at +1.37% / +1.23%: their GEMM searches' near-ties go either way from process
#   to process, so the step's own spread is of that size).
