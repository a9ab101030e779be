"""`plot`: the seeds' figures as PNG and SVG (matplotlib, headless).

  matmul_tflops      TFLOPS vs square matrix size, one line per dtype (a panel per layout)
  trainstep          three horizontal bar panels: samples/s, TFLOPS per GPU, memory (mem_GB);
                     each configuration's backends side by side, xfbench's beside the PyTorch peer's
  bandwidth_vector   GB/s vs bytes read + written per launch, a panel per op; the HBM peak as a
                     line, the sizes that fit in L2 shaded
  bandwidth_memcpy   GB/s vs bytes, a panel per direction; the PCIe peak on host copies
  nccl_busbw         bus bandwidth vs bytes, a panel per GPU count and dtype; NVLink's peak
The GPU is named in every title. Each dtype, backend and operation has one colour in every chart
(COLORS, not the order lines happen to be drawn in); a panel holds at most MAX_LINES lines, more
are split over further panels. Sizes read 4K, 1M, 1G; an axis whose sizes span a decade or more is
logarithmic (y stays linear from 0). Points of noisy cases carry `~`, of throttled cases `†`, as
in the tables.
With several runs, each run gets its own line style (bars: hatch) so they can be compared.
Only figures whose cases exist in the runs are made.
"""

import io
import math
import os
import re
import zlib

from . import loader
from .render import short_names


def _plt():
    # Imported lazily so `compare`/`table` never need matplotlib; Agg needs no display.
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "xfbench"  # stable SVG ids: same input, same file
    import matplotlib.pyplot as plt
    return plt


STYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D"]
HATCHES = ["", "//", "..", "xx"]
MAX_LINES = 8

# One colour per dtype, backend and operation in every chart.
COLORS = {
    # dtypes
    "fp64": "#8c564b", "fp32": "#1f77b4", "tf32": "#17becf", "fp16": "#ff7f0e",
    "bf16": "#d62728", "fp8": "#9467bd", "int8": "#7f7f7f",
    # layer and training backends: xfbench's, then the PyTorch peer's
    "fused": "#2ca02c", "flash": "#006d2c", "unfused": "#98df8a",
    "torch-sdpa": "#e377c2", "torch-eager": "#f7b6d2", "": "#1f77b4",
    # NCCL collectives
    "allreduce": "#1f77b4", "allgather": "#ff7f0e", "reducescatter": "#2ca02c",
    "broadcast": "#d62728", "reduce": "#9467bd", "alltoall": "#8c564b", "sendrecv": "#e377c2",
    # Memcpy: host memory and engine
    "pinned/ce": "#1f77b4", "pinned/sm": "#aec7e8", "pageable/ce": "#ff7f0e",
    "pageable/sm": "#ffbb78", "device/ce": "#2ca02c", "device/sm": "#98df8a",
}
# Anything else: a colour of its own name (the same in every chart), not of its drawing order.
PALETTE = ["#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d",
           "#31a354", "#756bb1", "#636363", "#bcbd22", "#17becf"]
PEAK_COLOR = "#444444"
DTYPE_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
VECTOR_ARRAYS = {"scale": 2, "copy": 2, "triad": 3, "read": 1, "write": 1}  # read + written
# L2 size when a run's context has no gpu_l2_MB (files from before it was written).
L2_MIB = {"H100": 50, "H200": 50, "A100": 40}
NVLINK_GBS_PER_LINK = {7: 25.0, 8: 25.0, 9: 25.0, 10: 50.0}  # per direction, by compute capability


def color(key):
    if key in COLORS:
        return COLORS[key]
    return PALETTE[zlib.crc32(key.encode()) % len(PALETTE)]


def gpu_title(title, runs):
    """`title — NVIDIA H100 80GB HBM3` (several GPUs: joined with ' vs ')."""
    gpus = list(dict.fromkeys(str(r.context["gpu_name"]) for r in runs if r.context.get("gpu_name")))
    return f"{title} — {' vs '.join(gpus)}" if gpus else title


