"""One builder per family: build(torch, spec, dev) makes the case's inputs and model on the GPU,
outside the timing, and returns the call to time (a function of no arguments; a `case_label`
attribute, where the builder sets one, goes into the JSON label). Standard library at import;
torch is handed in, transformers imported by the builders that need it."""

from .kernels import build_matmul, build_memcpy, build_vector
from .layers import build_layer
from .llama import build_llama
from .nccl import build_nccl
from .train import build_train

BUILDERS = {"Matmul": build_matmul, "Vector": build_vector, "Memcpy": build_memcpy,
            "BertLayer": build_layer, "GPT2Block": build_layer, "T5Encoder": build_layer,
            "T5Decoder": build_layer, "LlamaBlock": build_llama, "TrainStep": build_train,
            "NCCL": build_nccl}
