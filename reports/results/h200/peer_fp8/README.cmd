# The FP8 peer (issue 34: torchao float8 training under torch.compile, backend torchao-compile,
# recipe:current) for LlamaBlock llama-3.1-8b s4096 b2 fp8 and TrainStep llama-3.2-1b s4096 b4 fp8.
# run.sh beside this file (bash run.sh layer, then train: one call each, xfbench and the peer side
# by side); torchao 0.18.0 travels as a wheel in .whl/ (carry it). NOT RUN YET:
# written in session 16 (2026-11-28) after that session's device time was spent; its results go
# here beside xfbench's same cases with --xfbench_*_fp8_recipe=current, in one call.
