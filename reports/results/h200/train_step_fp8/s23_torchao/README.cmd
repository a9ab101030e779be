# xfbench TrainStep llama-3.2-3b s4096 b1 (bf16, fp8 recipe:delayed) beside torchao 0.18.0 float8
# tensorwise (recipe:current) under torch.compile, session 23, 2026-11-29, one NVIDIA H200
# (nvidia-h200), one call: run.sh (carried: build/device/bin/xfbench, build/device/lib, the torchao
# wheel in .whl/). Commands as run.sh spells them:
#   XFBENCH_LOSSES=1 xfbench --benchmark_repetitions=3 --xfbench_train_precisions=bf16,fp8
#     --xfbench_train_fp8_recipe=delayed --xfbench_train_models=llama-3.2-3b
#     --xfbench_train_seqs=4096 --xfbench_train_batches=1
#     --benchmark_filter='^TrainStep/fused/.*/ckpt:off/adamw:fused/iter'
#   python3 reports/peer_torch.py --repetitions 3 --families TrainStep --train-models llama-3.2-3b
#     --filter 'compile.*/seq:4096/batch:1/.*ckpt:off' --train-precisions fp8
# Results (medians of 3, steady protocol both sides, sw_power_cap throughout):
#   xfbench bf16         182.67 ms a step, 5.474 samples/s, 53.3% MFU, 63.9 GB
#   xfbench fp8 delayed  145.12 ms a step, 6.891 samples/s, 68.0 GB; validated: fp8 loss after 30
#                        steps 5.8603 (bf16 5.8056/5.8127, +0.82%), after 200 1.3885
#                        (1.3933/1.3866, +0.00%)
#   torchao fp8          223.95 ms a step, 4.465 samples/s, 54.9 GB (compiled in 158 s)
#   xfbench fp8 / torchao fp8: 1.543x (the issue asks >= 1.2x); xfbench fp8 / bf16: 1.259x.
# The peer's bf16 (torch.compile) did not run: the call's time was spent (peer_bf16.txt).
