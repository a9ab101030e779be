"""PyTorch timings of the operations kernel_bandwidth measures, same shapes and byte counts, for a
side-by-side on the device: python3 tests/kernels/torch_kernels_peer.py [out.jsonl]"""
import json
import sys

import torch
import torch.nn.functional as F


def time_us(fn, iters=50):
    for _ in range(5):
        fn()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3 / iters


def main():
    out = open(sys.argv[1], "w") if len(sys.argv) > 1 else None
    dev, dt = "cuda", torch.float16
    rows = []

    def report(name, shape, us, nbytes=0, flops=0):
        r = {"kernel": "torch:" + name, "shape": shape, "us": round(us, 2)}
        if nbytes:
            r["GB/s"] = round(nbytes / (us * 1e-6) / 1e9)
        if flops:
            r["TFLOPS"] = round(flops / (us * 1e-6) / 1e12, 1)
        print(json.dumps(r))
        rows.append(r)

    N, C, Fd = 64 * 512, 1024, 4096
    n, e = N * C, 2
    x = torch.randn(N, C, device=dev, dtype=dt, requires_grad=True)
    res = torch.randn(N, C, device=dev, dtype=dt)
    ln = torch.nn.LayerNorm(C, device=dev, dtype=dt)
    y = ln(x)
    dy = torch.randn_like(y)
    shape = "fp16 N=32768 C=1024"
    report("layer_norm fwd", shape, time_us(lambda: ln(x)), 2 * n * e)
    report("layer_norm bwd", shape, time_us(lambda: y.backward(dy, retain_graph=True)), 3 * n * e)
    report("LN(dropout(x)+res) fwd", shape,
           time_us(lambda: ln(F.dropout(x, 0.1, True) + res)), 4 * n * e)
    report("dropout fwd", shape, time_us(lambda: F.dropout(x, 0.1, True)), 2 * n * e)
    h = torch.randn(N, Fd, device=dev, dtype=dt, requires_grad=True)
    shape_f = "fp16 N=32768 C=4096"
    for approx in ("none", "tanh"):
        g = F.gelu(h, approximate=approx)
        dg = torch.randn_like(g)
        report(f"gelu({approx}) fwd", shape_f, time_us(lambda: F.gelu(h, approximate=approx)),
               2 * N * Fd * e)
        report(f"gelu({approx}) bwd", shape_f,
               time_us(lambda: g.backward(dg, retain_graph=True)), 3 * N * Fd * e)
    for B, S in ((64, 512), (128, 128)):
        s = torch.randn(B, 16, S, S, device=dev, dtype=dt, requires_grad=True)
        mask = torch.zeros(B, 1, 1, S, device=dev, dtype=dt)
        p = torch.softmax(s * 0.125 + mask, -1)
        dp = torch.randn_like(p)
        shp = f"fp16 B={B} NH=16 S={S}"
        ns = B * 16 * S * S
        report("softmax(scale,mask) fwd", shp, time_us(lambda: torch.softmax(s * 0.125 + mask, -1)),
               2 * ns * e)
        report("softmax bwd", shp, time_us(lambda: p.backward(dp, retain_graph=True)), 3 * ns * e)
        del s, p, dp
        q, k, v = (torch.randn(B, 16, S, 64, device=dev, dtype=dt, requires_grad=True)
                   for _ in range(3))
        fl = 4.0 * B * 16 * S * S * 64
        o = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)
        do = torch.randn_like(o)
        report("sdpa fwd (p=0.1)", shp, time_us(lambda: F.scaled_dot_product_attention(
            q, k, v, dropout_p=0.1)), flops=fl)
        report("sdpa bwd (p=0.1)", shp, time_us(lambda: o.backward(do, retain_graph=True)),
               flops=2 * fl)
    if out:
        for r in rows:
            out.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
