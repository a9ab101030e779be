# Every test binary with GPU tests, on one NVIDIA H200 (nvidia-h200), session 19, 2026-11-28, on
# the tree of 202ffea (the floors, the comm floor's RankThreads, the FP8 producers):
#   bash run.sh -> summary.txt: 26 binaries pass (520 tests); test_llama_block ran past its 60 s
#   cap there (LlamaGpuShapes.LongSequenceRotaryPositions alone takes 70 s: a float64 reference
#   over 4,160 positions) and passed whole (26 tests) in the next call with 110 s:
#   test_llama_block.log (on the tree with the gated backward writing its gradient in e5m2 too).
# The two-GPU tests ran on 2x H200 in ../tests_x2/.
