# Session 32, one call on one H100 (NVIDIA H100 80GB HBM3, nvidia-h100-x1), branch swiglu-fused
# 0134129's build carried as build/s33swiglu (archive build/s33carry.tar.xz, not in the tree):
#   tar -xJf build/s33carry.tar.xz -C build && bash reports/results/h100/swiglu_fused/run.sh
# test_fused.txt: FusedGemmGpu.* 10/10 passed (the gated forward and backward against float64 at
#   each gate, fp16 and bf16; the GELU ones); sanitizer_memcheck.txt: the bf16 gated tests, 0 errors.
# test_llama.txt: LlamaGpuFfnProducts.FusedMatchFloat64Reference matched float64 for the layer
#   fwd+bwd and the MLP fwd in fp16 with the products fused ("fused ffn: rel_l2 3.2e-04"), then
#   failed on the test's own mistake (a pre-norm block's MLP part runs forward only; the test asked
#   for its backward; fixed after); TuneChoosesOnceForEveryBlockOfTheShape passed; LlamaGpuParts
#   passed (MLP fused bf16 "fused ffn: rel_l2 2.9e-03"). test_bert.txt: the GELU choice tests.
# speed.jsonl (ffn_products_speed, each pair alternating, best of 3 x 30 launches, ms):
#   llama-3.1-8b T=8192: fwd unfused 2.780, fused 3.303 (+19%; the fused up product alone 1.981
#     against 2.661 for the unfused product of both halves); bwd unfused 1.640, fused 1.861 (+13%)
#   llama-3.2-3b: fwd 1.151 / 1.332 (+16%); bwd 0.757 / 0.790 (+4%)
#   llama-3.2-1b: fwd 0.809 / 0.997 (+23%); bwd 0.584 / 0.594 (+2%)
#   The GELU pairs as before (bert-large fp16 T=32768: fwd 0.545 / 0.551, bwd 0.615 / 0.548).
# The LlamaBlock timing and the TrainStep step of the script did not run (they wait on the Llama
# tests passing); with search the block keeps unfused at every shape above, as the label says.
