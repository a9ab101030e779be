# Session 30 (2026-12-07), one call on one NVIDIA H100 80GB HBM3 (nvidia-h100-x1), branch s30-try
# (main 5137062 + fp8-transposes + flash-hd64-pingpong + power-limit-capped + flash-dq-bulk) as
# build/s30new, main's build as build/s30old:
#   tar -xJf build/s30carry.tar.xz -C build && cp -an build/s30new/lib/. build/s30old/lib/ &&
#   bash run.sh   (470 s)
# GPU tests: test_kernels '*Flash*' 24/24 (FlashForwardMatchesReference runs the head-dim-64
# ping-pong, FlashDqByReductionMatchesReference the bulk reduce-add), memcheck 0 errors, racecheck
# 0 hazards on both; Fp8Producers 17/17 (the three new producer tests of fp8-transposes);
# test_llama_block 26/26, test_gpt2_block 32/32, test_bert_layer 66/66, test_t5 44/44,
# TrainStepGpu.Fp8* 2/2.
# flash_speed (ms, best of alternating launches in one process; flash_speed.jsonl):
#   fwd pingpong64 / lockstep at head dim 64: llama-3.2-1b b4 s2048 1.096, s4096 1.043, s8192
#   1.003; gpt2-medium b64 1.197, b8 1.178 -> slower everywhere: NOT landed
#   (flash_hd64_pingpong.patch).
#   bwd dq:reduce (bulk reduce-add) / recompute: 8B s4096 b2 1.682 (3.492 vs 2.076), s8192 b1
#   1.311, 3B s4096 1.186, 1B 1.08-1.20, gpt2-medium 1.12-1.16 -> slower everywhere: NOT landed
#   (flash_dq_bulk.patch).
#   flash / cuDNN: fwd 0.99-1.08x the time at head dim 128 (8B s4096 b2 0.4993 vs 0.4604 ms), 1.16-1.24
#   at 64; bwd 1.22-1.55x.
# LlamaBlock llama-3.1-8b s4096 b2 bf16, steady, medians of 3 (xf_llama8b.json), us / TFLOPS:
#   fused fwd 6055.6 / 680.9, fwd+bwd 18895.0 / 654.6; flash fwd 6150.1 / 670.4, fwd+bwd
#   19936.0 / 620.5 (flash/fused fwd+bwd 0.948x).
# LlamaBlock fused fp8 delayed fwd+bwd, same shape, builds alternating (xf_fp8_*.json), us:
#   main 12889.6, 12865.3; fp8-transposes 12749.7, 12724.6 -> -1.1%; bf16 fused / fp8 1.483x
#   (1.467x with main's FP8 code). Landed (merge d0bb288).
