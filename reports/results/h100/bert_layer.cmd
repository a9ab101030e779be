# H100 80GB HBM3 (device tool), 2026-11-22; build: Release, sm_90 (build/me copied to .carry/final).
# Same call, PyTorch first (torch 2.11, transformers 5.17, HF BertLayer bert-large, fp16, training mode):
python3 reports/peer_torch.py --families BertLayer --layer-shapes 128x2,128x4,128x8,128x16,128x32,128x64,128x128,512x2,512x4,512x8,512x16,512x32,512x64,512x128 --repetitions 3 --out bert_layer_torch.json
build/bin/xfbench --benchmark_filter='^BertLayer/' --xfbench_bert_dtypes=fp16 --benchmark_repetitions=3 --benchmark_out=bert_layer.json --benchmark_out_format=json
# Note: the GPU ran at its 700 W power limit during the large fused cases (sm_MHz ~1540-1570 in the
# JSON telemetry); earlier single-case runs in the session at higher clocks gave fused fwd+bwd
# 455 (s512 b64) and 486 (s128 b128) TFLOPS.
