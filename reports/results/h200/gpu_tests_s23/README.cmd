# The GPU tests of main 39fba9b (session 22's changes that had not run on a GPU: ChooseFasterGpu
# and the GEMM search's one timer, the GELU math under T5/TrainStep, TrainStep's label), session 23,
# 2026-11-29, one NVIDIA H200 (nvidia-h200): run.sh (carried build/device/bin, build/device/lib).
# summary.txt: test_train_step 18/18, test_t5 44/44, test_bert_layer 66/66, test_gpt2_block 32/32,
# test_matmul 34/34, test_kernels 147/147 (ChooseFasterGpu, FusedGemmGpu, GemmGpu.* included).
# test_cli and test_bad_inputs failed here only because build/device/test_plugins was not carried
# ("plugin .../test_plugins/good: not a directory" on every run); with it carried they pass, 25/25
# and 10/10, in ../flash_keys128/ (test_cli.txt, test_bad_inputs.txt; same host code).
