"""`compare`: two or more runs side by side, per family, with ratios, a Mann-Whitney U test and
geometric means.

Google Benchmark's own tools/compare.py compares time only; xfbench's numbers that matter are
counters (TFLOPS, GB/s, busbw, samples/s), so those are shown, with time, for every run. The
first run is the baseline. "Change" is the speedup of the family's headline metric (higher
throughput or lower time), so `+5%` is always better and `--fail-if-slower 5` fails on any case at
`-5%` or worse. A change smaller than the two runs' combined noise is shown as `within noise`.
"""

import functools
import math
import re
import statistics
import sys

from . import loader
from .render import Table, to_markdown, to_text

# The counters that matter, in column order; the first one a case has is its headline metric.
COUNTERS = ["TFLOPS", "GB/s", "busbw", "samples/s", "latency_us"]
LOWER_IS_BETTER = {"time", "latency_us", "mem_GB"}
# A training step is judged by samples/s and its memory matters (the seeds' three-panel chart).
FAMILY_METRICS = {"TrainStep": ["samples/s", "TFLOPS", "mem_GB", "time"]}


# ---- Mann-Whitney U test (two-sided), stdlib only ------------------------------------------

@functools.lru_cache(maxsize=None)
def _u_counts(m, n):
    """Number of orderings of m x's and n y's giving each U = 0..m*n (no ties).

    Recurrence: the largest value is either an x (it beats all n y's: U shifts by n) or a y.
    """
    if m == 0 or n == 0:
        return (1,)
    a, b = _u_counts(m - 1, n), _u_counts(m, n - 1)
    out = [0] * (m * n + 1)
    for u, c in enumerate(a):
        out[u + n] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def mann_whitney(x, y):
    """(U of x, two-sided p). Exact distribution when both samples have <= 30 values and no ties
    (the usual case for a handful of repetitions; = scipy.stats.mannwhitneyu(method='exact')),
    else the normal approximation with tie and continuity correction (= method='asymptotic')."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    pooled = sorted([(v, 0) for v in x] + [(v, 1) for v in y])
    ranks = [0.0] * len(pooled)
    ties = []
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1  # average rank of a tie group
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    r1 = sum(r for r, (_, g) in zip(ranks, pooled) if g == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    u_small = min(u1, n1 * n2 - u1)
    if not ties and n1 <= 30 and n2 <= 30:
        counts = _u_counts(n1, n2)
        p = 2 * sum(counts[: int(u_small) + 1]) / math.comb(n1 + n2, n1)
        return u1, min(1.0, p)
    n = n1 + n2
    tie_term = sum(t ** 3 - t for t in ties) / (n * (n - 1))
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term))
    if sigma == 0:
        return u1, 1.0  # all values equal: no evidence of a difference
    z = (abs(u1 - n1 * n2 / 2) - 0.5) / sigma
    return u1, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


# ---- comparison -----------------------------------------------------------------------------

def geomean(vals):
    vals = [v for v in vals if v is not None and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def headline(case):
    """Metric that decides 'faster/slower' for a case."""
    have = case.metrics()
    for m in FAMILY_METRICS.get(case.family, COUNTERS):
        if m in have:
            return m
    return "time"


def speedup(metric, base, new):
    if base is None or new is None or base <= 0 or new <= 0:
        return None
    return base / new if metric in LOWER_IS_BETTER else new / base


def fmt_change(s):
    return "—" if s is None else f"{(s - 1) * 100:+.1f}%"


def _spread(case):
    """Relative spread (cv) of a case's repetition times: from the repetitions when it has two or
    more, else from Google Benchmark's `cv` aggregate (files written with aggregates only)."""
    xs = case.samples("time")
    if len(xs) >= 2:
        m = statistics.fmean(xs)
        return statistics.stdev(xs) / m if m > 0 else None
    cv = case.aggs.get("cv", {}).get("real_time")
    return float(cv) if isinstance(cv, (int, float)) and case.aggs["cv"].get("repetitions", 0) >= 2 else None


def run_noise(case):
    """Relative noise of one run of a case, or None when unknown: the cv of its repetitions when it
    has two or more; else, for one steady-state repetition, ci_pct / 2 (the standard error of its
    mean, from batch means) when the run has it, else its cv_pct (runs before protocol v2)."""
    spread = _spread(case)
    if spread is not None:
        return spread
    ci = case.value("ci_pct")
    if ci is not None:
        return ci / 2 / 100
    cv = case.value("cv_pct")
    return cv / 100 if cv is not None else None


