# The FP8 peer (issue 34: torchao float8 training under torch.compile, backend torchao-compile,
# recipe:current) for LlamaBlock llama-3.1-8b s4096 b2 fp8 and TrainStep llama-3.2-1b s4096 b4 fp8.
# run.sh beside this file (bash run.sh layer, then train: one call each, xfbench and the peer side
# by side); torchao 0.18.0 travels as a wheel in .whl/ (carry it). Written in session 16.
#
# Ran: part "layer", session 18 (2026-11-28), one NVIDIA H200 (nvidia-h200), build fe3b48d, from
# .carry/s18d.sh as `OUT=$R bash reports/results/h200/peer_fp8/run.sh layer` -> xf_llama.json,
# torch_llama.json, layer.log, gpu.txt. TFLOPS (medians of 3), fwd / fwd+bwd:
#   xfbench fused bf16 672.1 / 647.7   fp8 recipe:current 977.3 / 916.9
#   torch.compile bf16 658.7 / 633.8   torchao-compile fp8 recipe:current 922.5 / 862.1
#   xfbench fp8 / torchao fp8: 1.059 / 1.064; fp8 / bf16: xfbench 1.454 / 1.416, torchao 1.40 / 1.36.
# Part "train" (TrainStep llama-3.2-1b s4096 b4) not run yet.
