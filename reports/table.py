"""`table`: the seeds' pivot tables from one run, or several read as one (Markdown or CSV).

The transformers-benchmarks notebooks printed their results as small pivots: layer TFLOPS with
rows `fwd seq_len=128` / `fwd+bwd seq_len=128` and columns `batch=...`, matmul TFLOPS by dtype and
size, vector GB/s by op and size, and GPU x GPU bandwidth matrices. Those shapes are rebuilt here
from xfbench's case names; cases that fit no pivot land in a plain per-family list so nothing is
dropped. Values are medians of the repetitions. TrainStep's multi-GPU cases (dp, zero2, zero3, tp
with NVLink on and off) make the seeds' multi-GPU table, one per configuration.
"""

import os

from . import loader
from .render import Table, to_csv, to_markdown, to_text

LAYER_FAMILIES = ("BertLayer", "GPT2Block", "T5Encoder", "T5Decoder", "LlamaBlock")
DTYPE_ORDER = ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8"]
PASS_LABEL = {"fwd": "fwd", "fwdbwd": "fwd+bwd", "bwd": "bwd"}
# The model a layer family's names mean when they carry no `model:` (xfbench appends it for others).
DEFAULT_MODEL = {"GPT2Block": "gpt2-medium", "T5Encoder": "t5-large", "T5Decoder": "t5-large",
                 "LlamaBlock": "llama-3.1-8b"}
FLAT_METRICS = ["TFLOPS", "GB/s", "busbw", "algbw", "samples/s", "tokens/s", "MFU", "pct_peak",
                "mem_GB", "latency_us"]


def _key(v):
    """Sort key that orders numbers numerically and keeps strings after them."""
    v = loader.as_number(v)
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def _dtype_key(d):
    return (DTYPE_ORDER.index(d), d) if d in DTYPE_ORDER else (len(DTYPE_ORDER), d)


def _pow2(n):
    n = loader.as_number(n)
    if isinstance(n, int) and n >= 1024 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return str(n)


def pivot(title, cases, row_of, col_of, metric, corner="", notes=None):
    """cases -> Table. row_of/col_of map a case to (sort key, label)."""
    rows, cols, cell = {}, {}, {}
    for c in cases:
        rk, rl = row_of(c)
        ck, cl = col_of(c)
        rows[rl] = rk
        cols[cl] = ck
        cell[(rl, cl)] = c
    rlabels = sorted(rows, key=lambda x: rows[x])
    clabels = sorted(cols, key=lambda x: cols[x])
    t = Table(title, [corner, *clabels], notes=list(notes or []))
    for rl in rlabels:
        shown, raw = [rl], [rl]
        for cl in clabels:
            c = cell.get((rl, cl))
            if c is None:
                shown.append("—")
                raw.append(None)
            elif c.error:
                shown.append(c.error_cell())
                raw.append(c.error_cell())
            else:
                v = c.value(metric)
                shown.append(loader.fmt_case(c, metric, v))
                raw.append(v)
        t.add(shown, raw)
    return t


def _group(cases, key):
    groups = {}
    for c in cases:
        groups.setdefault(key(c), []).append(c)
    return groups


# Parameters that give a layer its own sizes: then no named model is implied.
CUSTOM_SIZE = ("hidden", "d_model")


def _layer_title(fam, backend, dtype, extra):
    """`GPT2Block gpt2-medium fused fp16`; other shape parameters (model:, hidden:, ...) too, so
    two models never share a table. Custom sizes name no model (`GPT2Block fused fp8 ...
    hidden:4096 heads:32 inner:16384`)."""
    params = dict(extra)
    custom = any(k in params for k in CUSTOM_SIZE)
    model = params.pop("model", None if custom else DEFAULT_MODEL.get(fam))
    words = [fam] + ([model] if model else []) + [backend, dtype] + [f"{k}:{v}" for k, v in params.items()]
    return " ".join(words)


