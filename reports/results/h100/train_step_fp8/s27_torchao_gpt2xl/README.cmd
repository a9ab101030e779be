# xfbench TrainStep gpt2-xl s1024 b8 (bf16, fp8 recipe:delayed, validated, 200-step losses) beside
# torchao 0.18.0 float8 tensorwise (recipe:current) under torch.compile, one call, one NVIDIA H100
# 80GB HBM3 (asked as nvidia-h200, served by an H100), session 27, 2026-12-07; xfbench built from
# main 551cd4b + the FP8 passes of the next commit (56b466c). Carried: build/device/bin/xfbench,
# build/device/lib, the torchao wheel in .whl/. Script written in session 25.
#   bash run.sh -> xfbench.json/.txt, block.json/.txt, torch_fp8.json, peer_fp8.txt, pip.txt
# Results (medians of 3, steady protocol both sides):
#   xfbench bf16          189.42 ms a step (42.2 samples/s), sw_power_cap
#   xfbench fp8 delayed   146.29 ms (54.7 samples/s): 1.295x bf16, sw_power_cap
#   torchao fp8 current   262.95 ms (30.4 samples/s, 44.3 GB), 634 W at 1980 MHz (not capped);
#                         compiled in 258 s, no graph break (TORCH_LOGS=graph_breaks,recompiles)
#   xfbench fp8 / torchao fp8 = 1.80x; xfbench bf16 / torchao fp8 = 1.39x.
# Accuracy (XFBENCH_LOSSES=1, 200 steps): loss bf16 1.3428 (again 1.3420), fp8 1.3395; after 30
#   steps (validation) bf16 5.106, fp8 5.168.
# GPT2Block gpt2-xl s1024 b8 fused fwd+bwd, one repetition: bf16 3395 us, fp8 2553 us (1.330x).
# Side by side: python3 -m reports compare xfbench.json torch_fp8.json \
#   --match-backend torchao-compile=fused,recipe:current=recipe:delayed
