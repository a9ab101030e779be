#!/usr/bin/env python3
"""PyTorch peer runner: xfbench's cases through PyTorch / HF transformers, written as Google
Benchmark JSON with the same case names and counters, so `python3 -m reports compare` lines the
two up ("how much faster than the PyTorch the seeds measured?").

Standalone on purpose: standard library + torch (+ transformers for the layer families), no
import from the `reports` package, so it can be copied to a GPU machine and run as
    python3 reports/peer_torch.py --out torch.json
and the multi-GPU families (TrainStep dp/zero2, NCCL) under torchrun, one process per GPU:
    torchrun --nproc-per-node=8 reports/peer_torch.py --families NCCL --out torch_nccl.json
Timing follows DESIGN.md with xfbench's own protocol: by default the steady state (windows of
back-to-back launches between CUDA events until a minimum time and a noise target are reached,
reports/steady_state.py, protocol version 2, with NVML power and clocks over the measured windows
from a 10 ms sampler, reports/nvml.py); `--mode hot` is a short burst after a fixed warm-up. Several repetitions, random
inputs. A case that fails becomes an entry with `error_occurred`, like xfbench's SkipWithError, and
the run goes on. The sibling files (steady_state, nvml, peer_parallel, peer_nccl) are loaded by
path, so copy reports/ (or these five files).

Exit codes: 0 all cases ran, 1 some cases failed, 2 torch/CUDA missing or bad arguments.
"""

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time

H = 1024            # bert-large hidden size
HEADS = 16
FFN = 4096          # bert-large intermediate size
DROPOUT = 0.1
MiB = 1 << 20

ALL_FAMILIES = ["Matmul", "Vector", "Memcpy", "BertLayer", "GPT2Block", "T5Encoder", "T5Decoder",
                "LlamaBlock", "TrainStep", "NCCL"]
DEFAULT_FAMILIES = ["Matmul", "Vector", "Memcpy", "BertLayer"]
# backend -> HF attn_implementation; torch-compile is torch.compile of the sdpa layer (COMPILED).
LAYER_BACKENDS = {"torch-eager": "eager", "torch-sdpa": "sdpa", "torch-compile": "sdpa"}
COMPILED = {"torch-compile"}
# T5's attention (relative position bias) is eager-only in transformers, so no torch-sdpa name
# for it: a name must say what ran.
FAMILY_BACKENDS = {"BertLayer": ["torch-eager", "torch-sdpa"], "GPT2Block": ["torch-eager", "torch-sdpa"],
                   "T5Encoder": ["torch-eager"], "T5Decoder": ["torch-eager"],
                   "LlamaBlock": ["torch-eager", "torch-sdpa", "torch-compile"]}
DTYPE_SIZE = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
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
LLAMA_DTYPES = ("bf16", "fp16")
DEFAULT_LLAMA_DTYPES = ("bf16",)
# (seq, batch) per model where neither --llama-shapes nor --layer-shapes says
LLAMA_SHAPES = {"llama-3.2-1b": [(4096, 4)], "llama-3.2-3b": [(4096, 4)], "llama-3.1-8b": [(4096, 2)],
                "llama-3.1-70b": [(4096, 1)]}
LLAMA_ROPE_THETA = 500000.0
LLAMA_MAX_POSITIONS = 131072  # the published configs' max_position_embeddings
TRAIN_MODELS = {
    # name: (layers, hidden, heads, vocab), as xfbench's kernels/language_model_config.cpp
    "bert-base": (12, 768, 12, 30522),
    "bert-large": (24, 1024, 16, 30522),
    "gpt2": (12, 768, 12, 50257),
    "gpt2-medium": (24, 1024, 16, 50257),
    "gpt2-large": (36, 1280, 20, 50257),
    "gpt2-xl": (48, 1600, 25, 50257),
}
# Llama causal LMs for TrainStep, as xfbench's kernels/language_model_config.cpp: name -> (layers,
# tied head); the sizes are LLAMA_MODELS', vocab LLAMA_VOCAB. 3.2-1b and 3.2-3b tie the LM head to
# the token embedding, 3.1-8b has its own lm_head.
LLAMA_TRAIN = {"llama-3.2-1b": (16, True), "llama-3.2-3b": (28, True), "llama-3.1-8b": (32, False)}
LLAMA_VOCAB = 128256
# xfbench's one-GPU Llama TrainStep cases (its extended suite), bf16, accum 1, fused AdamW:
# model -> [(seq, batch, ckpt)]; 3b runs batch 1 without checkpointing, batch 2 with it.
LLAMA_TRAIN_CASES = {"llama-3.2-1b": [(4096, 4, False), (4096, 4, True)],
                     "llama-3.2-3b": [(4096, 1, False), (4096, 2, True)]}
# The Llama TrainStep backends: HF's sdpa attention, and torch.compile of that model (compiled
# before the timing; Llama only: the BERT/GPT-2 TrainStep peer has no compile variant).
LLAMA_TRAIN_BACKENDS = ("torch-sdpa", "torch-compile")
# xfbench's TrainStep default suite (model, seq, batch) and the knobs it changes one at a time
# around each: (precision, accum, ckpt, adamw).
TRAIN_HEADLINES = [("bert-large", 128, 64), ("bert-large", 512, 16), ("gpt2-medium", 1024, 8)]
# --train-models: the headline models (their headlines and knobs, the default) and the Llama ones
DEFAULT_TRAIN_MODELS = tuple(dict.fromkeys(m for m, _, _ in TRAIN_HEADLINES))
TRAIN_CHOICES = DEFAULT_TRAIN_MODELS + tuple(LLAMA_TRAIN_CASES)
TRAIN_KNOBS = [("bf16", 1, False, "fused"), ("bf16", 1, False, "unfused"), ("bf16", 4, False, "fused"),
               ("bf16", 1, True, "fused"), ("fp16", 1, False, "fused"), ("tf32", 1, False, "fused")]
# tf32 (fp32 weights, TF32 products) also with HF's eager attention: the algorithm of xfbench's
# unfused attention, the backend xfbench's tf32 runs on (its fused ones take fp16/bf16 only);
# `reports compare` pairs torch-eager with unfused.
TRAIN_TF32_EAGER = ("tf32", 1, False, "fused")
MLM_PROBABILITY = 0.15


def train_name(model, precision, seq, batch, accum=1, ckpt=False, adamw="fused",
               backend="torch-sdpa"):
    """xfbench's TrainStep name with the peer's backend (HF's sdpa attention, matched to
    xfbench's `fused` by the backend map; torch-eager, HF's eager attention, to `unfused`)."""
    return (f"TrainStep/{backend}/{model}/{precision}/seq:{seq}/batch:{batch}/accum:{accum}/"
            f"ckpt:{'on' if ckpt else 'off'}/adamw:{adamw}")


