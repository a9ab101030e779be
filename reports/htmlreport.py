"""`html`: one self-contained HTML file for a run (summary, tables beside plots, problems, device
context) or for a comparison of several runs (the same, with the `compare` tables).

The page opens on a summary: the GPU and protocol in one line, one table of each family's headline
results (with --peer, the PyTorch peer's beside them and the ratio), the problems counted and
linked (errors, invalid values, noisy `~` and throttled `†` cases, cases not run); then a table of
contents and a section per family, its plot beside its tables. Tables without a value (a one-GPU
run's P2P matrices, all n/a) are left out; cases not run are one line per reason; wide tables
scroll inside the page. Self-contained: it opens from a mail attachment or a CI artifact with no
network (inline CSS, plots as data URIs, no scripts). Without matplotlib the report is still
written, minus the plots (one line on stderr says so).
"""

import base64
import datetime
import html
import re

from . import compare as compare_mod
from . import loader
from . import table as table_mod
from .render import Table, short_names, to_html

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.2em auto;
max-width:1500px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin:.2em 0}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
#summary h2{margin-top:.3em}#summary h3{margin:.5em 0 .2em}#summary td,#summary th{padding:.15em .6em}
h3{font-size:1.05em;margin:1.2em 0 .4em}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.85em;margin-bottom:.4em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right;white-space:nowrap}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
tr.geo td{font-weight:bold;background:#fafafa}
td.slow{background:#fde2e2}td.fast{background:#e2f5e2}
td.text,th.text{text-align:left}td.noisy{background:#fff3cd}td.throttled{background:#eef2fb}
td.invalid{color:#a00;font-weight:bold}
p.note{font-size:.8em;color:#555;margin:.1em 0}
p.setup{font-size:.95em;margin:.3em 0}
.err{color:#a00}
.pair{display:flex;flex-wrap:wrap;gap:1.2em;align-items:flex-start}
.pair>figure{flex:1 1 560px;min-width:0;margin:.6em 0}.pair>figure.wide{flex-basis:100%}
.pair>.tables{flex:1 1 480px;min-width:0}
figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.8em;color:#555}
nav ul{columns:3 14em;margin:.3em 0}
details{margin:.2em 0 .2em 1em}summary{cursor:pointer}
ul.problems li{margin:.15em 0}
"""

PEER = "PyTorch"


# ---- plots ----------------------------------------------------------------------------------

def _figures(runs, image):
    """{family: (name, <figure> html)}, or None when matplotlib is missing."""
    try:
        from . import plot
        figs = plot.figures(runs)
    except ImportError as e:
        loader.warn(f"note: matplotlib is not installed ({e}); HTML written without plots")
        return None
    mime = {"svg": "image/svg+xml", "png": "image/png"}[image]
    out = {}
    for name, fig in figs:
        wide = fig.get_size_inches()[0] > 9
        data = base64.b64encode(plot.to_bytes(fig, image)).decode("ascii")
        plot.close(fig)
        out[plot.FIGURE_FAMILY[name]] = (
            f'<figure class="{"wide" if wide else ""}"><img alt="{name}" '
            f'src="data:{mime};base64,{data}"><figcaption>{name}</figcaption></figure>')
    return out


# ---- the summary ------------------------------------------------------------------------------

def _protocol(ctx):
    """The timing protocol in a few words, from a run's context."""
    mode = ctx.get("xfbench_mode")
    if mode == "steady":
        words = [f"≥ {ctx['protocol_min_time']} s per repetition" if "protocol_min_time" in ctx else "",
                 f"ci ≤ {ctx['protocol_max_noise_pct']}%" if "protocol_max_noise_pct" in ctx else "",
                 f"time-out {ctx['protocol_timeout']} s" if "protocol_timeout" in ctx else "",
                 f"warm-up ≥ {ctx['protocol_min_warmup']} s" if "protocol_min_warmup" in ctx else "",
                 f"{ctx['protocol_window_ms']} ms windows" if "protocol_window_ms" in ctx else ""]
        return "steady-state protocol (" + ", ".join(w for w in words if w) + ")"
    if mode:
        return f"{mode} protocol"
    return "protocol not recorded"


def setup_line(run):
    """The GPU and protocol of a run in one line."""
    ctx = run.context
    gpu = str(ctx.get("gpu_name") or "GPU not recorded")
    about = [f"sm_{str(ctx['gpu_cc']).replace('.', '')}" if ctx.get("gpu_cc") else "",
             f"{ctx['gpu_sm_count']} SMs" if ctx.get("gpu_sm_count") else "",
             f"driver {ctx['driver_version']}" if ctx.get("driver_version") else "",
             f"CUDA {ctx['cuda_runtime']}" if ctx.get("cuda_runtime") else ""]
    reps = max((c.n_reps for c in run.cases.values()), default=0)
    who = PEER if run.context.get("xfbench_runner") == "pytorch" else "xfbench"
    words = [f"<b>{html.escape(gpu)}</b>" + (f" ({html.escape(', '.join(a for a in about if a))})"
                                             if any(about) else ""),
             html.escape(_protocol(ctx)),
             f"{len(run.cases)} cases, {reps or 'aggregates of'} repetition{'s' if reps != 1 else ''}"
             + " each", html.escape(str(ctx.get("date", ""))[:10]),
             f"{who}: <code>{html.escape(run.path)}</code>"]
    return '<p class="setup">' + " · ".join(w for w in words if w) + "</p>"


def _dtype_rank(c):
    return table_mod._dtype_key(c.axes.get("dtype", ""))


def _best(cases, metric):
    vals = [(c.value(metric), i, c) for i, c in enumerate(cases)]
    vals = [(v, i, c) for v, i, c in vals if loader.valid(v)]
    return max(vals)[2] if vals else None


def _per(cases, key):
    groups = {}
    for c in cases:
        groups.setdefault(key(c), []).append(c)
    return groups


def _matmul(cases):
    named = [c for c in cases if "dtype" in c.axes]
    sq = [c for c in named if c.params.get("m") and c.params.get("m") == c.params.get("n") ==
          c.params.get("k")] or named
    groups = _per(sq, lambda c: c.axes["dtype"])
    return [_best(groups[d], "TFLOPS") for d in sorted(groups, key=table_mod._dtype_key)]


def _vector(cases):
    """Per op, at its largest size (in HBM, not in L2), fp32 when it has it."""
    out = []
    for op, cs in _per([c for c in cases if {"op", "dtype", "n"} <= c.axes.keys()],
                       lambda c: c.axes["op"]).items():
        dt = "fp32" if any(c.axes["dtype"] == "fp32" for c in cs) else cs[0].axes["dtype"]
        cs = [c for c in cs if c.axes["dtype"] == dt]
        out.append(max(cs, key=lambda c: table_mod._key(c.params["n"])))
    return out


def _largest(cases, param, metric, group):
    """Per group, the best of the cases at the group's largest `param`."""
    out = []
    for _, cs in _per([c for c in cases if param in c.params and loader.valid(c.value(metric))],
                      group).items():
        top = max(table_mod._key(c.params[param]) for c in cs)
        out.append(_best([c for c in cs if table_mod._key(c.params[param]) == top], metric))
    return out


BACKEND_RANK = {"fused": 0, "flash": 1, "unfused": 2}


def _layer(cases):
    """Per pass, the whole layer of the preferred backend (fused, the PyTorch peer's sdpa
    counterpart) and dtype, of the default model, at the most tokens."""
    whole = [c for c in cases if {"backend", "dtype", "pass", "seq", "batch"} <= c.axes.keys()
             and "model" not in c.params]

    def rank(c):
        seq, batch = (loader.as_number(c.params[k]) for k in ("seq", "batch"))
        tokens = seq * batch if isinstance(seq, int) and isinstance(batch, int) else 0
        return BACKEND_RANK.get(c.axes["backend"], 9), _dtype_rank(c), -tokens, -(tokens and seq)
    passes = _per(whole, lambda c: c.axes["pass"])
    return [min(passes[p], key=rank) for p in sorted(passes, key=len)]  # fwd, then fwdbwd


def _trainstep(cases):
    """The training headline: one-GPU cases without knobs, the preferred backend."""
    one = [c for c in cases if "gpus" not in c.params and c.variants
           and all(c.params.get(k, v) == v for k, v in table_mod.TRAIN_DEFAULT_KNOBS.items())]

    def backend(c):  # names of no shape (the first sessions' had no backend): none
        return c.axes.get("backend", "")

    def config(c):  # the name without its backend
        return c.name.replace(f"/{backend(c)}/", "/", 1) if backend(c) else c.name
    out = []
    for _, cs in _per(one, config).items():
        out.append(min(cs, key=lambda c: BACKEND_RANK.get(backend(c), 9)))
    if len({backend(c) for c in out}) > 1:
        best = min(BACKEND_RANK.get(backend(c), 9) for c in out)
        out = [c for c in out if BACKEND_RANK.get(backend(c), 9) == best]
    return out or [c for c in cases if "gpus" in c.params][:3]


def _nccl(cases):
    """all-reduce (else the first op) at the most GPUs and bytes; none on one GPU (the 1-rank
    cases are a baseline without communication)."""
    cases = [c for c in cases if table_mod._key(c.params.get("gpus", 0)) > (0, 1, "")]
    ops = _per([c for c in cases if {"collective", "bytes"} <= c.axes.keys()],
               lambda c: c.axes["collective"])
    cs = ops.get("allreduce") or next(iter(ops.values()), [])
    top = max((table_mod._key(c.params.get("gpus", 0)) for c in cs), default=None)
    return _largest([c for c in cs if table_mod._key(c.params.get("gpus", 0)) == top], "bytes",
                    "busbw", lambda c: c.axes["collective"])


HEADLINES = {
    "Matmul": _matmul, "Vector": _vector,
    "Memcpy": lambda cs: _largest([c for c in cs if "direction" in c.axes], "bytes", "GB/s",
                                  lambda c: c.axes["direction"]),
    "P2P": lambda cs: _largest([c for c in cs if c.axes.get("mode") not in (None, "latency")],
                               "bytes", "GB/s", lambda c: c.axes["mode"]),
    "NCCL": _nccl, "TrainStep": _trainstep,
    **{fam: _layer for fam in table_mod.LAYER_FAMILIES},
}


def headline_cases(run):
    """[(family, case)]: each family's headline results (HEADLINES; another family: its best
    case by its headline metric)."""
    out = []
    for fam in run.families():
        cases = [c for c in run.by_family(fam) if not c.error]
        pick = HEADLINES.get(fam)
        chosen = pick(cases) if pick else [_best(cases, compare_mod.headline(cases[0]))] if cases else []
        out += [(fam, c) for c in chosen if c is not None]
    return out


def _pct_peak(c):
    v = c.value("MFU")
    v = c.value("pct_peak") if v is None else v
    return f"{loader.fmt_num(v)}%" if loader.valid(v) else "—"


def headline_table(runs, peer=None):
    """The summary's table: family, case, metric and value of the first run's headline cases,
    the other runs' values with their speedup over the first, the first's % of peak; with a
    peer, its value and the first run's speedup over it."""
    base = runs[0]
    picked = headline_cases(base)
    names, _ = short_names([c.name for _, c in picked]) if picked else ([], [])
    headers = ["family", "case", "metric", base.label if len(runs) > 1 else "value"]
    headers += [r.label for r in runs[1:]] + ["% of peak"]
    if peer is not None:
        headers += [PEER, f"× {PEER}"]
    t = Table("Headline results", headers)
    for (fam, c), short in zip(picked, names):
        m = compare_mod.headline(c)
        row = [fam, short.split("/", 1)[1] if short.startswith(fam + "/") else short, m,
               loader.fmt_case(c, m)]
        for r in runs[1:]:
            o = r.cases.get(c.name)
            cell = "—" if o is None else o.error_cell() if o.error else loader.fmt_case(o, m)
            s = compare_mod.speedup(m, c.value(m), o.value(m)) if o and not o.error else None
            row.append(cell + (f" ({s:.2f}×)" if s else ""))
        row.append(_pct_peak(c))
        if peer is not None:
            p = peer.cases.get(c.name)
            pv = None if p is None or p.error else p.value(m)
            row.append("—" if p is None else p.error_cell() if p.error else loader.fmt_case(p, m))
            s = compare_mod.speedup(m, pv, c.value(m))
            row.append(f"{s:.2f}×" if s else "—")
        t.add(row)
    if peer is not None:
        t.notes.append(f"× {PEER}: the speedup of {base.label} over the PyTorch peer "
                       f"({peer.label}) on the same case (torch-sdpa matched with fused).")
    if len(runs) > 1:
        t.notes.append(f"(1.10×): the speedup of that run over {base.label}.")
    return t


def problem_counts(runs):
    """{kind: [(run, text)]} of what the summary counts: input problems, errors, invalid values,
    noisy and throttled cases, cases not run."""
    out = {k: [] for k in ("input", "errors", "invalid", "noisy", "throttled", "not-run")}
    for r in runs:
        for kind, msg in r.problems:
            if kind in ("bad-file", "empty", "bad-entry", "interrupted"):
                out["input"].append((r, msg))
            elif kind == "invalid":
                out["invalid"].append((r, msg))
        for c in r.cases.values():
            if c.error and not c.unsupported:
                out["errors"].append((r, f"{c.name}: {c.error}"))
            elif c.unsupported:
                out["not-run"].append((r, c))
            if c.noisy:
                out["noisy"].append((r, c))
            if c.throttled:
                out["throttled"].append((r, c))
    return out


PROBLEM_WORDS = [("input", "input problem", "input problems"), ("errors", "error", "errors"),
                 ("invalid", "invalid value", "invalid values"),
                 ("noisy", "noisy case ~", "noisy cases ~"),
                 ("throttled", "throttled case †", "throttled cases †"),
                 ("not-run", "case not run (n/a)", "cases not run (n/a)")]


def problems_line(counts):
    words = []
    for kind, one, many in PROBLEM_WORDS:
        n = len(counts[kind])
        if n or kind in ("errors", "invalid"):
            text = f"{n} {one if n == 1 else many}"
            words.append(f'<a href="#{kind}">{html.escape(text)}</a>' if n else html.escape(text))
    return '<p class="setup"><b>Problems:</b> ' + " · ".join(words) + "</p>"


# ---- the problems section ---------------------------------------------------------------------

def _details(summary, items):
    e = html.escape
    return (f"<details><summary>{e(summary)}</summary><ul>"
            + "".join(f"<li>{e(i)}</li>" for i in items) + "</ul></details>")


def _who(r, runs):
    return f"{r.label}: " if len(runs) > 1 else ""


def problems_section(counts, runs, hidden):
    e = html.escape
    out = ["<h2 id=\"problems\">Problems</h2>"]
    if not any(counts.values()):
        out.append('<p class="note">None: every case ran, settled and was not throttled.</p>')
    if counts["input"]:
        out.append('<h3 id="input">Input problems</h3><ul class="problems">'
                   + "".join(f'<li class="err">{e(r.path)}: {e(m)}</li>' for r, m in counts["input"])
                   + "</ul>")
    for kind, title in (("errors", "Errors (the case failed)"), ("invalid", "Invalid values")):
        if counts[kind]:
            out.append(f'<h3 id="{kind}">{title}</h3><ul class="problems">'
                       + "".join(f'<li class="err">{e(r.path)}: {e(m)}</li>'
                                 for r, m in counts[kind]) + "</ul>")
    if counts["noisy"]:
        out.append('<h3 id="noisy">Noisy (~): ran into the protocol\'s time-out without settling</h3>')
        out.append(_details(f"{len(counts['noisy'])} cases", [
            f"{_who(r, runs)}{c.name}: {c.noisy}" for r, c in counts["noisy"]]))
    if counts["throttled"]:
        out.append('<h3 id="throttled">Throttled (†): clocks held down while the case ran</h3>')
        groups = {}
        for r, c in counts["throttled"]:
            why = re.sub(r"\s*\d+(\.\d+)?%", "", c.throttled).strip() or c.throttled
            groups.setdefault(why, []).append(f"{_who(r, runs)}{c.name}: {c.throttled}")
        for why, items in groups.items():
            out.append(_details(f"{len(items)} cases: {why}", items))
    if counts["not-run"] or hidden:
        out.append('<h3 id="not-run">Not run on this machine (n/a)</h3>')
        groups = {}
        for r, c in counts["not-run"]:
            groups.setdefault(table_mod.not_run_reason(c), []).append(_who(r, runs) + c.name)
        for why, items in groups.items():
            out.append(_details(f"{len(items)} {'case' if len(items) == 1 else 'cases'}: {why}",
                                items))
        if hidden:
            out.append(_details(f"{len(hidden)} tables left out: no value in them (every case n/a)",
                                [t.title for t in hidden]))
    return out


# ---- the page ---------------------------------------------------------------------------------

def _anchor(fam):
    return "fam-" + re.sub(r"[^A-Za-z0-9]+", "-", fam)


def build(runs, image="svg", title=None, alpha=0.05, peer=None, peer_tables=None, plots=True):
    """The page of one run or of a comparison of several. `peer`: the PyTorch peer's run, its
    backends read as xfbench's (torch-sdpa as fused) so its cases match by name; `peer_tables`:
    the same with its own names, whose cases go into the run's tables (its layer tables apart,
    its training numbers beside xfbench's); default `peer`. plots=False: none drawn."""
    e = html.escape
    title = title or ("xfbench comparison: " + " vs ".join(r.label for r in runs)
                      if len(runs) > 1 else f"xfbench run: {runs[0].label}")
    good = [r for r in runs if r.ok and r.cases]
    peer = peer if peer is not None and peer.ok and peer.cases else None
    everyone = runs + ([peer] if peer is not None else [])
    counts = problem_counts(everyone)
    parts = [f"<h1>{e(title)}</h1>", '<section id="summary"><h2>Summary</h2>']
    parts += [setup_line(r) for r in good + ([peer] if peer else [])]
    if good:
        parts.append(to_html(headline_table(good, peer), "headline"))
    parts.append(problems_line(counts))
    marks = "".join(c.marks for r in everyone for c in r.cases.values())
    parts += [f'<p class="note">{e(line)}</p>' for line in loader.marks_legend([marks])]
    parts.append("</section>")

    figures = _figures(good + ([peer] if peer else []), image) if plots else {}
    hidden, sections = [], []
    if len(good) > 1:
        res = compare_mod.compare(good, alpha=alpha)
        by_family = {t.title: [t] for t in res.tables}
        context = res.context
    elif good:
        run = good[0]
        merged = loader.merge([run, peer_tables or peer]) if peer else run
        by_family = {}
        for t in table_mod.tables_for(merged, hidden):
            if getattr(t, "family", None):
                by_family.setdefault(t.family, []).append(t)
        context = Table("Context", ["key", "value"])
        for k, vals, _ in loader.context_rows([run]):
            context.add([k, vals[0]])
        for k in sorted(k for k in run.context if k.startswith("peak_")) + ["xfbench_plugins"]:
            if k in run.context:
                context.add([k, str(run.context[k])])
    else:
        by_family, context = {}, None
    families = list(dict.fromkeys([f for r in good for f in r.families()] + list(by_family)))
    for fam in families:
        tables = by_family.get(fam, [])
        fig = (figures or {}).get(fam)
        if not tables and not fig:
            continue
        body = [f'<h2 id="{_anchor(fam)}">{e(fam)}</h2><div class="pair">']
        if fig:
            body.append(fig)
        for t in tables:  # the marks' legend is the summary's, once
            t.notes = [n for n in t.notes if n[:2] not in ("~ ", "† ")]
        body.append('<div class="tables">' + "".join(to_html(t) for t in tables) + "</div></div>")
        sections.append((_anchor(fam), fam, body))
    if figures is None:
        sections.append(("plots", "Plots", ['<h2 id="plots">Plots</h2><p class="note">Plots left '
                                            'out: matplotlib is not installed.</p>']))
    sections.append(("problems", "Problems", problems_section(counts, everyone, hidden)))
    if context is not None:
        sections.append(("context", "Device context",
                         ['<h2 id="context">Device context</h2>', to_html(context)]))

    parts.append('<nav id="contents"><h2>Contents</h2><ul>'
                 + "".join(f'<li><a href="#{a}">{e(t)}</a></li>' for a, t, _ in sections)
                 + "</ul></nav>")
    for _, _, body in sections:
        parts += body
    parts.append(f'<p class="note">generated {datetime.date.today().isoformat()} by python3 -m '
                 "reports html</p>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def add_arguments(p):
    p.add_argument("files", nargs="+",
                   help="one run, or several to compare (the first is the baseline)")
    p.add_argument("-o", "--out", default="reports/out/report.html",
                   help="output HTML file; its folder is made (default reports/out/report.html)")
    p.add_argument("--peer", action="append", metavar="FILE",
                   help="a PyTorch peer run (reports/peer_torch.py) of the same GPU: its numbers "
                        "beside the run's in the summary (with xfbench's speedup), the training "
                        "table and the plots, its layer tables beside xfbench's; repeat for "
                        "several files")
    p.add_argument("--labels", help="comma-separated run labels, one per file (default: file names)")
    p.add_argument("--title", help="page title (default: 'xfbench run: <label>')")
    p.add_argument("--image", choices=["svg", "png"], default="svg",
                   help="format of the embedded plots (default svg)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of the U test in comparison tables (default 0.05)")
    p.add_argument("--match-backend", metavar="MAP", default=None,
                   help="FROM=TO,... backend renames before matching several runs (default as in "
                        "compare: torch-sdpa=fused,torch-eager=unfused; one run keeps its names)")


def main(args):
    bmap = loader.parse_backend_map(args.match_backend)
    if len(args.files) == 1 and args.match_backend is None:
        bmap = {}  # a single run keeps its own backend names
    labels = loader.labels_for(args.labels, args.files)
    loader.require(0 < args.alpha < 1, "--alpha", args.alpha, "must be between 0 and 1")
    loader.output_file(args.out, "-o", make_folder=True)
    runs = loader.load_all(args.files, labels, bmap)
    peer = peer_tables = None
    peers = []
    if args.peer:
        peers = loader.load_all(args.peer)  # torch-sdpa read as fused: matched by name
        peer = loader.merge(peers)
        peer.label = PEER if len(peers) > 1 else peers[0].label
        peer_tables = loader.merge(loader.load_all(args.peer, backend_map={}, quiet=True))
    doc = build(runs, image=args.image, title=args.title, alpha=args.alpha, peer=peer,
                peer_tables=peer_tables)
    loader.write_file(args.out, doc, "-o")
    loader.write_stdout(args.out + "\n")
    return 2 if loader.bad_input(runs + peers) else 0
