#!/usr/bin/env python3
"""PyTorch peer of NCCL all-reduce on one node, the old command line kept: runs the NCCL family of
reports/peer_torch.py (reports/peer_nccl.py: xfbench's names, the steady protocol, checked
results) under torchrun over N GPUs, and with --p2p adds `copy_` between GPU 0 and GPU 1:

    NCCL/allreduce/fp32/gpus:N/bytes:B          algbw, busbw (2(n-1)/n), wrong
    P2P/<uni|bi>/peer/ce/src:0/dst:1/bytes:1073741824   GB/s (bi counts both directions)

    python3 plugins/transfer/torch_allreduce.py --out torch_nccl.json [--sizes 1GiB,4GiB] [--p2p]
is the same as
    torchrun --standalone --nproc-per-node=N reports/peer_torch.py --families NCCL \\
        --nccl-ops allreduce --nccl-sizes 1GiB,4GiB --out torch_nccl.json
(the other collectives: --nccl-ops there). The P2P copies keep this script's own timing: a warm-up,
then CUDA events around ten back-to-back copies per repetition; reports take the median.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER = os.path.join(ROOT, "reports", "peer_torch.py")
P2P_BYTES = 1 << 30


def _peer_nccl():
    """reports/peer_nccl.py by path (standard library only): the size syntax of the NCCL family."""
    spec = importlib.util.spec_from_file_location("xfbench_peer_nccl",
                                                  os.path.join(ROOT, "reports", "peer_nccl.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def torchrun_command(gpus, sizes, repetitions, out, python=sys.executable):
    return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={gpus}", PEER,
            "--families", "NCCL", "--nccl-ops", "allreduce", "--nccl-sizes", sizes,
            "--repetitions", str(repetitions), "--out", out]


def time_calls(torch, fn, iters, reps, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(reps):
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        out.append(start.elapsed_time(stop) / 1e3 / iters)
    return out


def p2p_entry(name, seconds, reps, index, gbs):
    return {"name": name + "/manual_time", "run_name": name + "/manual_time", "run_type": "iteration",
            "repetitions": reps, "repetition_index": index, "threads": 1, "iterations": 1,
            "real_time": seconds * 1e6, "cpu_time": seconds * 1e6, "time_unit": "us", "GB/s": gbs}


def run_p2p(torch, nbytes, reps):
    a0 = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda:0")
    b1 = torch.empty(nbytes, dtype=torch.uint8, device="cuda:1")
    a1 = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda:1")
    b0 = torch.empty(nbytes, dtype=torch.uint8, device="cuda:0")
    s0 = torch.cuda.Stream(device=0)
    s1 = torch.cuda.Stream(device=1)
    entries = []

    def uni():
        b1.copy_(a0, non_blocking=True)

    def bi():  # each GPU pushes its half of the exchange on its own stream
        ev = torch.cuda.Event()
        ev.record(torch.cuda.current_stream(0))
        s0.wait_event(ev)
        s1.wait_event(ev)
        with torch.cuda.stream(s0):
            b1.copy_(a0, non_blocking=True)
        with torch.cuda.stream(s1):
            b0.copy_(a1, non_blocking=True)
        torch.cuda.current_stream(0).wait_stream(s0)
        torch.cuda.current_stream(0).wait_stream(s1)

    for mode, fn, mult in (("uni", uni, 1), ("bi", bi, 2)):
        with torch.cuda.device(0):
            samples = time_calls(torch, fn, 10, reps)
        ok = torch.equal(b1.cpu(), a0.cpu()) and (mode == "uni" or torch.equal(b0.cpu(), a1.cpu()))
        name = f"P2P/{mode}/peer/ce/src:0/dst:1/bytes:{nbytes}"
        if not ok:  # a wrong copy is an error, never a number
            entries.append({"name": name + "/manual_time", "run_name": name + "/manual_time",
                            "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
                            "threads": 1, "iterations": 0, "real_time": 0.0, "cpu_time": 0.0,
                            "time_unit": "us", "error_occurred": True,
                            "error_message": "ValidationError: the copy differs from its source"})
            print(f"{name:<52} ERROR the copy differs from its source", file=sys.stderr, flush=True)
            continue
        for i, t in enumerate(samples):
            entries.append(p2p_entry(name, t, len(samples), i, mult * nbytes / t / 1e9))
        med = statistics.median(samples)
        print(f"{name:<52} {med * 1e3:9.3f} ms  GB/s={mult * nbytes / med / 1e9:7.1f}", flush=True)
    return entries


def add_to_json(path, entries):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    doc["benchmarks"] += entries
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="torch_nccl.json")
    p.add_argument("--sizes", default="1GiB,4GiB", help="all_reduce sizes (default 1GiB,4GiB)")
    p.add_argument("--gpus", type=int, default=0, help="ranks (default: all visible GPUs)")
    p.add_argument("--repetitions", type=int, default=5)
    p.add_argument("--p2p", action="store_true", help="also time copy_ between GPU 0 and 1 (1 GiB)")
    args = p.parse_args(argv)
    try:
        _peer_nccl().parse_sizes(args.sizes, "--sizes")
    except ValueError as e:
        p.error(str(e))
    if args.gpus < 0 or args.repetitions < 1:
        p.error("--gpus must be >= 0 and --repetitions >= 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
    except ImportError as e:
        print(f"torch is not installed: {e}", file=sys.stderr)
        return 2
    world = args.gpus or torch.cuda.device_count()
    if world < 2:
        print(f"needs two GPUs, {torch.cuda.device_count()} visible", file=sys.stderr)
        return 2
    rc = subprocess.run(torchrun_command(world, args.sizes, args.repetitions, args.out)).returncode
    if rc not in (0, 1):  # 1: some cases failed, their entries are in the JSON
        return rc
    if args.p2p:
        entries = run_p2p(torch, P2P_BYTES, args.repetitions)
        add_to_json(args.out, entries)
        rc = rc or int(any(e.get("error_occurred") for e in entries))
    print(f"wrote {args.out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
