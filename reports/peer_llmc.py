#!/usr/bin/env python3
"""llm.c as a peer of xfbench's TrainStep (issue 33): karpathy/llm.c's `train_gpt2cu` (bf16, cuDNN
attention, its GELU fusion `-ge 2`, no recomputation `-r 0`, no ZeRO) trained on random token ids at
the TrainStep shapes, written as Google Benchmark JSON under TrainStep names whose backend is
`llm.c`, so that

    python3 -m reports compare xfbench.json llmc.json --match-backend llm.c=fused

shows the ratio. llm.c has no dropout: its names carry `dropout:0`, as xfbench's cases run with
`--xfbench_train_dropout_pct=0` do, and only those pair with it.

llm.c never enters the tree. Fetch it into a git-ignored folder (as gpu-burn for the burn), build
it on a machine with the CUDA toolkit, cuDNN and the cudnn-frontend headers (this build machine),
carry the binary to the GPU machine and run it there:

    python3 reports/peer_llmc.py build --src .gl/llm.c        # -> .gl/llm.c/train_gpt2cu
    python3 reports/peer_llmc.py run --bin .gl/llm.c/train_gpt2cu --models gpt2,gpt2-medium \\
        --batches 8,16 --out llmc.json

`build` runs llm.c's Makefile (USE_CUDNN=1, NO_MULTI_GPU=1, one GPU architecture), the headers
linked where the Makefile looks (./cudnn-frontend/include). Two changes to the fetched copy make it
build with CUDA 13 on a machine without a GPU driver: its out-of-memory fallback to managed memory
(whose cudaMemAdvise call has the pre-13 signature) is dropped, and where no libnvidia-ml.so exists
the link takes a stub of the NVML functions it calls (the GPU machine's driver provides the real
libnvidia-ml.so.1 at run time).

`run` writes one token file of random ids (llm.c's format: a 256-int header, then uint16 tokens)
and starts one llm.c process per case and repetition, for --steps optimizer steps. llm.c times each
step between CUDA events (its host synchronisation and printing between steps included, as it
runs); a repetition's time per step is the median of the steps after --warmup. Counters as
xfbench's TrainStep: tokens/s, samples/s and TFLOPS by the seeds' formula, mem_GB from llm.c's
"device memory usage" line. The loss must be finite and fall (a random model starts near
ln 50257 = 10.8), else the case is an error entry, never a number. Standard library only; the JSON
entries, counters and FLOP rule are the PyTorch peer's (reports/peer/, loaded by path through
peer_torch.py, as that file loads it: copy reports/).

Exit codes: 0 every case ran, 1 some case failed, 2 bad arguments or the binary missing.
"""

import argparse
import importlib.util
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile


