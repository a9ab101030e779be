"""The cases the peer knows: xfbench's families, their model tables and default shapes, the Spec
of one case and its Google Benchmark name, the Llama configs (HF LlamaConfig arguments of
published models), the default case list of each family and the --filter selection. Pure Python:
no torch, so `--list` runs anywhere."""

import re

from .siblings import names as case_names
from .siblings import nccl, parallel

H = 1024            # bert-large hidden size
HEADS = 16
FFN = 4096          # bert-large intermediate size
DROPOUT = 0.1
MiB = 1 << 20

ALL_FAMILIES = ["Matmul", "Vector", "Memcpy", "BertLayer", "GPT2Block", "T5Encoder", "T5Decoder",
                "LlamaBlock", "TrainStep", "NCCL"]
DEFAULT_FAMILIES = ["Matmul", "Vector", "Memcpy", "BertLayer"]
# backend -> HF attn_implementation; torch-compile is torch.compile of the sdpa layer (COMPILED).
# torchao-compile: torch.compile of the sdpa layer (or model) with torchao's FP8 linears (FP8_BACKENDS).
LAYER_BACKENDS = {"torch-eager": "eager", "torch-sdpa": "sdpa", "torch-compile": "sdpa",
                  "torchao-compile": "sdpa"}
COMPILED = {"torch-compile", "torchao-compile"}
# T5's attention (relative position bias) is eager-only in transformers, so no torch-sdpa name
# for it: a name must say what ran.
FAMILY_BACKENDS = {"BertLayer": ["torch-eager", "torch-sdpa"], "GPT2Block": ["torch-eager", "torch-sdpa"],
                   "T5Encoder": ["torch-eager"], "T5Decoder": ["torch-eager"],
                   "LlamaBlock": ["torch-eager", "torch-sdpa", "torch-compile"]}
# (seq, batch) per layer family: the peer's defaults, and the seeds' whole tables (--seed-shapes).
LAYER_SHAPES = {"BertLayer": [(128, 128), (512, 64)], "GPT2Block": [(1024, 64), (512, 64)],
                "T5Encoder": [(128, 128), (512, 64)], "T5Decoder": [(128, 128), (512, 64)]}
SEED_SHAPES = {"BertLayer": [(s, b) for s in (128, 512) for b in (2, 4, 8, 16, 32, 64, 128)],
               "GPT2Block": [(s, b) for s in (512, 1024) for b in (2, 4, 8, 16, 32, 64)],
               "T5Encoder": [(s, b) for s in (128, 512) for b in (2, 4, 8, 16, 32, 64, 128)],
               "T5Decoder": [(s, b) for s in (128, 512) for b in (2, 4, 8, 16, 32, 64, 128)]}
# GPT-2 sizes: name -> (hidden, heads); xfbench appends /model:<name> to all but gpt2-medium.
GPT2_MODELS = {"gpt2": (768, 12), "gpt2-medium": (1024, 16), "gpt2-large": (1280, 20),
               "gpt2-xl": (1600, 25)}
DEFAULT_GPT2 = "gpt2-medium"
# Llama 3 sizes, HF's published configs: name -> (hidden, heads, kv_heads, head_dim, intermediate,
# llama3 rope factor); all rope_theta 500000, llama3 rope scaling (low 1, high 4, original 8192),
# RMSNorm eps 1e-5, no biases, SiLU, attention dropout 0. xfbench appends /model:<name> to all but
# llama-3.1-8b.
LLAMA_MODELS = {"llama-3.2-1b": (2048, 32, 8, 64, 8192, 32.0),
                "llama-3.2-3b": (3072, 24, 8, 128, 8192, 32.0),
                "llama-3.1-8b": (4096, 32, 8, 128, 14336, 8.0),
                "llama-3.1-70b": (8192, 64, 8, 128, 28672, 8.0)}
DEFAULT_LLAMA = "llama-3.1-8b"
DEFAULT_LLAMA_MODELS = ("llama-3.1-8b", "llama-3.2-1b")
LLAMA_DTYPES = ("bf16", "fp16", "fp8")
DEFAULT_LLAMA_DTYPES = ("bf16",)
# FP8 (issue 34): xfbench's fp8 runs every linear layer of the Llama blocks in FP8 (E4M3 forward,
# E5M2 gradients, per-tensor scales), everything else bf16; its names say the recipe,
# `fp8/recipe:<delayed|current>`. The peer is torchao's float8 training (builders/fp8.py) under
# torch.compile, backend torchao-compile, with torchao's tensorwise recipe: dynamic per-tensor scales
# from each cast's own amax, xfbench's `current` (torchao has no delayed scaling any more).
FP8_RECIPE = "current"
FP8_BACKENDS = ("torchao-compile",)
# (seq, batch) per model where neither --llama-shapes nor --layer-shapes says
LLAMA_SHAPES = {"llama-3.2-1b": [(4096, 4)], "llama-3.2-3b": [(4096, 4)], "llama-3.1-8b": [(4096, 2)],
                "llama-3.1-70b": [(4096, 1)]}
