"""`kernels`: where a case's time goes, kernel by kernel, from Nsight Compute's per-kernel times.

Reads what `ncu --csv --page raw --metrics gpu__time_duration.sum` writes (--log-file, or its
stdout with the program's lines around it), or the trimmed form under reports/results (id, kernel,
grid, block, `gpu__time_duration.sum (ns)`). xfbench opens the profiler's capture around each
case's timed launches only, so with `ncu --profile-from-start off` the file holds the launches a
number comes from (README). The kernels are grouped by what they do (products, attention,
activations, FP8 casts and transposes, norms, bias-gradient column sums, other element-wise
work); a case that launches the same kernels in the same order each time (a layer's fwd+bwd, a
training step) is cut into whole iterations (--period auto: the shortest repeating run of kernel
names; a last, partial iteration left out) and shown per iteration. Two or more files: side by
side, with each one's total against the first's (e.g. a bf16 case and its fp8 one). ncu runs
kernels one at a time: overlap between streams is gone, so the sum is a little above the case's
time.
"""

import csv
import io
import re

from . import loader
from .render import Table, to_markdown, to_text

# (group, pattern on the kernel's name), first match wins.
GROUPS = [
    ("products (GEMM)", r"nvjet|xmma_gemm|gemm|cutlass|cublas|sm\d+_xmma"),
    ("attention", r"sdpa|flash|fmha|attention|cudnn"),
    ("activations", r"gelu|silu|swiglu|gated|relu"),
    ("FP8 casts, transposes, scales", r"cast|transpose|update_delayed|amax|fp8"),
    ("norms", r"norm"),
    ("column sums (bias gradients)", r"colsum|sum_partials|bias_backward"),
]
OTHER = "other element-wise"
TIME_COLUMNS = ("gpu__time_duration.sum", "gpu__time_duration.sum (ns)")
UNIT_SCALE_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3,
                 "msecond": 1e3, "s": 1e6, "second": 1e6}


def add_arguments(p):
    p.add_argument("files", nargs="+", help="ncu --csv --page raw output (or its trimmed form)")
    p.add_argument("--period", default="auto",
                   help="kernels per iteration: auto (default: the shortest repeating run of "
                        "names), a number, or 0 for no iterations (totals over the file)")
    p.add_argument("--top", type=int, default=12, help="kernels listed per file (default 12)")
    p.add_argument("--format", choices=["text", "md"], default="text", help="stdout format")


def group_of(name):
    low = name.lower()
    for group, pattern in GROUPS:
        if re.search(pattern, low):
            return group
    return OTHER


def short_name(name):
    """A kernel's name without `void `, its namespaces and parameters, its template arguments cut
    to the last functor named in them: `cast_transpose_tiles_kernel<BiasGeluBackward>`."""
    n = re.sub(r"^void ", "", name.strip())
    n = n.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    n = re.sub(r"\(.*$", "", n)
    if "<" not in n:
        return n.split("::")[-1]
    base, args = n[:n.index("<")], n[n.index("<"):]
    functors = re.findall(r"\b([A-Z]\w*)", args)
    return base.split("::")[-1] + (f"<{functors[-1]}>" if functors else "")


def read_kernels(path):
    """[(kernel name, microseconds)] in launch order. BadInput: no table of kernel times."""
    lines = loader.read_text(path).splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"') or l.startswith("ID,")),
                 None)
    if start is None:
        raise loader.BadInput(f"{path}: no ncu table (a header row starting with ID): run ncu with "
                              "--csv --page raw --metrics gpu__time_duration.sum")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    head = rows[0]
    time_col = next((c for c in TIME_COLUMNS if c in head), None)
    if "Kernel Name" not in head or time_col is None:
        raise loader.BadInput(f"{path}: the ncu table has no Kernel Name or "
                              "gpu__time_duration.sum column")
    ki, ti = head.index("Kernel Name"), head.index(time_col)
    scale = 1e-3  # nanoseconds (the trimmed form's, and ncu's unless its units row says otherwise)
    out = []
    for r in rows[1:]:
        if len(r) <= max(ki, ti):
            continue
        if not r[0].strip():  # the units row: ID empty
            scale = UNIT_SCALE_US.get(r[ti].strip(), scale)
            continue
        try:
            us = float(r[ti].replace(",", "")) * scale
        except ValueError:
            continue
        out.append((r[ki], us))
    if not out:
        raise loader.BadInput(f"{path}: the ncu table holds no kernel times")
    return out


