# H100 80GB HBM3, 2026-11-22: every default case of the 4 plugins (692), 2 timed iterations each: a
# check that the default suite runs clean, not a measurement. Exit code 0 in 84 s; the only errors are
# the cases that cannot run on one GPU ("unsupported: P2P needs two GPUs", 72) and SM copies from
# pageable memory without ATS (20). Every other case validated its result.
build/bin/xfbench --xfbench_iterations=2 --benchmark_out=default_suite_smoke.json --benchmark_out_format=json