LLAMA_ROPE_THETA = 500000.0
LLAMA_MAX_POSITIONS = 131072  # the published configs' max_position_embeddings
TRAIN_MODELS = {
    # name: (layers, hidden, heads, vocab), as xfbench's kernels/models/language_model_config.cpp
    "bert-base": (12, 768, 12, 30522),
    "bert-large": (24, 1024, 16, 30522),
    "gpt2": (12, 768, 12, 50257),
    "gpt2-medium": (24, 1024, 16, 50257),
    "gpt2-large": (36, 1280, 20, 50257),
    "gpt2-xl": (48, 1600, 25, 50257),
}
# Llama causal LMs for TrainStep, as xfbench's kernels/models/language_model_config.cpp: name -> (layers,
# tied head); the sizes are LLAMA_MODELS', vocab LLAMA_VOCAB. 3.2-1b and 3.2-3b tie the LM head to
# the token embedding, 3.1-8b has its own lm_head.
LLAMA_TRAIN = {"llama-3.2-1b": (16, True), "llama-3.2-3b": (28, True), "llama-3.1-8b": (32, False)}
LLAMA_VOCAB = 128256
# xfbench's one-GPU Llama TrainStep cases (its extended suite), bf16, accum 1, fused AdamW:
# model -> [(seq, batch, ckpt)]; 3b runs batch 1 without checkpointing, batch 2 with it.
LLAMA_TRAIN_CASES = {"llama-3.2-1b": [(4096, 4, False), (4096, 4, True)],
                     "llama-3.2-3b": [(4096, 1, False), (4096, 2, True)]}
# ... and its fp8 ones (--train-precisions fp8): 1b batch 4 and 3b batch 1, no checkpointing, as
# torchao-compile (FP8_BACKENDS).
LLAMA_TRAIN_FP8_CASES = {"llama-3.2-1b": [(4096, 4, False)], "llama-3.2-3b": [(4096, 1, False)]}
# ... and GPT-2's (issue 34's other training target): gpt2-xl s1024 batch 2, as xfbench's extended
# suite runs it, and batch 8 (where FP8 gains: its products at batch 2 are small), HF's
# GPT2LMHeadModel with its Conv1D projections made nn.Linear (builders/train.py).
GPT2_TRAIN_FP8_CASES = {"gpt2-xl": [(1024, 2, False), (1024, 8, False)]}
TRAIN_FP8_CASES = {**LLAMA_TRAIN_FP8_CASES, **GPT2_TRAIN_FP8_CASES}
# --train-precisions: which of the Llama TrainStep cases run (the headline models' cases and the
# multi-GPU ones are as they are)
TRAIN_PRECISIONS = ("bf16", "fp8")
DEFAULT_TRAIN_PRECISIONS = ("bf16",)
# The Llama TrainStep backends: HF's sdpa attention, and torch.compile of that model (compiled
# before the timing; Llama only: the BERT/GPT-2 TrainStep peer has no compile variant).
LLAMA_TRAIN_BACKENDS = ("torch-sdpa", "torch-compile")
# xfbench's TrainStep default suite (model, seq, batch) and the knobs it changes one at a time
# around each: (precision, accum, ckpt, adamw).
TRAIN_HEADLINES = [("bert-large", 128, 64), ("bert-large", 512, 16), ("gpt2-medium", 1024, 8)]
# --train-models: the headline models (their headlines and knobs, the default) and the Llama ones
DEFAULT_TRAIN_MODELS = tuple(dict.fromkeys(m for m, _, _ in TRAIN_HEADLINES))
TRAIN_CHOICES = (DEFAULT_TRAIN_MODELS + tuple(LLAMA_TRAIN_CASES) + tuple(GPT2_TRAIN_FP8_CASES)
                 + tuple(m for m in LLAMA_TRAIN if m not in LLAMA_TRAIN_CASES))  # 8b: --gpus only
