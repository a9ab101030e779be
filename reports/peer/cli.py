"""The peer's command line: the options, the case list they select, and the run (each case built,
measured, written after every case; a failing case becomes an error entry and the run goes on).

Exit codes: 0 all cases ran, 1 some cases failed, 2 torch/CUDA missing or bad arguments."""

import argparse
import json
import os
import re
import sys
import time

from . import paired, siblings
from .builders import BUILDERS, fp8
from .catalog import (ALL_FAMILIES, COMPILED, DEFAULT_FAMILIES, DEFAULT_GPT2, DEFAULT_LLAMA,
                      DEFAULT_LLAMA_DTYPES, DEFAULT_LLAMA_MODELS, DEFAULT_TRAIN_MODELS,
                      DEFAULT_TRAIN_PRECISIONS, FP8_BACKENDS, GPT2_MODELS, LLAMA_DTYPES,
                      LLAMA_MODELS, LLAMA_SHAPES, LLAMA_TRAIN, LLAMA_TRAIN_CASES,
                      TRAIN_FP8_CASES, TRAIN_CHOICES, TRAIN_PRECISIONS, default_specs,
                      precision_field, select, specs_from_names)
from .flops import counters, idles_before, llama_param_count
from .measure import measure_hot, measure_steady, open_nvml
from .siblings import nccl, steady_state
from .writer import (base_context, error_entry, error_message, gb_entries, summary_line,
                     torch_context, write_json)


def run_cases(torch, specs, args, context):
    dist = siblings.DIST  # torchrun's ranks, or one process
    dev = torch.device("cuda", args.device)
    device_nvml = open_nvml(torch, args.device) if args.mode == "steady" else None
    entries, failed = [], 0
    fam_index = {}
    inst = {}
    for spec in specs:
        fi = fam_index.setdefault(spec.family, len(fam_index))
        ii = inst[spec.family] = inst.get(spec.family, -1) + 1
        torch.manual_seed(0)
        try:
            fn = BUILDERS[spec.family](torch, spec, dev)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats(dev)
            if args.mode == "hot":
                cool_down(torch, spec, args)
                reps = measure_hot(torch, fn, args.repetitions, args.min_time, args.warmup)
            else:
                reps = [measure_steady(torch, fn, args.options, args.window_ms / 1e3, device_nvml,
                                       lambda t: counters(spec, t))
                        for _ in range(args.repetitions)]
            mem = (dist.max(torch.cuda.max_memory_allocated(dev))  # torchrun: the most any GPU took
                   if spec.family != "NCCL" else None)  # xfbench reports none for collectives
            if not dist.root:
                continue
            case_label = getattr(fn, "case_label", "")  # what the builder says of the case
            for r in reps:
                r.label = "; ".join(x for x in (case_label, r.label) if x)
            entries += gb_entries(spec, reps, fi, ii, mem)
            print(summary_line(spec, reps), flush=True)
        except Exception as e:  # one failed case must not stop the run (as SkipWithError)
            msg, is_failure = error_message(e)
            failed += is_failure
            print(f"{spec.gb_name:<60} ERROR {msg}", file=sys.stderr, flush=True)
            entries.append(error_entry(spec, msg, fi, ii))
        finally:
            fn = None
            torch.backends.cuda.matmul.allow_tf32 = False
            if spec.kw.get("backend") in COMPILED:
                torch._dynamo.reset()  # the compiled graphs go with the case
            torch.cuda.empty_cache()
        if dist.root:
            write_json(args.out, context, entries)
    return failed


def cool_down(torch, spec, args):
    """The idle pause xfbench's hot mode takes before a large product."""
    if args.cooldown_ms > 0 and idles_before(spec):
        torch.cuda.synchronize()
        time.sleep(args.cooldown_ms / 1e3)