def _load_peer():
    """The PyTorch peer's package (reports/peer/), as peer_torch.py loads it."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peer_torch.py")
    spec = importlib.util.spec_from_file_location("xfbench_peer_torch_cli", path)
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    return cli.peer


peer = _load_peer()
# The GPT-2 sizes llm.c trains, by xfbench's names: their depth is llm.c's descriptor -e dL.
MODELS = {m: peer.TRAIN_MODELS[m][0] for m in ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl")}
VOCAB = 50257
HEADER_INTS = 256
MAGIC, VERSION = 20240520, 1
STEP = re.compile(r"^step\s+(\d+)/(\d+)\s*\|\s*loss\s+(\S+).*?\|\s*([0-9.]+)\s*ms\s*\|")
MEMORY = re.compile(r"device memory usage:\s*(\d+)\s*MiB")


class Failed(Exception):
    """The case ran and its output cannot stand as a number."""


# ---- the cases (xfbench's TrainStep names and counters, through the PyTorch peer's) -------------

def case_spec(model, seq, batch):
    name = (f"TrainStep/llm.c/{model}/bf16/seq:{seq}/batch:{batch}/accum:1/ckpt:off/"
            f"adamw:fused/dropout:0")
    return peer.Spec("TrainStep", name, model=model, precision="bf16", seq=seq, batch=batch,
                     accum=1, ckpt=False, adamw="fused")


def counters(model, seq, batch, seconds, mem_bytes=None):
    """tokens/s, samples/s, TFLOPS by the seeds' rule (and mem_GB), as xfbench's TrainStep."""
    return peer.counters(case_spec(model, seq, batch), seconds, mem_bytes)


# ---- llm.c's files and output --------------------------------------------------------------------

def write_tokens(path, count, seed=42):
    """`count` random ids below GPT-2's vocabulary, as llm.c's data loader reads them."""
    import random
    rng = random.Random(seed)
    header = [0] * HEADER_INTS
    header[0], header[1], header[2] = MAGIC, VERSION, count
    with open(path, "wb") as f:
        f.write(b"".join(int(x).to_bytes(4, "little", signed=True) for x in header))
        f.write(b"".join(rng.randrange(VOCAB).to_bytes(2, "little") for _ in range(count)))


def parse_output(text):
    """(steps [(step, loss, ms)], device memory in bytes or None) from llm.c's stdout."""
    steps, mem = [], None
    for line in text.splitlines():
        m = STEP.match(line.strip())
        if m:
            steps.append((int(m.group(1)), float(m.group(3)), float(m.group(4))))
        m = MEMORY.search(line)
        if m:
            mem = int(m.group(1)) << 20
    return steps, mem


def step_seconds(steps, warmup):
    """The median time of the steps after the first `warmup`; Failed where the loss is not finite
    or did not fall, or too few steps ran."""
    if len(steps) <= warmup:
        raise Failed(f"llm.c ran {len(steps)} steps, fewer than the {warmup + 1} needed")
    losses = [loss for _, loss, _ in steps]
    if not all(math.isfinite(x) for x in losses):
        raise Failed(f"validation failed: a loss is not finite ({losses[-1]})")
    if not losses[-1] < losses[0]:
        raise Failed(f"validation failed: the loss did not fall ({losses[0]:.3f} -> {losses[-1]:.3f})")
    return statistics.median(ms for _, _, ms in steps[warmup:]) / 1e3


def command(binary, data, model, seq, batch, steps, gelu_fusion):
    layers = MODELS[model]
    return [binary, "-i", data, "-j", data, "-e", f"d{layers}", "-b", str(batch), "-t", str(seq),
            "-x", str(steps), "-v", "1000000", "-m", "1", "-s", "0", "-n", "0", "-r", "0", "-z", "0",
            "-ge", str(gelu_fusion), "-l", "3e-4", "-u", "0"]


# ---- the commands --------------------------------------------------------------------------------

def int_list(text):
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of integers") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"'{text}': positive integers, comma separated")
    return values


def model_list(text):
    models = [x.strip() for x in text.split(",") if x.strip()]
    bad = [m for m in models if m not in MODELS]
    if not models or bad:
        raise argparse.ArgumentTypeError(f"'{text}': models among {', '.join(MODELS)}")
    return models