# Multi-GPU Llama TrainStep (a Llama model in --train-models, with --gpus): seq 4096, per-GPU batch
# the model's one-GPU batch without checkpointing (1b 4, 3b 1), else 1 (8b: no one-GPU case); bf16,
# accum 1, ckpt:off (activation memory is the user's), fused AdamW; modes LLAMA_PARALLEL_MODES.
LLAMA_PARALLEL_SEQ = 4096
LLAMA_PARALLEL_BATCH = {m: next((b for s, b, c in LLAMA_TRAIN_CASES.get(m, ()) if not c), 1)
                        for m in LLAMA_TRAIN}
# No `dp` for these: DDP keeps every rank's replica whole, fp32 weights, gradients and AdamW's two
# moments, 16 bytes a parameter: 8.03e9 x 16 = 128 GB before any activation, more than one GPU.
LLAMA_NO_DP = ("llama-3.1-8b",)
TRAIN_KNOBS = [("bf16", 1, False, "fused"), ("bf16", 1, False, "unfused"), ("bf16", 4, False, "fused"),
               ("bf16", 1, True, "fused"), ("fp16", 1, False, "fused"), ("tf32", 1, False, "fused")]
# tf32 (fp32 weights, TF32 products) also with HF's eager attention: the algorithm of xfbench's
# unfused attention, the backend xfbench's tf32 runs on (its fused ones take fp16/bf16 only);
# `reports compare` pairs torch-eager with unfused.
TRAIN_TF32_EAGER = ("tf32", 1, False, "fused")


class Spec:
    """One case: its Google Benchmark name and what to build."""

    def __init__(self, family, name, **kw):
        self.family = family
        self.name = name                   # without /manual_time
        self.kw = kw

    @property
    def gb_name(self):
        return self.name + "/manual_time"  # GPU cases use manual time in xfbench too

    def __repr__(self):
        return f"Spec({self.name})"


def precision_field(precision):
    """The precision as xfbench's names write it: fp8 with its recipe (`fp8/recipe:current`), the
    others as they are."""
    return f"fp8/recipe:{FP8_RECIPE}" if precision == "fp8" else precision


def train_name(model, precision, seq, batch, accum=1, ckpt=False, adamw="fused",
               backend="torch-sdpa"):
    """xfbench's TrainStep name with the peer's backend (HF's sdpa attention, matched to
    xfbench's `fused` by the backend map; torch-eager, HF's eager attention, to `unfused`)."""
    return (f"TrainStep/{backend}/{model}/{precision_field(precision)}/seq:{seq}/batch:{batch}/"
            f"accum:{accum}/ckpt:{'on' if ckpt else 'off'}/adamw:{adamw}")


def llama_name(model, backend, dtype, passes, seq, batch):
    """xfbench's LlamaBlock name with the peer's backend; /model:<name> for all but llama-3.1-8b."""
    tag = f"/model:{model}" if model != DEFAULT_LLAMA else ""
    return f"LlamaBlock/{backend}/{precision_field(dtype)}/{passes}/seq:{seq}/batch:{batch}{tag}"


def llama_config(model, seq=0):
    """LlamaConfig arguments of one layer of `model` (transformers 5.x names: rope_parameters holds
    rope_theta); max_position_embeddings at least `seq`."""
    h, heads, kv, d, inter, factor = LLAMA_MODELS[model]
    return {"hidden_size": h, "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": d,
            "intermediate_size": inter, "hidden_act": "silu", "rms_norm_eps": 1e-5,
            "attention_bias": False, "mlp_bias": False, "attention_dropout": 0.0,
            "max_position_embeddings": max(LLAMA_MAX_POSITIONS, seq), "num_hidden_layers": 1,
            "rope_parameters": {"rope_type": "llama3", "rope_theta": LLAMA_ROPE_THETA,
                                "factor": factor, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 8192}}


def llama_train_config(model, seq=0):
    """LlamaConfig arguments of the whole causal LM `model` (llama_config's layer arguments with
    the model's layers, the vocabulary, the tied or own LM head; no KV cache in a training step)."""
    layers, tied = LLAMA_TRAIN[model]
    return dict(llama_config(model, seq), num_hidden_layers=layers, vocab_size=LLAMA_VOCAB,
                tie_word_embeddings=tied, use_cache=False)


