# Steady-state protocol (issue #15), H100 80GB HBM3, 2026-11-24, build f6c9703 (device preset),
# one device call per block below. LD_LIBRARY_PATH as in tests/device_suite.sh.

# 1. Headline cases: xfbench twice around the PyTorch peer, same call, same protocol (3 repetitions).
X='^(BertLayer/(fused|flash)/fp16/fwdbwd/seq:(512/batch:64|128/batch:128)|BertLayer/part:ffn/fp16/fwd/seq:128/batch:64|Matmul/bf16/NN/m:(4096/n:4096/k:4096|8192/n:8192/k:8192)|Vector/scale/fp32/n:268435456)/'
T='^(BertLayer/torch-sdpa/fp16/fwdbwd/seq:(512/batch:64|128/batch:128)|BertLayer/part:ffn/fp16/fwd/seq:128/batch:64|Matmul/bf16/NN/m:(4096/n:4096/k:4096|8192/n:8192/k:8192)|Vector/scale/fp32/n:268435456)/'
build/device/bin/xfbench --benchmark_filter="$X" --benchmark_repetitions=3 --benchmark_out=headline_xfbench_1.json
python3 reports/peer_torch.py --families BertLayer,Matmul,Vector --filter "$T" --repetitions 3 --out headline_torch.json
build/device/bin/xfbench --benchmark_filter="$X" --benchmark_repetitions=3 --benchmark_out=headline_xfbench_2.json
# medians, TFLOPS (GB/s for Vector): run 1 / run 2 / torch (ratio run 1 / torch)
#   BertLayer fused fwd+bwd s512 b64   427.7 / 426.8 / sdpa 371.4 (1.15)
#   BertLayer fused fwd+bwd s128 b128  441.7 / 443.2 / sdpa 370.5 (1.19)
#   BertLayer flash fwd+bwd s512 b64   423.8 / 423.2 / sdpa 371.4 (1.14)
#   BertLayer flash fwd+bwd s128 b128  450.9 / 448.3 / sdpa 370.5 (1.22)
#   BertLayer part ffn fp16 s128 b64   454.7 / 458.8 / torch 412.4 (1.10)
#   Matmul bf16 NN 4096                680.3 / 681.8 / torch 679.6 (1.001)
#   Matmul bf16 NN 8192                685.8 / 684.3 / torch 683.2 (1.004)
#   Vector scale fp32 2^28             3041.0 / 3041.0 / torch 3012.7 GB/s (1.009)
# Run 1 vs run 2 differ by at most 0.9% (ffn part); the earlier 1.12x on Matmul 8192 (idle before
# xfbench's cases only) is gone: neither side idles now.

# 2. The default suite (the README's main command), one repetition: 432 s, exit 0, no ERROR line,
#    one summary line for the 26 left-out cases (24 need 2 GPUs, 2 need ATS).
build/device/bin/xfbench --benchmark_out=default_suite.json --benchmark_out_format=json 2> default_suite_stderr.txt
# ci_pct (the mean's 95% interval) by family, median / max: BertLayer 0.28 / 0.50, GPT2Block
# 0.27 / 0.50, Matmul 0.32 / 0.50, Vector 0.007 / 0.07; cv_pct (windows' spread) median:
# BertLayer 1.06, GPT2Block 1.20, Matmul 1.07, Vector 0.03. Noisy (time-out, labelled): the seven
# 1-rank NCCL cases at 1 MiB and three PCIe Memcpy cases.

# 3. Power: xfbench --benchmark_filter='BertLayer/fused/fp16/fwdbwd/seq:512/batch:64/'
#    --xfbench_min_time=6 --xfbench_timeout=30 with nvidia-smi --query-gpu=power.draw,power.draw.instant
#    -lms 100 alongside (build of the session's first protocol version; the power computation is the
#    one in f6c9703): power_W 693 W; nvidia-smi power.draw 687 W, power.draw.instant 689 W (mean of the
#    run's samples).