def size_label(x):
    """4096 -> 4K, 1048576 -> 1M, 3 GiB -> 3G, 1536 -> 1.5K: binary multiples."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def _context_number(runs, key):
    for r in runs:
        v = loader.as_number(r.context.get(key))
        if isinstance(v, (int, float)) and v > 0:
            return float(v)
    return None


def hbm_peak(runs):
    """The datasheet memory bandwidth in GB/s (context `peak_mem_GBs`), or None."""
    return _context_number(runs, "peak_mem_GBs")


def l2_bytes(runs):
    """L2 size in bytes: context `gpu_l2_MB` (MB of 10^6 bytes), else L2_MIB by GPU name."""
    mb = _context_number(runs, "gpu_l2_MB")
    if mb:
        return mb * 1e6
    for r in runs:
        name = str(r.context.get("gpu_name", ""))
        for gpu, mib in L2_MIB.items():
            if gpu in name:
                return mib * float(1 << 20)
    return None


def pcie_peak(runs):
    """GB/s per direction of the GPU's PCIe link, from the context's `gpu0_pcie` or a Memcpy
    label ('PCIe Gen5 x16 (now Gen5 x16), 63.0 GB/s per direction'), or None."""
    texts = [str(v) for r in runs for k, v in r.context.items() if k.endswith("_pcie")]
    texts += [c.label for r in runs for c in r.by_family("Memcpy") + r.by_family("P2P")]
    for text in texts:
        m = re.search(r"PCIe[^;]*?([\d.]+) GB/s per direction", text)
        if m:
            return float(m.group(1))
    return None


def nvlink_peak(runs):
    """(GB/s per direction, links) of one GPU's NVLinks from the context's `nvlinks`
    ('0-1:18,0-2:18,...': links per GPU pair; the most of any pair, as through an NVSwitch) and
    the compute capability, or None."""
    for r in runs:
        links = [int(m) for m in re.findall(r":(\d+)", str(r.context.get("nvlinks", "")))]
        cc = loader.as_number(str(r.context.get("gpu_cc", "")).split(".")[0])
        if links and max(links) > 0 and cc in NVLINK_GBS_PER_LINK:
            return max(links) * NVLINK_GBS_PER_LINK[cc], max(links)
    return None


# ---- line charts ------------------------------------------------------------------------------

def _series(runs, family, accept, x_of, y_metric, name_of, panel_of=lambda c: ""):
    """{(panel, series name, run index): [(x, y, case)]} for the cases of `family` accepted."""
    out = {}
    for i, r in enumerate(runs):
        for c in r.by_family(family):
            if c.error or not accept(c):
                continue
            y = c.value(y_metric)
            x = loader.as_number(x_of(c))
            if not loader.valid(y) or not isinstance(x, (int, float)):
                continue
            out.setdefault((panel_of(c), name_of(c), i), []).append((x, y, c))
    return {k: sorted(v, key=lambda p: p[:2]) for k, v in out.items()}


def _panels(series):
    """[(panel title, [series keys])] in the order the cases come, each with at most MAX_LINES
    lines: a panel's names (dtypes in their usual order) are split over several panels when
    their lines (one per run) are more."""
    panels = {}
    for key in series:
        panels.setdefault(key[0], {}).setdefault(key[1], []).append(key)
    out = []
    for panel, lines_of in panels.items():
        names = sorted(lines_of, key=lambda n: (_order(n), list(lines_of).index(n)))
        chunk, lines = [], 0
        for n in names:
            if chunk and lines + len(lines_of[n]) > MAX_LINES:
                out.append((panel, chunk))
                chunk, lines = [], 0
            chunk += lines_of[n]
            lines += len(lines_of[n])
        out.append((panel, chunk))
    for panel in panels:  # a panel split in n: its parts titled 'NN (1/2)', 'NN (2/2)'
        parts = [k for k, (p, _) in enumerate(out) if p == panel]
        for n, k in enumerate(parts if len(parts) > 1 else []):
            out[k] = (f"{panel} ({n + 1}/{len(parts)})".strip(), out[k][1])
    return out


def _order(name):
    """dtypes in their usual order, before any other name."""
    order = list(DTYPE_BYTES)
    return order.index(name) if name in order else len(order)


def _size_axis(ax, values, axis="x", sizes=True):
    """Logarithmic when the values span a decade or more, ticks labelled 4K, 1M, 1G."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    lo, hi = min(values), max(values)
    if lo > 0 and hi / lo >= 10:
        getattr(ax, f"set_{axis}scale")("log", base=2)
        first, last = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
        step = 1
        while (last - first) / step > 9:
            step += 1
        ticks = [2.0 ** e for e in range(first, last + 1) if e % step == 0]
        getattr(ax, f"{axis}axis").set_major_locator(FixedLocator(ticks))
        getattr(ax, f"{axis}axis").set_minor_locator(NullLocator())
        getattr(ax, f"set_{axis}lim")(lo / 1.4, hi * 1.4)
    else:
        getattr(ax, f"{axis}axis").set_major_locator(FixedLocator(sorted(set(values))))
    fmt = size_label if sizes else (lambda v: f"{v:g}")
    getattr(ax, f"{axis}axis").set_major_formatter(FuncFormatter(lambda v, _: fmt(v)))


