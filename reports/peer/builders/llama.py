"""The LlamaBlock family: HF LlamaDecoderLayer from LlamaConfig (random weights, no download) in
torch-eager, torch-sdpa and torch-compile, and in fp8 as torchao-compile (builders/fp8.py); and
the LlamaConfig shim TrainStep's Llama models use too."""

from ..catalog import COMPILED, LAYER_BACKENDS, llama_config
from . import fp8 as fp8_training
from .common import compiled, first_output, hf_config, make, torch_dtype

LLAMA_LINEARS = 7  # q, k, v, o; gate, up, down


def layer_config(LlamaConfig, impl, kw):
    """LlamaConfig from llama_config()'s arguments: transformers 5.x takes rope_parameters (with
    rope_theta in it), 4.x rope_theta and rope_scaling."""
    import inspect
    kw = dict(kw, rope_parameters=dict(kw["rope_parameters"]))  # the config completes it in place
    if ("rope_parameters" not in inspect.signature(LlamaConfig.__init__).parameters
            and "rope_parameters" not in getattr(LlamaConfig, "__dataclass_fields__", {})):
        rope = kw.pop("rope_parameters")
        kw["rope_theta"] = rope.pop("rope_theta")
        kw["rope_scaling"] = rope
    return hf_config(LlamaConfig, impl, **kw)


def build_llama(torch, spec, dev):
    """LlamaBlock: HF LlamaDecoderLayer built from a LlamaConfig (random weights, no download),
    training mode, bf16 (or fp16). Built here, outside the timed calls: the RoPE cos/sin from
    LlamaRotaryEmbedding(config) for positions 0..s-1 and, for eager, the additive causal mask
    (b, 1, s, s) as transformers' eager_mask makes it; sdpa gets no mask and so runs causal
    (is_causal = q_len > 1 and no mask), LlamaModel's own sdpa path. torch-compile: torch.compile of
    the sdpa layer, compiled here (common.compiled). fp8 (torchao-compile): the bf16 layer with its
    seven linear layers swapped for torchao's Float8Linear (fp8.to_float8), then as torch-compile;
    without torchao the case is an error entry that says how to install it, before anything is
    built."""
    import inspect
    k = spec.kw
    s, b, backend = k["seq"], k["batch"], k["backend"]
    fp8 = k["dtype"] == "fp8"
    if fp8:  # before anything is built: torchao, a GPU with FP8, a token count _scaled_mm takes
        fp8_training.import_torchao()
        fp8_training.check_gpu(torch, dev)
        fp8_training.check_tokens(b * s)
    import transformers
    from transformers import LlamaConfig
    from transformers.models.llama import modeling_llama as ml
    impl = LAYER_BACKENDS[backend]
    dt = torch_dtype(torch, "bf16" if fp8 else k["dtype"])  # fp8: the linears' products, the rest bf16
    kw = llama_config(k["model"], s)
    h = kw["hidden_size"]
    where = f"transformers {transformers.__version__}"
    params = inspect.signature(ml.LlamaDecoderLayer.forward).parameters
    if "position_embeddings" not in params:
        raise RuntimeError(f"{where}: LlamaDecoderLayer.forward takes no position_embeddings "
                           f"({', '.join(params)}); the peer needs transformers >= 4.48")
    cfg = layer_config(LlamaConfig, impl, kw)
    with torch.device(dev):
        mod = make(ml.LlamaDecoderLayer, cfg, layer_idx=0)
        rotary = ml.LlamaRotaryEmbedding(config=cfg)
    if getattr(rotary, "rope_type", "llama3") != "llama3":
        raise RuntimeError(f"{where}: LlamaConfig made rope_type {rotary.rope_type!r}, not llama3 "
                           f"(rope_parameters {getattr(cfg, 'rope_parameters', None)!r})")
    ran = getattr(getattr(mod.self_attn, "config", cfg), "_attn_implementation", impl)
    if ran != impl:
        raise RuntimeError(f"{where}: the layer's attention is {ran!r}, not {impl!r}")
    mod = mod.to(dev, dt).train()  # training mode as the other layers (attention dropout is 0)
    fp8_label = ""
    if fp8:
        mod, fp8_label = fp8_training.to_float8(torch, mod, LLAMA_LINEARS)
    position_ids = torch.arange(s, device=dev).unsqueeze(0)
    x = torch.randn(b, s, h, device=dev, dtype=dt, requires_grad=k["passes"] == "fwdbwd")
    cos, sin = rotary(x, position_ids)  # (1, s, head_dim) in x's dtype, no autograd
    mask = None
    if impl == "eager":
        mask = torch.full((s, s), torch.finfo(dt).min, device=dev, dtype=dt).triu(1)
        mask = mask[None, None].expand(b, 1, s, s)

    def fwd(m, x):
        return first_output(m(x, attention_mask=mask, position_ids=position_ids,
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
    run, label = compiled(torch, mod, runner)
    run.case_label = "; ".join(x for x in (fp8_label, label) if x)
    return run