def combined_noise(a, b):
    """Relative noise of comparing case a with case b: sqrt(noise_a^2 + noise_b^2), or None when
    either is unknown."""
    na, nb = run_noise(a), run_noise(b)
    return None if na is None or nb is None else math.hypot(na, nb)


def within_noise(speedup, noise):
    return speedup is not None and noise is not None and abs(speedup - 1) < noise


class Comparison:
    """Result of comparing runs: tables to render plus what the CI gate needs."""

    def __init__(self):
        self.context = None
        self.tables = []
        self.changes = []   # (family, case name, run label, speedup, p or None, noise or None)
        self.problems = []


def context_table(runs):
    t = Table("Runs", ["", *[r.label for r in runs], ""])
    t.add(["file", *[r.path for r in runs], ""])
    for key, vals, differs in loader.context_rows(runs):
        t.add([key, *[v or "—" for v in vals], "≠ differs" if differs else ""])
    if any(d for _, _, d in loader.context_rows(runs)):
        t.notes.append("note: device/software contexts differ (≠); ratios compare different setups.")
    return t


def compare(runs, metrics=None, alpha=0.05, family=None, name_filter=None):
    """Build per-family comparison tables of `runs` against runs[0]."""
    res = Comparison()
    good = [r for r in runs if r.ok and r.cases]
    res.context = context_table(runs)
    if not good:
        return res
    base, others = good[0], good[1:]
    rx = re.compile(name_filter) if name_filter else None

    # Union of case names, baseline order first, so new cases in later runs are shown too.
    names = []
    for r in good:
        for n in r.cases:
            if n not in names and (rx is None or rx.search(n)):
                names.append(n)
    families = []
    for n in names:
        f = loader.parse_name(n)[0]
        if f not in families and (family is None or f in family):
            families.append(f)

    for fam in families:
        fam_names = [n for n in names if loader.parse_name(n)[0] == fam]
        cases_by_run = [[r.cases.get(n) for n in fam_names] for r in good]
        present = set()
        for cs in cases_by_run:
            for c in cs:
                if c is not None and not c.error:
                    present.update(c.metrics())
        cols = metrics or FAMILY_METRICS.get(fam) or [m for m in COUNTERS if m in present] + ["time"]
        if not metrics and fam not in FAMILY_METRICS and "TFLOPS" in present:
            cols = [m for m in cols if m != "samples/s"]  # proportional to TFLOPS: adds width, not news
        cols = [m for m in cols if m in present]

        headers = ["case"]
        for m in cols:
            headers += [f"{m} {r.label}" for r in good]
        for r in others:
            headers += [f"change {r.label}", f"p {r.label}"]
        t = Table(fam, headers)
        only = {r.label: 0 for r in good}

        for i, n in enumerate(fam_names):
            row_cases = [cs[i] for cs in cases_by_run]
            bc = row_cases[0]
            row = [n]
            for m in cols:
                bv = bc.value(m) if bc and not bc.error else None
                for k, c in enumerate(row_cases):
                    if c is None:
                        row.append("—")
                    elif c.error:
                        row.append(c.error_cell())
                    else:
                        v = c.value(m)
                        cell = loader.fmt_metric(m, v)
                        if k and bv and v is not None:
                            cell += f" ({v / bv:.2f}×)"
                        row.append(cell)
            for k, r in enumerate(others, start=1):
                c = row_cases[k]
                if bc is None or c is None or bc.error or c.error:
                    row += ["—", ""]
                    continue
                m = headline(bc)
                s = speedup(m, bc.value(m), c.value(m))
                p = None
                xs, ys = bc.samples("time"), c.samples("time")
                if len(xs) >= 2 and len(ys) >= 2:
                    p = mann_whitney(xs, ys)[1]
                noise = combined_noise(bc, c)
                res.changes.append((fam, n, r.label, s, p, noise))
                pcell = "n/a" if p is None else f"{p:.3f}"
                if p is not None and p < alpha and s is not None:
                    pcell += " ▲" if s > 1 else " ▼"
                quiet = within_noise(s, noise)
                row += [f"within noise ({fmt_change(s)})" if quiet else fmt_change(s), pcell]
            for c, r in zip(row_cases, good):
                if c is not None and all(c2 is None for c2 in row_cases if c2 is not c):
                    only[r.label] += 1
            t.add(row)

        # Geometric mean over cases every run has, so the set is the same in each column.
        geo = ["geomean"]
        common = [i for i in range(len(fam_names))
                  if all(cs[i] is not None and not cs[i].error for cs in cases_by_run)]
        for m in cols:
            base_g = None
            for k, cs in enumerate(cases_by_run):
                vals = [cs[i].value(m) for i in common]
                g = geomean(vals) if vals and all(v is not None for v in vals) else None
                cell = loader.fmt_metric(m, g)
                if k == 0:
                    base_g = g
                elif base_g and g:
                    cell += f" ({g / base_g:.2f}×)"
                geo.append(cell)
        for k, r in enumerate(others, start=1):
            sp = [s for (f, n, lab, s, _, _) in res.changes if f == fam and lab == r.label]
            geo += [fmt_change(geomean(sp)), ""]
        if common:
            t.add(geo)
            if len(good) > 2:
                t.notes.append(f"geomean values: over the {len(common)} case(s) every run has; "
                               "change: over each run's cases matched with the baseline.")
        for lab, cnt in only.items():
            if cnt and len(good) > 1:
                t.notes.append(f"{cnt} case(s) only in {lab}.")
        t.notes.append(f"change: speedup of {', '.join(sorted({headline(c) for c in cases_by_run[0] if c}) or ['time'])}"
                       f" vs {base.label}; p: Mann-Whitney U on per-repetition times"
                       f" (▲/▼ significant at alpha={alpha}); n/a: fewer than 2 repetitions;"
                       " within noise: |change| < sqrt(a² + b²), a and b each run's noise (cv of"
                       " its repetitions, else ci_pct/2, else cv_pct).")
        res.tables.append(t)
    return res


