# TrainStep (issue #18), H100 80GB HBM3 (SXM, 700 W), 2026-11-25, build of the committed main
# 3413d3a (device preset, sm_90, build/device), two device calls: every test binary (test_train_step
# 9 tests, test_kernels 78 incl. CrossEntropy/Optimizer/Flash, all passed), then run.sh (both sides,
# steady protocol; run.log is its console):
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:$LD_LIBRARY_PATH
build/device/bin/test_train_step
sh reports/results/h100/train_step/run.sh $OUT build/device   # -> xf_*.json, torch_*.json
# Tables and the seeds' chart (one bar per configuration, both sides):
python3 -m reports compare reports/results/h100/train_step/torch_headline.json reports/results/h100/train_step/xf_headline.json --family TrainStep
python3 -m reports plot reports/results/h100/train_step/torch_headline.json reports/results/h100/train_step/xf_headline.json --labels "PyTorch 2.11 HF sdpa",xfbench --match-backend torch-sdpa=fused --out reports/results/h100/train_step/chart_headline --formats png
#   (the same for *_knobs.json into chart_knobs)
#
# Headline, medians of 3 (samples/s, TFLOPS, mem_GB), xfbench vs HF BertForMaskedLM /
# GPT2LMHeadModel (sdpa, bf16 autocast, AdamW fused=True, clip 1.0):
#   BERT-large s128 b64   1628, 424.6, 12.6 GB   vs  622.5, 162.3, 15.9 GB   2.62x
#   BERT-large s512 b16    372.0, 409.6, 12.6 GB  vs  148.0, 162.9, 15.9 GB   2.51x
#   GPT2-medium s1024 b8   163.4, 405.4, 13.7 GB  vs   55.3, 137.2, 28.2 GB   2.95x
# The BERT peer was host-bound in this call (480 W at 1,980 MHz, cv 14% and 42%, labelled noisy);
# the previous session's call on a pre-commit build of the same kernels read 1663 / 377 / 168 vs
# 917 / 222 / 55.3 (1.81x / 1.70x / 3.03x). xfbench's side moved 2-3% between the two calls (every
# case, unchanged kernels included, at 1,650-1,770 MHz under the 700 W cap); GPT-2's peer did not move.
# Knobs around BERT-large s128 b64 bf16 fused AdamW, one repetition each side:
#   AdamW unfused                  1114 samples/s (0.68x of fused)    vs 523 (0.84x, peer host-bound)
#   accumulation 4 (256 samples)   1684 (1.03x), 13.3 GB              vs 823, 17.2 GB
#   checkpointing on               1249 (0.77x), 6.8 GB               vs 380, 7.7 GB
#   fp16 (dynamic loss scale)      1659 (1.02x)                       vs 569
#   tf32                           skipped: the transformer block computes in fp16 and bf16 only
#   attention unfused / flash      1213 / 1619 (0.74x / 0.99x of cuDNN fused)
# Checkpointing at the largest BERT-large s128 batch that fits each way (hot mode, 3 steps,
# --xfbench_validate=false): off b512 1909 samples/s, 60.8 GB (b1024 skipped: needs ~115.6 GB,
# 84.0 GB free); on b1024 1511, 22.8 GB; on b2048 1522, 39.8 GB.
#
# tf32 (issue #18's precision knob: bf16 vs fp16 vs tf32), H100 80GB HBM3, 2026-11-25, one device
# call on build/tf32-dev (device preset, sm_90, stripped) of the working tree with the tf32/fp32
# step: the test binaries first (test_train_step 10 tests: test_train_step_tf32.log; test_kernels
# 91, test_bert_layer 49, test_gpt2_block 24, test_block_placement 4, test_t5_kernels 12:
# tests_tf32.log; all passed), then run_tf32.sh (run_tf32.log is its console):
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:$LD_LIBRARY_PATH
for t in test_train_step test_kernels test_bert_layer test_gpt2_block test_block_placement test_t5_kernels; do build/tf32-dev/bin/$t; done
sh reports/results/h100/train_step/run_tf32.sh $OUT build/tf32-dev   # -> xf_tf32.json, torch_tf32.json
python3 -m reports compare reports/results/h100/train_step/torch_tf32.json reports/results/h100/train_step/xf_tf32.json --family TrainStep
# BERT-large s128 b64 fused AdamW, one repetition each (samples/s, TFLOPS, MFU, mem_GB):
#   fused bf16      1639, 427.4, 43.2%, 12.7 GB
#   fused fp16      1677, 437.4, 44.2%, 12.6 GB   (1.02x of bf16)
#   fused tf32      skipped: "tf32: cuDNN SDPA (fused) and xfbench's flash attention take fp16 and
#                   bf16 only; the unfused attention backend runs tf32 and fp32"
#   unfused bf16    1219, 317.8, 32.1%, 14.2 GB   (0.74x; labelled noisy: ci 0.98%, drift 1.8%)
#   unfused tf32     684, 178.5, 36.1% of TF32's dense peak, 22.6 GB (0.42x of fused bf16, 0.56x
#                   of unfused bf16); validated: loss 10.520 -> 7.301 after 30 steps
#   PyTorch 2.11 + HF 5.17, fp32 model, allow_tf32, AdamW fused=True, clip 1.0:
#     sdpa           553, 144.3, 20.6 GB   (xfbench tf32 1.24x)
#     eager          520, 135.5, 24.2 GB   (xfbench tf32 1.32x; `compare` pairs it with unfused)
# Memory plan vs measured (test_train_step, MemoryPlanWithinTenPercent): BERT-large 24 layers s128
# b32 9.163 / 9.179 GB, checkpointing 6.262 / 6.264; GPT2-medium s1024 b8 13.680 / 13.686,
# checkpointing 7.877 / 7.881; 6 BERT-large layers tf32 (unfused) 4.490 / 4.494.
