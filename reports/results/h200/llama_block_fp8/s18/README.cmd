# FP8 scratch shared by a block's linear layers (issue 34, memory), one NVIDIA H200 (nvidia-h200),
# session 18, 2026-11-28, one call: bash run.sh (carried: the new build and, in .carry/old_lib,
# libxfbench_models.so built from a2800d3, where each linear layer had its own x/xT/dy/dyT copies;
# the old library is picked with LD_LIBRARY_PATH, everything else the same binaries).
#   tests_summary.txt: test_llama_block *Fp8*, test_gpt2_block (all 32: fp8 every backend),
#     test_t5 Backends/T5Gpu.* (36: the cross-attention's second dy slot), test_train_step *Fp8*:
#     all pass on the new library.
#   medians of 3, fwd+bwd, fused, fp8 recipe delayed (old ran first in each pair):
#     LlamaBlock llama-3.1-8b s4096 b2: old 13.069 ms 946.5 TFLOPS 5.38 GB; new 13.206 ms 936.7
#       TFLOPS 4.83 GB (+1.0% time, cv of the windows 1.3-1.4%); bf16 19.163 ms 645.5 TFLOPS 3.81 GB
#       (fp8 1.45x with the new library, 1.47x the old).
#     GPT2Block hidden 4096 heads 32 s2048 b8: old 23.248 ms 922.3 TFLOPS 8.16 GB; new 23.124 ms
#       927.2 TFLOPS 6.82 GB (-0.5% time).