def layer_tables(fam, cases):
    """The seeds' layer tables: TFLOPS with rows `fwd seq_len=S` / `fwd+bwd seq_len=S` and columns
    `batch=B`, one table per (model, backend, dtype)."""
    tables, used = [], []
    whole = [c for c in cases if {"backend", "dtype", "pass", "seq", "batch"} <= c.axes.keys()]

    def group(c):
        extra = tuple((k, v) for k, v in c.params.items() if k not in ("seq", "batch"))
        return c.axes["backend"], c.axes["dtype"], extra
    for (backend, dtype, extra), cs in _group(whole, group).items():
        tables.append(pivot(
            f"{_layer_title(fam, backend, dtype, extra)} — TFLOPS", cs,
            lambda c: ((_key(c.params["seq"]), c.axes["pass"] != "fwd", c.axes["pass"]),
                       f"{PASS_LABEL.get(c.axes['pass'], c.axes['pass'])} seq_len={c.params['seq']}"),
            lambda c: (_key(c.params["batch"]), f"batch={c.params['batch']}"),
            "TFLOPS"))
        used += cs
    parts = [c for c in cases if {"part", "dtype", "pass", "seq", "batch"} <= c.axes.keys()]
    for dtype, cs in _group(parts, lambda c: c.axes["dtype"]).items():
        tables.append(pivot(
            f"{fam} parts {dtype} — TFLOPS", cs,
            lambda c: ((c.params["part"], _key(c.params["seq"]), c.axes["pass"]),
                       f"{c.params['part']} {PASS_LABEL.get(c.axes['pass'], c.axes['pass'])}"
                       f" seq_len={c.params['seq']}"),
            lambda c: (_key(c.params["batch"]), f"batch={c.params['batch']}"),
            "TFLOPS"))
        used += cs
    return tables, used


def matmul_tables(cases):
    sq = [c for c in cases if "dtype" in c.axes and c.params.get("m") is not None
          and c.params.get("m") == c.params.get("n") == c.params.get("k")]
    tables = []
    for layout, cs in _group(sq, lambda c: c.axes.get("layout", "")).items():
        tables.append(pivot(
            f"Matmul {layout} square m=n=k — TFLOPS".replace("  ", " "), cs,
            lambda c: (_dtype_key(c.axes["dtype"]), c.axes["dtype"]),
            lambda c: (_key(c.params["n"]), f"n={c.params['n']}"),
            "TFLOPS", corner="dtype"))
    return tables, sq


def vector_tables(cases):
    cs = [c for c in cases if {"op", "dtype", "n"} <= c.axes.keys()]
    if not cs:
        return [], []
    t = pivot("Vector — GB/s", cs,
              lambda c: ((c.axes["op"], _dtype_key(c.axes["dtype"])),
                         f"{c.axes['op']}/{c.axes['dtype']}"),
              lambda c: (_key(c.params["n"]), f"n={_pow2(c.params['n'])}"),
              "GB/s", corner="op/dtype")
    return [t], cs


def memcpy_tables(cases):
    cs = [c for c in cases if c.variants and "bytes" in c.params]
    if not cs:
        return [], []
    t = pivot("Memcpy — GB/s", cs,
              lambda c: (tuple(c.variants), "/".join(c.variants)),
              lambda c: (_key(c.params["bytes"]), loader.fmt_bytes(c.params["bytes"])),
              "GB/s", corner="kind")
    return [t], cs


def p2p_tables(cases):
    """GPU x GPU matrices (src rows, dst columns), one per (direction, peer, engine[, size])."""
    cs = [c for c in cases if {"src", "dst"} <= c.params.keys()]
    tables = []
    for (variants, size), group in _group(
            cs, lambda c: (tuple(c.variants), c.params.get("bytes", ""))).items():
        latency = group[0].axes.get("mode") == "latency"
        metric = "latency_us" if latency else "GB/s"
        title = "P2P " + " ".join(variants)
        if size:
            title += f" {loader.fmt_bytes(size)}"
        title += f" — {metric}"
        tables.append(pivot(title, group,
                            lambda c: (_key(c.params["src"]), f"src {c.params['src']}"),
                            lambda c: (_key(c.params["dst"]), f"dst {c.params['dst']}"),
                            metric, corner="src\\dst"))
    return tables, cs


def nccl_tables(cases):
    cs = [c for c in cases if c.variants and "bytes" in c.params]
    tables = []
    for gpus, group in _group(cs, lambda c: c.params.get("gpus", "?")).items():
        tables.append(pivot(f"NCCL gpus={gpus} — busbw GB/s", group,
                            lambda c: (tuple(c.variants), "/".join(c.variants)),
                            lambda c: (_key(c.params["bytes"]), loader.fmt_bytes(c.params["bytes"])),
                            "busbw", corner="op/dtype"))
    return tables, cs


