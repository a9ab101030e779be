# H100 80GB HBM3 (device tool), 2026-11-22 (session 4); build: Release, CUDA architecture 90 (the flash
# kernels compiled as sm_90a). Same call, PyTorch first (torch 2.11, transformers 5.17, HF BertLayer
# bert-large, fp16, training mode), then xfbench with its cases randomly interleaved:
S=128x2,128x4,128x8,128x16,128x32,128x64,128x128,512x2,512x4,512x8,512x16,512x32,512x64,512x128
python3 reports/peer_torch.py --families BertLayer --layer-shapes $S --repetitions 3 --out bert_layer_torch.json
build/bin/xfbench --benchmark_filter='^BertLayer/' --xfbench_bert_dtypes=fp16 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true --benchmark_out=bert_layer.json --benchmark_out_format=json
# Compare: python3 -m reports compare bert_layer_torch.json bert_layer.json --metrics TFLOPS
# Medians (TFLOPS), session 4 build (flash backward's D pre-pass 0.096 -> 0.062 ms; element-wise
# flat grid in 1024-thread blocks without a 64-bit modulo: GELU fwd/bwd 201/280 -> 197/265 us):
# fused fwd+bwd s512 b64 429.2 (target 490; torch sdpa 371.2), s128 b128 460.5 (target 450; sdpa
# 370.1); fused fwd s512 b64 447.1 (target 450; sdpa 369.4); flash fwd s512 b64 459.0, fwd+bwd s512
# b64 422.2, s128 b128 471.2; ffn part 472.3 (target 480; torch 409.6); dense part 623.3 (587.5).
# Every xfbench case above its PyTorch peer (lowest ratio 1.05: dense_gelu part). Each case's
# median still moves a few percent between runs (session 3's run of the same cases: fused fwd+bwd
# s512 b64 423.8, s128 b128 473.2, ffn 464.6); in-process A/Bs are in plugins/bert_layer/PERF.md.
