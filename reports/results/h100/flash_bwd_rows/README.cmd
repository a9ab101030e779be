# Session 34, one call on one H100 (NVIDIA H100 80GB HBM3, nvidia-h100-x1), 346.8 s:
#   for a in s34carry s35desc s36carry; do tar -xJf build/$a.tar.xz -C build; done &&
#   bash reports/results/h100/flash_bwd_rows/run.sh
# Builds: s31main = main 009c94b; s36main = branch flash-row-inputs 913ae1a (row inputs loaded
# before the S and dP products); s35desc = flash-bwd-wide dc91026 (wide kernel, query tiles
# descending, causal tail capped to the L2); s36wide = flash-bwd-wide 0ee9c48 (that + row inputs).
# (s31main's archive carried no flash_speed: flash_speed_s31main.txt says so.)
# test_flash.txt 24/24 (s36wide: the recompute and wide kernels with row inputs, dropout bits
# included, against float64); sanitizer_memcheck 0 errors; test_llama_s36main.txt and
# test_llama_s36wide.txt LlamaGpu* 7/7 each (s36main: main 82cc508's unfused gated FFN refactor).
# flash_speed_*.jsonl (ms, best of 20 alternating with cuDNN in the same process), head dim 128
# backward, flash / cuDNN:
#   8B s4096 b2: s35desc (no row inputs) 2.133 / 1.494, s36wide (row inputs) 2.142 / 1.497,
#     s36main (row inputs) 1.992 / 1.571: the same ratio to cuDNN within noise where the build
#     differs only by the row inputs (s35desc vs s36wide: 1.428 vs 1.431); 8B s8192 b1 4.165 vs
#     4.069; 3B s4096 b1 0.777 vs 0.764. The row inputs change nothing measurable.
#   wide (dq:reduce) against recompute, s36wide: 8B s4096 2.607 vs 2.133, s8192 4.909 vs 4.165,
#     3B 0.894 vs 0.777, 1B s4096 3.275 vs 2.748: the wide kernel is slower at every shape still.
# xf_llama_*.json: LlamaBlock llama-3.1-8b s4096 b2 flash bf16 fwd+bwd, steady protocol, builds
#   alternating (us): s31main 19319.3, 19281.0; s36main 19440.4, 19554.0; s36wide 19928.2, 19988.1.
# Decision: neither branch merged (row inputs: no gain; wide kernel: 3.3% slower in the block).