PARALLEL_PARAMS = ("gpus", "p2p", "tp")
PARALLEL_COLUMNS = [("samples/s", "samples/s"), ("TFLOPS", "TFLOPS/GPU"), ("mem_GB", "mem_GB/GPU"),
                    ("scaling", "scaling"), ("comm_hidden_pct", "comm hidden %")]


def _parallelism(c):
    """(sort key, row label) of a TrainStep case: `1 GPU`, or `dp gpus:2 p2p:on`, `tp:2 ...`."""
    if "gpus" not in c.params:
        return (0, "", 0, ""), "1 GPU"
    mode = f"tp:{c.axes['tp']}" if "tp" in c.axes else c.axes.get("parallel", "?")
    p2p = c.params.get("p2p", "")
    order = {"dp": 1, "zero2": 2, "zero3": 3}.get(mode, 4)
    return ((1, p2p != "on", p2p, order, _key(c.params["gpus"]), mode),
            f"{mode} gpus:{c.params['gpus']}" + (f" p2p:{p2p}" if p2p else ""))


def trainstep_tables(cases):
    """The seeds' multi-GPU experiments: per configuration (backend, model, dtype, shape, knobs),
    the one-GPU case and every dp / zero2 / zero3 / tp variant with P2P (NVLink) on and off as
    rows; samples/s of all GPUs, TFLOPS and memory per GPU, scaling and the hidden share of the
    communication as columns. Configurations without a multi-GPU case stay in the plain list."""
    def config(c):
        return (tuple(c.axes[a] for a in ("backend", "model", "precision")),
                tuple((k, v) for k, v in c.params.items() if k not in PARALLEL_PARAMS))
    groups = _group([c for c in cases if {"backend", "model", "precision"} <= c.axes.keys()],
                    config)
    tables, used = [], []
    for (variants, params), cs in groups.items():
        if not any("gpus" in c.params for c in cs):
            continue
        shape = " ".join(f"{k}:{v}" for k, v in params)
        t = Table(f"TrainStep {' '.join(variants)} {shape} (batch per GPU, tp: shared) — multi-GPU",
                  ["", *[label for _, label in PARALLEL_COLUMNS]])
        for c in sorted(cs, key=lambda c: _parallelism(c)[0]):
            row = _parallelism(c)[1]
            if c.error:
                t.add([row, c.error_cell(), *["—" for _ in PARALLEL_COLUMNS[1:]]],
                      [row, c.error_cell(), *[None for _ in PARALLEL_COLUMNS[1:]]])
                continue
            vals = [c.value(m) for m, _ in PARALLEL_COLUMNS]
            t.add([row, *[loader.fmt_case(c, m, v) for (m, _), v in zip(PARALLEL_COLUMNS, vals)]],
                  [row, *vals])
        tables.append(t)
        used += cs
    return tables, used


# The seeds' single-GPU training table: per configuration, xfbench's numbers and the PyTorch
# peer's beside them (the peer's torch-sdpa / torch-eager paired with fused / unfused).
TRAIN_COLUMNS = [("samples/s", "samples/s"), ("TFLOPS", "TFLOPS"), ("MFU", "MFU %"),
                 ("mem_GB", "mem GB")]
TRAIN_DEFAULT_KNOBS = {"accum": "1", "ckpt": "off", "adamw": "fused"}


def _mfu(c, context):
    """MFU %: the case's own counter, else its TFLOPS over the context's peak of its dtype (the
    peer writes no peak table; on the same GPU xfbench's is the one)."""
    v = c.value("MFU")
    if v is not None:
        return v
    tflops = c.value("TFLOPS")
    peak = loader.as_number(context.get(f"peak_TFLOPS_{c.axes.get('precision')}"))
    if loader.valid(tflops) and isinstance(peak, (int, float)) and peak > 0:
        return tflops / peak * 100
    return tflops if loader.is_invalid(tflops) else None


