"""Writes the small JSON fixtures the report tests read (committed; rerun only to change them).

The numbers are designed, not measured, so tests can check exact values: every case has a
target headline value (TFLOPS, GB/s, ...) and its repetitions jitter the time by factors whose
median is exactly 1, so the median of the repetitions is exactly the target. Run B is run A with
known speed factors (SPEEDUP_B) so the comparison's changes and geomeans are known too.

    python3 tests/reports/make_fixtures.py
"""

import json
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
H = 1024
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}

CTX_COMMON = {
    "host_name": "bench01", "executable": "./build/xfbench", "num_cpus": 64, "mhz_per_cpu": 2000,
    "cpu_scaling_enabled": False,
    "caches": [{"type": "Data", "level": 1, "size": 49152, "num_sharing": 2}],
    "load_avg": [0.5, 0.4, 0.3], "library_build_type": "release",
    "gpu_sm_count": "132", "gpu_bus_width": "5120", "cuda_runtime": "12.4", "cublas_version": "12.4.5",
    "cudnn_version": "9.1.0", "nccl_version": "2.21.5", "xfbench_version": "0.1.0",
    "xfbench_plugins": "matmul 0.1.0, vector 0.1.0, bert_layer 0.1.0, transfer 0.1.0, train_step 0.1.0",
    "xfbench_mode": "hot",
}
CTX_A = dict(CTX_COMMON, date="2025-01-10T10:00:00+00:00", gpu_name="NVIDIA H100 80GB HBM3",
             gpu_cc="9.0", gpu_mem_GB="79.1", gpu_max_sm_MHz="1980", gpu_max_mem_MHz="2619",
             driver_version="550.54.15", peak_TFLOPS_fp32="66.9", peak_TFLOPS_tf32="494.7",
             peak_TFLOPS_fp16="989.4", peak_TFLOPS_bf16="989.4", peak_TFLOPS_fp8="1978.9",
             peak_mem_GBs="3352.3")
CTX_B = dict(CTX_A, date="2025-02-01T09:00:00+00:00", gpu_name="NVIDIA H200", gpu_mem_GB="139.8",
             driver_version="560.35.03", peak_mem_GBs="4800.0")

JITTER5 = [1.00, 1.01, 0.99, 1.02, 0.98]      # median 1.00
JITTER5_B = [0.995, 1.015, 1.0, 0.985, 1.005]  # a different order and spread, median 1.00
JITTER3 = [1.0, 1.01, 0.99]


def layer_flops(b, s, h=H, passes="fwd"):
    f = 24 * b * s * h * h + 4 * b * s * s * h
    return 3 * f if passes == "fwdbwd" else f


