"""`plot`: the seeds' figures as PNG and SVG (matplotlib, headless).

  matmul_tflops      TFLOPS vs square matrix size, one line per dtype
  trainstep          three horizontal bar panels: samples/s, TFLOPS per GPU, memory (mem_GB)
  bandwidth_vector   GB/s vs elements     (Vector)
  bandwidth_memcpy   GB/s vs bytes        (Memcpy)
  nccl_busbw         bus bandwidth vs bytes (NCCL)
With several runs, each run gets its own line style / bar offset so they can be compared.
Only figures whose cases exist in the runs are made.
"""

import io
import os

from . import loader


def _plt():
    # Imported lazily so `compare`/`table` never need matplotlib; Agg needs no display.
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "xfbench"  # stable SVG ids: same input, same file
    import matplotlib.pyplot as plt
    return plt


STYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D"]


def _series(runs, family, accept, x_of, y_metric, name_of):
    """{(run label, series name): [(x, y)]} for the cases of `family` accepted by `accept`."""
    out = {}
    for r in runs:
        for c in r.by_family(family):
            if c.error or not accept(c):
                continue
            y = c.value(y_metric)
            x = loader.as_number(x_of(c))
            if y is None or not isinstance(x, (int, float)):
                continue
            out.setdefault((r.label, name_of(c)), []).append((x, y))
    return {k: sorted(v) for k, v in out.items()}


def _pow2_label(x):
    x = int(round(x))
    return f"2^{x.bit_length() - 1}" if x > 0 and x & (x - 1) == 0 else str(x)


XFORMAT = {"n": lambda x: str(int(round(x))), "bytes": loader.fmt_bytes, "elements": _pow2_label}


def _line_figure(series, runs, title, xlabel, ylabel, xformat="n"):
    if not series:
        return None
    plt = _plt()
    from matplotlib.ticker import FixedLocator, FuncFormatter
    fig, ax = plt.subplots(figsize=(8, 4.2))
    labels = [r.label for r in runs]
    names = sorted({n for _, n in series})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (run_label, name), pts in series.items():
        i, j = labels.index(run_label), names.index(name)
        lab = name if len(runs) == 1 else f"{name} ({run_label})"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=lab,
                color=colors[j % len(colors)], linestyle=STYLES[i % len(STYLES)],
                marker=MARKERS[i % len(MARKERS)], markersize=4)
    ax.set_xscale("log", base=2)
    # ticks at the measured sizes, labelled as a person writes them (8192, 256 MiB, 2^28)
    xs = sorted({p[0] for pts in series.values() for p in pts})
    ax.xaxis.set_major_locator(FixedLocator(xs))
    ax.xaxis.set_minor_locator(FixedLocator([]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: XFORMAT[xformat](x)))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    # outside the axes: the lines fill the plot, a legend inside would hide some
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    return fig


def matmul_figure(runs):
    def square(c):
        p = c.params
        return p.get("m") is not None and p.get("m") == p.get("n") == p.get("k") and c.variants
    layouts = {c.variants[1] for r in runs for c in r.by_family("Matmul")
               if square(c) and len(c.variants) > 1}
    name = (lambda c: "/".join(c.variants[:2])) if len(layouts) > 1 else (lambda c: c.variants[0])
    s = _series(runs, "Matmul", square, lambda c: c.params["n"], "TFLOPS", name)
    return _line_figure(s, runs, "Matmul TFLOPS (m = n = k)", "matrix size n", "TFLOPS")


def bandwidth_figure(runs, family):
    if family == "Vector":
        s = _series(runs, "Vector", lambda c: "n" in c.params, lambda c: c.params["n"], "GB/s",
                    lambda c: "/".join(c.variants))
        return _line_figure(s, runs, "Vector bandwidth", "elements", "GB/s", "elements")
    if family == "Memcpy":
        s = _series(runs, "Memcpy", lambda c: "bytes" in c.params, lambda c: c.params["bytes"],
                    "GB/s", lambda c: "/".join(c.variants))
        return _line_figure(s, runs, "Memcpy bandwidth", "bytes", "GB/s", "bytes")
    if family == "NCCL":
        s = _series(runs, "NCCL", lambda c: "bytes" in c.params, lambda c: c.params["bytes"],
                    "busbw", lambda c: "/".join(c.variants) + f" x{c.params.get('gpus', '?')}")
        return _line_figure(s, runs, "NCCL bus bandwidth", "bytes", "busbw (GB/s)", "bytes")
    raise ValueError(family)


