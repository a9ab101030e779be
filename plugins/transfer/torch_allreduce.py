#!/usr/bin/env python3
"""PyTorch peer for the NCCL and P2P families on one node: `torch.distributed.all_reduce` (nccl
backend, one process per GPU, spawned here) and, with --p2p, `copy_` between GPU 0 and GPU 1.

Writes Google Benchmark JSON with xfbench's names, so `python3 -m reports compare` lines it up:
    NCCL/allreduce/fp32/gpus:N/bytes:B   counters algbw, busbw (GB/s; busbw = algbw * 2(n-1)/n)
    P2P/<uni|bi>/peer/ce/src:0/dst:1/bytes:B   counter GB/s (bi counts both directions)
Timing: warm-up, then CUDA events around back-to-back calls on rank 0 (all ranks run the same
calls), several repetitions; each repetition is one entry, reports take the median.

    python3 plugins/transfer/torch_allreduce.py --out torch_nccl.json [--sizes 1GiB,4GiB] [--p2p]
"""

import argparse
import json
import os
import socket
import statistics
import sys

UNITS = {"": 1, "B": 1, "K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20, "G": 1 << 30,
         "GIB": 1 << 30}


def parse_size(text):
    digits = "".join(ch for ch in text if ch.isdigit())
    unit = text[len(digits):].upper()
    if not digits or unit not in UNITS or text[:len(digits)] != digits:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (e.g. 64MiB, 1GiB)")
    return int(digits) * UNITS[unit]


def entry(name, seconds, reps, index, counters):
    e = {"name": name + "/manual_time", "run_name": name + "/manual_time", "run_type": "iteration",
         "repetitions": reps, "repetition_index": index, "threads": 1, "iterations": 1,
         "real_time": seconds * 1e6, "cpu_time": seconds * 1e6, "time_unit": "us"}
    e.update(counters)
    return e


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


def iterations_for(nbytes):
    return max(5, min(200, int(2e9 / max(nbytes, 1))))


def allreduce_worker(rank, world, port, sizes, reps, queue):
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, device_id=torch.device("cuda", rank))
    results = []
    for nbytes in sizes:
        x = torch.zeros(nbytes // 4, dtype=torch.float32, device="cuda")  # sums stay finite
        samples = time_calls(torch, lambda: dist.all_reduce(x), iterations_for(nbytes), reps)
        dist.barrier()
        y = torch.full((1024,), float(rank + 1), device="cuda")  # a check that NCCL sums right
        dist.all_reduce(y)
        ok = bool((y == world * (world + 1) / 2).all())
        results.append((nbytes, samples, ok))
        del x
        torch.cuda.empty_cache()
    if rank == 0:
        queue.put(results)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_allreduce(torch, world, sizes, reps):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(allreduce_worker, args=(world, free_port(), sizes, reps, queue), nprocs=world,
             join=True)
    entries = []
    factor = 2 * (world - 1) / world
    for nbytes, samples, ok in queue.get():
        name = f"NCCL/allreduce/fp32/gpus:{world}/bytes:{nbytes}"
        for i, t in enumerate(samples):
            algbw = nbytes / t / 1e9
            entries.append(entry(name, t, len(samples), i, {"algbw": algbw, "busbw": algbw * factor,
                                                            "wrong": 0 if ok else 1}))
        med = statistics.median(samples)
        print(f"{name:<52} {med * 1e3:9.3f} ms  algbw={nbytes / med / 1e9:7.1f}  "
              f"busbw={nbytes / med / 1e9 * factor:7.1f} GB/s  {'ok' if ok else 'WRONG'}", flush=True)
    return entries


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
        for i, t in enumerate(samples):
            entries.append(entry(name, t, len(samples), i, {"GB/s": mult * nbytes / t / 1e9}))
        med = statistics.median(samples)
        print(f"{name:<52} {med * 1e3:9.3f} ms  GB/s={mult * nbytes / med / 1e9:7.1f}  "
              f"{'ok' if ok else 'WRONG'}", flush=True)
    return entries


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="torch_nccl.json")
    p.add_argument("--sizes", default="1GiB,4GiB", help="all_reduce sizes (default 1GiB,4GiB)")
    p.add_argument("--gpus", type=int, default=0, help="ranks (default: all visible GPUs)")
    p.add_argument("--repetitions", type=int, default=5)
    p.add_argument("--p2p", action="store_true", help="also time copy_ between GPU 0 and 1 (1 GiB)")
    args = p.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    import torch
    world = args.gpus or torch.cuda.device_count()
    if world < 2:
        print(f"needs two GPUs, {torch.cuda.device_count()} visible", file=sys.stderr)
        return 2
    entries = run_allreduce(torch, world, sizes, args.repetitions)
    if args.p2p:
        entries += run_p2p(torch, 1 << 30, args.repetitions)
    p0 = torch.cuda.get_device_properties(0)
    context = {"xfbench_runner": "pytorch", "torch_version": torch.__version__,
               "gpu_name": p0.name, "nccl_version": ".".join(map(str, torch.cuda.nccl.version())),
               "executable": " ".join([sys.executable] + sys.argv), "host_name": socket.gethostname(),
               "nccl_env": " ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                                    if k.startswith("NCCL_"))}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"context": context, "benchmarks": entries}, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