# (name, time_unit, {"work": FLOP or bytes, "kind": "flop"|"bytes"|...}, target headline)
def cases():
    out = []
    mm = {"fp32": [40, 48, 51, 52], "tf32": [200, 330, 370, 380],
          "fp16": [450, 650, 720, 740], "bf16": [460, 660, 730, 750]}
    for dt, vals in mm.items():
        for n, v in zip([2048, 4096, 8192, 16384], vals):
            out.append((f"Matmul/{dt}/NN/m:{n}/n:{n}/k:{n}", "ms", ("flop", 2 * n ** 3), v))
    out.append(("Matmul/bf16/NN/m:8192/n:1024/k:4096", "ms", ("flop", 2 * 8192 * 1024 * 4096), 600))
    for op in ("scale", "copy"):
        for dt, size in (("fp32", 4), ("fp16", 2), ("bf16", 2)):
            sizes = ((1 << 24, 2600), (1 << 28, 3000)) if dt == "fp32" else ((1 << 28, 3000),)
            for n, v in sizes:
                out.append((f"Vector/{op}/{dt}/n:{n}", "us", ("bytes", 2 * n * size),
                            v - (50 if op == "copy" else 0) - (100 if size == 2 else 0)))
    for backend, scale in (("fused", 1.0), ("unfused", 0.8)):
        for p, s, b, v in (("fwd", 128, 128, 310), ("fwdbwd", 128, 128, 280),
                           ("fwd", 512, 64, 330), ("fwdbwd", 512, 64, 290)):
            out.append((f"BertLayer/{backend}/fp16/{p}/seq:{s}/batch:{b}", "ms",
                        ("layer", layer_flops(b, s, passes=p), b), round(v * scale)))
    b, s = 64, 128
    parts = {"dense": (8 * b * s * H * H, 450), "dense_gelu": (8 * b * s * H * H, 400),
             "ffn": (16 * b * s * H * H, 420), "attention": (8 * b * s * H * H + 4 * b * s * s * H, 250)}
    for part, (f, v) in parts.items():
        out.append((f"BertLayer/part:{part}/fp16/fwd/seq:{s}/batch:{b}", "ms", ("layer", f, b), v))
    mb = 256 << 20
    for kind, v in (("h2d/pinned/ce", 25), ("d2h/pinned/ce", 26), ("d2d/device/ce", 1500)):
        out.append((f"Memcpy/{kind}/bytes:{mb}", "us", ("bytes", mb), v))
    for src in range(4):
        for dst in range(4):
            if src != dst:
                v = 45 if abs(src - dst) == 1 else 22  # neighbours have the faster link
                out.append((f"P2P/uni/peer/ce/src:{src}/dst:{dst}/bytes:{mb}", "us", ("bytes", mb), v))
    out.append(("P2P/latency/peer/ce/src:0/dst:1", "us", ("latency",), 2.5))
    out.append(("P2P/latency/peer/ce/src:1/dst:0", "us", ("latency",), 2.6))
    for op in ("allreduce", "allgather"):
        for nb, v in ((1 << 20, 20), (1 << 24, 150), (1 << 28, 360)):
            # bus bandwidth factor for 2 GPUs: allreduce 2(n-1)/n = 1, allgather (n-1)/n = 0.5
            out.append((f"NCCL/{op}/bf16/gpus:2/bytes:{nb}", "us",
                        ("nccl", nb, 1.0 if op == "allreduce" else 0.5), v if op == "allreduce" else v - 10))
    for model, var, s, b, v, mem in (("bert-large", "fp16", 512, 16, 420, 21.5),
                                     ("bert-large", "fp16-ckpt", 512, 16, 330, 9.8),
                                     ("gpt2-medium", "bf16", 1024, 8, 95, 30.2)):
        out.append((f"TrainStep/{model}/{var}/seq:{s}/batch:{b}", "ms", ("train", b, s, mem), v))
    return out


def counters(kind, t, target_time):
    """Counters of one repetition taking t seconds (target_time gives the designed value)."""
    k = kind[0]
    # telemetry on Matmul only: reports ignore it, and it keeps the files small
    tel = {"sm_MHz": 1980.0, "mem_MHz": 2619.0, "temp_C": 61.0, "power_W": 640.0} if k == "flop" else {}
    if k == "flop":
        return {"TFLOPS": kind[1] / t / 1e12, "pct_peak": 0.0, **tel}
    if k == "bytes":
        return {"GB/s": kind[1] / t / 1e9, **tel}
    if k == "layer":
        return {"TFLOPS": kind[1] / t / 1e12, "samples/s": kind[2] / t, **tel}
    if k == "latency":
        return {"latency_us": t * 1e6}
    if k == "nccl":
        alg = kind[1] / t / 1e9
        return {"algbw": alg, "busbw": alg * kind[2], **tel}
    if k == "train":
        b, s, mem = kind[1], kind[2], kind[3]
        return {"samples/s": b / t, "tokens/s": b * s / t, "TFLOPS": 0.0, "MFU": 0.0,
                "mem_GB": mem, **tel}
    raise ValueError(k)


def base_time(kind, target):
    k = kind[0]
    if k in ("flop", "layer"):
        return kind[1] / (target * 1e12)
    if k == "bytes":
        return kind[1] / (target * 1e9)
    if k == "nccl":
        return kind[1] * kind[2] / (target * 1e9)
    if k == "latency":
        return target * 1e-6
    if k == "train":
        return kind[1] / target  # target is samples/s
    raise ValueError(k)


