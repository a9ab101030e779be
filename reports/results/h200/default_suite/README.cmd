# The 42-case default suite on one NVIDIA H200 (session 14, 2026-11-28, main 0d63b9f: LlamaBlock
# 8B s4096 b2 bf16 fused fwd/fwdbwd in, the four BertLayer parts out), device call C:
#   bash run.sh      (beside this file; build/device carried; the suite, then the burns of ../burn)
# default suite wall: 238.3 s, process start included (wall.txt; every line timestamped in
# default_suite.log); 0 errors. Wall per family: LlamaBlock 43.2 s (2 cases: the float64
# validation of the 8B layer was ~20 s of it; the reference's products are ~3x faster since, see
# issue 36's note), BertLayer 38.7 (5), TrainStep 36.1 (3), GPT2Block 29.0 (3), Matmul 28.7 (6),
# T5Decoder 24.8 (3), T5Encoder 23.7 (3), Vector 9.4 (13), Memcpy 3.8 (3).
