# H100 80GB HBM3 (device tool), 2026-11-22 session 2, after the search's finalist round (the three
# fastest bursts, cuBLASLt's first choice and cublasGemmEx meet again over ~10 ms runs).
# Five alternating passes per side (torch, xfbench, torch, xfbench, ...), medians in the table:
PASSES=5 SKIP_TESTS=1 plugins/matmul/device_run.sh build 'Matmul/(bf16|fp16|tf32)/NN/m:(2048|4096|8192|16384)/' ''
# 7 of 12 at or above torch; ratios 0.983-1.024. Per pass, one side's value of one case varies by
# up to 6% (torch bf16 8192: 739.8-782.0), and the search's winner changes from pass to pass
# (several kernels within noise of each other): the remaining gaps are ties, not a slower kernel.
# Also tried (same protocol, another H100, not committed as code): adding up to 48 re-configured
# copies of the top three heuristics (CTA swizzle, custom option, cluster shape) to the search:
# 5 of 12 at or above torch, ratios 0.989-1.019; variants won some passes and lost others, and once
# a variant chosen in the search ran 11% slower in the timed run (tf32 8192). Not adopted.