def train_tflops(name, t):
    """TrainStep TFLOPS per the DESIGN formula 3*(L*(att+ffn) + 2*s*h*V) per sample."""
    model, var = name.split("/")[1:3]
    b = int(name.split("batch:")[1])
    s = int(name.split("seq:")[1].split("/")[0])
    L, V = 24, (30522 if model.startswith("bert") else 50257)
    per_sample = 3 * (L * (24 * s * H * H + 4 * s * s * H) + 2 * s * H * V)
    if "ckpt" in var:
        per_sample = per_sample * 4 // 3
    return per_sample * b / t / 1e12


def entries(fi, name, unit, kind, target, jitter, speed=1.0, manual=True, aggregates=True):
    run_name = name + ("/manual_time" if manual else "")
    t0 = base_time(kind, target) / speed
    reps = []
    for i, j in enumerate(jitter):
        t = t0 * j
        e = {"name": run_name, "family_index": fi, "per_family_instance_index": 0,
             "run_name": run_name, "run_type": "iteration", "repetitions": len(jitter),
             "repetition_index": i, "threads": 1, "iterations": max(1, int(0.5 / t)),
             "real_time": t / UNIT[unit], "cpu_time": t * 1.001 / UNIT[unit], "time_unit": unit}
        c = counters(kind, t, t0)
        if kind[0] == "train":
            c["TFLOPS"] = train_tflops(name, t)
            c["MFU"] = c["TFLOPS"] / 989.4
        e.update(c)
        reps.append(e)
    out = list(reps)
    if aggregates and len(jitter) > 1:
        import statistics as st
        keys = [k for k in reps[0] if k in ("real_time", "cpu_time") or k not in
                ("name", "family_index", "per_family_instance_index", "run_name", "run_type",
                 "repetitions", "repetition_index", "threads", "iterations", "time_unit")]
        for agg in ("mean", "median", "stddev", "cv"):
            a = {"name": f"{run_name}_{agg}", "family_index": fi, "per_family_instance_index": 0,
                 "run_name": run_name, "run_type": "aggregate", "repetitions": len(jitter),
                 "threads": 1, "aggregate_name": agg,
                 "aggregate_unit": "percentage" if agg == "cv" else "time",
                 "iterations": len(jitter)}
            for k in keys:
                vals = [r[k] for r in reps]
                m = st.mean(vals)
                a[k] = {"mean": m, "median": st.median(vals), "stddev": st.stdev(vals),
                        "cv": st.stdev(vals) / m if m else 0.0}[agg]
            a["time_unit"] = unit
            out.append(a)
    return out


# Run B = run A with these speed factors (time divided by the factor); everything else 1.0.
SPEEDUP_B = {
    "Matmul/bf16/NN/m:8192/n:8192/k:8192": 1.10,
    "Matmul/fp16/NN/m:8192/n:8192/k:8192": 1.05,
    "Matmul/fp32/NN/m:2048/n:2048/k:2048": 0.995,  # within the jitter: not significant
    "Vector/scale/fp32/n:268435456": 0.90,         # a 10% regression, significant
    "BertLayer/fused/fp16/fwdbwd/seq:512/batch:64": 1.20,
}


# GPT2Block (gpt2-medium, h=1024; /model:gpt2-large h=1280) TFLOPS by backend, pass, seq, batch:
# base[pass] * backend factor * batch factor * seq factor, rounded to 0.1.
GPT2_BASE = {"fwd": 250.0, "fwdbwd": 280.0}
GPT2_BACKENDS = {"unfused": 0.5, "fused": 1.0, "flash": 1.1}
GPT2_BATCH = {2: 0.5, 64: 1.0}
GPT2_SEQ = {512: 0.9, 1024: 1.0}
GPT2_PEER = {"torch-eager": 0.4, "torch-sdpa": 0.8}   # the peer's names for unfused / fused


def gpt2_target(backend, p, s, b):
    factor = {**GPT2_BACKENDS, **GPT2_PEER}[backend]
    return round(GPT2_BASE[p] * factor * GPT2_BATCH[b] * GPT2_SEQ[s], 1)


