# Session 29 (2026-12-07), one call on one NVIDIA H100 80GB HBM3 (nvidia-h100-x1; warm from the
# call before it, reports/results/h100/flash_split/), main 9d07b94:
#   bash run.sh -> test_matmul.txt, suite.json, suite.log, wall.txt, plans.tsv, alone.json, ...
# test_matmul '*PlansFile*:GemmGpu.Search*': 7/7 passed, GemmGpu.PlansFileCarriesTheSearchesToTheNextRun
# on the GPU for the first time (the second run adopts the first's records and runs the same kernels).
# The default suite with XFBENCH_GEMM_PLANS=plans.tsv (86 searches written, then read by each case
# alone): 246.2 s wall, 35 cases, 0 errors. ../s26/ took 210.5 s on another H100; this one ran
# 6-10 C hotter through the suite (61-69 C against 56-59 C), every case 1-3% slower at 2-5% lower
# clocks, and its noisier times took more windows to reach the 0.5% target (TrainStep 63-78
# windows against 11-14, Matmul fp32 139 against 24; per case +0.4 to +5 s). Over the 4 minutes the
# issue allows: the suite's time depends on the machine's temperature.
# Alone (ALONE_UNTIL=430 stopped the alone runs after 19 of 35 cases: the suite took 36 s longer
# than planned; TrainStep, Memcpy and Vector did not run alone): 17 of 19 within 1% of the suite
# (every BERT, GPT-2, Llama and Matmul tf32/fp16/bf16/fp8 case within 0.9%). Outside: Matmul fp32
# 50.8 in the suite against 52.0 alone (-2.3%: alone it drew 742 W at 1980 MHz and 67 C, never
# capped, its warm-up stable after 0.21 s; in the suite at 69 C it held the 700 W cap at 1939 MHz);
# T5Encoder flash fwd+bwd 413.4 against 408.4 (+1.2%: 1559 MHz at 63 C in the suite, 1533 MHz at
# 66 C alone). Both follow the GPU's temperature, which the steady protocol's warm-up (launch times
# stable, seconds) does not bring to equilibrium (tens of seconds); the GEMM kernels were the same
# in both (plans.tsv).
