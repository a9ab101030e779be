# BertLayer (bert-large, post-LN) in FP8, one NVIDIA H200 (nvidia-h200), session 17, 2026-11-28,
# device call D: run_callD.sh (build/device carried).
# tests_callD.log: test_bert_layer Parts/BertGpu.* (every part x unfused/fused/flash x fp16/bf16/fp8
#   against float64: 46 passed; fp8 worst rel_l2 8.2e-2 to 9.0e-2 in a weight gradient, parts
#   forward 3.6e-2), TrainStepGpu.Fp8Gpt2AndBert* (tiny GPT-2 and BERT LMs in fp8, both recipes,
#   every gradient against float64: worst 1.04e-1 and 8.31e-2, limit 0.25).
#   xfbench --benchmark_repetitions=3 --xfbench_bert_seqs=512 --xfbench_bert_batches=64 \
#     --xfbench_bert_backends=fused --xfbench_bert_dtypes=bf16,fp8 \
#     --benchmark_filter='^BertLayer/fused/.*/fwdbwd/'    -> bert_large_s512_b64_bf16_fp8.json
# Medians of 3, steady protocol, power capped: fwd+bwd bf16 5.949 ms (450.5 TFLOPS, 2.36 GB), fp8
# delayed 5.334 ms (502.5, 3.53 GB): 1.12x. At hidden 1024 the products are small and the casts,
# the bf16 attention (s512) and the post-LN glue weigh more; GPT-2's layer at hidden 4096 gains
# 1.51x (../gpt2_block_fp8/).