def run_paired(torch, specs, args, context):
    """--paired: each case alternating with xfbench (paired.py); the records to args.out."""
    dev = torch.device("cuda", args.device)
    built = {}

    def torch_tflops(spec):
        if spec.name not in built:
            built.clear()  # one case's tensors at a time
            torch.cuda.empty_cache()
            built[spec.name] = BUILDERS[spec.family](torch, spec, dev)
        cool_down(torch, spec, args)
        rep = measure_hot(torch, built[spec.name], 1, args.min_time, args.warmup)[0]
        return counters(spec, rep.seconds)["TFLOPS"]

    results = paired.run_paired(torch_tflops, specs, args.paired, args.xf_arg, args.pairs,
                                out=lambda line: print(line, flush=True))
    with open(args.out, "w") as f:
        json.dump({"context": {**context, "xfbench_runner": "pytorch-paired", "pairs": args.pairs},
                   "cases": results}, f, indent=1)
    return 0


class Parser(argparse.ArgumentParser):
    """Usage errors as one line and exit 2, not the usage and the error."""

    def error(self, message):
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def out_problem(path):
    """Why the output JSON `path` cannot be written, or None (checked before any case runs)."""
    if os.path.isdir(path):
        return "is a folder, not a file"
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder):  # main makes the missing folders
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK):
        return f"folder {folder} is not writable"
    return None