def run(args):
    if not (os.path.isfile(args.bin) and os.access(args.bin, os.X_OK)):
        print(f"peer_llmc: {args.bin}: no llm.c binary there (build it: peer_llmc.py build)",
              file=sys.stderr)
        return 2
    context = {"xfbench_runner": "llm.c", "executable": " ".join(sys.argv),
               "llmc_binary": os.path.abspath(args.bin), "llmc_steps": str(args.steps),
               "llmc_warmup": str(args.warmup), "llmc_gelu_fusion": str(args.gelu_fusion)}
    if args.commit:
        context["llmc_commit"] = args.commit
    benchmarks, failed = [], False
    with tempfile.TemporaryDirectory(prefix="llmc.") as tmp:
        data = os.path.join(tmp, "tokens.bin")
        write_tokens(data, max(args.batches) * max(args.seqs) * 4 + 1)
        index = 0
        for model in args.models:
            for seq in args.seqs:
                for batch in args.batches:
                    spec = case_spec(model, seq, batch)
                    name = spec.name
                    label = (f"llm.c{' ' + args.commit if args.commit else ''}, -ge "
                             f"{args.gelu_fusion} -r 0, median of steps {args.warmup + 1}.."
                             f"{args.steps} per repetition")
                    try:
                        reps, mems = [], []
                        for _ in range(args.repetitions):
                            cmd = command(args.bin, data, model, seq, batch, args.steps,
                                          args.gelu_fusion)
                            p = subprocess.run(cmd, capture_output=True, text=True,
                                               timeout=args.timeout)
                            if p.returncode != 0:
                                tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
                                raise Failed(f"llm.c exited {p.returncode}: {tail[0]}")
                            steps, mem = parse_output(p.stdout)
                            seconds = step_seconds(steps, args.warmup)
                            loss = f"; loss {steps[0][1]:.2f} -> {steps[-1][1]:.2f}"
                            reps.append(peer.Rep(seconds, len(steps) - args.warmup, {}, label + loss))
                            mems += [mem] if mem is not None else []
                        benchmarks += peer.gb_entries(spec, reps, index, 0,
                                                      max(mems) if mems else None)
                        med = statistics.median(r.seconds for r in reps)
                        print(f"{name:<80} {med * 1e3:9.2f} ms  tokens/s="
                              f"{batch * seq / med:,.0f}")
                    except (Failed, subprocess.TimeoutExpired) as e:
                        failed = True
                        message = str(e) if isinstance(e, Failed) else \
                            f"llm.c ran past {args.timeout} s"
                        benchmarks.append(peer.error_entry(spec, message, index, 0))
                        print(f"{name:<80} ERROR: {message}")
                    index += 1
                    peer.write_json(args.out, context, benchmarks)
    return 1 if failed else 0


def find_cudnn_frontend():
    """The include folder of the cudnn-frontend headers (the nvidia-cudnn-frontend wheel)."""
    import sysconfig
    for base in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        for sub in ("include", "cudnn_frontend/include", "nvidia/cudnn_frontend/include"):
            if os.path.isfile(os.path.join(base, sub, "cudnn_frontend.h")):
                return os.path.join(base, sub)
    return None


def nvml_functions(src):
    """The NVML functions llm.c's sources call."""
    names = set()
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith((".cu", ".cuh", ".h", ".cpp")):
                with open(os.path.join(root, f), errors="replace") as fh:
                    names.update(re.findall(r"\b(nvml[A-Z]\w*)\s*\(", fh.read()))
    return sorted(names)


def nvml_stub(src, folder):
    """libnvidia-ml.so (soname libnvidia-ml.so.1) defining each function llm.c calls, also with
    the _v2/_v3 suffixes nvml.h maps some of them to: for linking only."""
    body = "".join(f"int {n}{v}(void) {{ return 999; }}\n" for n in nvml_functions(src)
                   for v in ("", "_v2", "_v3") if not (v and n.endswith(("_v2", "_v3"))))
    c = os.path.join(folder, "nvml_stub.c")
    with open(c, "w") as f:
        f.write(body)
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libnvidia-ml.so.1", "-o",
                    os.path.join(folder, "libnvidia-ml.so"), c], check=True)


def has_nvml():
    p = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True)
    return "libnvidia-ml.so " in p.stdout or "libnvidia-ml.so\t" in p.stdout


