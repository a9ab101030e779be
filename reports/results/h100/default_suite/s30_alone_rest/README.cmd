# Session 30 (2026-12-07), one call on one NVIDIA H100 80GB HBM3 (nvidia-h100-x1), chained after
# ../../s30_branches/ on the same machine, branch s30-try's build (with power-limit-capped):
#   X=build/s30new/bin/xfbench ALONE_UNTIL=540 bash run.sh   (270 s)
# The default suite with XFBENCH_GEMM_PLANS=plans.tsv: 210.7 s wall, process start included,
# 35 cases, 0 errors. Then cases 20-35 alone, each in its own process with the same plans file:
# 16 of 16 within 0.67% of the suite (T5Decoder -0.54/+0.05/-0.03%, TrainStep bert s128 -0.43%,
# bert s512 -0.67%, gpt2-medium -0.23%, Memcpy +0.62/+0.14/-0.27%, every Vector within 0.3%).
