# The default suite at main 5054096 (device build, sm_90a), session 24, 2026-11-29, one NVIDIA
# H200 (nvidia-h200), one call: run.sh (carried build/device/bin/xfbench, build/device/lib).
#   xfbench --benchmark_out=default_suite.json --benchmark_out_format=json
# 222.8 s end to end, process start included (wall.txt; session 17: 223.5 s); 35 cases on one GPU
# and P2P's topology entry, 0 errors (the two-GPU cases left out on one GPU). Headlines:
# LlamaBlock fused bf16 s4096 b2 fwd+bwd 19.13 ms (646.6 TFLOPS), BertLayer fused fp16 s512 b64
# fwd+bwd 436.6, GPT2Block 464.4, T5 encoder / decoder flash 410.5 / 417.0, Matmul bf16 8192
# 665.4, fp8 1202.6; TrainStep bert-large s128 b64 1732 samples/s, gpt2-medium s1024 b8 171.5.
