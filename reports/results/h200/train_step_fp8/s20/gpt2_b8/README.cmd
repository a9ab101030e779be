# gpt2-xl s1024 b8 (dropout 0.1) bf16 and fp8 delayed, one NVIDIA H200, session 20, 2026-11-28,
# in the call of ../../../train_step_llama/s20_tp/run.sh (its second part). 3 repetitions, medians:
#   bf16 182.689 ms (43.79 samples/s, 460.7 TFLOPS, 46.9 GB); fp8 delayed 148.615 ms
#   (53.83 samples/s, 566.3 TFLOPS, 46.5 GB): 1.229x, in less memory than bf16. The fp8 loss
#   after 30 steps 7.4332 (bf16 7.4311/7.4312, +0.03%), after 200 1.3425 (1.3451/1.3441, inside).
# At batch 2 the same model gained 1.02x (../README.cmd): a larger batch gives the products FP8
# speeds up a larger share of the step than the optimizer and the casts.