def _mark_points(ax, pts, col):
    """`~` / `†` above each point of a noisy / throttled case."""
    for x, y, c in pts:
        if c.marks:
            ax.annotate(c.marks, (x, y), xytext=(0, 3), textcoords="offset points", ha="center",
                        va="bottom", fontsize=8, color=col)


def _line_figure(series, runs, title, xlabel, ylabel, decorate=None, size_ticks=True):
    """One panel per _panels entry (two columns when several), legends outside on the right."""
    if not series:
        return None
    plt = _plt()
    panels = _panels(series)
    ncols = 1 if len(panels) == 1 else 2
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(8.5 if ncols == 1 else 14, 3.6 * nrows + 0.9),
                             squeeze=False)
    marked = False
    for ax, (panel, keys) in zip(axes.flat, panels):
        xs = []
        for key in keys:
            _, name, i = key
            pts = series[key]
            col = color(name)
            lab = name if len(runs) == 1 else f"{name} ({runs[i].label})"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=lab, color=col,
                    linestyle=STYLES[i % len(STYLES)], marker=MARKERS[i % len(MARKERS)],
                    markersize=4)
            _mark_points(ax, pts, col)
            marked = marked or any(p[2].marks for p in pts)
            xs += [p[0] for p in pts]
        _size_axis(ax, xs, "x", size_ticks)
        if decorate:
            decorate(ax, panel, xs)
        ax.set_ylim(bottom=0)  # linear from 0: a peak line and an L2 hump read true
        ax.set_title(panel, fontsize=10)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        # outside the axes: the lines fill the plot, a legend inside would hide some
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(gpu_title(title, runs))
    _marks_note(fig, marked)
    fig.tight_layout(rect=(0, 0.04 if marked else 0, 1, 1))
    return fig


def _marks_note(fig, marked):
    if marked:
        fig.text(0.01, 0.01, "~ noisy (ran into the protocol's time-out)   † throttled (clocks "
                 "held down, e.g. at the power cap)", fontsize=8, color="#555555")


def _peak_line(ax, gbs, label):
    ax.axhline(gbs, color=PEAK_COLOR, linestyle="--", linewidth=1,
               label=f"{label} {loader.fmt_num(gbs)} GB/s")


def matmul_figure(runs):
    def square(c):
        p = c.params
        return (p.get("m") is not None and p.get("m") == p.get("n") == p.get("k")
                and "dtype" in c.axes)

    def dtype(c):
        return c.axes["dtype"]

    def rest(c):  # the layout (and a sweep): a panel each when they differ
        return "/".join(c.axes[a] for a in ("kind", "layout") if a in c.axes)
    panels = {rest(c) for r in runs for c in r.by_family("Matmul") if square(c)}
    s = _series(runs, "Matmul", square, lambda c: c.params["n"], "TFLOPS", dtype,
                rest if len(panels) > 1 else lambda c: "")
    return _line_figure(s, runs, "Matmul TFLOPS (m = n = k)", "matrix size n", "TFLOPS",
                        size_ticks=False)


def _vector_bytes(c):
    """Bytes a Vector launch reads and writes: n × dtype size × arrays of its op."""
    n = loader.as_number(c.params.get("n"))
    arrays = VECTOR_ARRAYS.get(c.axes.get("op"))
    size = DTYPE_BYTES.get(c.axes.get("dtype"))
    if isinstance(n, int) and arrays and size:
        return n * size * arrays
    gbs, t = c.value("GB/s"), c.value("time")  # an op not listed: from its own counter
    return round(gbs * 1e9 * t) if loader.valid(gbs) and loader.valid(t) else None


