"""The Matmul, Vector and Memcpy families: plain torch calls on random inputs."""

from .common import torch_dtype


def build_matmul(torch, spec, dev):
    """torch.matmul on inputs uniform in [-1, 1), as xfbench's Matmul fills them (the bits an input
    toggles set the power, and under the cap the clock), in the case's layout (a transposed
    operand a transposed view, as cuBLAS reads it) and batch; fp8 through torch._scaled_mm (e4m3,
    unit scales, bf16 out: layout NT only, as cuBLASLt; `accum:fast` names use_fast_accum)."""
    k = spec.kw
    dtype, layout, batch = k["dtype"], k.get("layout", "NN"), k.get("batch", 1)
    # tf32 is fp32 storage with TF32 tensor-core math; fp32 must really be fp32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    storage = torch_dtype(torch, "bf16" if dtype == "fp8" else dtype)
    lead = (batch,) if batch > 1 else ()

    def uniform(*shape):
        return (torch.rand(*lead, *shape, device=dev, dtype=torch.float32) * 2 - 1).to(storage)

    ta, tb = layout[0] == "T", layout[1] == "T"
    a = uniform(k["k"], k["m"]).transpose(-1, -2) if ta else uniform(k["m"], k["k"])
    b = uniform(k["n"], k["k"]).transpose(-1, -2) if tb else uniform(k["k"], k["n"])
    if dtype == "fp8":
        if batch > 1 or ta or not tb:
            raise RuntimeError("torch._scaled_mm runs 2-D fp8 products in layout NT only")
        a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev, dtype=torch.float32)
        fast = bool(k.get("fast_accum", False))
        return lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                        use_fast_accum=fast)
    c = torch.empty(*lead, k["m"], k["n"], device=dev, dtype=storage)
    return lambda: torch.matmul(a, b, out=c)


def build_vector(torch, spec, dev):
    k = spec.kw
    dt = torch_dtype(torch, k["dtype"])
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
