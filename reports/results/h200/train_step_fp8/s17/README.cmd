# TrainStep gpt2-medium s1024 b8 in bf16 and fp8 (recipe delayed), one NVIDIA H200 (nvidia-h200),
# session 17, 2026-11-28. FP8's accuracy check FAILS for GPT-2 after 30 steps (it holds after 200):
#   xfbench --benchmark_repetitions=3 --xfbench_train_models=gpt2-medium --xfbench_train_seqs=1024 \
#     --xfbench_train_batches=8 --xfbench_train_precisions=bf16,fp8 \
#     --benchmark_filter='^TrainStep/fused/gpt2-medium/'
# Call D (../../bert_layer_fp8/run_callD.sh; the check against one bf16 run) ->
#   gpt2_medium_one_bf16_run.json: fp8 after 30 steps 7.351 / 7.174 / 7.267 against bf16 7.627 /
#   6.958 / 7.630 (-3.6%, +3.1%, -4.8%), after 200 1.369 against 1.368 (+0.06% to +0.17%). bf16
#   itself moved 10% between repetitions after 30 steps: not bitwise reproducible (cuDNN's
#   attention backward), and early training amplifies it.
# Call E (run_callE.sh; the check against two bf16 runs, train_validate.hpp) ->
#   gpt2_medium_two_bf16_runs.json: fp8 after 30 steps 6.661 / 6.668 / 6.757 against bf16
#   7.477-7.388 / 7.108-7.269 / 7.547-7.484 (-9.8%, -6.2%, -9.7% from the nearer end), after 200
#   1.368-1.370 against 1.366-1.368 (+0.12% to +0.17%). FP8 is consistently AHEAD of bf16 early
#   (lower loss) and equal later. Not explained yet: the tiny GPT-2 and BERT models' FP8 gradients
#   match float64 (tests_callE.log, worst rel_l2 1.04e-1, the E5M2 level the Llama layer shows), and
#   Llama 1B passes the same check with both recipes (../README.cmd). To examine next: the current
#   recipe (no clipping from a stale amax history), and where the gap opens (steps 5-30).
# bf16 measured: 46.23 ms, 173.1 samples/s, 429.3 TFLOPS, 13.7 GB. No fp8 number: a case that fails
# its validation reports the error, not a figure.