def train_table(cases, context):
    """One row per one-GPU TrainStep configuration and xfbench backend: samples/s, TFLOPS, MFU,
    memory, then the PyTorch peer's of the same configuration and its ratio (samples/s)."""
    one = [c for c in cases if {"backend", "model", "precision", "seq", "batch"} <= c.axes.keys()
           and "gpus" not in c.params]
    own = [c for c in one if c.runner != "pytorch" and not c.axes["backend"].startswith("torch-")]
    peer = {loader.map_backend(c.name, loader.DEFAULT_BACKEND_MAP): c for c in one
            if c not in own}
    if not own and not peer:
        return None, []
    cols = [label for _, label in TRAIN_COLUMNS]
    headers = ["configuration", "backend", *cols]
    if peer:
        headers += [f"PyTorch {label}" for label in cols] + ["× PyTorch"]
    t = Table("TrainStep one GPU — samples/s, TFLOPS, MFU, memory"
              + (" (PyTorch beside)" if peer else ""), headers)

    def config(c):
        knobs = [f"{k}:{v}" for k, v in c.params.items()
                 if TRAIN_DEFAULT_KNOBS.get(k) != v and k not in ("seq", "batch")]
        return " ".join([c.axes["model"], c.axes["precision"], f"seq:{c.params['seq']}",
                         f"batch:{c.params['batch']}", *knobs])

    def cells(c):
        if c is None:
            return ["—"] * len(TRAIN_COLUMNS), [None] * len(TRAIN_COLUMNS)
        if c.error:
            return ([c.error_cell()] + ["—"] * (len(TRAIN_COLUMNS) - 1),
                    [c.error_cell()] + [None] * (len(TRAIN_COLUMNS) - 1))
        vals = [_mfu(c, context) if m == "MFU" else c.value(m) for m, _ in TRAIN_COLUMNS]
        return [loader.fmt_case(c, m, v) for (m, _), v in zip(TRAIN_COLUMNS, vals)], vals
    paired = set()
    rows = []
    for c in own:
        p = peer.get(c.name)
        if p is not None:
            paired.add(p.name)
        rows.append((config(c), c.axes["backend"], c, p))
    rows += [(config(p), "—", None, p) for p in peer.values() if p.name not in paired]
    for label, backend, c, p in rows:
        shown, raw = cells(c)
        if peer:
            pshown, praw = cells(p)
            ratio = None
            if c is not None and p is not None and not c.error and not p.error:
                a, b = c.value("samples/s"), p.value("samples/s")
                ratio = a / b if loader.valid(a) and loader.valid(b) and b > 0 else None
            shown += pshown + ["—" if ratio is None else f"{ratio:.2f}×"]
            raw += praw + [ratio]
        t.add([label, backend, *shown], [label, backend, *raw])
    if peer:
        t.notes.append("PyTorch: the peer's torch-sdpa beside xfbench's fused, torch-eager beside "
                       "unfused; × PyTorch: samples/s over the peer's; MFU of the peer: its TFLOPS "
                       "over the run's peak_TFLOPS of the dtype.")
    return t, one


def not_run_table(cases):
    """Cases this machine cannot run, one row per reason: how many, and the first of them."""
    groups = {}
    for c in cases:
        groups.setdefault(not_run_reason(c), []).append(c)
    t = Table("Not run on this machine (n/a)", ["why", "cases", "e.g."])
    for why, cs in groups.items():
        t.add([why, str(len(cs)), cs[0].name])
    return t, groups


def not_run_reason(case):
    """'P2P needs two GPUs; 1 visible' from 'unsupported: P2P needs two GPUs; 1 visible'."""
    why = case.error or ""
    return why.split(":", 1)[1].strip() if why.lower().startswith("unsupported:") else why


def flat_table(title, cases):
    """One row per case with time and the counters present (TrainStep and anything unknown)."""
    present = []
    for c in cases:
        for m in c.metrics():
            if m != "time" and m not in present:
                present.append(m)
    metrics = [m for m in FLAT_METRICS if m in present]
    metrics += [m for m in present if m not in metrics and m not in
                ("sm_MHz", "mem_MHz", "temp_C", "power_W")]
    t = Table(title, ["case", "time", *metrics])
    for c in cases:
        if c.error:
            t.add([c.name, c.error_cell(), *["—" for _ in metrics]],
                  [c.name, c.error_cell(), *[None for _ in metrics]])
            continue
        vals = [c.value(m) for m in ["time", *metrics]]
        t.add([c.name, *[loader.fmt_case(c, m, v) for m, v in zip(["time", *metrics], vals)]],
              [c.name, *vals])
    return t