def bandwidth_figure(runs, family):
    if family == "Vector":
        s = _series(runs, "Vector", lambda c: {"op", "dtype", "n"} <= c.axes.keys(),
                    _vector_bytes, "GB/s", lambda c: c.axes["dtype"], lambda c: c.axes["op"])
        peak, l2 = hbm_peak(runs), l2_bytes(runs)

        def decorate(ax, panel, xs):
            if peak:
                _peak_line(ax, peak, "HBM peak")
            if l2 and min(xs) < l2:
                lo, hi = ax.get_xlim()
                ax.axvspan(lo, min(l2, hi), color="#ffe9a8", alpha=0.5, zorder=0,
                           label=f"fits in L2 ({l2 / (1 << 20):.0f} MiB)")
                ax.set_xlim(lo, hi)
        return _line_figure(s, runs, "Vector bandwidth", "bytes read + written per launch",
                            "GB/s", decorate)
    if family == "Memcpy":
        s = _series(runs, "Memcpy", lambda c: {"direction", "bytes"} <= c.axes.keys(),
                    lambda c: c.params["bytes"], "GB/s",
                    lambda c: f"{c.axes['memory']}/{c.axes['engine']}",
                    lambda c: c.axes["direction"])
        pcie, peak = pcie_peak(runs), hbm_peak(runs)

        def decorate(ax, panel, xs):
            if panel in ("h2d", "d2h") and pcie:
                _peak_line(ax, pcie, "PCIe peak")
            elif panel == "d2d" and peak:  # GB/s counts read + write there
                _peak_line(ax, peak, "HBM peak")
        return _line_figure(s, runs, "Memcpy bandwidth", "bytes", "GB/s", decorate)
    if family == "NCCL":
        s = _series(runs, "NCCL", lambda c: {"collective", "bytes"} <= c.axes.keys(),
                    lambda c: c.params["bytes"], "busbw",
                    lambda c: c.axes["collective"],
                    lambda c: f"gpus:{c.params.get('gpus', '?')} {c.axes['dtype']}")
        nvlink = nvlink_peak(runs)

        def decorate(ax, panel, xs):
            if nvlink and not panel.startswith("gpus:1 "):
                _peak_line(ax, nvlink[0], f"NVLink ({nvlink[1]} links)")
        return _line_figure(s, runs, "NCCL bus bandwidth", "bytes", "busbw (GB/s)", decorate)
    raise ValueError(family)


# ---- the training step ------------------------------------------------------------------------

BACKENDS = ("fused", "flash", "unfused")
RUN_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]  # runs of names without a backend


def _backend(c):
    """(backend as its runner wrote it, the configuration without it) of a TrainStep case; names
    without a backend part (older files) give ''."""
    raw = c.raw_name.split("/")
    if len(raw) > 2 and (raw[1] in BACKENDS or raw[1].startswith("torch-")):
        return raw[1], "/".join(c.name.split("/")[2:])
    return "", "/".join(c.name.split("/")[1:])