def slower_than(res, pct):
    """Matched cases whose change is worse than -pct percent."""
    limit = 1 - pct / 100.0
    return [(f, n, lab, s) for (f, n, lab, s, _, _) in res.changes if s is not None and s < limit]


def add_arguments(p):
    p.add_argument("files", nargs="+", help="xfbench / peer runner JSON files; the first is the baseline")
    p.add_argument("--labels", help="comma-separated run labels (default: file names)")
    p.add_argument("--format", choices=["text", "md"], default="text", help="stdout format")
    p.add_argument("--markdown", metavar="FILE", help="also write the report as Markdown to FILE")
    p.add_argument("--metrics", help="comma-separated metrics to show (default: TFLOPS,GB/s,busbw,"
                   "samples/s,latency_us where present, and time)")
    p.add_argument("--family", help="comma-separated families to show (default: all)")
    p.add_argument("--filter", help="regex on case names")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the U test (0.05)")
    p.add_argument("--match-backend", metavar="MAP", default=None,
                   help="rename layer backends before matching, FROM=TO,... (default "
                        "torch-sdpa=fused,torch-eager=unfused; 'none' to disable)")
    p.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help="exit 1 if any matched case is more than PCT percent slower than the baseline")


def render(res, fmt):
    fn = to_markdown if fmt == "md" else to_text
    return "\n".join(fn(t) for t in [res.context, *res.tables])


def main(args):
    try:
        bmap = loader.parse_backend_map(args.match_backend)
    except ValueError as e:
        loader.warn(f"error: {e}")
        return 2
    labels = args.labels.split(",") if args.labels else None
    runs = loader.load_all(args.files, labels, bmap)
    if len(args.files) < 2:
        loader.warn("note: compare needs two or more files to show changes; showing one run")
    res = compare(runs,
                  metrics=args.metrics.split(",") if args.metrics else None,
                  alpha=args.alpha,
                  family=set(args.family.split(",")) if args.family else None,
                  name_filter=args.filter)
    sys.stdout.write(render(res, args.format))
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(render(res, "md"))
    rc = 0
    if args.fail_if_slower is not None:
        slow = slower_than(res, args.fail_if_slower)
        for f, n, lab, s in slow:
            loader.warn(f"slower: {n} in {lab}: {fmt_change(s)} (limit -{args.fail_if_slower:g}%)")
        if slow:
            loader.warn(f"FAIL: {len(slow)} case(s) more than {args.fail_if_slower:g}% slower")
            rc = 1
    if not all(r.ok for r in runs):
        rc = 2
    return rc
