#!/usr/bin/env python3
"""torch.matmul on the Matmul plugin's own case names, timed the way xfbench times them.

    xfbench --benchmark_list_tests=true --benchmark_filter=Matmul/ > names.txt
    python3 torch_peer.py run --names names.txt --out torch.json     # Google Benchmark JSON
    python3 torch_peer.py compare --ours xf.json --peer torch.json   # ratio table, sweep bests
    python3 torch_peer.py paired --names names.txt --xfbench build/bin/xfbench --out paired.json

`paired` alternates the two sides on each case (torch, xfbench, xfbench, torch, ...; xfbench as a
subprocess per run, its algorithm search included), so both meet the same GPU state, and reports
the median of the per-pair ratios with their range.

Same inputs (uniform in [-1, 1)), same protocol as xfbench's hot mode: 3 warm-up launches, one
launch to size a batch of about 5 ms, then 20 timed batches between CUDA events; the per-launch
mean is reported. Products of >= 1e10 FLOPs start after a 150 ms idle pause, as in xfbench
(--xfbench_matmul_cooldown_ms). fp32 runs with TF32 off, tf32 with it on; fp8 uses torch._scaled_mm (e4m3,
unit scales, bf16 out), which like cuBLASLt needs layout NT.
"""
import argparse
import json
import math
import re
import statistics
import sys
import time

COOLDOWN_FLOPS = 1e10  # as kCooldownFlops in matmul_plugin.cpp

NAME = re.compile(r"^Matmul/(?:(?P<sweep>sweep)/)?(?P<dtype>fp32|tf32|fp16|bf16|fp8)/(?P<layout>NN|NT|TN)/"
                  r"(?:model:(?P<model>[^/]+)/gemm:(?P<gemm>[^/]+)/)?(?:batch:(?P<batch>\d+)/)?"
                  r"m:(?P<m>\d+)/n:(?P<n>\d+)/k:(?P<k>\d+)")


def parse(name):
    """The case a name describes, or None when it is not a Matmul case."""
    match = NAME.match(name)
    if not match:
        return None
    g = match.groupdict()
    return {"dtype": g["dtype"], "layout": g["layout"], "batch": int(g["batch"] or 1),
            "m": int(g["m"]), "n": int(g["n"]), "k": int(g["k"]), "sweep": bool(g["sweep"])}


def flops(case):
    return 2.0 * case["m"] * case["n"] * case["k"] * case["batch"]