def _sibling(name):
    """reports/<name>.py, loaded by path: on a GPU machine this script runs without the reports
    package on sys.path."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location(f"xfbench_peer_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


steady_state = _sibling("steady_state")
nvml = _sibling("nvml")
parallel = _sibling("peer_parallel")
nccl = _sibling("peer_nccl")
DIST = parallel.Dist()  # torchrun's ranks, or one process


# ---- pure Python: case list, names, FLOP and byte counts, JSON -------------------------------

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


def matmul_flops(m, n, k):
    return 2 * m * n * k


def layer_flops(b, s, h=H, kind="layer", passes="fwd"):
    """FLOPs as in DESIGN.md: layer 24bsh^2 + 4bs^2h; ffn 16bsh^2; attention 8bsh^2 + 4bs^2h;
    dense (h -> 4h) 8bsh^2; decoder counts attention twice (self + cross); fwd+bwd = 3x fwd."""
    att = 8 * b * s * h * h + 4 * b * s * s * h
    ffn = 16 * b * s * h * h
    f = {"layer": att + ffn, "decoder": 2 * att + ffn, "ffn": ffn, "attention": att, "attention_fused": att,
         "dense": 8 * b * s * h * h, "dense_gelu": 8 * b * s * h * h}[kind]
    return 3 * f if passes == "fwdbwd" else f


def llama_flops(b, s, model, passes="fwd", causal=False):
    """FLOPs of one LlamaDecoderLayer as xfbench counts them, with A = heads * head_dim the attention
    width and kv = kv_heads: q,k,v projections 2bsh(A + 2*kv*head_dim), o_proj 2bsAh, gate, up and
    down 6bshI, scores and context 4bs^2A (causal=True: 2bs^2A, the half a causal kernel needs);
    fwd+bwd = 3x fwd."""
    h, heads, kv, d, inter, _ = LLAMA_MODELS[model]
    a = heads * d
    f = (2 * b * s * h * (a + 2 * kv * d) + 2 * b * s * a * h + 6 * b * s * h * inter
         + (2 if causal else 4) * b * s * s * a)
    return 3 * f if passes == "fwdbwd" else f


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


def llama_name(model, backend, dtype, passes, seq, batch):
    """xfbench's LlamaBlock name with the peer's backend; /model:<name> for all but llama-3.1-8b."""
    tag = f"/model:{model}" if model != DEFAULT_LLAMA else ""
    return f"LlamaBlock/{backend}/{dtype}/{passes}/seq:{seq}/batch:{batch}{tag}"


def train_flops_per_sample(model, s, ckpt=False):
    """3 * (L * (att + ffn) + 2*s*h*V) per sample; 4x instead of 3x with activation checkpointing
    (the forward runs twice). BERT, GPT-2: att + ffn = 24sh^2 + 4s^2h. Llama (xfbench's rule, its
    block_forward_flops): att + ffn = llama_flops(1, s) = s * (2h(A + 2*kv*d) + 2Ah + 6hI + 4sA),
    A = heads * head_dim, V = 128256 (the head counted once, tied or not)."""
    if model in LLAMA_TRAIN:
        L, h = LLAMA_TRAIN[model][0], LLAMA_MODELS[model][0]
        per = L * llama_flops(1, s, model) + 2 * s * h * LLAMA_VOCAB
    else:
        L, h, _, V = TRAIN_MODELS[model]
        per = L * (24 * s * h * h + 4 * s * s * h) + 2 * s * h * V
    return (4 if ckpt else 3) * per


def llama_train_config(model, seq=0):
    """LlamaConfig arguments of the whole causal LM `model` (llama_config's layer arguments with
    the model's layers, the vocabulary, the tied or own LM head; no KV cache in a training step)."""
    layers, tied = LLAMA_TRAIN[model]
    return dict(llama_config(model, seq), num_hidden_layers=layers, vocab_size=LLAMA_VOCAB,
                tie_word_embeddings=tied, use_cache=False)


def llama_param_count(model):
    """Parameters of LlamaForCausalLM(model): embedding, per layer q/k/v/o, gate/up/down and two
    RMSNorms, the final RMSNorm, and lm_head when not tied (1,235,814,400 for llama-3.2-1b)."""
    h, heads, kv, d, inter, _ = LLAMA_MODELS[model]
    layers, tied = LLAMA_TRAIN[model]
    a = heads * d
    layer = h * a + 2 * h * kv * d + a * h + 3 * h * inter + 2 * h
    return (1 if tied else 2) * LLAMA_VOCAB * h + layers * layer + h


def vector_bytes(op, n, dtype):
    """Bytes read + written: scale/copy read n and write n; triad reads 2n and writes n."""
    return (3 if op == "triad" else 2) * n * DTYPE_SIZE[dtype]


def default_specs(families, layer_shapes=None, seed_shapes=False, gpt2_models=(DEFAULT_GPT2,),
                  gpus=0, nccl_ops=nccl.OPS, nccl_dtypes=nccl.DEFAULT_DTYPES,
                  nccl_sizes=nccl.DEFAULT_SIZES, llama_models=DEFAULT_LLAMA_MODELS,
                  llama_shapes=None, llama_dtypes=DEFAULT_LLAMA_DTYPES,
                  train_models=DEFAULT_TRAIN_MODELS):
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
        # shapes: --llama-shapes, else --layer-shapes, else the model's own (LLAMA_SHAPES)
        for model in llama_models:
            for backend in FAMILY_BACKENDS["LlamaBlock"]:
                for dtype in llama_dtypes:
                    for s, b in llama_shapes or layer_shapes or LLAMA_SHAPES[model]:
                        for passes in ("fwd", "fwdbwd"):
                            out.append(Spec("LlamaBlock", llama_name(model, backend, dtype, passes, s, b),
                                            model=model, backend=backend, dtype=dtype, passes=passes,
                                            seq=s, batch=b))
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
            for backend in LLAMA_TRAIN_BACKENDS if model in LLAMA_TRAIN_CASES else ():
                for s, b, ckpt in LLAMA_TRAIN_CASES[model]:
                    out.append(Spec("TrainStep",
                                    train_name(model, "bf16", s, b, 1, ckpt, "fused", backend),
                                    model=model, precision="bf16", seq=s, batch=b, accum=1,
                                    ckpt=ckpt, adamw="fused", attention=LAYER_BACKENDS[backend],
                                    backend=backend))
        # multi-GPU (peer_parallel.py): the environment's p2p setting, per-GPU batches
        for model, s, b in parallel.PARALLEL_HEADLINES if gpus else []:
            for mode in parallel.PARALLEL_MODES:
                name = parallel.parallel_name(train_name(model, "bf16", s, b), mode, gpus,
                                              not parallel.p2p_disabled())
                out.append(Spec("TrainStep", name, model=model, precision="bf16", seq=s, batch=b,
                                accum=1, ckpt=False, adamw="fused", attention="sdpa",
                                parallel=mode, gpus=gpus))
    if "NCCL" in families and gpus:  # collectives over `gpus` torchrun ranks (peer_nccl.py)
        for name, kw in nccl.cases(nccl_ops, nccl_dtypes, nccl_sizes, gpus):
            out.append(Spec("NCCL", name, **kw))
    return out


def select(specs, pattern):
    if not pattern:
        return specs
    rx = re.compile(pattern)
    return [s for s in specs if rx.search(s.name) or rx.search(s.gb_name)]


def counters(spec, seconds, mem_bytes=None):
    """Counters of one repetition that took `seconds` per iteration (same units as xfbench)."""
    k, t = spec.kw, seconds
    c = {}
    if spec.family == "Matmul":
        c["TFLOPS"] = matmul_flops(k["m"], k["n"], k["k"]) / t / 1e12
    elif spec.family == "Vector":
        c["GB/s"] = vector_bytes(k["op"], k["n"], k["dtype"]) / t / 1e9
    elif spec.family == "Memcpy":
        # h2d/d2h cross PCIe once; d2d reads and writes device memory (2x), as xfbench counts it
        c["GB/s"] = (2 if k["direction"] == "d2d" else 1) * k["bytes"] / t / 1e9
    elif spec.family == "TrainStep":
        per = train_flops_per_sample(k["model"], k["seq"], ckpt=k["ckpt"])
        samples = k["batch"] * k["accum"]  # one optimizer step of `accum` micro-batches, per GPU
        c["TFLOPS"] = per * samples / t / 1e12
        c["samples/s"] = samples * k.get("gpus", 1) / t  # all GPUs; TFLOPS per GPU
        c["tokens/s"] = samples * k.get("gpus", 1) * k["seq"] / t
    elif spec.family == "NCCL":
        c.update(nccl.counters(k, t))
    elif spec.family == "LlamaBlock":
        args = (k["batch"], k["seq"], k["model"], k["passes"])
        c["TFLOPS"] = llama_flops(*args) / t / 1e12
        c["TFLOPS_causal"] = llama_flops(*args, causal=True) / t / 1e12
        c["samples/s"] = k["batch"] / t
        c["tokens/s"] = k["batch"] * k["seq"] / t
    else:  # layer families
        kind = k["part"] or ("decoder" if spec.family == "T5Decoder" else "layer")
        flops = layer_flops(k["batch"], k["seq"], h=k.get("hidden", H), kind=kind, passes=k["passes"])
        c["TFLOPS"] = flops / t / 1e12
        c["samples/s"] = k["batch"] / t
    if mem_bytes is not None:
        c["mem_GB"] = mem_bytes / 1e9
    return c


TIME_UNIT = "ms"


class Rep:
    """One repetition: seconds per launch, launches timed, extra counters (protocol, telemetry)
    and its label."""

    def __init__(self, seconds, iterations, extra=None, label=""):
        self.seconds = seconds
        self.iterations = iterations
        self.extra = extra or {}
        self.label = label


def gb_entries(spec, reps, family_index, instance_index, mem_bytes=None):
    """Google Benchmark 1.7.1 entries: one per repetition, then mean/median/stddev/cv aggregates
    (what --benchmark_repetitions=N writes)."""
    scale = 1e3  # seconds -> ms
    base = {"name": spec.gb_name, "family_index": family_index,
            "per_family_instance_index": instance_index, "run_name": spec.gb_name}
    out = []
    for i, r in enumerate(reps):
        e = dict(base, run_type="iteration", repetitions=len(reps), repetition_index=i, threads=1,
                 iterations=r.iterations, real_time=r.seconds * scale, cpu_time=r.seconds * scale,
                 time_unit=TIME_UNIT)
        e.update(counters(spec, r.seconds, mem_bytes))
        e.update(r.extra)
        if r.label:
            e["label"] = r.label
        out.append(e)
    if len(reps) > 1:
        iterations = list(out)
        # counters every repetition has (telemetry may be missing from one)
        keys = ["real_time", "cpu_time"] + [k for k in iterations[0] if k not in base and k not in (
            "run_type", "repetitions", "repetition_index", "threads", "iterations", "real_time",
            "cpu_time", "time_unit", "label") and all(k in e for e in iterations)]
        for agg in ("mean", "median", "stddev", "cv"):
            a = dict(base, name=f"{spec.gb_name}_{agg}", run_type="aggregate",
                     repetitions=len(reps), threads=1, aggregate_name=agg,
                     aggregate_unit="percentage" if agg == "cv" else "time",
                     iterations=len(reps))
            for key in keys:
                vals = [e[key] for e in iterations]
                mean = statistics.fmean(vals)
                sd = statistics.stdev(vals)
                a[key] = {"mean": mean, "median": statistics.median(vals), "stddev": sd,
                          "cv": sd / mean if mean else 0.0}[agg]
            a["time_unit"] = TIME_UNIT
            out.append(a)
    return out


def error_entry(spec, message, family_index, instance_index):
    return {"name": spec.gb_name, "family_index": family_index,
            "per_family_instance_index": instance_index, "run_name": spec.gb_name,
            "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
            "iterations": 0, "real_time": 0.0, "cpu_time": 0.0, "time_unit": TIME_UNIT,
            "error_occurred": True, "error_message": message}


def base_context(mode="hot", options=None, window_s=None):
    """Google Benchmark's own context keys, as far as Python can tell them, and the timing protocol
    (the same keys as xfbench's context)."""
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(), "executable": " ".join([sys.executable] + sys.argv),
        "num_cpus": os.cpu_count() or 0, "mhz_per_cpu": 0, "cpu_scaling_enabled": False,
        "caches": [], "load_avg": load, "library_build_type": "release",
        "xfbench_runner": "pytorch", "xfbench_mode": mode, "python_version": platform.python_version(),
        **(protocol_context(options, window_s) if mode == "steady" else {}),
    }