def trainstep_figure(runs):
    """Three panels sharing the y axis (one bar group per TrainStep case)."""
    names = []
    for r in runs:
        for c in r.by_family("TrainStep"):
            if not c.error and c.name not in names:
                names.append(c.name)
    if not names:
        return None
    plt = _plt()
    panels = [("samples/s", "samples/s"), ("TFLOPS", "TFLOPS per GPU"), ("mem_GB", "memory (GB)")]
    fig, axes = plt.subplots(1, 3, figsize=(12, 0.45 * len(names) * max(1, len(runs)) + 1.6),
                             sharey=True)
    height = 0.8 / len(runs)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (metric, title) in zip(axes, panels):
        for i, r in enumerate(runs):
            ys, vals = [], []
            for j, n in enumerate(names):
                c = r.cases.get(n)
                v = c.value(metric) if c is not None and not c.error else None
                ys.append(j + (i - (len(runs) - 1) / 2) * height)
                vals.append(v or 0.0)
            bars = ax.barh(ys, vals, height=height, color=colors[i % len(colors)],
                           label=r.label if len(runs) > 1 else None)
            for b, v in zip(bars, vals):
                if v:
                    ax.text(b.get_width(), b.get_y() + b.get_height() / 2, f" {loader.fmt_num(v)}",
                            va="center", fontsize=7)
        ax.set_title(title)
        ax.grid(True, axis="x", alpha=0.3)
        ax.margins(x=0.2)
    axes[0].set_yticks(range(len(names)))
    axes[0].set_yticklabels([n.replace("TrainStep/", "") for n in names], fontsize=8)
    axes[0].invert_yaxis()
    if len(runs) > 1:
        axes[-1].legend(fontsize=8)
    fig.suptitle("Training step")
    fig.tight_layout()
    return fig


def figures(runs):
    """[(name, figure)] for every plot the runs have data for."""
    good = [r for r in runs if r.ok and r.cases]
    out = [("matmul_tflops", matmul_figure(good)), ("trainstep", trainstep_figure(good))]
    for fam, name in (("Vector", "bandwidth_vector"), ("Memcpy", "bandwidth_memcpy"),
                      ("NCCL", "nccl_busbw")):
        out.append((name, bandwidth_figure(good, fam)))
    return [(n, f) for n, f in out if f is not None]


def save(fig, path, fmt):
    # metadata without a date keeps regenerated files byte-identical
    meta = {"Date": None} if fmt == "svg" else {}
    fig.savefig(path, format=fmt, dpi=110, metadata=meta)


def to_bytes(fig, fmt):
    buf = io.BytesIO()
    save(fig, buf, fmt)
    return buf.getvalue()


def close(fig):
    _plt().close(fig)


def add_arguments(p):
    p.add_argument("files", nargs="+", help="one or more JSON files (several: overlaid)")
    p.add_argument("--out", default="reports/out", help="output folder (default reports/out)")
    p.add_argument("--formats", default="png,svg", help="comma-separated: png,svg (default both)")
    p.add_argument("--labels", help="comma-separated run labels (default: file names)")
    p.add_argument("--match-backend", metavar="MAP", default="none",
                   help="rename layer backends, FROM=TO,... (default none)")


def main(args):
    try:
        bmap = loader.parse_backend_map(args.match_backend)
        _plt()
    except ValueError as e:
        loader.warn(f"error: {e}")
        return 2
    except ImportError as e:
        loader.warn(f"error: matplotlib is not installed ({e}); pip install -r reports/requirements.txt")
        return 2
    runs = loader.load_all(args.files, args.labels.split(",") if args.labels else None, bmap)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    os.makedirs(args.out, exist_ok=True)
    figs = figures(runs)
    if not figs:
        loader.warn("note: no case that any plot uses (Matmul, TrainStep, Vector, Memcpy, NCCL)")
    for name, fig in figs:
        for fmt in formats:
            path = os.path.join(args.out, f"{name}.{fmt}")
            save(fig, path, fmt)
            print(path)
        close(fig)
    return 0 if all(r.ok for r in runs) else 2
