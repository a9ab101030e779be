# torchao float8 beside xfbench fp8 (recipe current = torchao's tensorwise), session 21,
# 2026-11-28, one NVIDIA H200, one call (run.sh, 576 s): INCOMPLETE, no ratio from it.
# The script's time-outs were too short for xfbench's fp8 cases run alone: each one's accuracy
# check trains bf16 (twice) and fp8 for 200 steps before it is timed, ~3-4 min at llama-3.2-3b,
# and both xfbench runs were stopped before a case ended (xf.log: rc=124). The torch peer got
# through llama-3.2-3b before its own time-out (gpt2-xl did not start):
#   TrainStep/torchao-compile/llama-3.2-3b/fp8/recipe:current/seq:4096/batch:1/...: 222.2 ms a
#   step (433.3 TFLOPS by the rule; torch 2.11.0, torchao 0.18.0, transformers 5.17.0; compiled
#   in 151 s; the blocks' nn.Linears in float8, lm_head bf16, as xfbench's).
# For orientation only (other calls, other H200s of the same kind): xfbench's fp8 delayed step at
# that shape took 145.9 ms (../s20/train_llama.json), bf16 179.4-182.4 ms. The protocol's ratio
# needs both in one call: the next call gives xfbench's cases 300 s each.
