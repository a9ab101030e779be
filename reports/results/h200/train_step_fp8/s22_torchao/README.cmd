# xfbench TrainStep llama-3.2-3b s4096 b1 (bf16, fp8 recipe:delayed) beside torchao 0.18.0 float8
# tensorwise (recipe:current) under torch.compile, session 22, 2026-11-29, one NVIDIA H200
# (nvidia-h200), one call: run.sh (carried: build/device/bin/xfbench, build/device/lib, the torchao
# wheel in .whl/). Commands as run.sh spells them:
#   XFBENCH_LOSSES=1 xfbench --benchmark_repetitions=3 --xfbench_train_precisions=bf16,fp8
#     --xfbench_train_fp8_recipe=delayed --xfbench_train_models=llama-3.2-3b
#     --xfbench_train_seqs=4096 --xfbench_train_batches=1
#     --benchmark_filter='^TrainStep/fused/.*/ckpt:off/adamw:fused/iter'
#   python3 reports/peer_torch.py --repetitions 3 --families TrainStep --train-models llama-3.2-3b
#     --filter 'compile.*/seq:4096/batch:1/.*ckpt:off' --train-precisions fp8
# Results (medians of 3):
#   xfbench bf16        178.36 ms a step, 5.607 samples/s, 539.7 TFLOPS, 54.6% MFU, 63.9 GB
#   torchao fp8         221.70 ms a step, 4.511 samples/s, 434.2 TFLOPS, 54.9 GB (compiled in 173 s;
#                       679 W, sw_power_cap)
#   xfbench fp8 delayed: no number. The host crashed (SIGABRT, Google Benchmark's ComputeStats:
#     "Check (run_iterations) == (run.iterations) failed") after the case's three repetitions: the
#     case validated in every repetition (its FP8 accuracy check trains three models for 200 steps;
#     xfbench.txt holds two repetitions' loss curves), and the repetitions did not all end with a
#     number. Fixed after this call: a layer or training-step case validates once per process, and a
#     repetition that ends without a number ends the case's later ones the same way (the host's
#     test Cli.RepetitionsEndingWithAndWithoutANumberAreReportedNotACrash). The same xfbench case
#     measured 145.9 ms in session 20 (../s20/): 1.52x this call's torchao, in another call.
#   The peer's bf16 case did not run (the call's time was spent).