def default_specs(families, layer_shapes=None, seed_shapes=False, gpt2_models=(DEFAULT_GPT2,),
                  gpus=0, nccl_ops=nccl.OPS, nccl_dtypes=nccl.DEFAULT_DTYPES,
                  nccl_sizes=nccl.DEFAULT_SIZES, llama_models=DEFAULT_LLAMA_MODELS,
                  llama_shapes=None, llama_dtypes=DEFAULT_LLAMA_DTYPES,
                  train_models=DEFAULT_TRAIN_MODELS, train_precisions=DEFAULT_TRAIN_PRECISIONS):
    out = []
    if "Matmul" in families:
        for dt in ("fp32", "tf32", "fp16", "bf16"):
            for n in (2048, 4096, 8192, 16384):
                out.append(Spec("Matmul", f"Matmul/{dt}/NN/m:{n}/n:{n}/k:{n}", dtype=dt, m=n, n=n, k=n))
    if "Vector" in families:
        n = 1 << 28
        for op in ("scale", "copy"):
            for dt in ("fp32", "fp16", "bf16"):
                out.append(Spec("Vector", f"Vector/{op}/{dt}/n:{n}", op=op, dtype=dt, n=n))
        out.append(Spec("Vector", f"Vector/triad/fp32/n:{n}", op="triad", dtype="fp32", n=n))
    if "Memcpy" in families:
        nb = 256 * MiB
        for kind in ("h2d/pinned/ce", "d2h/pinned/ce", "d2d/device/ce"):
            out.append(Spec("Memcpy", f"Memcpy/{kind}/bytes:{nb}", direction=kind.split("/")[0], bytes=nb))
    for fam in ("BertLayer", "GPT2Block", "T5Encoder", "T5Decoder"):
        if fam not in families:
            continue
        shapes = layer_shapes or (seed_shapes and SEED_SHAPES.get(fam)) or LAYER_SHAPES[fam]
        models = gpt2_models if fam == "GPT2Block" else (None,)
        for model in models:
            hidden, heads = GPT2_MODELS[model] if model else (H, HEADS)
            tag = f"/model:{model}" if model and model != DEFAULT_GPT2 else ""
            for backend in FAMILY_BACKENDS[fam]:
                for s, b in shapes:
                    for passes in ("fwd", "fwdbwd"):
                        out.append(Spec(fam, f"{fam}/{backend}/fp16/{passes}/seq:{s}/batch:{b}{tag}",
                                        backend=backend, passes=passes, seq=s, batch=b, part=None,
                                        hidden=hidden, heads=heads))
        if fam == "BertLayer":
            # HF BertAttention in eager mode is xfbench's unfused `attention` part; in sdpa mode it
            # is the fused one (`attention_fused`).
            for part in ("dense", "dense_gelu", "ffn", "attention", "attention_fused"):
                backend = "torch-eager" if part == "attention" else "torch-sdpa"
                out.append(Spec(fam, f"BertLayer/part:{part}/fp16/fwd/seq:128/batch:64",
                                backend=backend, passes="fwd", seq=128, batch=64, part=part))
    if "LlamaBlock" in families:
        # shapes: --llama-shapes, else --layer-shapes, else the model's own (LLAMA_SHAPES); bf16 and
        # fp16 on the torch backends, then fp8 (torchao-compile) after all of them, so the
        # inductor setting torchao changes for the process (builders/fp8.py) comes after them
        for fp8 in (False, True):
            dtypes = [d for d in llama_dtypes if (d == "fp8") == fp8]
            for model in llama_models if dtypes else ():
                for backend in FP8_BACKENDS if fp8 else FAMILY_BACKENDS["LlamaBlock"]:
                    for dtype in dtypes:
                        for s, b in llama_shapes or layer_shapes or LLAMA_SHAPES[model]:
                            for passes in ("fwd", "fwdbwd"):
                                recipe = {"recipe": FP8_RECIPE} if fp8 else {}
                                out.append(Spec("LlamaBlock",
                                                llama_name(model, backend, dtype, passes, s, b),
                                                model=model, backend=backend, dtype=dtype,
                                                passes=passes, seq=s, batch=b, **recipe))
    if "TrainStep" in families:
        # one GPU: per --train-models model, a headline model's headlines with their knobs, or a
        # Llama model's cases (torch-sdpa, then torch-compile)
        for model in dict.fromkeys(train_models):
            for head, s, b in TRAIN_HEADLINES:
                if head != model:
                    continue
                knobs = [k + ("torch-sdpa",) for k in TRAIN_KNOBS]
                knobs.append(TRAIN_TF32_EAGER + ("torch-eager",))
                for precision, accum, ckpt, adamw, backend in knobs:
                    out.append(Spec("TrainStep",
                                    train_name(model, precision, s, b, accum, ckpt, adamw, backend),
                                    model=model, precision=precision, seq=s, batch=b, accum=accum,
                                    ckpt=ckpt, adamw=adamw, attention=LAYER_BACKENDS[backend]))
            llama_bf16 = model in LLAMA_TRAIN_CASES and "bf16" in train_precisions
            for backend in LLAMA_TRAIN_BACKENDS if llama_bf16 else ():
                for s, b, ckpt in LLAMA_TRAIN_CASES[model]:
                    out.append(Spec("TrainStep",
                                    train_name(model, "bf16", s, b, 1, ckpt, "fused", backend),
                                    model=model, precision="bf16", seq=s, batch=b, accum=1,
                                    ckpt=ckpt, adamw="fused", attention=LAYER_BACKENDS[backend],
                                    backend=backend))
        # fp8 (--train-precisions fp8): the FP8 cases (Llama's, gpt2-xl's), after every one-GPU
        # bf16 case
        for model in dict.fromkeys(train_models) if "fp8" in train_precisions else ():
            for backend in FP8_BACKENDS if model in TRAIN_FP8_CASES else ():
                for s, b, ckpt in TRAIN_FP8_CASES[model]:
                    out.append(Spec("TrainStep",
                                    train_name(model, "fp8", s, b, 1, ckpt, "fused", backend),
                                    model=model, precision="fp8", recipe=FP8_RECIPE, seq=s, batch=b,
                                    accum=1, ckpt=ckpt, adamw="fused",
                                    attention=LAYER_BACKENDS[backend], backend=backend))
        # multi-GPU (peer_parallel.py): the environment's p2p setting, per-GPU batches; xfbench's
        # BERT/GPT-2 headlines unless --train-models names Llama models only, then each named
        # Llama model's cases (their own modes, zero3 among them)
        out += parallel_specs(train_models, gpus)
    if "NCCL" in families and gpus:  # collectives over `gpus` torchrun ranks (peer_nccl.py)
        for name, kw in nccl.cases(nccl_ops, nccl_dtypes, nccl_sizes, gpus):
            out.append(Spec("NCCL", name, **kw))
    return out


