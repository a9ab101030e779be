# LlamaBlock bf16 beside HF LlamaDecoderLayer on one H100 (NVIDIA H100 80GB HBM3, asked as
# nvidia-h200, served by an H100), one call, session 27, 2026-12-07, main 551cd4b (+ the FP8
# passes of the next commit: no bf16 path changed); script written in session 26.
#   END=540 bash run.sh -> xf_llama8b.json, xf_llama1b.json, xf.log; torch_llama.json, torch.log
# Steady protocol both sides, medians of 3 (xfbench) / the peer's steady number; TFLOPS (causal
# FLOPs counted as the seeds do, full square):
#   llama-3.1-8b s4096 b2   fwd: fused 664.3 (6.207 ms), flash 652.9 (6.316); torch.compile 664.1
#                           (6.208), sdpa 532.0 (7.75)  -> fused/compile 1.000x, fused/sdpa 1.249x
#                       fwd+bwd: fused 652.9 (18.95 ms), flash 618.2 (20.01); torch.compile 629.2
#                           (19.66), sdpa 513.4 (24.09) -> fused/compile 1.038x, fused/sdpa 1.271x
#   llama-3.2-1b s4096 b4   fwd: fused 625.5 (4.065 ms), flash 607.1 (4.188); torch.compile 602.2
#                           (4.222), sdpa 447.4 (5.684) -> fused/compile 1.039x, fused/sdpa 1.398x
#                       fwd+bwd: fused 599.8 (12.72 ms), flash 554.4 (13.76); torch.compile 581.2
#                           (13.12), sdpa 431.8 (17.67) -> fused/compile 1.032x, fused/sdpa 1.389x
# Every case at the 700 W cap (sw_power_cap 100%). flash (xfbench's own attention at head dim 128)
# / fused (cuDNN's): 8b fwd 0.983x, fwd+bwd 0.947x; 1b 0.971x, 0.918x.
