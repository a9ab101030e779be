# H100 80GB HBM3 (device tool), 2026-11-22 (session 3); build: Release, CUDA architecture 90 (the flash
# kernel compiled as sm_90a). Same call, PyTorch first (torch 2.11, transformers 5.17, HF BertLayer
# bert-large, fp16, training mode), then xfbench with its cases randomly interleaved:
S=128x2,128x4,128x8,128x16,128x32,128x64,128x128,512x2,512x4,512x8,512x16,512x32,512x64,512x128
python3 reports/peer_torch.py --families BertLayer --layer-shapes $S --repetitions 3 --out bert_layer_torch.json
build/bin/xfbench --benchmark_filter='^BertLayer/' --xfbench_bert_dtypes=fp16 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true --benchmark_out=bert_layer.json --benchmark_out_format=json
# Compare: python3 -m reports compare bert_layer_torch.json bert_layer.json --metrics TFLOPS
# Medians (TFLOPS): flash fwd s512 b64 468.0, s128 b128 485.9 (fused 453.0 / 478.0; torch sdpa
# 378.1 / 395.3); fused fwd+bwd s512 b64 422.0, s128 b128 483.8 (sdpa 374.5 / 371.3); ffn part 473.1
# (418.3); dense part 635.2 (596.7). Every xfbench case at or above its PyTorch peer (lowest ratio
# 1.04: unfused fwd s512 b16 vs eager). Also in session 3's calls: every test binary passed
# (tests/device_suite.sh), compute-sanitizer memcheck and racecheck on the flash tests: 0 errors,
# 0 hazards.
