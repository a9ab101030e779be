# How cuBLAS's GEMM kernels settle under the 700 W cap (issue 32: the Matmul search's steady final
# kept one kernel in a suite and another alone, 2.7-2.9% apart, on H200s in sessions 17-18). One
# NVIDIA H100 80GB HBM3, session 26, 2026-12-07, second call on that machine (after the default
# suite in ../default_suite/s26/), main 06d76ce + tests/kernels/gemm_settle_speed.cu:
#   build/device/bin/gemm_settle_speed --shapes=bf16:8192,fp16:8192 --out=settle.jsonl
# Finalists as the search takes them (cublasGemmEx the incumbent, then the three fastest of the
# ~2 ms bursts), after 4 s of cublasGemmEx; each alone 2.5 s twice in turn (solo), then the final's
# alternating rounds at 100 and 500 ms (five rounds, each after half a round untimed).
#
#   ms per launch       cublasGemmEx  256x128   128x256   128x160
#   bf16 solo, last 1 s  1.588/1.585  1.554/1.544  1.557/1.557  1.642/1.624   (two passes)
#        first 0.3 s     1.551/1.590  1.559/1.545  1.553/1.553  1.639/1.633
#        rounds 100 ms   1.586        1.551        1.570        1.589         (medians of 5)
#        rounds 500 ms   1.587        1.544        1.555        1.617
#   fp16 solo, last 1 s  1.660/1.663  1.626/1.621  1.632/1.633  1.681/1.682
#        rounds 100 ms   1.660        1.654        1.627        1.683
#        rounds 500 ms   1.658        1.627        1.639        1.681
# Reading: a kernel's time settles within ~0.3 s of a switch (first 0.3 s within ~1% of its last
# second); 500 ms rounds rank the four as their solo steady states do, 100 ms rounds do not always
# (fp16: 128x256 first, 256x128 0.4% from the incumbent). The 128x160 tile runs ~60 MHz faster and
# is still the slowest: the clock each settles at is part of the ranking. On this H100 the suite's
# 100 ms final chose as the case alone did (../default_suite/s26/: Matmul within 0.8%); rounds of
# 500 ms would cost ~15 s a search (six in the suite).
