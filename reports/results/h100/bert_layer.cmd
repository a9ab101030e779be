# H100 80GB HBM3 (device tool), 2026-11-22 (session 2); build: Release, sm_90. Same call, PyTorch first
# (torch 2.11, transformers 5.17, HF BertLayer bert-large, fp16, training mode):
S=128x2,128x4,128x8,128x16,128x32,128x64,128x128,512x2,512x4,512x8,512x16,512x32,512x64,512x128
python3 reports/peer_torch.py --families BertLayer --layer-shapes $S --repetitions 3 --out bert_layer_torch.json
build/bin/xfbench --benchmark_filter='^BertLayer/' --xfbench_bert_dtypes=fp16 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out=bert_layer.json --benchmark_out_format=json
# Compare: python3 -m reports compare bert_layer_torch.json bert_layer.json --metrics TFLOPS
# fused fwd+bwd s512 b64 429.9 (torch sdpa 386.0), s128 b128 476.9 (371.0); fused fwd s512 b64 442.1
# (378.8); ffn part 473.4; every xfbench case is faster than torch at the same shape (1.15x-12x).
