"""What the builders share: torch dtypes by xfbench's names, the shims over HF transformers'
versions (constructors, configs, outputs), and torch.compile before the timing."""

import time


def torch_dtype(torch, name):
    return {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
            "bf16": torch.bfloat16}[name]


def first_output(out):
    """HF layers return a tensor, a tuple or a ModelOutput depending on version."""
    if isinstance(out, (tuple, list)):
        return out[0]
    return getattr(out, "last_hidden_state", out)


def make(cls, config, **kw):
    """HF module constructors gained arguments (layer_idx, ...) over versions: try, then without."""
    try:
        return cls(config, **kw)
    except TypeError:
        return cls(config)


def hf_config(cls, impl, **kw):
    cfg = cls(**kw)
    # attn_implementation selects eager vs scaled_dot_product_attention kernels
    try:
        cfg._attn_implementation = impl
    except Exception:
        setattr(cfg, "_attn_implementation_internal", impl)
    return cfg


def compiled(torch, mod, runner):
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