def tables_for(run, hidden=None):
    """All pivot tables of one run, by family in file order, then the errors and the cases not
    run (one row per reason). Tables without a single value (a one-GPU run's P2P matrices, all
    n/a) are left out, into `hidden` when it is a list."""
    out = []
    for fam in run.families():
        cases = run.by_family(fam)
        if fam in LAYER_FAMILIES:
            tables, used = layer_tables(fam, cases)
        elif fam == "Matmul":
            tables, used = matmul_tables(cases)
        elif fam == "Vector":
            tables, used = vector_tables(cases)
        elif fam == "Memcpy":
            tables, used = memcpy_tables(cases)
        elif fam == "P2P":
            tables, used = p2p_tables(cases)
        elif fam == "NCCL":
            tables, used = nccl_tables(cases)
        elif fam == "TrainStep":
            one, used_one = train_table(cases, run.context)
            tables, used = trainstep_tables(cases)
            tables, used = ([one] if one else []) + tables, used_one + used
        else:
            tables, used = [], []
        for t in tables:
            t.family = fam
        out += tables
        rest = [c for c in cases if c not in used]
        if rest:
            title = fam if not used else f"{fam} (other cases)"
            t = flat_table(title, rest)
            t.family = fam
            out.append(t)
    errors = [c for c in run.cases.values() if c.error and not c.unsupported]
    if errors:
        t = Table("Errors", ["case", "error"])
        for c in errors:
            t.add([c.name, c.error])
        out.append(t)
    not_run = [c for c in run.cases.values() if c.unsupported]
    if not_run:
        out.append(not_run_table(not_run)[0])
    kept = []
    for t in out:
        if t.empty() and getattr(t, "family", None):
            if hidden is not None:
                hidden.append(t)
            continue
        t.notes += loader.marks_legend(c for r in t.rows for c in r[1:])
        kept.append(t)
    return kept


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="file",
                   help="xfbench / peer runner JSON files of one machine, read as one run (e.g. "
                        "the P2P-on and P2P-off runs of the multi-GPU TrainStep; a case in two "
                        "files is taken from the first)")
    p.add_argument("--format", choices=["md", "csv", "text"], default="md")
    p.add_argument("--out", metavar="PATH",
                   help="md/text: write to this file; csv: write one CSV per table into this folder "
                        "(default: stdout)")
    p.add_argument("--match-backend", metavar="MAP", default="none",
                   help="rename layer backends, FROM=TO,... (default none: keep torch-* names)")


def interrupted_header(runs, fmt):
    """The first lines of the output when a run was interrupted: its numbers are a part of it."""
    lines = [f"interrupted run: {r.path}: {r.interrupted}" for r in runs if r.interrupted]
    if fmt == "csv":
        return "".join(f"# {line}\n" for line in lines)
    return "".join(f"{line}\n\n" for line in lines)


def hidden_note(hidden, fmt="md"):
    """The line saying which tables were left out for having no value."""
    line = (f"{len(hidden)} table(s) with no value left out (every case n/a, see 'Not run on "
            f"this machine'): {', '.join(t.title for t in hidden[:3])}"
            + (", ..." if len(hidden) > 3 else ""))
    return f"\n# {line}\n" if fmt == "csv" else f"\n{line}\n"


def main(args):
    bmap = loader.parse_backend_map(args.match_backend)
    csv_dir = args.format == "csv" and args.out
    if csv_dir:
        loader.output_dir(args.out, "--out")
    elif args.out:
        loader.output_file(args.out, "--out")
    runs = loader.load_all(args.files, backend_map=bmap)
    hidden = []
    tables = tables_for(loader.merge(runs), hidden)
    if csv_dir:
        for t in tables:
            loader.write_file(os.path.join(args.out, t.slug() + ".csv"), to_csv(t), "--out")
    else:
        if args.format == "csv":
            text = "\n".join(to_csv(t, with_title=True) for t in tables)
        else:
            fn = to_markdown if args.format == "md" else to_text
            text = "\n".join(fn(t) for t in tables)
        text = interrupted_header(runs, args.format) + text
        if hidden:
            text += hidden_note(hidden, args.format)
        if args.out:
            loader.write_file(args.out, text, "--out")
        else:
            loader.write_stdout(text)
    return 2 if loader.bad_input(runs) else 0
