# ZeRO-3 (sharded weights) and the PyTorch FSDP peer, llama-3.1-8b on 4x NVIDIA H200
# (nvidia-h200-x4, NV18 between every pair), session 20, 2026-11-28, one call: bash run.sh
# (299 s wall). bf16, s4096, batch 1 per GPU (4 samples a step), fused AdamW, no checkpointing,
# steady protocol, 3 repetitions, medians; both sides in the same call, compare.txt:
#   python3 -m reports compare torch_8b.json xf_8b.json --match-backend torch-sdpa=fused
#   xfbench zero3: 392.98 ms, 10.18 samples/s, 536.5 TFLOPS and 54.2% MFU per GPU, 57.8 GB per
#     GPU; its collectives (layer gathers, reduce-scatters) 185 ms a step, 97.2% hidden.
#   xfbench zero2: 401.09 ms, 9.97 samples/s, 53.1% MFU, 77.0 GB per GPU.
#   PyTorch 2.11 + transformers 5.17, HF LlamaForCausalLM (sdpa, bf16), torchrun 4 ranks:
#     FSDP2 fully_shard (zero3): 529.7 ms, 7.55 samples/s, 59.5 GB -> xfbench zero3 1.35x;
#     FSDP SHARD_GRAD_OP (zero2): 488.9 ms, 8.18 samples/s, 73.0 GB -> xfbench zero2 1.22x.
#   Each xfbench case validated on the model's first 2 of 32 layers against one GPU with 4x the
#   batch (master weights after 3 steps rel L2 1.5e-04 <= 2e-03).
# tests_summary.txt: test_parallel on two of the GPUs, 7/7, with the new
#   TwoRanksShardedWeightsEqualOneGpu (zero3 with checkpointing, and the tiny Llama: master
#   weights after 3 steps 1.0e-4 / 8.2e-5 from one GPU with twice the batch) and zero3's master
#   weights the same bits as dp's (0.00e+00); test_train_step's chunked head, accumulation,
#   Llama and fp8 Llama tests on the changed model: pass.
