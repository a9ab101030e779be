# H100 80GB HBM3 (device tool), 2026-11-22 (session 3); build: Release, CUDA architecture 90 (the flash
# kernel compiled as sm_90a). Same call, PyTorch first (torch 2.11, transformers 5.17, HF BertLayer
# bert-large, fp16, training mode), then xfbench with its cases randomly interleaved:
S=128x2,128x4,128x8,128x16,128x32,128x64,128x128,512x2,512x4,512x8,512x16,512x32,512x64,512x128
python3 reports/peer_torch.py --families BertLayer --layer-shapes $S --repetitions 3 --out bert_layer_torch.json
build/bin/xfbench --benchmark_filter='^BertLayer/' --xfbench_bert_dtypes=fp16 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true --benchmark_out=bert_layer.json --benchmark_out_format=json
# Compare: python3 -m reports compare bert_layer_torch.json bert_layer.json --metrics TFLOPS
# Medians (TFLOPS), final build of session 3 (flash forward and backward, the backward at three
# blocks per SM): fused fwd+bwd s512 b64 423.8, s128 b128 473.2 (torch sdpa 372.0 / 364.2); flash
# fwd+bwd 410.2 / 476.5; fwd s512 b64 fused 447.0, flash 469.0 (sdpa 378.3); fwd s128 b128 fused
# 480.3, flash 479.6 (392.8); ffn part 464.6 (416.1; 504.1, 473.1, 460.5 in earlier runs of the
# same code); dense part 650.8 (587.2). Every xfbench case at or above its PyTorch peer (lowest
# ratio 1.04: dense_gelu part). With 3 randomly interleaved repetitions a case's median moves by a
# few percent between runs (each repetition meets another power state); the in-process A/Bs in
# plugins/bert_layer/PERF.md are the sharper comparisons.
# Also in session 3's calls: every test binary passed (tests/device_suite.sh); compute-sanitizer
# memcheck and racecheck on the flash tests: 0 errors, 0 hazards.
