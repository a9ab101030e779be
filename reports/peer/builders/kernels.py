"""The Matmul, Vector and Memcpy families: plain torch calls on random inputs."""

from .common import torch_dtype


def build_matmul(torch, spec, dev):
    k = spec.kw
    dt = torch_dtype(torch, k["dtype"])
    # tf32 is fp32 storage with TF32 tensor-core math; fp32 must really be fp32
    torch.backends.cuda.matmul.allow_tf32 = k["dtype"] == "tf32"
    a = torch.randn(k["m"], k["k"], device=dev, dtype=dt)
    b = torch.randn(k["k"], k["n"], device=dev, dtype=dt)
    c = torch.empty(k["m"], k["n"], device=dev, dtype=dt)
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
