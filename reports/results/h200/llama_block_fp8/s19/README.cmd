# The norms and the activations writing FP8 (issue 34), one NVIDIA H200 (nvidia-h200), session 19,
# 2026-11-28, one call: bash run.sh. A pre-norm block's norm outputs (RMSNorm/LayerNorm, and the
# residual-add + norm kernels) and every FFN's activation but ReLU's (GELU, SiLU·mul, GELU·mul) are
# written in e4m3 by their own kernel where only an FP8 product reads them (Fp8Output: the delayed
# recipe in one launch with the history's scale; the current recipe, and the delayed one's first
# step, measure the amax in a launch that writes nothing, then write); the weight gradient
# transposes those bytes (fp8_transpose) instead of casting a bf16 copy again, and the block keeps
# them instead of the bf16 tensor (one byte an element instead of two).
#   tests_summary.txt: test_kernels *Fp8*/Norm/Elementwise (58, with the new Fp8ProducersGpu and
#     Fp8Transpose), compute-sanitizer memcheck and racecheck on them (0 errors, 0 hazards),
#     test_llama_block *Fp8*, test_gpt2_block (32), test_t5 Backends (36), test_bert_layer Parts
#     (45), test_train_step *Fp8* (4): all pass.
#   medians of 3 (cv of the repetitions 0.02-0.16%), fused fwd+bwd:
#     LlamaBlock llama-3.1-8b s4096 b2: bf16 18.952 ms (652.7 TFLOPS, 3.81 GB); fp8 delayed
#       12.871 ms (961.0, 4.64 GB): 1.47x (session 18: 1.45x, 4.83 GB); fp8 current 13.393 ms
#       (923.6, 4.64 GB): 1.42x.
#     GPT2Block hidden 4096 heads 32 s2048 b8: bf16 34.896 ms (614.4, 5.61 GB); fp8 delayed
#       22.663 ms (946.1, 6.42 GB): 1.54x (session 18: 1.51x, 6.82 GB).
# Memory left over bf16 (8B layer, 0.83 GB): the weights' FP8 copies 0.44 GB, and the block's FP8
# scratch (x/xT 117 MB, dy and dyT of the widest product, gate+up's [8192, 28672]: 470 MB, shared by
# every layer of a model) less the halved norm and activation outputs (-181 MB).
