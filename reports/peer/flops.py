"""What a case counts, as xfbench counts it (DESIGN.md): the FLOP formulas of the matmul, the
layers, the Llama block and the training step, the bytes of the vector ops, the parameters of a
Llama causal LM, and the counters (TFLOPS, GB/s, samples/s, ...) of one repetition."""

from .catalog import H, LLAMA_MODELS, LLAMA_TRAIN, LLAMA_VOCAB, TRAIN_MODELS
from .siblings import nccl

DTYPE_SIZE = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}


def matmul_flops(m, n, k):
    return 2 * m * n * k


# xfbench's hot mode idles before a Matmul product of at least this many FLOPs (kCooldownFlops in
# plugins/matmul/matmul_plugin.cpp), so that a short burst does not measure the previous case's heat.
COOLDOWN_FLOPS = 1e10


def idles_before(spec):
    """Whether the hot protocol idles before this case, as xfbench's does."""
    k = spec.kw
    return (spec.family == "Matmul"
            and matmul_flops(k["m"], k["n"], k["k"]) * k.get("batch", 1) >= COOLDOWN_FLOPS)


def vector_bytes(op, n, dtype):
    """Bytes read + written: scale/copy read n and write n; triad reads 2n and writes n."""
    return (3 if op == "triad" else 2) * n * DTYPE_SIZE[dtype]


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


def llama_param_count(model):
    """Parameters of LlamaForCausalLM(model): embedding, per layer q/k/v/o, gate/up/down and two
    RMSNorms, the final RMSNorm, and lm_head when not tied (1,235,814,400 for llama-3.2-1b)."""
    h, heads, kv, d, inter, _ = LLAMA_MODELS[model]
    layers, tied = LLAMA_TRAIN[model]
    a = heads * d
    layer = h * a + 2 * h * kv * d + a * h + 3 * h * inter + 2 * h
    return (1 if tied else 2) * LLAMA_VOCAB * h + layers * layer + h


def counters(spec, seconds, mem_bytes=None):
    """Counters of one repetition that took `seconds` per iteration (same units as xfbench)."""
    k, t = spec.kw, seconds
    c = {}
    if spec.family == "Matmul":
        c["TFLOPS"] = matmul_flops(k["m"], k["n"], k["k"]) * k.get("batch", 1) / t / 1e12
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
