# TrainStep (issue #18), H100 80GB HBM3 (SXM, 700 W), 2026-11-25, build of commit 871063c plus the
# train-kernels helper's kernel bodies then in the tree (device preset, sm_90), one device call:
# test_train_step (test_train_step.log: 9 tests passed), then run.sh (both sides, steady protocol):
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:$LD_LIBRARY_PATH
build/train-carry/bin/test_train_step
sh reports/results/h100/train_step/run.sh $OUT build/train-carry   # -> xf_*.json, torch_*.json
# Tables and the seeds' chart (one bar per configuration, both sides):
python3 -m reports compare reports/results/h100/train_step/torch_headline.json reports/results/h100/train_step/xf_headline.json --family TrainStep
python3 -m reports plot reports/results/h100/train_step/torch_headline.json reports/results/h100/train_step/xf_headline.json --labels "PyTorch 2.11 HF sdpa",xfbench --match-backend torch-sdpa=fused --out reports/results/h100/train_step/chart_headline --formats png
#   (the same for *_knobs.json into chart_knobs)
#
# Headline, medians of 3 (samples/s, TFLOPS, mem_GB), xfbench vs HF BertForMaskedLM /
# GPT2LMHeadModel (sdpa, bf16 autocast, AdamW fused=True, clip 1.0):
#   BERT-large s128 b64   1663, 433.7, 12.6 GB   vs  916.7, 239.0, 15.9 GB   1.81x
#   BERT-large s512 b16    377.1, 415.2, 12.6 GB  vs  221.8, 244.2, 15.9 GB   1.70x
#   GPT2-medium s1024 b8   167.6, 415.8, 13.7 GB  vs   55.3, 137.3, 28.2 GB   3.03x
#   (the first call of the session, 2026-11-25: 1662 / 378 / 165 vs 935 / 184 (noisy) / 55.3)
# Knobs around BERT-large s128 b64 bf16 fused AdamW, one repetition each side (the peer's were
# noisy: ci 4-9% after its 10 s timeout):
#   AdamW unfused                  1121 samples/s (0.67x of fused)    vs 538 (0.59x)
#   accumulation 4 (256 samples)   1742 (1.05x), 13.3 GB              vs 869 (0.95x), 17.2 GB
#   checkpointing on               1287 (0.77x), 6.8 GB               vs 480 (0.52x), 7.7 GB
#   fp16 (dynamic loss scale)      1678 (1.01x)                       vs 867 (0.95x)
#   tf32                           skipped: the transformer block computes in fp16 and bf16 only
#   attention unfused / flash      1199 / 1680 (0.72x / 1.01x of cuDNN fused)
# Checkpointing at the largest BERT-large s128 batch that fits each way (hot mode, 3 steps,
# --xfbench_validate=false): off b512 2003 samples/s, 60.8 GB (b1024 skipped: needs ~115.6 GB,
# 84.0 GB free); on b1024 1560, 22.8 GB; on b2048 1565, 39.8 GB.