def trainstep_figure(runs):
    """Three panels sharing the y axis: per configuration one bar per (run, backend), xfbench's
    backends beside the PyTorch peer's (torch-sdpa beside fused, torch-eager beside unfused)."""
    configs, bars, cases = [], [], {}
    for i, r in enumerate(runs):
        for c in r.by_family("TrainStep"):
            if c.error:
                continue
            backend, config = _backend(c)
            cases[(i, backend, config)] = c
            if config not in configs:
                configs.append(config)
            if (i, backend) not in bars:
                bars.append((i, backend))
    if not configs:
        return None
    peers = set(loader.DEFAULT_BACKEND_MAP)
    bars.sort(key=lambda b: (loader.DEFAULT_BACKEND_MAP.get(b[1], b[1]), b[1] in peers, b[0]))
    # a bar's name: its backend; with several runs, the run's label where the run has one
    # backend (xfbench beside 'PyTorch 2.11'), else both
    per_run = {i: sum(1 for j, _ in bars if j == i) for i, _ in bars}
    names = [runs[i].label if len(runs) > 1 and per_run[i] == 1 else b or runs[i].label
             for i, b in bars]
    # per configuration only the bars it has, side by side; a gap between configurations
    slots, ticks, y = [], [], 0.0
    for config in configs:
        here = [k for k, (i, b) in enumerate(bars) if (i, b, config) in cases]
        ticks.append(y + (len(here) - 1) / 2)
        slots += [(y + n, k, cases[(*bars[k], config)]) for n, k in enumerate(here)]
        y += len(here) + 0.8
    plt = _plt()
    short, common = short_names(configs)
    panels = [("samples/s", "samples/s"), ("TFLOPS", "TFLOPS per GPU"), ("mem_GB", "memory (GB)")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 0.24 * y + 2.2), sharey=True)
    marked, legend = False, {}
    for ax, (metric, title) in zip(axes, panels):
        for pos, k, c in slots:
            i, backend = bars[k]
            v = c.value(metric)
            v = v if loader.valid(v) else 0.0
            twin = names.count(names[k]) > 1  # one name in several runs: hatch per run
            bar = ax.barh([pos], [v], height=0.85, edgecolor="white",
                          color=color(backend) if backend else RUN_COLORS[i % len(RUN_COLORS)],
                          hatch=HATCHES[i % len(HATCHES)] if twin else "")
            legend.setdefault(names[k] + (f" ({runs[i].label})" if twin else ""), bar)
            if v:
                ax.text(v, pos, f" {loader.fmt_num(v)}{c.marks}", va="center", fontsize=7)
                marked = marked or bool(c.marks)
        ax.set_title(title)
        ax.grid(True, axis="x", alpha=0.3)
        ax.margins(x=0.22)
    axes[0].set_yticks(ticks)
    axes[0].set_yticklabels(short, fontsize=8)
    axes[0].set_ylim(y - 0.3, -1.0)
    bottom = 0.05 if marked else 0.0
    if len(bars) > 1:
        fig.legend(list(legend.values()), list(legend), loc="lower center", fontsize=8,
                   ncol=min(4, len(legend)), frameon=False, bbox_to_anchor=(0.5, bottom))
        bottom += 0.035 * math.ceil(len(legend) / 4) * 8 / (0.24 * y + 2.2)
    title = "Training step" + (f" ({'/'.join(common)})" if common else "")
    fig.suptitle(gpu_title(title, runs))
    _marks_note(fig, marked)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def figures(runs):
    """[(name, figure)] for every plot the runs have data for."""
    good = [r for r in runs if r.ok and r.cases]
    out = [("matmul_tflops", matmul_figure(good)), ("trainstep", trainstep_figure(good))]
    for fam, name in (("Vector", "bandwidth_vector"), ("Memcpy", "bandwidth_memcpy"),
                      ("NCCL", "nccl_busbw")):
        out.append((name, bandwidth_figure(good, fam)))
    return [(n, f) for n, f in out if f is not None]


# The family each figure shows (the HTML report puts it beside that family's tables).
FIGURE_FAMILY = {"matmul_tflops": "Matmul", "trainstep": "TrainStep", "bandwidth_vector": "Vector",
                 "bandwidth_memcpy": "Memcpy", "nccl_busbw": "NCCL"}


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
    p.add_argument("files", nargs="+", help="one or more JSON files (several: overlaid, each run "
                                            "its own line style)")
    p.add_argument("--out", default="reports/out", help="output folder (default reports/out)")
    p.add_argument("--formats", default="png,svg", help="comma-separated: png,svg (default both)")
    p.add_argument("--labels", help="comma-separated run labels, one per file (default: file names)")
    p.add_argument("--match-backend", metavar="MAP", default="none",
                   help="rename layer backends, FROM=TO,... (default none: the PyTorch peer's "
                        "torch-sdpa stays apart from, and is drawn beside, xfbench's fused)")


FORMATS = ("png", "svg")


def main(args):
    bmap = loader.parse_backend_map(args.match_backend)
    labels = loader.labels_for(args.labels, args.files)
    formats = loader.split_list(args.formats, "--formats")
    bad = [f for f in formats if f not in FORMATS]
    loader.require(not bad, "--formats", args.formats,
                   f"unknown format {','.join(bad)} (known: {', '.join(FORMATS)})")
    loader.output_dir(args.out, "--out")
    try:
        _plt()
    except ImportError as e:
        raise loader.BadInput(f"matplotlib is not installed ({e}); "
                              "pip install -r reports/requirements.txt") from None
    runs = loader.load_all(args.files, labels, bmap)
    figs = figures(runs)
    if not figs and not loader.bad_input(runs):
        loader.warn("note: no case that any plot uses (Matmul, TrainStep, Vector, Memcpy, NCCL)")
    for name, fig in figs:
        for fmt in formats:
            path = os.path.join(args.out, f"{name}.{fmt}")
            try:
                save(fig, path, fmt)
            except OSError as e:
                raise loader.BadInput(f"--out {path}: cannot write ({e.strerror or e})") from None
            loader.write_stdout(path + "\n")
        close(fig)
    return 2 if loader.bad_input(runs) else 0