def gpt2_entries(backends):
    out = []
    for backend in backends:
        for p in ("fwd", "fwdbwd"):
            for s in (512, 1024):
                for b in (2, 64):
                    name = f"GPT2Block/{backend}/fp16/{p}/seq:{s}/batch:{b}"
                    out += entries(0, name, "ms", ("layer", layer_flops(b, s, passes=p), b),
                                   gpt2_target(backend, p, s, b), JITTER3, aggregates=False)
    return out


def doc(ctx, benchmarks):
    return {"context": ctx, "benchmarks": benchmarks}


def write(name, obj):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(obj, f, indent=1 if len(obj.get("benchmarks", [])) < 100 else None)
        f.write("\n")


def main():
    os.makedirs(HERE, exist_ok=True)
    all_cases = cases()
    a, b = [], []
    fams = {}
    for name, unit, kind, target in all_cases:
        fi = fams.setdefault(name.split("/")[0] + "/" + name.split("/")[1], len(fams))
        a += entries(fi, name, unit, kind, target, JITTER5)
        b += entries(fi, name, unit, kind, target, JITTER5_B, SPEEDUP_B.get(name, 1.0))
    write("run_a.json", doc(CTX_A, a))
    write("run_b.json", doc(CTX_B, b))

    # PyTorch peer run: layer backends torch-sdpa / torch-eager, 3 repetitions, some matmuls.
    ctx_t = {k: CTX_A[k] for k in ("date", "host_name", "executable", "num_cpus", "gpu_name",
                                   "gpu_cc", "gpu_sm_count", "gpu_mem_GB", "cuda_runtime")}
    ctx_t.update(xfbench_runner="pytorch", torch_version="2.11.0", transformers_version="5.17.0",
                 cudnn_version="9.10.2", xfbench_mode="hot")
    t = []
    for name, unit, kind, target in all_cases:
        if name.startswith("BertLayer/fused/"):
            t += entries(0, name.replace("/fused/", "/torch-sdpa/"), unit, kind, target * 0.75, JITTER3)
        elif name.startswith("BertLayer/unfused/"):
            t += entries(0, name.replace("/unfused/", "/torch-eager/"), unit, kind, target * 0.6, JITTER3)
        elif name.startswith("Matmul/") and "/m:8192/n:8192" in name:
            t += entries(1, name, unit, kind, target * 0.9, JITTER3)
    write("torch_peer.json", doc(ctx_t, t))

    # A single-repetition run with failed and skipped cases (no aggregates, as Google Benchmark
    # writes for --benchmark_repetitions=1).
    e = []
    for name, unit, kind, target in all_cases[:3]:
        e += entries(0, name, unit, kind, target, [1.0])
    for i, (name, msg) in enumerate((
            ("Matmul/fp8/NN/m:4096/n:4096/k:4096", "validation failed: max rel err 0.31 > 0.05"),
            ("BertLayer/fused/fp16/fwd/seq:512/batch:64", "CUDA error: out of memory (bert_layer.cu:212)"))):
        e.append({"name": name + "/manual_time", "family_index": 5 + i, "per_family_instance_index": 0,
                  "run_name": name + "/manual_time", "run_type": "iteration", "repetitions": 1,
                  "repetition_index": 0, "threads": 1, "iterations": 0, "real_time": 0.0,
                  "cpu_time": 0.0, "time_unit": "ns", "error_occurred": True, "error_message": msg})
    write("errors.json", doc(CTX_A, e))

    # GPT-2: xfbench's three backends plus one case of another model; the peer's two backends
    g = gpt2_entries(GPT2_BACKENDS)
    g += entries(0, "GPT2Block/flash/fp16/fwd/seq:1024/batch:8/model:gpt2-large", "ms",
                 ("layer", layer_flops(8, 1024, h=1280), 8), 200.0, JITTER3, aggregates=False)
    write("gpt2_xfbench.json", doc(CTX_A, g))
    write("gpt2_torch.json", doc(ctx_t, gpt2_entries(GPT2_PEER)))

    write("empty.json", doc(CTX_A, []))
    write("not_xfbench.json", {"results": [{"name": "x", "time": 1.0}]})
    with open(os.path.join(HERE, "truncated.json"), "w") as f:
        f.write(json.dumps(doc(CTX_A, a[:2]), indent=2)[:700])


if __name__ == "__main__":
    main()
