# Session 30 (2026-12-07), one call on one NVIDIA H100 80GB HBM3 (nvidia-h100-x1), chained after
# ../s30_alone_rest/ on the same machine, same build (s30-try, with power-limit-capped):
#   X=build/s30new/bin/xfbench bash run.sh   (465 s)
# The default suite with XFBENCH_GEMM_PLANS=plans.tsv: 219.3 s wall, 35 cases, 0 errors. Then
# every case alone, each in its own process with the plans file: 32 of 35 within 1%. Matmul fp32
# 8192 +0.02% (in ../s29_plans/ -2.3%: alone it ran uncapped at 742 W; power-limit-capped now
# warms a case drawing >= 97% of the limit as a capped one). Outside 1%:
#   GPT2Block fused fwd -2.30%: the suite ran the FFN's GELU products unfused ("fused 7.3% slower",
#     timed right after the case's GEMM searches, the GPU at its cap), alone fused ("fused 6.8%
#     faster", timed with the searches read from the file, the GPU cool). Every BERT/GPT-2 choice
#     leaned unfused in the suite and fused alone (both files' labels). The choice is not in the
#     plans file: ../s30_ffn_choice/ adds it.
#   LlamaBlock fused fwd +1.26% (alone labelled noisy: ci +-0.76% after 10 s).
#   Memcpy h2d pinned -4.58% (the suite's run labelled noisy: ci +-2.96%, drift 3.08%;
#     ../s30_alone_rest/ had +0.62%).