def parse_args(argv=None):
    dist = siblings.DIST
    p = Parser(
        prog="peer_torch.py",
        description="Run xfbench's cases through PyTorch / HF transformers and write Google Benchmark JSON.")
    p.add_argument("--families", default=",".join(DEFAULT_FAMILIES),
                   help=f"comma-separated, or 'all' (default {','.join(DEFAULT_FAMILIES)}; "
                        f"all = {','.join(ALL_FAMILIES)})")
    p.add_argument("--filter", help="regex on case names (like --benchmark_filter)")
    p.add_argument("--repetitions", type=int, default=5, help="repetitions per case (default 5)")
    p.add_argument("--mode", choices=["steady", "hot"], default="steady",
                   help="steady (default): xfbench's steady-state protocol; hot: a fixed warm-up, "
                        "then a short burst per repetition")
    p.add_argument("--min-time", type=float,
                   help="steady: seconds of measured windows (default 0.5); hot: seconds per "
                        "repetition (default 0.1)")
    p.add_argument("--max-noise", type=float, default=0.5,
                   help="steady: limit in percent of the mean's ci (batch means) and of the drift "
                        "(default 0.5)")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="steady: seconds of GPU time per repetition before giving up as noisy "
                        "(default 10)")
    p.add_argument("--min-warmup", type=float, default=0.2,
                   help="steady: seconds of windows before the measured ones (default 0.2)")
    p.add_argument("--capped-warmup", type=float, default=1.5,
                   help="steady: the same once the GPU reports its power cap (default 1.5)")
    p.add_argument("--window-ms", type=float, default=10.0,
                   help="steady: target duration of one window in ms (default 10)")
    p.add_argument("--warmup", type=float, default=0.2, help="hot: warm-up seconds per case (default 0.2)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default 0; torchrun: "
                   "LOCAL_RANK)")
    p.add_argument("--gpus", type=int, default=dist.world if dist.active else 0,
                   help="TrainStep: add the multi-GPU cases for this many GPUs (dp and zero2 of "
                        "the headlines; with Llama models in --train-models, theirs instead: seq "
                        "4096, zero2, zero3 (FSDP2 fully_shard) and dp where a replica fits, not "
                        "llama-3.1-8b's); NCCL: the collectives over this many ranks (default: "
                        "torchrun's WORLD_SIZE, else none); run them under torchrun")
    p.add_argument("--nccl-sizes", default=nccl.DEFAULT_SIZES_TEXT,
                   help=f"NCCL sizes as xfbench's, e.g. 8B,64KiB,1GiB (default "
                        f"{nccl.DEFAULT_SIZES_TEXT})")
    p.add_argument("--nccl-ops", default=",".join(nccl.OPS),
                   help=f"NCCL ops (default all: {','.join(nccl.OPS)})")
    p.add_argument("--nccl-dtypes", default=",".join(nccl.DEFAULT_DTYPES),
                   help=f"NCCL dtypes, of {','.join(nccl.DTYPES)} (default "
                        f"{','.join(nccl.DEFAULT_DTYPES)})")
    p.add_argument("--out", default="torch.json", help="output JSON file (default torch.json)")
    p.add_argument("--names", help="a file of xfbench's Matmul case names (xfbench "
                   "--benchmark_list_tests): those cases, sweeps and model GEMMs included, instead "
                   "of --families' defaults")
    p.add_argument("--cooldown-ms", type=float, default=150,
                   help="hot: idle before a Matmul product of >= 1e10 FLOPs, as xfbench's hot mode "
                   "(default 150)")
    p.add_argument("--paired", metavar="XFBENCH",
                   help="the xfbench executable: run it and torch alternately on each case (hot "
                   "protocol on the torch side) and report the median of the per-pair ratios")
    p.add_argument("--pairs", type=int, default=5, help="--paired: pairs per case (default 5)")
    p.add_argument("--xf-arg", action="append", default=[],
                   help="--paired: an extra xfbench argument (repeatable)")
    p.add_argument("--list", action="store_true", help="print the case names and exit (no torch needed)")
    p.add_argument("--layer-shapes", help="layer (seq x batch) shapes, e.g. 128x2,128x8,512x64 "
                   "(default: BertLayer and T5 128x128,512x64; GPT2Block 1024x64,512x64; "
                   "LlamaBlock: see --llama-shapes)")
    p.add_argument("--seed-shapes", action="store_true",
                   help="the seeds' whole layer tables: BertLayer seq 128,512 x batch 2..128, "
                        "GPT2Block seq 512,1024 x batch 2..64")
    p.add_argument("--gpt2-models", default=DEFAULT_GPT2,
                   help=f"GPT2Block models, comma-separated (default {DEFAULT_GPT2}; known: "
                        f"{','.join(GPT2_MODELS)}); others than {DEFAULT_GPT2} are named /model:<name>")
    p.add_argument("--llama-models", default=",".join(DEFAULT_LLAMA_MODELS),
                   help=f"LlamaBlock models, comma-separated (default {','.join(DEFAULT_LLAMA_MODELS)}; "
                        f"known: {','.join(LLAMA_MODELS)}); others than {DEFAULT_LLAMA} are named "
                        "/model:<name>")
    p.add_argument("--llama-shapes",
                   help="LlamaBlock (seq x batch) shapes for each model, e.g. "
                        "2048x4,8192x1 (default: --layer-shapes if given, else per model: "
                        + ", ".join(f"{m} {','.join(f'{s}x{b}' for s, b in v)}"
                                    for m, v in LLAMA_SHAPES.items()) + ")")
    p.add_argument("--llama-dtypes", default=",".join(DEFAULT_LLAMA_DTYPES),
                   help=f"LlamaBlock dtypes, of {','.join(LLAMA_DTYPES)} (default "
                        f"{','.join(DEFAULT_LLAMA_DTYPES)}); backends torch-eager, torch-sdpa (HF "
                        "attn_implementation eager / sdpa) and torch-compile (torch.compile of the "
                        "sdpa layer, compiled before the timing); fp8 (named "
                        f"{precision_field('fp8')}) runs as torchao-compile: torchao's float8 "
                        "training of the seven linear layers (tensorwise scales from each cast's "
                        f"amax), then torch-compile; needs {fp8.INSTALL}")
    p.add_argument("--train-models", default=",".join(DEFAULT_TRAIN_MODELS),
                   help=f"one-GPU TrainStep models, comma-separated (default "
                        f"{','.join(DEFAULT_TRAIN_MODELS)}: the headline cases and their knobs; "
                        f"known: {','.join(TRAIN_CHOICES)}); a Llama model runs xfbench's cases of it "
                        "(bf16, seq 4096: "
                        + "; ".join(f"{m} " + ", ".join(f"batch {b} ckpt:{'on' if c else 'off'}"
                                                        for _, b, c in v)
                                    for m, v in LLAMA_TRAIN_CASES.items())
                        + ") in torch-sdpa and torch-compile (torch.compile of the model, compiled "
                        "before the timing); with --gpus also its multi-GPU cases (llama-3.1-8b: "
                        "those only), instead of the headlines' when only Llama models are named")
    p.add_argument("--train-precisions", default=",".join(DEFAULT_TRAIN_PRECISIONS),
                   help=f"the Llama TrainStep cases' precisions, of {','.join(TRAIN_PRECISIONS)} "
                        f"(default {','.join(DEFAULT_TRAIN_PRECISIONS)}); fp8 (named "
                        f"{precision_field('fp8')}): "
                        + "; ".join(f"{m} " + ", ".join(f"seq {s} batch {b}" for s, b, _ in v)
                                    for m, v in TRAIN_FP8_CASES.items())
                        + ", as torchao-compile: torchao's float8 training of the blocks' linear "
                        f"layers (not the LM head; GPT-2's Conv1D projections made nn.Linear "
                        f"first), then torch-compile; needs {fp8.INSTALL}. The headline models' "
                        "cases stay as they are")
    args = p.parse_args(argv)
    args.gpt2_model_list = [m.strip() for m in args.gpt2_models.split(",") if m.strip()]
    unknown = [m for m in args.gpt2_model_list if m not in GPT2_MODELS]
    if unknown or not args.gpt2_model_list:
        p.error(f"unknown --gpt2-models {','.join(unknown)}; known: {','.join(GPT2_MODELS)}")

    def known_items(flag, text, known):
        items = list(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
        unknown = [x for x in items if x not in known]
        if unknown or not items:
            p.error(f"unknown {flag} {','.join(unknown)}; known: {','.join(known)}")
        return items
    args.llama_model_list = known_items("--llama-models", args.llama_models, LLAMA_MODELS)
    args.llama_dtype_list = known_items("--llama-dtypes", args.llama_dtypes, LLAMA_DTYPES)
    for x in args.train_models.split(",") if not args.gpus else ():
        if x.strip() in LLAMA_TRAIN and x.strip() not in LLAMA_TRAIN_CASES:
            p.error(f"--train-models {x.strip()}: no one-GPU TrainStep case (xfbench has none; the "
                    f"model's fp32 weights, gradients and AdamW state alone take "
                    f"{16 * llama_param_count(x.strip()) / 1e9:.0f} GB); its multi-GPU cases run "
                    f"with --gpus N under torchrun")
    args.train_model_list = known_items("--train-models", args.train_models, TRAIN_CHOICES)
    args.train_precision_list = known_items("--train-precisions", args.train_precisions,
                                            TRAIN_PRECISIONS)
    fams = ALL_FAMILIES if args.families.strip() == "all" else [f.strip() for f in args.families.split(",") if f.strip()]
    bad = [f for f in fams if f not in ALL_FAMILIES]
    if bad:
        p.error(f"unknown families {','.join(bad)}; known: {','.join(ALL_FAMILIES)}")
    if ("TrainStep" in fams and "fp8" in args.train_precision_list
            and not any(m in TRAIN_FP8_CASES for m in args.train_model_list)):
        p.error(f"--train-precisions fp8: the models with FP8 cases only (--train-models "
                f"{','.join(TRAIN_FP8_CASES)})")
    if args.repetitions < 1:
        p.error("--repetitions must be >= 1")
    if args.min_time is None:
        args.min_time = 0.5 if args.mode == "steady" else 0.1
    for name in ("min_time", "max_noise", "timeout", "window_ms"):
        if not getattr(args, name) > 0:
            p.error(f"--{name.replace('_', '-')} must be > 0")
    if args.min_warmup < 0 or args.capped_warmup < 0:
        p.error("--min-warmup and --capped-warmup must be >= 0")
    if args.gpus < 0:
        p.error("--gpus must be >= 0")
    try:
        args.nccl_size_list = nccl.parse_sizes(args.nccl_sizes)
        args.nccl_op_list = nccl.parse_list(args.nccl_ops, nccl.OPS, "--nccl-ops")
        args.nccl_dtype_list = nccl.parse_list(args.nccl_dtypes, tuple(nccl.DTYPES), "--nccl-dtypes")
    except ValueError as e:
        p.error(str(e))
    if dist.active:
        if args.gpus != dist.world:
            p.error(f"--gpus {args.gpus} under torchrun with {dist.world} ranks")
        args.device = dist.local_rank
    args.options = steady_state.Options(args.min_time, args.max_noise / 100, args.timeout, args.min_warmup,
                                        capped_warmup=args.capped_warmup)
    try:
        re.compile(args.filter or "")
    except re.error as e:
        p.error(f"bad --filter regex: {e}")
    args.family_list = fams
    for flag in ("--layer-shapes", "--llama-shapes"):
        shapes = []
        for item in (getattr(args, flag[2:].replace("-", "_")) or "").split(","):
            if not item.strip():
                continue
            m = re.fullmatch(r"\s*(\d+)x(\d+)\s*", item)
            if not m or not int(m.group(1)) or not int(m.group(2)):
                p.error(f"bad {flag} item '{item}': expected SEQxBATCH, e.g. 128x64")
            shapes.append((int(m.group(1)), int(m.group(2))))
        setattr(args, flag[2:].replace("-", "_"), shapes or None)
    if args.pairs < 1:
        p.error("--pairs must be >= 1")
    if args.cooldown_ms < 0:
        p.error("--cooldown-ms must be >= 0")
    args.name_specs = None
    if args.names:
        try:
            with open(args.names) as f:
                args.name_specs = specs_from_names(f.read().splitlines())
        except OSError as e:
            p.error(f"--names {args.names}: {e.strerror or e}")
        except ValueError as e:
            p.error(f"--names {args.names}: {e}")
    if args.paired and not os.access(args.paired, os.X_OK):
        p.error(f"--paired {args.paired}: not an executable")
    why = None if args.list else out_problem(args.out)
    if why:
        p.error(f"--out {args.out}: {why}")
    return args


def main(argv=None):
    dist = siblings.DIST
    args = parse_args(argv)
    specs = select(args.name_specs if args.name_specs is not None else
                   default_specs(args.family_list, args.layer_shapes, args.seed_shapes,
                                 args.gpt2_model_list, args.gpus, args.nccl_op_list,
                                 args.nccl_dtype_list, args.nccl_size_list, args.llama_model_list,
                                 args.llama_shapes, args.llama_dtype_list,
                                 args.train_model_list, args.train_precision_list), args.filter)
    if dist.active:  # each torchrun rank runs the multi-GPU cases only
        specs = [s for s in specs if s.kw.get("gpus") == dist.world]
    if args.list:
        for s in specs:
            print(s.gb_name)
        return 0
    torchrun = ("NCCL cases run under torchrun, one process per GPU: torchrun --nproc-per-node=N "
                "reports/peer_torch.py --families NCCL")
    if not dist.active and any(s.family == "NCCL" for s in specs):
        print(torchrun, file=sys.stderr)
        return 2
    if not specs:
        print("no case matches --families/--filter" +
              (f"; {torchrun}" if "NCCL" in args.family_list and not dist.active else ""),
              file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError as e:
        print(f"torch is not installed: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print(f"CUDA is not available to torch {torch.__version__} (no GPU or a CPU-only build)",
              file=sys.stderr)
        return 2
    torch.cuda.set_device(args.device)
    dist.start(torch)
    context = base_context(args.mode, args.options, args.window_ms / 1e3)
    context.update(torch_context(torch, args.device))
    if any(s.kw.get("backend") in FP8_BACKENDS for s in specs):  # fp8 cases: torchao's version
        context.update(fp8.context())
    if dist.active:  # what NCCL read (NCCL_P2P_DISABLE, NCCL_NVLS_ENABLE, ...)
        context["nccl_env"] = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                                       if k.startswith("NCCL_"))
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    if args.paired:
        return run_paired(torch, specs, args, context)
    try:
        failed = run_cases(torch, specs, args, context)
    finally:
        dist.stop()
    if dist.root:
        print(f"wrote {args.out}: {len(specs) - failed} cases ran, {failed} failed", flush=True)
    return 1 if failed else 0