def build(args):
    src = args.src
    if not os.path.isfile(os.path.join(src, "train_gpt2.cu")):
        print(f"peer_llmc: {src}: not llm.c's source (fetch karpathy/llm.c there)", file=sys.stderr)
        return 2
    frontend = args.cudnn_frontend or find_cudnn_frontend()
    if not frontend:
        print("peer_llmc: cudnn-frontend headers not found: pip install -r cmake/requirements.txt "
              "or give --cudnn-frontend", file=sys.stderr)
        return 2
    utils = os.path.join(src, "llmc", "cuda_utils.cuh")
    with open(utils) as f:
        text = f.read()
    # CUDA 13 changed cudaMemAdvise's signature; managed memory can hang these GPUs anyway.
    fallback = re.compile(r"cudaCheck_\(cudaMallocManaged\(out, bytes\), file, line\);\s*"
                          r"cudaCheck_\(cudaMemAdvise\([^;]*\);\s*return 1;")
    patched = fallback.sub("cudaCheck_(err, file, line);  // xfbench: no managed fallback\n"
                           "        return 1;", text)
    if patched != text:
        with open(utils, "w") as f:
            f.write(patched)
    # Its Makefile looks for the headers at ./cudnn-frontend/include and nowhere it is told.
    link = os.path.join(src, "cudnn-frontend", "include")
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.abspath(frontend), link)
    env = dict(os.environ)
    libdirs = list(args.lib_dir)
    for cand in ("/usr/local/cuda/lib", "/usr/local/cuda/lib64"):
        if os.path.exists(os.path.join(cand, "libcudnn.so")):
            libdirs.append(cand)
    stub = None
    if not has_nvml():
        stub = tempfile.mkdtemp(prefix="nvml_stub.")
        nvml_stub(src, stub)
        libdirs.append(stub)
    env["LIBRARY_PATH"] = ":".join(libdirs + [env.get("LIBRARY_PATH", "")]).strip(":")
    cmd = ["make", "-C", src, "train_gpt2cu", "USE_CUDNN=1", f"CUDNN_FRONTEND_PATH={frontend}",
           "NO_MULTI_GPU=1", "NO_USE_MPI=1", f"GPU_COMPUTE_CAPABILITY={args.arch}",
           "PRECISION=BF16"]
    print(" ".join(cmd), flush=True)
    try:
        rc = subprocess.run(cmd, env=env).returncode
    finally:
        if stub:
            shutil.rmtree(stub, ignore_errors=True)
    if rc == 0:
        print(f"peer_llmc: built {os.path.join(src, 'train_gpt2cu')}")
    return 0 if rc == 0 else 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="make llm.c's train_gpt2cu from a fetched copy")
    b.add_argument("--src", required=True, help="llm.c's source folder (git-ignored)")
    b.add_argument("--arch", default="90", help="GPU architecture (default 90: H100, H200)")
    b.add_argument("--cudnn-frontend", help="the cudnn-frontend include folder (default: the "
                                            "nvidia-cudnn-frontend wheel's)")
    b.add_argument("--lib-dir", action="append", default=[],
                   help="a further folder for the linker (cuDNN's, ...)")
    r = sub.add_parser("run", help="run llm.c at TrainStep shapes, write the JSON")
    r.add_argument("--bin", required=True, help="llm.c's train_gpt2cu")
    r.add_argument("--models", type=model_list, default=["gpt2-medium"],
                   help=f"comma separated, among {', '.join(MODELS)} (default gpt2-medium)")
    r.add_argument("--seqs", type=int_list, default=[1024], help="sequence lengths (default 1024)")
    r.add_argument("--batches", type=int_list, default=[8], help="batch sizes (default 8)")
    r.add_argument("--steps", type=int, default=60, help="optimizer steps per process (default 60)")
    r.add_argument("--warmup", type=int, default=10,
                   help="steps left out of the median (default 10)")
    r.add_argument("--repetitions", type=int, default=3, help="processes per case (default 3)")
    r.add_argument("--gelu-fusion", type=int, default=2, choices=(0, 1, 2),
                   help="llm.c's -ge (default 2: forward and backward, its fastest on Hopper)")
    r.add_argument("--timeout", type=float, default=600, help="seconds per process (default 600)")
    r.add_argument("--commit", default="", help="llm.c's commit, for the label and context")
    r.add_argument("--out", required=True, help="the JSON file to write")
    args = p.parse_args(argv)
    if args.command == "run" and not (0 <= args.warmup < args.steps and args.repetitions >= 1):
        p.error("--warmup must be below --steps, --repetitions at least 1")
    return build(args) if args.command == "build" else run(args)


if __name__ == "__main__":
    sys.exit(main())
