# GPT2Block and T5Encoder in FP8 against bf16, one NVIDIA H200 (nvidia-h200), session 17,
# 2026-11-28. Steady protocol, 3 repetitions, medians; power capped (sw_power_cap) throughout.
#
# The GPT layer of TransformerEngine's example (hidden 4096, 32 heads, MLP 16384, seq 2048, batch 8;
# GPT-2's pre-LN block with biases, tanh GELU, dropout 0.1), forward+backward, cuDNN attention.
# Call B (../llama_block_fp8/run_s17b.sh), both in one call -> gpt2_h4096_bf16_fp8_delayed.json:
#   xfbench --benchmark_repetitions=3 --xfbench_gpt2_hidden=4096 --xfbench_gpt2_heads=32 \
#     --xfbench_gpt2_seqs=2048 --xfbench_gpt2_batches=8 --xfbench_gpt2_backends=fused \
#     --xfbench_gpt2_dtypes=bf16,fp8 --benchmark_filter='^GPT2Block/fused/.*/fwdbwd/'
#   bf16 34.453 ms (622.3 TFLOPS, 5.61 GB); fp8 delayed 22.808 ms (940.0 TFLOPS, 8.16 GB): 1.51x,
#   validated against float64 (worst rel_l2 9.1e-2 in dln1_w, within BlockTolerances::fp8).
# Call C (../default_suite/suite_vs_alone_s17/run_callC.sh) -> gpt2_h4096_fp8_current.json:
#   the same with --xfbench_gpt2_dtypes=fp8 --xfbench_gpt2_fp8_recipe=current: 23.556 ms
#   (910.2 TFLOPS): 1.46x call B's bf16 (another call, another machine: indicative only).
#   -> t5_encoder_bf16_fp8.json: T5Encoder t5-large s512 b64 fused fwd+bwd, bf16 6.405 ms (418.4
#   TFLOPS, 2.57 GB), fp8 delayed 5.667 ms (472.9, 3.67 GB): 1.13x; d_model 1024 makes small
#   products whose FP8 gain the casts and the bf16 attention (a larger share) eat.
# Memory: FP8 keeps each linear layer's own copies of x, xT, dy and dyT (block scratch) beside the
# bf16 activations: 2.5 GB over bf16 at hidden 4096 (the weights' FP8 copies are 0.4 GB of it).
# Sharing them between the layers and keeping the FP8 xT instead of the bf16 input is the fix.
