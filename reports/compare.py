"""`compare`: two or more runs side by side, per family, with ratios, a Mann-Whitney U test and
geometric means.

Google Benchmark's own tools/compare.py compares time only; xfbench's numbers that matter are
counters (TFLOPS, GB/s, busbw, samples/s), so those are shown, with time, for every run. The
first run is the baseline. "Change" is the speedup of the family's headline metric (higher
throughput or lower time), so `+5%` is always better and `--fail-if-slower 5` fails on any case at
`-5%` or worse. A change smaller than the two runs' combined noise is shown as `within noise`.

The text layout fits 120 columns: each case's headline metric (TrainStep: samples/s and mem_GB),
headers on two lines, the name parts every case of a table shares in its title when the
whole names do not fit; --wide (and
--format md) show every metric and whole names. A value marked `~` is noisy (the protocol's
time-out), `†` throttled (clocks held down, e.g. at the power cap). The `Runs` table flags a
different GPU, driver or protocol (`≠ differs`); versions each runner writes of its own software
(xfbench's cuBLAS, the peer's torch) are shown, not flagged.
"""

import functools
import math
import re
import statistics

from . import loader
from .render import Table, short_names, to_markdown, to_text

# The counters that matter, in column order; the first one a case has is its headline metric.
COUNTERS = ["TFLOPS", "GB/s", "busbw", "samples/s", "latency_us"]
LOWER_IS_BETTER = {"time", "latency_us", "mem_GB"}
# A training step is judged by samples/s and its memory matters (the seeds' three-panel chart).
FAMILY_METRICS = {"TrainStep": ["samples/s", "TFLOPS", "mem_GB", "time"]}
# The narrow layout (a terminal's 120 columns): the headline metric alone (time is its inverse),
# TrainStep's memory beside samples/s.
NARROW_FAMILY_METRICS = {"TrainStep": ["samples/s", "mem_GB"]}
WIDTH = 120


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
    if not (loader.valid(base) and loader.valid(new)) or base <= 0 or new <= 0:
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
    cv, reps = (case.aggs.get("cv", {}).get(k) for k in ("real_time", "repetitions"))
    ok = all(isinstance(v, (int, float)) and loader.valid(float(v)) for v in (cv, reps))
    return float(cv) if ok and reps >= 2 else None


def run_noise(case):
    """Relative noise of one run of a case, or None when unknown: the cv of its repetitions when it
    has two or more; else, for one steady-state repetition, ci_pct / 2 (the standard error of its
    mean, from batch means) when the run has it, else its cv_pct (runs before protocol v2)."""
    spread = _spread(case)
    if spread is not None:
        return spread
    ci = case.value("ci_pct")
    if loader.valid(ci):
        return ci / 2 / 100
    cv = case.value("cv_pct")
    return cv / 100 if loader.valid(cv) else None


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
        # what the gate needs besides the changes: per later run, (run, [baseline cases it
        # misses], [(case, error) it failed], number of baseline cases measured)
        self.unmatched = []


def context_table(runs):
    """Each run's context side by side. `≠ differs`: the GPU, driver or protocol differ (a
    warning under the table); `differs`: another value two runs both write differs (a library
    version, say); a key only one runner writes (the peer's torch_version) is no difference."""
    t = Table("Runs", ["", *[r.label for r in runs], ""])
    t.add(["file", *[r.path for r in runs], ""])
    setup = []
    for key, vals, differs in loader.context_rows(runs):
        other = key not in ("date", "host_name") and len({v for v in vals if v}) > 1
        t.add([key, *[v or "—" for v in vals], "≠ differs" if differs else "differs" if other else ""])
        if differs:
            setup.append(key)
    if setup:
        t.notes.append(f"note: {', '.join(setup)} differ (≠); ratios compare different setups.")
    return t


