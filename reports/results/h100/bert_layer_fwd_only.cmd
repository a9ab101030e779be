# H100 80GB HBM3, 2026-11-22, after the forward-only change (fwd cases keep nothing for a backward).
build/bin/xfbench --benchmark_filter='BertLayer/(fused|unfused)/(fp16|bf16)/fwd/(seq:512/batch:64|seq:128/batch:128)/|BertLayer/part:.*/fp16/' --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_out=bert_layer_fwd_only.json --benchmark_out_format=json
# fused fp16 fwd s512 b64 440.0, s128 b128 466.6; bf16 452.5 / 478.4; ffn part 466.5; dense 631.6.
# PyTorch (bert_layer_torch.json, earlier in the session): sdpa fwd s512 b64 376.4, s128 b128 387.4.
