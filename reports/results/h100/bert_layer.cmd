# H100 80GB HBM3 (device tool), 2026-11-22 (session 2); build: Release, sm_90. Same call, PyTorch first
# (torch 2.11, transformers 5.17, HF BertLayer bert-large, fp16, training mode):
S=128x2,128x4,128x8,128x16,128x32,128x64,128x128,512x2,512x4,512x8,512x16,512x32,512x64,512x128
python3 reports/peer_torch.py --families BertLayer --layer-shapes $S --repetitions 3 --out bert_layer_torch.json
build/bin/xfbench --benchmark_filter='^BertLayer/' --xfbench_bert_dtypes=fp16 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out=bert_layer.json --benchmark_out_format=json
# Compare: python3 -m reports compare bert_layer_torch.json bert_layer.json --metrics TFLOPS
# Last build of session 2 (LayerNorm forward issues all loads of a row first). fused fwd+bwd s512 b64
# 430.6 (torch sdpa 374.8), s128 b128 470.4 (370.5); fused fwd s512 b64 441.3 (380.2), s128 b128 471.3
# (394.1); ffn part 468.5 (414.3); unfused >= eager at every shape; no xfbench case slower than torch.
# Also in that call: test_kernels and test_bert_layer passed; compute-sanitizer memcheck on the norm
# and GELU kernel tests: 0 errors.
