"""The PyTorch peer: xfbench's cases through PyTorch / HF transformers, written as Google Benchmark
JSON with the same case names and counters. reports/peer_torch.py is its command line; the package
is loaded by path from there (standard library at import, torch handed in), so reports/ can be
copied to a GPU machine as it is.

    catalog.py    the families, their model tables and default shapes, case names, Spec,
                  default_specs(), select(), specs_from_names() (xfbench's Matmul names)
    flops.py      FLOP, byte and parameter counts; the counters of one repetition
    builders/     one builder per family: kernels (Matmul, Vector, Memcpy), layers (BertLayer,
                  GPT2Block, T5Encoder, T5Decoder), llama (LlamaBlock), train (TrainStep), nccl
                  (NCCL), common (what they share), fp8 (torchao's float8 training for the fp8
                  LlamaBlock and TrainStep cases), llama_sharded (the multi-GPU Llama TrainStep's
                  zero2 / zero3 model: built on the meta device, sharded, then initialised)
    measure.py    the steady-state and hot protocols, NVML telemetry
    writer.py     JSON entries, context, the file, each case's stdout line
    cli.py        the options, main(), run_cases(), run_paired()
    paired.py     --paired: torch and xfbench alternating on each case
    siblings.py   the reports/ files loaded by path (steady_state, nvml, peer_parallel,
                  peer_nccl, names) and DIST, the torchrun ranks

The names below are the peer's API in one place (what reports/peer_torch.py held before it was
split); DIST lives in siblings.py only."""

from .siblings import nccl, nvml, parallel, steady_state
from .catalog import (ALL_FAMILIES, COMPILED, DEFAULT_FAMILIES, DEFAULT_GPT2, DEFAULT_LLAMA,
                      DEFAULT_LLAMA_DTYPES, DEFAULT_LLAMA_MODELS, DEFAULT_TRAIN_MODELS,
                      DEFAULT_TRAIN_PRECISIONS, DROPOUT, FAMILY_BACKENDS, FFN, FP8_BACKENDS,
                      FP8_RECIPE, GPT2_MODELS, HEADS, LAYER_BACKENDS, LAYER_SHAPES, LLAMA_DTYPES,
                      LLAMA_MAX_POSITIONS, LLAMA_MODELS, LLAMA_ROPE_THETA, LLAMA_SHAPES,
                      LLAMA_TRAIN, LLAMA_TRAIN_BACKENDS, LLAMA_TRAIN_CASES, LLAMA_TRAIN_FP8_CASES,
                      GPT2_TRAIN_FP8_CASES, TRAIN_FP8_CASES,
                      LLAMA_VOCAB, SEED_SHAPES, TRAIN_CHOICES, TRAIN_HEADLINES, TRAIN_KNOBS,
                      TRAIN_MODELS, TRAIN_PRECISIONS, TRAIN_TF32_EAGER, H, MiB, Spec,
                      default_specs, llama_config, llama_name, llama_train_config,
                      precision_field, select, specs_from_names, train_name)
from .flops import (COOLDOWN_FLOPS, DTYPE_SIZE, counters, idles_before, layer_flops, llama_flops,
                    llama_param_count, matmul_flops, train_flops_per_sample, vector_bytes)
from .builders import (BUILDERS, build_layer, build_llama, build_matmul, build_memcpy, build_nccl,
                       build_train, build_vector)
from .builders import fp8
from .builders.train import MLM_PROBABILITY, build_llama_lm, train_batch
from .measure import Rep, measure_hot, measure_steady, open_nvml
from .writer import (TIME_UNIT, base_context, error_entry, error_message, fmt_cudnn, gb_entries,
                     protocol_context, summary_line, torch_context, write_json)
from .cli import Parser, main, out_problem, parse_args, run_cases, run_paired
from . import paired
