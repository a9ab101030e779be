# T5 flash forward+backward (fp16, score bias, no grouped-query attention, s512 b64), session 24
# (2026-11-29), one call on one NVIDIA H200 (nvidia-h200): run.sh. Main 6385a17's kernels
# (build/device/lib, "main") against main 39fba9b's (.carry/oldlib, "old": before b1f540a sized the
# flash backward's block order tail by its heaviest block, which lengthened T5's tail from 50 to
# 76 heads at this shape), alternating processes main, old, main, old; steady protocol, one
# repetition each, --xfbench_validate=false (test_t5 passed with these kernels in session 23):
#   xfbench --xfbench_validate=false
#     --benchmark_filter='^T5(Encoder|Decoder)/flash/fp16/fwdbwd/seq:512/batch:64(/|$)'
# ms per forward+backward (TFLOPS by the seeds' rule):
#   T5Encoder  main 6.257 / 6.264 (428.3 / 427.9)   old 6.261 / 6.336 (428.0 / 423.0)
#   T5Decoder  main 8.534 / 8.579 (434.8 / 432.6)   old 8.582 / 8.674 (432.4 / 427.8)
# No slower: the new tail rule is within the old's spread or 0.5-1% faster at T5's shapes.
