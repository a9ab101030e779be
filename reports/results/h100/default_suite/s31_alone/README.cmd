# Session 32, one call on one H100 (NVIDIA H100 80GB HBM3, nvidia-h100-x1), main 009c94b's build
# (== 748b8d0's code) carried as build/s31main in build/s33carry.tar.xz (not in the tree):
#   tar -xJf build/s33carry.tar.xz -C build && X=build/s31main/bin/xfbench \
#     bash reports/results/h100/default_suite/s31_alone/run.sh
# suite.json: the default suite with XFBENCH_GEMM_PLANS=plans.tsv, 229.2 s wall (wall.txt), 35 timed
#   cases; alone.json: each case alone in its own process after it with the same plans file (the
#   FFN-choice cases and Memcpy h2d first), 35 of 35.
#   python3 -m reports compare suite.json alone.json
# 33 of 35 within 1%, all within 1.15%: T5Decoder fused fp16 fwd+bwd -1.15%, BertLayer fused fp16
# fwd s128 b128 -1.12%; geometric mean of the changes -0.15%. GPT2Block fused fwd +0.33% (2.3% in
# session 30 before the plans file kept the FFN choice), LlamaBlock fwd -0.64%, Memcpy h2d +0.1%.