def compare(runs, metrics=None, alpha=0.05, family=None, name_filter=None, narrow=False):
    """Build per-family comparison tables of `runs` against runs[0]. narrow: the terminal's
    layout (headline metric only, headers on two lines, no p column when no case has one, the
    name parts every case of a table shares in its title when whole names do not fit)."""
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
        if narrow and not metrics:  # each case's headline metric (P2P: GB/s and latency_us)
            heads = {headline(c) for cs in cases_by_run for c in cs if c is not None and not c.error}
            cols = [m for m in NARROW_FAMILY_METRICS.get(fam, [m for m in cols if m in heads])
                    if m in present] or cols[:1]

        sep = "\n" if narrow else " "
        headers = ["case"]
        for m in cols:
            headers += [f"{m}{sep}{r.label}" for r in good]
        for r in others:
            headers += [f"change{sep}{r.label}", f"p{sep}{r.label}"]
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
                        cell = loader.fmt_case(c, m, v)
                        if k and loader.valid(bv) and bv and loader.valid(v):
                            cell += f" ({v / bv:.2f}×)"
                        row.append(cell)
            for k, r in enumerate(others, start=1):
                c = row_cases[k]
                if bc is None or c is None or bc.error or c.error:
                    row += ["—", ""]
                    continue
                m = headline(bc)
                s = speedup(m, bc.value(m), c.value(m))
                if loader.is_invalid(bc.value(m)) or loader.is_invalid(c.value(m)):
                    row += ["invalid", ""]  # the loader said which value; no change, no p
                    continue
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
                  if all(cs[i] is not None and not cs[i].error and not cs[i].invalid
                         for cs in cases_by_run)]
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
        t.notes += loader.marks_legend(c for r in t.rows for c in r[1:])
        if narrow:
            _narrow(t, len(others))
        res.tables.append(t)

    # The gate's other half: a baseline case a later run lacks (or cannot run) or failed.
    measured = [n for n in names if loader.parse_name(n)[0] in families
                and n in base.cases and not base.cases[n].error]
    for r in others:
        missing = [n for n in measured if n not in r.cases or r.cases[n].unsupported]
        failed = [(n, r.cases[n].error) for n in measured
                  if n in r.cases and r.cases[n].error and not r.cases[n].unsupported]
        if missing or failed:
            res.unmatched.append((r, missing, failed, len(measured)))
    return res


def _narrow(t, n_others):
    """The terminal's layout of a family's table: p columns with no p value at all (fewer than 2
    repetitions) are dropped and, when it is still wider than WIDTH, the name parts every case
    shares go into the title."""
    first_p = len(t.headers) - 2 * n_others + 1
    drop = [i for i in range(first_p, len(t.headers), 2)
            if all(r[i] in ("", "n/a", "—") for r in t.rows)]
    if drop:
        t.headers = [h for i, h in enumerate(t.headers) if i not in drop]
        t.rows = [[c for i, c in enumerate(r) if i not in drop] for r in t.rows]
    notes, t.notes = t.notes, []
    fits = max(len(line) for line in to_text(t).splitlines()) <= WIDTH
    t.notes = notes
    names = [r[0] for r in t.rows if r[0] != "geomean"]
    short, common = short_names(names) if not fits else (names, [])
    if common:
        shared = [c for c in common if c != t.title]
        if shared:
            t.title += " — every case: " + "/".join(shared)
        short = iter(short)
        for r in t.rows:
            if r[0] != "geomean":
                r[0] = next(short)


def slower_than(res, pct):
    """Matched cases whose change is worse than -pct percent."""
    limit = 1 - pct / 100.0
    return [(f, n, lab, s) for (f, n, lab, s, _, _) in res.changes if s is not None and s < limit]


def _some(items, k=3):
    items = list(items)
    return "; ".join(items[:k]) + (f"; and {len(items) - k} more" if len(items) > k else "")


def unmatched_lines(res):
    """One line per later run that misses or failed baseline cases (the gate fails on them)."""
    for r, missing, failed, n in res.unmatched:
        parts = []
        if missing:
            parts.append(f"{len(missing)} of {n} baseline case(s) missing ({_some(missing)})")
        if failed:
            parts.append(f"{len(failed)} case(s) failed ({_some(f'{c}: {e}' for c, e in failed)})")
        yield f"FAIL: {r.path}: {', '.join(parts)}"