def protocol_context(o, window_s):
    return {"protocol_min_time": f"{o.min_time:g}", "protocol_max_noise_pct": f"{100 * o.max_noise:g}",
            "protocol_timeout": f"{o.timeout:g}", "protocol_min_warmup": f"{o.min_warmup:g}",
            "protocol_capped_warmup": f"{o.capped_warmup:g}",
            "protocol_window_ms": f"{1e3 * window_s:g}"}


def write_json(path, context, entries):
    # Written after every case (to a temp file, then renamed) so a crash leaves a valid file.
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"context": context, "benchmarks": entries}, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def fmt_cudnn(v):
    """torch gives cuDNN 9.1.2 as 90102."""
    if not v:
        return ""
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}" if v >= 90000 else f"{v // 1000}.{v % 1000 // 100}.{v % 100}"


# ---- torch: context, builders, timing --------------------------------------------------------

def torch_context(torch, device):
    ctx = {"torch_version": torch.__version__}
    try:
        import transformers
        ctx["transformers_version"] = transformers.__version__
    except ImportError:
        pass
    p = torch.cuda.get_device_properties(device)
    ctx.update(gpu_name=p.name, gpu_cc=f"{p.major}.{p.minor}", gpu_sm_count=str(p.multi_processor_count),
               gpu_mem_GB=f"{p.total_memory / 1e9:.1f}", cuda_runtime=str(torch.version.cuda or ""),
               cudnn_version=fmt_cudnn(torch.backends.cudnn.version()))
    for attr, key in (("memory_bus_width", "gpu_bus_width"), ("clock_rate", "gpu_max_sm_MHz")):
        v = getattr(p, attr, None)
        if v:
            ctx[key] = str(v // 1000 if attr == "clock_rate" else v)
    try:
        ctx["nccl_version"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception:  # NCCL is optional in torch builds
        pass
    try:  # torch does not expose the driver version; nvidia-smi does where it exists
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader",
                              f"--id={device}"], capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            ctx["driver_version"] = out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return ctx


def _dtype(torch, name):
    return {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
            "bf16": torch.bfloat16}[name]


def _first(out):
    """HF layers return a tensor, a tuple or a ModelOutput depending on version."""
    if isinstance(out, (tuple, list)):
        return out[0]
    return getattr(out, "last_hidden_state", out)


def _make(cls, config, **kw):
    """HF module constructors gained arguments (layer_idx, ...) over versions: try, then without."""
    try:
        return cls(config, **kw)
    except TypeError:
        return cls(config)


def _config(cls, impl, **kw):
    cfg = cls(**kw)
    # attn_implementation selects eager vs scaled_dot_product_attention kernels
    try:
        cfg._attn_implementation = impl
    except Exception:
        setattr(cfg, "_attn_implementation_internal", impl)
    return cfg


def build_matmul(torch, spec, dev):
    k = spec.kw
    dt = _dtype(torch, k["dtype"])
    # tf32 is fp32 storage with TF32 tensor-core math; fp32 must really be fp32
    torch.backends.cuda.matmul.allow_tf32 = k["dtype"] == "tf32"
    a = torch.randn(k["m"], k["k"], device=dev, dtype=dt)
    b = torch.randn(k["k"], k["n"], device=dev, dtype=dt)
    c = torch.empty(k["m"], k["n"], device=dev, dtype=dt)
    return lambda: torch.matmul(a, b, out=c)


def build_vector(torch, spec, dev):
    k = spec.kw
    dt = _dtype(torch, k["dtype"])
    a = torch.randn(k["n"], device=dev, dtype=dt)
    b = torch.empty_like(a)
    if k["op"] == "scale":
        return lambda: torch.mul(a, 1.2, out=b)  # a*1.2 without an allocation per call
    if k["op"] == "copy":
        return lambda: b.copy_(a)
    c = torch.randn_like(a)
    return lambda: torch.add(b, c, alpha=1.2, out=a)  # triad: a = b + 1.2*c


def build_memcpy(torch, spec, dev):
    n, d = spec.kw["bytes"], spec.kw["direction"]
    dev_buf = torch.randint(0, 256, (n,), dtype=torch.uint8, device=dev)
    if d == "d2d":
        dst = torch.empty_like(dev_buf)
        return lambda: dst.copy_(dev_buf)
    host = torch.randint(0, 256, (n,), dtype=torch.uint8).pin_memory()
    if d == "h2d":
        return lambda: dev_buf.copy_(host, non_blocking=True)
    return lambda: host.copy_(dev_buf, non_blocking=True)


def build_layer(torch, spec, dev):
    k = spec.kw
    s, b, impl = k["seq"], k["batch"], LAYER_BACKENDS[k["backend"]]
    h = k.get("hidden", H)
    dt = torch.float16
    fam = spec.family
    extra = {}
    if fam == "BertLayer":
        from transformers import BertConfig
        from transformers.models.bert import modeling_bert as mb
        cfg = _config(BertConfig, impl, hidden_size=H, num_attention_heads=HEADS, intermediate_size=FFN,
                      hidden_dropout_prob=DROPOUT, attention_probs_dropout_prob=DROPOUT,
                      max_position_embeddings=max(512, s))
        part = k["part"]
        if part is None:
            mod = _make(mb.BertLayer, cfg, layer_idx=0)
            fwd = lambda m, x: _first(m(x))
        elif part == "dense":
            mod = torch.nn.Linear(H, FFN)
            fwd = lambda m, x: m(x)
        elif part == "dense_gelu":
            mod = mb.BertIntermediate(cfg)  # Linear 1024->4096 + GELU
            fwd = lambda m, x: m(x)
        elif part == "ffn":
            mod = torch.nn.ModuleDict({"i": mb.BertIntermediate(cfg), "o": mb.BertOutput(cfg)})
            fwd = lambda m, x: m["o"](m["i"](x), x)
        else:
            mod = _make(mb.BertAttention, cfg, layer_idx=0)
            fwd = lambda m, x: _first(m(x))
    elif fam == "GPT2Block":
        from transformers import GPT2Config
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block
        # gpt2-medium by default: hidden 1024, 16 heads; n_inner 4h, GELU (tanh form, "gelu_new")
        cfg = _config(GPT2Config, impl, n_embd=h, n_head=k["heads"], n_inner=4 * h, n_positions=max(1024, s),
                      activation_function="gelu_new", resid_pdrop=DROPOUT, attn_pdrop=DROPOUT,
                      embd_pdrop=DROPOUT)
        mod = _make(GPT2Block, cfg, layer_idx=0)
        fwd = lambda m, x: _first(m(x))
    else:
        from transformers import T5Config
        from transformers.models.t5.modeling_t5 import T5Block
        dec = fam == "T5Decoder"
        cfg = _config(T5Config, impl, d_model=H, d_ff=FFN, num_heads=HEADS, d_kv=H // HEADS,
                      dropout_rate=DROPOUT, is_decoder=dec, use_cache=False)
        mod = _make(T5Block, cfg, has_relative_attention_bias=True, layer_idx=0)
        if dec:
            extra["enc"] = torch.randn(b, s, H, device=dev, dtype=dt)
            fwd = lambda m, x: _first(m(x, encoder_hidden_states=extra["enc"], use_cache=False))
        else:
            fwd = lambda m, x: _first(m(x))
    mod = mod.to(dev, dt).train()  # training mode: dropout on, as in the seeds
    x = torch.randn(b, s, h, device=dev, dtype=dt, requires_grad=k["passes"] == "fwdbwd")
    if k["passes"] == "fwd":
        def run():
            with torch.no_grad():  # forward only: no autograd graph to build
                fwd(mod, x)
        return run
    dy = torch.randn(b, s, h, device=dev, dtype=dt)

    def run():
        fwd(mod, x).backward(dy)
    return run


def _llama_layer_config(LlamaConfig, impl, kw):
    """LlamaConfig from llama_config()'s arguments: transformers 5.x takes rope_parameters (with
    rope_theta in it), 4.x rope_theta and rope_scaling."""
    import inspect
    kw = dict(kw, rope_parameters=dict(kw["rope_parameters"]))  # the config completes it in place
    if ("rope_parameters" not in inspect.signature(LlamaConfig.__init__).parameters
            and "rope_parameters" not in getattr(LlamaConfig, "__dataclass_fields__", {})):
        rope = kw.pop("rope_parameters")
        kw["rope_theta"] = rope.pop("rope_theta")
        kw["rope_scaling"] = rope
    return _config(LlamaConfig, impl, **kw)


def _compiled(torch, mod, runner):
    """(run, label): runner(torch.compile(mod)) called twice here (the compile, then any recompile
    the second call triggers), so the timing sees no compile; fullgraph=True, else, where dynamo
    refuses one graph, with graph breaks, which the label then says. A fresh dynamo cache per case:
    no recompile limit across cases."""
    why = ""
    for fullgraph in (True, False):
        torch._dynamo.reset()
        run = runner(torch.compile(mod, fullgraph=fullgraph, dynamic=False))
        t0 = time.perf_counter()
        try:
            run()
            run()
            torch.cuda.synchronize()
        except Exception as e:
            if not fullgraph or not type(e).__module__.startswith("torch._dynamo"):
                raise  # out of memory, a kernel's error: the case fails as any other
            why = (str(e).splitlines() or [type(e).__name__])[0][:100]
            continue
        took = time.perf_counter() - t0
        return run, (f"compiled in {took:.0f} s" if fullgraph else
                     f"compiled with graph breaks in {took:.0f} s (fullgraph: {why})")


def build_llama(torch, spec, dev):
    """LlamaBlock: HF LlamaDecoderLayer built from a LlamaConfig (random weights, no download),
    training mode, bf16 (or fp16). Built here, outside the timed calls: the RoPE cos/sin from
    LlamaRotaryEmbedding(config) for positions 0..s-1 and, for eager, the additive causal mask
    (b, 1, s, s) as transformers' eager_mask makes it; sdpa gets no mask and so runs causal
    (is_causal = q_len > 1 and no mask), LlamaModel's own sdpa path. torch-compile: torch.compile of
    the sdpa layer, compiled here (_compiled)."""
    import inspect
    import transformers
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as ml
    k = spec.kw
    s, b, backend = k["seq"], k["batch"], k["backend"]
    impl = LAYER_BACKENDS[backend]
    dt = _dtype(torch, k["dtype"])
    kw = llama_config(k["model"], s)
    h = kw["hidden_size"]
    where = f"transformers {transformers.__version__}"
    params = inspect.signature(ml.LlamaDecoderLayer.forward).parameters
    if "position_embeddings" not in params:
        raise RuntimeError(f"{where}: LlamaDecoderLayer.forward takes no position_embeddings "
                           f"({', '.join(params)}); the peer needs transformers >= 4.48")
    cfg = _llama_layer_config(LlamaConfig, impl, kw)
    with torch.device(dev):
        mod = _make(ml.LlamaDecoderLayer, cfg, layer_idx=0)
        rotary = ml.LlamaRotaryEmbedding(config=cfg)
    if getattr(rotary, "rope_type", "llama3") != "llama3":
        raise RuntimeError(f"{where}: LlamaConfig made rope_type {rotary.rope_type!r}, not llama3 "
                           f"(rope_parameters {getattr(cfg, 'rope_parameters', None)!r})")
    ran = getattr(getattr(mod.self_attn, "config", cfg), "_attn_implementation", impl)
    if ran != impl:
        raise RuntimeError(f"{where}: the layer's attention is {ran!r}, not {impl!r}")
    mod = mod.to(dev, dt).train()  # training mode as the other layers (attention dropout is 0)
    position_ids = torch.arange(s, device=dev).unsqueeze(0)
    x = torch.randn(b, s, h, device=dev, dtype=dt, requires_grad=k["passes"] == "fwdbwd")
    cos, sin = rotary(x, position_ids)  # (1, s, head_dim) in x's dtype, no autograd
    mask = None
    if impl == "eager":
        mask = torch.full((s, s), torch.finfo(dt).min, device=dev, dtype=dt).triu(1)
        mask = mask[None, None].expand(b, 1, s, s)

    def fwd(m, x):
        return _first(m(x, attention_mask=mask, position_ids=position_ids,
                        position_embeddings=(cos, sin)))
    try:  # one forward: says what this transformers takes and returns, before any timing
        with torch.no_grad():
            y = fwd(mod, x)
    except TypeError as e:
        raise RuntimeError(f"{where}: LlamaDecoderLayer(hidden_states, attention_mask=, position_ids=, "
                           f"position_embeddings=(cos, sin)) failed: {e}") from e
    if not hasattr(y, "shape") or tuple(y.shape) != (b, s, h):
        raise RuntimeError(f"{where}: LlamaDecoderLayer returned {type(y).__name__} "
                           f"{tuple(getattr(y, 'shape', ()))}, expected hidden states {(b, s, h)}")
    y = None
    dy = torch.randn(b, s, h, device=dev, dtype=dt) if k["passes"] == "fwdbwd" else None

    def runner(m):
        if dy is None:
            def run():
                with torch.no_grad():  # forward only: no autograd graph to build
                    fwd(m, x)
            return run

        def run():
            fwd(m, x).backward(dy)
        return run
    if backend not in COMPILED:
        return runner(mod)
    run, label = _compiled(torch, mod, runner)
    run.case_label = label
    return run


def train_batch(torch, model_name, b, s, V, dev):
    """Random ids as the seeds' dummy datasets; BERT: 15% of the positions masked as
    DataCollatorForLanguageModeling does (80% [MASK], 10% random, 10% kept), labels -100
    elsewhere; the causal LMs (GPT-2, Llama): labels = ids (the model shifts them)."""
    ids = torch.randint(0, V, (b, s), device=dev)
    if not model_name.startswith("bert"):
        return ids, ids
    n = max(1, round(MLM_PROBABILITY * s))
    pos = torch.rand(b, s, device=dev).argsort(dim=1)[:, :n]
    labels = torch.full_like(ids, -100)
    labels.scatter_(1, pos, ids.gather(1, pos))
    u = torch.rand(b, n, device=dev)
    masked = ids.gather(1, pos)
    masked = torch.where(u < 0.8, torch.full_like(masked, 103), masked)
    masked = torch.where((u >= 0.8) & (u < 0.9), torch.randint_like(masked, V), masked)
    return ids.scatter(1, pos, masked), labels


def build_llama_lm(torch, spec, dev):
    """HF LlamaForCausalLM from llama_train_config (random weights from the config, no download),
    built on the GPU in fp32 (the bf16 runs autocast over it, as GPT-2's), attention per the
    spec's backend; checked before any timing: the attention it runs, the head tied or its own,
    the parameter count (llama_param_count)."""
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    k = spec.kw
    model_name, impl = k["model"], k["attention"]
    where = f"transformers {transformers.__version__}"
    cfg = _llama_layer_config(LlamaConfig, impl, llama_train_config(model_name, k["seq"]))
    with torch.device(dev):
        model = LlamaForCausalLM(cfg)
    model = model.to(device=dev, dtype=torch.float32)
    ran = getattr(model.config, "_attn_implementation", impl)
    if ran != impl:
        raise RuntimeError(f"{where}: the model's attention is {ran!r}, not {impl!r}")
    tied = LLAMA_TRAIN[model_name][1]
    if tied and model.lm_head.weight is not model.model.embed_tokens.weight:
        model.tie_weights()  # where this transformers ties later (from_pretrained does)
    if (model.lm_head.weight is model.model.embed_tokens.weight) != tied:
        raise RuntimeError(f"{where}: lm_head {'not ' if tied else ''}tied to embed_tokens, "
                           f"tie_word_embeddings={tied}")
    n, want = sum(p.numel() for p in model.parameters()), llama_param_count(model_name)
    if n != want:
        raise RuntimeError(f"{where}: {model_name} has {n:,} parameters, the published config "
                           f"{want:,}")
    return model, LLAMA_VOCAB


def build_train(torch, spec, dev):
    """One optimizer step as HF Trainer runs it: `accum` micro-batches under autocast (GradScaler
    for fp16; tf32 and fp32: the fp32 model without autocast, TF32 products for tf32 as HF's
    `tf32=True`), clip_grad_norm_(1.0), AdamW (fused=True, or the single-tensor loop), zero_grad.
    Llama: LlamaForCausalLM (build_llama_lm); torch-compile: torch.compile of the model, compiled
    here (_compiled; the optimizer step, clipping and zero_grad stay eager)."""
    k = spec.kw
    s, b = k["seq"], k["batch"]
    if k["model"] in LLAMA_TRAIN:
        model, V = build_llama_lm(torch, spec, dev)
    elif k["model"].startswith("bert"):
        L, h, heads, V = TRAIN_MODELS[k["model"]]
        from transformers import BertConfig, BertForMaskedLM
        cfg = BertConfig(hidden_size=h, num_hidden_layers=L, num_attention_heads=heads,
                         intermediate_size=4 * h, vocab_size=V, max_position_embeddings=max(512, s))
        cfg._attn_implementation = k["attention"]
        model = BertForMaskedLM(cfg)
    else:
        from transformers import GPT2Config, GPT2LMHeadModel
        L, h, heads, V = TRAIN_MODELS[k["model"]]
        cfg = GPT2Config(n_embd=h, n_layer=L, n_head=heads, vocab_size=V, n_positions=max(1024, s))
        cfg._attn_implementation = k["attention"]
        model = GPT2LMHeadModel(cfg)
    model = model.to(dev).train()
    if k["ckpt"]:
        model.gradient_checkpointing_enable()
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(k["precision"])  # None: fp32 model
    mode = k.get("parallel")  # dp: DDP, zero2: FSDP (peer_parallel.py)
    if mode:
        model = parallel.wrap(torch, model, mode, dt, dev.index)
        torch.manual_seed(1000 + DIST.rank)  # the same weights, each rank its own batches
    torch.backends.cuda.matmul.allow_tf32 = k["precision"] == "tf32"  # reset after each case
    fused = k["adamw"] == "fused"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused, foreach=None if fused else False)
    scaler = (parallel.grad_scaler(torch, mode, dt == torch.float16) if mode
              else torch.amp.GradScaler("cuda", enabled=dt == torch.float16))
    batches = [train_batch(torch, k["model"], b, s, V, dev) for _ in range(k["accum"])]

    def runner(m):  # m: the model, or its torch.compile
        def step():
            for ids, labels in batches:
                with torch.autocast("cuda", dtype=dt or torch.bfloat16, enabled=dt is not None):
                    loss = m(input_ids=ids, labels=labels).loss / len(batches)
                scaler.scale(loss).backward()
            scaler.unscale_(opt)
            if mode:
                parallel.clip(torch, model, mode, 1.0)
            else:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
        return step
    if k.get("backend") not in COMPILED:
        return runner(model)
    run, label = _compiled(torch, model, runner)
    run.case_label = label
    return run


def build_nccl(torch, spec, dev):
    return nccl.build(torch, spec.kw, dev, DIST.rank)


BUILDERS = {"Matmul": build_matmul, "Vector": build_vector, "Memcpy": build_memcpy,
            "LlamaBlock": build_llama, "TrainStep": build_train, "NCCL": build_nccl}


def measure_hot(torch, fn, repetitions, min_time, warmup):
    """--mode hot: a fixed warm-up, then per repetition back-to-back calls for about min_time."""
    t_end = time.perf_counter() + warmup
    n = 0
    # first calls: handles, autotuning, allocator; torchrun: as many as rank 0 makes
    while DIST.decide(n < 3 or time.perf_counter() < t_end):
        fn()
        torch.cuda.synchronize()
        n += 1
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    one = max(start.elapsed_time(stop) / 1e3, 1e-7)
    iters = DIST.share(max(1, min(100000, int(min_time / one))))  # torchrun: rank 0's count
    reps = []
    for _ in range(repetitions):
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        reps.append(Rep(start.elapsed_time(stop) / 1e3 / iters, iters))
    return reps


def measure_steady(torch, fn, options, window_s, device_nvml, rates):
    """One repetition by the steady-state protocol (steady_state.py): size a batch from one timed
    launch, then windows of `batch` launches, each enqueued before the host waits on the previous
    one so the GPU never idles, until the stopping rule says stop. The loop only stamps the host
    time of every window's completion; the 10 ms sampler (energy, clocks, reasons) runs throughout
    and is read over the measured span afterwards. rates(seconds) gives the case's TFLOPS / GB/s for
    its work per watt."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    batch = DIST.share(steady_state.batch_size(window_s, start.elapsed_time(stop) / 1e3))

    events = [[torch.cuda.Event(enable_timing=True) for _ in range(2)] for _ in range(2)]

    def enqueue(window):
        window[0].record()
        for _ in range(batch):
            fn()
        window[1].record()

    rule = steady_state.SteadyState(options)
    sampler = nvml.Sampler(device_nvml).start() if device_nvml else None
    try:
        done_at = [time.perf_counter()]   # done_at[i]: host time at the completion of window i
        enqueue(events[0])
        result, i, stop = None, 0, None
        while True:
            enqueue(events[(i + 1) % 2])  # the next window is queued before this one is waited on
            if stop is not None and stop():  # torchrun: rank 0's decision on the window before
                break
            begin, end = events[i % 2]
            end.synchronize()
            done_at.append(time.perf_counter())
            d = begin.elapsed_time(end) / 1e3
            if sampler and sampler.reasons_seen & steady_state.SW_POWER_CAP:
                rule.power_capped()
            if result is None:
                result = rule.add(d / batch, d)
            i += 1
            if DIST.active:  # every rank stops with rank 0, told while the GPU has work queued
                stop = DIST.decide_later(result is not None)
            elif result is not None:
                break
        torch.cuda.synchronize()  # the windows queued ahead are not measured
    finally:
        samples = sampler.stop() if sampler else []
    if result is None:  # a torchrun rank that followed rank 0: rank 0 reports
        return None

    extra = steady_state.result_counters(result)
    t0, t1 = done_at[result.first], done_at[result.n_stop]
    power = steady_state.span_power(samples, t0, t1)
    extra.update(steady_state.energy_counters(power, result.mean, rates(result.mean)))
    clocks, reasons = steady_state.sample_summary(samples, t0, t1)
    extra.update(clocks)
    return Rep(result.mean, result.k * batch, extra, steady_state.label(result, reasons))


def open_nvml(torch, device):
    """The NVML device of the torch device (by PCI bus id where torch exposes it), or None with a
    one-line note: the run goes on without energy and clocks."""
    p = torch.cuda.get_device_properties(device)
    bus = None
    if getattr(p, "pci_bus_id", None) is not None:
        bus = f"{getattr(p, 'pci_domain_id', 0):x}:{p.pci_bus_id:x}:{getattr(p, 'pci_device_id', 0):x}.0"
    dev, why = nvml.Nvml.open(pci_bus_id=bus, index=device)
    if dev is None:
        print(f"note: no GPU telemetry (power_W, J, sm_MHz, ...): {why}", file=sys.stderr, flush=True)
    return dev


def summary_line(spec, reps):
    """The case's line on stdout: median time and rate; steady: the worst ci, cv and drift, median
    power and SM clock over the repetitions, and their labels."""
    med = statistics.median(r.seconds for r in reps)
    name, value = next(iter(counters(spec, med).items()))
    line = f"{spec.gb_name:<60} {med * 1e3:10.4g} ms  {name}={value:.1f}"

    def values(key):
        return [r.extra[key] for r in reps if key in r.extra]
    if values("ci_pct"):
        line += (f"  ci ±{max(values('ci_pct')):.2f}% cv {max(values('cv_pct')):.2f}%"
                 f" drift {max(values('drift_pct')):.2f}%")
    if values("power_W"):
        line += f"  {statistics.median(values('power_W')):.0f} W"
    if values("sm_MHz"):
        line += f"  {statistics.median(values('sm_MHz')):.0f} MHz"
    labels = list(dict.fromkeys(r.label for r in reps if r.label))
    return line + "".join(f"  [{lab}]" for lab in labels)


def error_message(e):
    """(the error entry's message, whether the case failed): a case this machine cannot run is
    `unsupported: why`, as xfbench writes it, and no failure (the reports show it as n/a)."""
    first = str(e).splitlines()[0] if str(e) else ""
    if isinstance(e, nccl.Unsupported):
        return f"unsupported: {first}", False
    return f"{type(e).__name__}: {first}".strip(), True


def run_cases(torch, specs, args, context):
    dev = torch.device("cuda", args.device)
    device_nvml = open_nvml(torch, args.device) if args.mode == "steady" else None
    entries, failed = [], 0
    fam_index = {}
    inst = {}
    for spec in specs:
        fi = fam_index.setdefault(spec.family, len(fam_index))
        ii = inst[spec.family] = inst.get(spec.family, -1) + 1
        torch.manual_seed(0)
        try:
            build = BUILDERS.get(spec.family, build_layer)
            fn = build(torch, spec, dev)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats(dev)
            if args.mode == "hot":
                reps = measure_hot(torch, fn, args.repetitions, args.min_time, args.warmup)
            else:
                reps = [measure_steady(torch, fn, args.options, args.window_ms / 1e3, device_nvml,
                                       lambda t: counters(spec, t))
                        for _ in range(args.repetitions)]
            mem = (DIST.max(torch.cuda.max_memory_allocated(dev))  # torchrun: the most any GPU took
                   if spec.family != "NCCL" else None)  # xfbench reports none for collectives
            if not DIST.root:
                continue
            case_label = getattr(fn, "case_label", "")  # what the builder says of the case
            for r in reps:
                r.label = "; ".join(x for x in (case_label, r.label) if x)
            entries += gb_entries(spec, reps, fi, ii, mem)
            print(summary_line(spec, reps), flush=True)
        except Exception as e:  # one failed case must not stop the run (as SkipWithError)
            msg, is_failure = error_message(e)
            failed += is_failure
            print(f"{spec.gb_name:<60} ERROR {msg}", file=sys.stderr, flush=True)
            entries.append(error_entry(spec, msg, fi, ii))
        finally:
            fn = None
            torch.backends.cuda.matmul.allow_tf32 = False
            if spec.kw.get("backend") in COMPILED:
                torch._dynamo.reset()  # the compiled graphs go with the case
            torch.cuda.empty_cache()
        if DIST.root:
            write_json(args.out, context, entries)
    return failed


class Parser(argparse.ArgumentParser):
    """Usage errors as one line and exit 2, not the usage and the error."""

    def error(self, message):
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def out_problem(path):
    """Why the output JSON `path` cannot be written, or None (checked before any case runs)."""
    if os.path.isdir(path):
        return "is a folder, not a file"
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder):  # main makes the missing folders
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK):
        return f"folder {folder} is not writable"
    return None


def parse_args(argv=None):
    p = Parser(
        prog="peer_torch.py",
        description="Run xfbench's cases through PyTorch / HF transformers and write Google Benchmark JSON.")
    p.add_argument("--families", default=",".join(DEFAULT_FAMILIES),
                   help=f"comma-separated, or 'all' (default {','.join(DEFAULT_FAMILIES)}; "
                        f"all = {','.join(ALL_FAMILIES)})")
    p.add_argument("--filter", help="regex on case names (like --benchmark_filter)")
    p.add_argument("--repetitions", type=int, default=5, help="repetitions per case (default 5)")
    p.add_argument("--mode", choices=["steady", "hot"], default="steady",
                   help="steady (default): xfbench's steady-state protocol; hot: a fixed warm-up, "
                        "then a short burst per repetition")
    p.add_argument("--min-time", type=float,
                   help="steady: seconds of measured windows (default 0.5); hot: seconds per "
                        "repetition (default 0.1)")
    p.add_argument("--max-noise", type=float, default=0.5,
                   help="steady: limit in percent of the mean's ci (batch means) and of the drift "
                        "(default 0.5)")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="steady: seconds of GPU time per repetition before giving up as noisy "
                        "(default 10)")
    p.add_argument("--min-warmup", type=float, default=0.2,
                   help="steady: seconds of windows before the measured ones (default 0.2)")
    p.add_argument("--capped-warmup", type=float, default=1.5,
                   help="steady: the same once the GPU reports its power cap (default 1.5)")
    p.add_argument("--window-ms", type=float, default=10.0,
                   help="steady: target duration of one window in ms (default 10)")
    p.add_argument("--warmup", type=float, default=0.2, help="hot: warm-up seconds per case (default 0.2)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default 0; torchrun: "
                   "LOCAL_RANK)")
    p.add_argument("--gpus", type=int, default=DIST.world if DIST.active else 0,
                   help="TrainStep: add the multi-GPU dp and zero2 cases for this many GPUs; "
                        "NCCL: the collectives over this many ranks (default: torchrun's "
                        "WORLD_SIZE, else none); run them under torchrun")
    p.add_argument("--nccl-sizes", default=nccl.DEFAULT_SIZES_TEXT,
                   help=f"NCCL sizes as xfbench's, e.g. 8B,64KiB,1GiB (default "
                        f"{nccl.DEFAULT_SIZES_TEXT})")
    p.add_argument("--nccl-ops", default=",".join(nccl.OPS),
                   help=f"NCCL ops (default all: {','.join(nccl.OPS)})")
    p.add_argument("--nccl-dtypes", default=",".join(nccl.DEFAULT_DTYPES),
                   help=f"NCCL dtypes, of {','.join(nccl.DTYPES)} (default "
                        f"{','.join(nccl.DEFAULT_DTYPES)})")
    p.add_argument("--out", default="torch.json", help="output JSON file (default torch.json)")
    p.add_argument("--list", action="store_true", help="print the case names and exit (no torch needed)")
    p.add_argument("--layer-shapes", help="layer (seq x batch) shapes, e.g. 128x2,128x8,512x64 "
                   "(default: BertLayer and T5 128x128,512x64; GPT2Block 1024x64,512x64; "
                   "LlamaBlock: see --llama-shapes)")
    p.add_argument("--seed-shapes", action="store_true",
                   help="the seeds' whole layer tables: BertLayer seq 128,512 x batch 2..128, "
                        "GPT2Block seq 512,1024 x batch 2..64")
    p.add_argument("--gpt2-models", default=DEFAULT_GPT2,
                   help=f"GPT2Block models, comma-separated (default {DEFAULT_GPT2}; known: "
                        f"{','.join(GPT2_MODELS)}); others than {DEFAULT_GPT2} are named /model:<name>")
    p.add_argument("--llama-models", default=",".join(DEFAULT_LLAMA_MODELS),
                   help=f"LlamaBlock models, comma-separated (default {','.join(DEFAULT_LLAMA_MODELS)}; "
                        f"known: {','.join(LLAMA_MODELS)}); others than {DEFAULT_LLAMA} are named "
                        "/model:<name>")
    p.add_argument("--llama-shapes",
                   help="LlamaBlock (seq x batch) shapes for each model, e.g. "
                        "2048x4,8192x1 (default: --layer-shapes if given, else per model: "
                        + ", ".join(f"{m} {','.join(f'{s}x{b}' for s, b in v)}"
                                    for m, v in LLAMA_SHAPES.items()) + ")")
    p.add_argument("--llama-dtypes", default=",".join(DEFAULT_LLAMA_DTYPES),
                   help=f"LlamaBlock dtypes, of {','.join(LLAMA_DTYPES)} (default "
                        f"{','.join(DEFAULT_LLAMA_DTYPES)}); backends torch-eager, torch-sdpa (HF "
                        "attn_implementation eager / sdpa) and torch-compile (torch.compile of the "
                        "sdpa layer, compiled before the timing)")
    p.add_argument("--train-models", default=",".join(DEFAULT_TRAIN_MODELS),
                   help=f"one-GPU TrainStep models, comma-separated (default "
                        f"{','.join(DEFAULT_TRAIN_MODELS)}: the headline cases and their knobs; "
                        f"known: {','.join(TRAIN_CHOICES)}); a Llama model runs xfbench's cases of it "
                        "(bf16, seq 4096: "
                        + "; ".join(f"{m} " + ", ".join(f"batch {b} ckpt:{'on' if c else 'off'}"
                                                        for _, b, c in v)
                                    for m, v in LLAMA_TRAIN_CASES.items())
                        + ") in torch-sdpa and torch-compile (torch.compile of the model, compiled "
                        "before the timing); the multi-GPU cases (--gpus) stay as they are")
    args = p.parse_args(argv)
    args.gpt2_model_list = [m.strip() for m in args.gpt2_models.split(",") if m.strip()]
    unknown = [m for m in args.gpt2_model_list if m not in GPT2_MODELS]
    if unknown or not args.gpt2_model_list:
        p.error(f"unknown --gpt2-models {','.join(unknown)}; known: {','.join(GPT2_MODELS)}")

    def known_items(flag, text, known):
        items = list(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
        unknown = [x for x in items if x not in known]
        if unknown or not items:
            p.error(f"unknown {flag} {','.join(unknown)}; known: {','.join(known)}")
        return items
    args.llama_model_list = known_items("--llama-models", args.llama_models, LLAMA_MODELS)
    args.llama_dtype_list = known_items("--llama-dtypes", args.llama_dtypes, LLAMA_DTYPES)
    for x in args.train_models.split(","):
        if x.strip() in LLAMA_TRAIN and x.strip() not in LLAMA_TRAIN_CASES:
            p.error(f"--train-models {x.strip()}: no one-GPU TrainStep case (xfbench has none; the "
                    f"model's fp32 weights, gradients and AdamW state alone take "
                    f"{16 * llama_param_count(x.strip()) / 1e9:.0f} GB); known: {','.join(TRAIN_CHOICES)}")
    args.train_model_list = known_items("--train-models", args.train_models, TRAIN_CHOICES)
    fams = ALL_FAMILIES if args.families.strip() == "all" else [f.strip() for f in args.families.split(",") if f.strip()]
    bad = [f for f in fams if f not in ALL_FAMILIES]
    if bad:
        p.error(f"unknown families {','.join(bad)}; known: {','.join(ALL_FAMILIES)}")
    if args.repetitions < 1:
        p.error("--repetitions must be >= 1")
    if args.min_time is None:
        args.min_time = 0.5 if args.mode == "steady" else 0.1
    for name in ("min_time", "max_noise", "timeout", "window_ms"):
        if not getattr(args, name) > 0:
            p.error(f"--{name.replace('_', '-')} must be > 0")
    if args.min_warmup < 0 or args.capped_warmup < 0:
        p.error("--min-warmup and --capped-warmup must be >= 0")
    if args.gpus < 0:
        p.error("--gpus must be >= 0")
    try:
        args.nccl_size_list = nccl.parse_sizes(args.nccl_sizes)
        args.nccl_op_list = nccl.parse_list(args.nccl_ops, nccl.OPS, "--nccl-ops")
        args.nccl_dtype_list = nccl.parse_list(args.nccl_dtypes, tuple(nccl.DTYPES), "--nccl-dtypes")
    except ValueError as e:
        p.error(str(e))
    if DIST.active:
        if args.gpus != DIST.world:
            p.error(f"--gpus {args.gpus} under torchrun with {DIST.world} ranks")
        args.device = DIST.local_rank
    args.options = steady_state.Options(args.min_time, args.max_noise / 100, args.timeout, args.min_warmup,
                                        capped_warmup=args.capped_warmup)
    try:
        re.compile(args.filter or "")
    except re.error as e:
        p.error(f"bad --filter regex: {e}")
    args.family_list = fams
    for flag in ("--layer-shapes", "--llama-shapes"):
        shapes = []
        for item in (getattr(args, flag[2:].replace("-", "_")) or "").split(","):
            if not item.strip():
                continue
            m = re.fullmatch(r"\s*(\d+)x(\d+)\s*", item)
            if not m or not int(m.group(1)) or not int(m.group(2)):
                p.error(f"bad {flag} item '{item}': expected SEQxBATCH, e.g. 128x64")
            shapes.append((int(m.group(1)), int(m.group(2))))
        setattr(args, flag[2:].replace("-", "_"), shapes or None)
    why = None if args.list else out_problem(args.out)
    if why:
        p.error(f"--out {args.out}: {why}")
    return args


def main(argv=None):
    args = parse_args(argv)
    specs = select(default_specs(args.family_list, args.layer_shapes, args.seed_shapes,
                                 args.gpt2_model_list, args.gpus, args.nccl_op_list,
                                 args.nccl_dtype_list, args.nccl_size_list, args.llama_model_list,
                                 args.llama_shapes, args.llama_dtype_list,
                                 args.train_model_list), args.filter)
    if DIST.active:  # each torchrun rank runs the multi-GPU cases only
        specs = [s for s in specs if s.kw.get("gpus") == DIST.world]
    if args.list:
        for s in specs:
            print(s.gb_name)
        return 0
    torchrun = ("NCCL cases run under torchrun, one process per GPU: torchrun --nproc-per-node=N "
                "reports/peer_torch.py --families NCCL")
    if not DIST.active and any(s.family == "NCCL" for s in specs):
        print(torchrun, file=sys.stderr)
        return 2
    if not specs:
        print("no case matches --families/--filter" +
              (f"; {torchrun}" if "NCCL" in args.family_list and not DIST.active else ""),
              file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError as e:
        print(f"torch is not installed: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print(f"CUDA is not available to torch {torch.__version__} (no GPU or a CPU-only build)",
              file=sys.stderr)
        return 2
    torch.cuda.set_device(args.device)
    DIST.start(torch)
    context = base_context(args.mode, args.options, args.window_ms / 1e3)
    context.update(torch_context(torch, args.device))
    if DIST.active:  # what NCCL read (NCCL_P2P_DISABLE, NCCL_NVLS_ENABLE, ...)
        context["nccl_env"] = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                                       if k.startswith("NCCL_"))
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    try:
        failed = run_cases(torch, specs, args, context)
    finally:
        DIST.stop()
    if DIST.root:
        print(f"wrote {args.out}: {len(specs) - failed} cases ran, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    # Run as a script, Python puts reports/ first on sys.path; its modules (plot, table, loader...)
    # must not shadow anything torch or transformers import.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    sys.exit(main())