def parallel_specs(train_models, gpus):
    """The multi-GPU TrainStep cases for `gpus` ranks (none for 0): the headlines in
    PARALLEL_MODES where a non-Llama model is among `train_models` (the default), then each Llama
    model's in LLAMA_PARALLEL_MODES (no dp where the replica does not fit: LLAMA_NO_DP)."""
    models = list(dict.fromkeys(train_models))
    llama = [m for m in models if m in LLAMA_TRAIN]
    cases = [(m, s, b, parallel.PARALLEL_MODES) for m, s, b in parallel.PARALLEL_HEADLINES
             if len(llama) < len(models)]
    for m in llama:
        modes = [x for x in parallel.LLAMA_PARALLEL_MODES if x != "dp" or m not in LLAMA_NO_DP]
        cases.append((m, LLAMA_PARALLEL_SEQ, LLAMA_PARALLEL_BATCH[m], modes))
    out = []
    for model, s, b, modes in cases if gpus else ():
        for mode in modes:
            name = parallel.parallel_name(train_name(model, "bf16", s, b), mode, gpus,
                                          not parallel.p2p_disabled())
            out.append(Spec("TrainStep", name, model=model, precision="bf16", seq=s, batch=b,
                            accum=1, ckpt=False, adamw="fused", attention="sdpa",
                            parallel=mode, gpus=gpus))
    return out


def select(specs, pattern):
    if not pattern:
        return specs
    rx = re.compile(pattern)
    return [s for s in specs if rx.search(s.name) or rx.search(s.gb_name)]


def specs_from_names(names):
    """Specs for xfbench's own case names, as `xfbench --benchmark_list_tests` prints them (Google
    Benchmark's suffixes cut), read by reports/name_schema.txt: Matmul's, sweeps and model GEMMs
    included. ValueError naming the first name the peer cannot build."""
    out = []
    for raw in names:
        name = re.sub(r"(/(iterations:\d+|repeats:\d+|manual_time))+$", "", raw.strip())
        if not name:
            continue
        axes = case_names.name_axes(name)
        if axes is None or not name.startswith("Matmul/"):
            raise ValueError(f"'{name}': the peer builds Matmul case names from a list "
                             f"(the other families by --families)")
        out.append(Spec("Matmul", name, dtype=axes["dtype"], layout=axes["layout"],
                        m=int(axes["m"]), n=int(axes["n"]), k=int(axes["k"]),
                        batch=int(axes.get("batch", 1)), fast_accum=axes.get("accum") == "fast"))
    return out