def find_period(names):
    """The shortest p with names[i] == names[i + p] for every i (at least two whole iterations);
    0 when none."""
    n = len(names)
    for p in range(1, n // 2 + 1):
        if all(names[i] == names[i + p] for i in range(n - p)):
            return p
    return 0


def summarise(kernels, period):
    """(iterations, {group: us per iteration}, [(short name, group, launches, us per iteration)]).
    iterations 0: totals over every launch."""
    if period:
        iterations = len(kernels) // period
        kernels = kernels[:iterations * period]
    else:
        iterations = 0
    div = iterations or 1
    groups, names = {}, {}
    for name, us in kernels:
        g = group_of(name)
        groups[g] = groups.get(g, 0.0) + us / div
        s = short_name(name)
        launches, total, _ = names.get(s, (0, 0.0, g))
        names[s] = (launches + 1, total + us / div, g)
    listed = sorted(((s, g, n, t) for s, (n, t, g) in names.items()), key=lambda x: -x[3])
    return iterations, groups, listed


def main(args):
    loader.require(args.top >= 0, "--top", args.top, "must be 0 or more")
    loader.require(len(args.files) <= 26, "files", len(args.files), "at most 26")
    if args.period != "auto":
        try:
            fixed = int(args.period)
        except ValueError:
            fixed = -1
        loader.require(fixed >= 0, "--period", args.period, "must be auto, 0 or a kernel count")
    render = to_markdown if args.format == "md" else to_text
    results = []
    for path in args.files:
        kernels = read_kernels(path)
        names = [k for k, _ in kernels]
        period = find_period(names) if args.period == "auto" else int(args.period)
        results.append((path, len(kernels), period) + summarise(kernels, period))
    # Each file in its own unit: per iteration where its launches repeat, else over all of them.
    units = ["µs per iteration" if r[3] else "µs in all" for r in results]
    headers = ["group"] + [f"{chr(65 + i)}\n{u}" for i, u in enumerate(units)] + ["share"]
    t = Table("Time by kind of kernel", headers)
    order = [g for g, _ in GROUPS] + [OTHER]
    totals = [sum(r[4].values()) for r in results]
    for g in order:
        if not any(g in r[4] for r in results):
            continue
        cells = [f"{r[4].get(g, 0.0):.1f}" for r in results]
        share = results[-1][4].get(g, 0.0) / totals[-1] * 100 if totals[-1] else 0.0
        t.add([g] + cells + [f"{share:.0f}%"])
    t.add(["sum"] + [f"{x:.1f}" for x in totals] + ["100%"])
    for i, ((path, launches, period, iterations, _, _), total) in enumerate(zip(results, totals)):
        how = (f"{iterations} iterations of {period} kernels" if iterations
               else "no repeating iteration found" if args.period == "auto" else "all launches")
        comparable = i and total and units[i] == units[0]  # a speed only per iteration of both
        speed = f", {totals[0] / total:.3f}x A's speed" if comparable else ""
        t.notes.append(f"{chr(65 + i)}: {path}: {launches} kernels, {how}{speed}")
    t.notes.append("share: of the last file's sum; ncu runs kernels one at a time (no overlap).")
    out = render(t) + "\n"
    for i, (path, _, _, iterations, _, listed) in enumerate(results):
        if not args.top:
            break
        k = Table(f"Kernels of {chr(65 + i)} ({units[i]})",
                  ["kernel", "group", "launches", "µs", "share"])
        total = sum(x[3] for x in listed) or 1.0
        for s, g, n, us in listed[:args.top]:
            k.add([s, g, f"{n / (iterations or 1):g}", f"{us:.1f}", f"{us / total * 100:.1f}%"])
        out += render(k) + "\n"
    loader.write_stdout(out)
    return 0