def add_arguments(p):
    p.add_argument("files", nargs="+",
                   help="xfbench or peer runner JSON files; the first is the baseline, each later "
                        "one is compared with it")
    p.add_argument("--labels", help="comma-separated run names for the headers, one per file "
                                    "(default: the file names without .json)")
    p.add_argument("--format", choices=["text", "md"], default="text",
                   help="stdout format: text (aligned columns that fit 120 columns unless --wide) "
                        "or md (Markdown, every column; default text)")
    p.add_argument("--wide", action="store_true",
                   help="text: every metric, time included, whole case names and one-line "
                        "headers, however wide (the layout of --format md)")
    p.add_argument("--markdown", metavar="FILE",
                   help="also write the report as Markdown (every column) to FILE, e.g. for a "
                        "pull-request comment")
    p.add_argument("--metrics", help="comma-separated metrics to show (default: each case's "
                   "headline metric, the first of TFLOPS, GB/s, busbw, samples/s, latency_us it "
                   "has, and for TrainStep mem_GB; --wide and md: all of those present, and time)")
    p.add_argument("--family", help="comma-separated families to show (default: all)")
    p.add_argument("--filter", metavar="REGEX", help="only the cases whose name matches REGEX "
                                                     "(Python syntax, searched anywhere in the name)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of the Mann-Whitney U test that marks a change ▲/▼ "
                        "(default 0.05)")
    p.add_argument("--match-backend", metavar="MAP", default=None,
                   help="rename layer backends before matching, FROM=TO,... (default "
                        "torch-sdpa=fused,torch-eager=unfused, so the PyTorch peer lines up with "
                        "xfbench; 'none' keeps the names as they are); an item KEY:A=KEY:B renames "
                        "a name part, e.g. torchao-compile=fused,recipe:current=recipe:delayed "
                        "pairs torchao's FP8 step with xfbench's delayed-recipe one")
    p.add_argument("--fail-if-slower", type=float, metavar="PCT",
                   help="exit 1 if any matched case is more than PCT percent slower than the "
                        "baseline, or a later run misses or failed a case the baseline measured")


def render(res, fmt, width=None):
    if fmt == "md":
        return "\n".join(to_markdown(t) for t in [res.context, *res.tables])
    return "\n".join(to_text(t, width) for t in [res.context, *res.tables])


def main(args):
    bmap = loader.parse_backend_map(args.match_backend)
    labels = loader.labels_for(args.labels, args.files)
    loader.regex(args.filter, "--filter")
    loader.require(0 < args.alpha < 1, "--alpha", args.alpha, "must be between 0 and 1")
    families = loader.split_list(args.family, "--family")
    metrics = loader.split_list(args.metrics, "--metrics")
    gate = args.fail_if_slower
    if gate is not None:
        loader.require(0 <= gate < 100, "--fail-if-slower", gate, "must be a percentage from 0 to below 100")
        loader.require(len(args.files) > 1, "--fail-if-slower", f"{gate:g}",
                       "needs a baseline and a file to compare with it")
    if args.markdown:
        loader.output_file(args.markdown, "--markdown")
    # Under the gate a later run's failed cases are named in its one FAIL line instead.
    quiet = [False] + [{"error"}] * (len(args.files) - 1) if gate is not None else False
    runs = loader.load_all(args.files, labels, bmap, quiet)
    usable = [r for r in runs if r.ok]
    if usable:  # names the runs lack (checked where there are runs to look in)
        have = [f for r in usable for f in r.families()]
        loader.unknown("--family", families, list(dict.fromkeys(have)), "family")
        shown = [c for r in usable for c in r.cases.values() if not families or c.family in families]
        loader.unknown("--metrics", metrics,
                       list(dict.fromkeys(m for c in shown for m in c.metrics())), "metric")
        if args.filter and not any(re.search(args.filter, c.name) for c in shown):
            raise loader.BadInput(f"--filter {args.filter}: matches no case"
                                  + (f" of --family {args.family}" if families else ""))
    if len(args.files) < 2 and all(r.ok for r in runs):
        loader.warn("note: compare needs two or more files to show changes; showing one run")
    res = compare(runs, metrics=metrics, alpha=args.alpha,
                  family=set(families) if families else None, name_filter=args.filter)
    if args.format == "text" and not args.wide:
        shown = compare(runs, metrics=metrics, alpha=args.alpha, family=set(families)
                        if families else None, name_filter=args.filter, narrow=True)
        loader.write_stdout(render(shown, "text", WIDTH))
    else:
        loader.write_stdout(render(res, args.format))
    if args.markdown:
        loader.write_file(args.markdown, render(res, "md"), "--markdown")
    rc = 0
    if gate is not None:
        slow = slower_than(res, gate)
        for f, n, lab, s in slow:
            loader.warn(f"slower: {n} in {lab}: {fmt_change(s)} (limit -{gate:g}%)")
        if slow:
            loader.warn(f"FAIL: {len(slow)} case(s) more than {gate:g}% slower")
        for line in unmatched_lines(res):
            loader.warn(line)
        if slow or res.unmatched:
            rc = 1
    return 2 if loader.bad_input(runs) else rc