def make_launch(torch, case, dev):
    """A zero-argument function that runs the product once."""
    dt = case["dtype"]
    torch.set_float32_matmul_precision("highest" if dt == "fp32" else "high")
    storage = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
               "bf16": torch.bfloat16, "fp8": torch.bfloat16}[dt]
    b, m, n, k = case["batch"], case["m"], case["n"], case["k"]
    ta, tb = case["layout"][0] == "T", case["layout"][1] == "T"
    lead = (b,) if b > 1 else ()

    def uniform(*shape):
        return (torch.rand(*lead, *shape, device=dev, dtype=torch.float32) * 2 - 1).to(storage)

    a = uniform(k, m).transpose(-1, -2) if ta else uniform(m, k)
    w = uniform(n, k).transpose(-1, -2) if tb else uniform(k, n)
    if dt == "fp8":
        if b > 1 or ta or not tb:
            raise RuntimeError("torch._scaled_mm runs 2-D fp8 products in layout NT only")
        a8, w8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
        one = torch.ones((), device=dev, dtype=torch.float32)
        return lambda: torch._scaled_mm(a8, w8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    return lambda: torch.matmul(a, w)


def time_launch(torch, fn, iterations=20, warmup=3, target=5e-3, max_batch=2000):
    """Mean seconds per launch, as xfbench's time_gpu does it in hot mode."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    single = start.elapsed_time(stop) / 1e3
    batch = int(min(max(math.floor(target / max(single, 1e-7)), 1), max_batch))
    per_launch = []
    for _ in range(iterations):
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        per_launch.append(start.elapsed_time(stop) / 1e3 / batch)
    return statistics.fmean(per_launch), batch


def read_names(args):
    """The case names of --names, narrowed by --filter."""
    names = [line.strip() for line in open(args.names) if line.strip()]
    return [n for n in names if re.search(args.filter, n)] if args.filter else names


def time_case(torch, case, launch, cooldown_ms):
    """time_launch after the idle pause xfbench takes before large products."""
    if cooldown_ms > 0 and flops(case) >= COOLDOWN_FLOPS:
        torch.cuda.synchronize()
        time.sleep(cooldown_ms / 1e3)
    return time_launch(torch, launch)


def cublaslt_version():
    """cuBLASLt as loaded into this process (torch's own copy), e.g. '13.1.0'."""
    import ctypes
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libcublasLt.so" in line}
        for path in paths:
            v = ctypes.CDLL(path).cublasLtGetVersion()
            return f"{v // 10000}.{v // 100 % 100}.{v % 100} ({path})"
    except OSError:
        pass
    return "unknown"


def run(args):
    import torch
    names = read_names(args)
    dev = torch.device("cuda", args.device)
    entries = []
    for index, name in enumerate(names):
        case = parse(name)
        if case is None or (case["sweep"] and not args.sweep):
            continue
        entry = {"name": name, "run_name": name, "run_type": "iteration", "family_index": index,
                 "per_family_instance_index": 0, "repetitions": 1, "repetition_index": 0,
                 "threads": 1, "iterations": 20, "time_unit": "us"}
        try:
            launch = make_launch(torch, case, dev)
            seconds, batch = time_case(torch, case, launch, args.cooldown_ms)
            entry.update(real_time=seconds * 1e6, cpu_time=seconds * 1e6,
                         TFLOPS=flops(case) / seconds / 1e12, label=f"torch batch={batch}")
        except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
            entry.update(error_occurred=True, error_message=str(e).splitlines()[0],
                         real_time=0, cpu_time=0)
        torch.cuda.empty_cache()
        entries.append(entry)
        print(f"{name:80s} {entry.get('TFLOPS', float('nan')):8.1f} TFLOPS", flush=True)
    context = {"xfbench_runner": "pytorch", "torch_version": torch.__version__,
               "gpu_name": torch.cuda.get_device_name(dev), "cublaslt_version": cublaslt_version(),
               "xfbench_mode": "hot"}
    with open(args.out, "w") as f:
        json.dump({"context": context, "benchmarks": entries}, f, indent=1)


def tflops_by_case(paths):
    """Case name (without Google Benchmark's suffixes) -> median TFLOPS over the files' runs."""
    runs = {}
    for b in [b for path in paths for b in json.load(open(path))["benchmarks"]]:
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        base = b["name"].split("/iterations:")[0].replace("/manual_time", "")
        runs.setdefault(base, []).append(b["TFLOPS"])
    return {k: statistics.median(v) for k, v in runs.items()}


def compare(args):
    ours, peer = tflops_by_case(args.ours), tflops_by_case(args.peer)
    print(f"{'case':78s} {'xfbench':>8s} {'torch':>8s} {'ratio':>6s}")
    squares = []
    for name, value in ours.items():
        case = parse(name)
        if case is None or case["sweep"]:
            continue
        other = peer.get(name)
        ratio = f"{value / other:6.3f}" if other else "     -"
        print(f"{name:78s} {value:8.1f} {other or float('nan'):8.1f} {ratio}")
        square = case["m"] == case["n"] == case["k"] >= 2048 and case["batch"] == 1
        if other and square and case["dtype"] in ("bf16", "fp16", "tf32") and case["layout"] == "NN":
            squares.append((value / other, name))
    if squares:
        worst = min(squares)
        print(f"squares >= 2048 NN in bf16/fp16/tf32: {sum(r >= 1 for r, _ in squares)} of "
              f"{len(squares)} at or above torch; lowest ratio {worst[0]:.3f} ({worst[1]})")
    sweeps = {}
    for name, value in ours.items():
        case = parse(name)
        if case and case["sweep"]:
            sweeps.setdefault(case["dtype"], []).append((value, name))
    for dtype, runs in sorted(sweeps.items()):
        top = sorted(runs, reverse=True)[:3]
        print(f"sweep best {dtype}: " + "; ".join(f"{v:.1f} at {n}" for v, n in top))


def paired(args):
    import os
    import subprocess
    import tempfile
    import torch
    if args.pairs < 1:
        sys.exit("--pairs must be >= 1")
    names = read_names(args)
    dev = torch.device("cuda", args.device)
    results = []
    print(f"{'case':60s} {'torch':>8s} {'xfbench':>8s} {'ratio':>6s} {'min':>6s} {'max':>6s}")
    for name in names:
        case = parse(name)
        if case is None or case["sweep"]:
            continue
        launch = make_launch(torch, case, dev)
        sides = {"torch": [], "xfbench": []}
        labels, telemetry = [], []
        for p in range(args.pairs):
            for side in (("torch", "xfbench") if p % 2 == 0 else ("xfbench", "torch")):
                if side == "torch":
                    seconds, _ = time_case(torch, case, launch, args.cooldown_ms)
                    sides["torch"].append(flops(case) / seconds / 1e12)
                    continue
                fd, path = tempfile.mkstemp(suffix=".json")
                os.close(fd)
                try:
                    subprocess.run([args.xfbench, f"--benchmark_filter=^{re.escape(name)}$",
                                    f"--benchmark_out={path}", "--benchmark_out_format=json",
                                    *args.xf_arg], check=True, capture_output=True)
                    runs = [b for b in json.load(open(path))["benchmarks"]
                            if "TFLOPS" in b and not b.get("error_occurred")]
                finally:
                    os.unlink(path)
                if not runs:
                    raise RuntimeError(f"xfbench gave no TFLOPS for {name}")
                sides["xfbench"].append(runs[0]["TFLOPS"])
                labels.append(runs[0].get("label", ""))
                telemetry.append({k: runs[0][k] for k in ("sm_MHz", "temp_C", "power_W") if k in runs[0]})
        ratios = [x / t for x, t in zip(sides["xfbench"], sides["torch"])]
        results.append({"name": name, **sides, "ratios": ratios, "xfbench_labels": labels,
                        "xfbench_telemetry": telemetry})
        print(f"{name.split('/iterations:')[0]:60s} {statistics.median(sides['torch']):8.1f} "
              f"{statistics.median(sides['xfbench']):8.1f} {statistics.median(ratios):6.3f} "
              f"{min(ratios):6.3f} {max(ratios):6.3f}", flush=True)
    at_or_above = sum(statistics.median(r["ratios"]) >= 1 for r in results)
    print(f"{at_or_above} of {len(results)} cases with a median paired ratio >= 1")
    with open(args.out, "w") as f:
        json.dump({"context": {"xfbench_runner": "pytorch-paired", "torch_version": torch.__version__,
                               "gpu_name": torch.cuda.get_device_name(dev), "pairs": args.pairs},
                   "cases": results}, f, indent=1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="time torch.matmul on the listed case names")
    r.add_argument("--names", required=True, help="file of case names (xfbench --benchmark_list_tests)")
    r.add_argument("--filter", help="regex on the names")
    r.add_argument("--sweep", action="store_true", help="also time Matmul/sweep/ cases")
    r.add_argument("--device", type=int, default=0)
    r.add_argument("--cooldown-ms", type=int, default=150, help="idle pause before large cases")
    r.add_argument("--out", default="torch_matmul.json")
    c = sub.add_parser("compare", help="TFLOPS side by side and the sweep's best shapes")
    c.add_argument("--ours", nargs="+", required=True, help="xfbench JSON files (runs pooled)")
    c.add_argument("--peer", nargs="+", default=[], help="torch_peer JSON files (runs pooled)")
    q = sub.add_parser("paired", help="torch and xfbench alternating on each case")
    q.add_argument("--names", required=True, help="file of case names (xfbench --benchmark_list_tests)")
    q.add_argument("--filter", help="regex on the names")
    q.add_argument("--xfbench", required=True, help="the xfbench executable")
    q.add_argument("--xf-arg", action="append", default=[], help="extra xfbench argument (repeatable)")
    q.add_argument("--pairs", type=int, default=5)
    q.add_argument("--device", type=int, default=0)
    q.add_argument("--cooldown-ms", type=int, default=150, help="idle pause before large cases")
    q.add_argument("--out", default="paired.json")
    args = p.parse_args(argv)
    return {"run": run, "compare": compare, "paired": paired}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
