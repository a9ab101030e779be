"""`noise`: how well runs repeat -- per family, the spread of each case over its repetitions.

For every case with at least two repetitions (--benchmark_repetitions=N), the coefficient of
variation of the metric over them (sample standard deviation / mean, as Google Benchmark's `cv`
aggregate); per family the distribution of those CVs (median, 90th percentile, max) and how many
cases reach --limit. Cases whose median launch is shorter than --min-time-us are counted apart:
below ~50 us a launch measures the launch path more than the GPU. --check exits 1 when any timed
case reaches the limit, so a machine's stability can gate a run.
"""

import math
import statistics

from . import loader
from .render import Table, to_markdown, to_text


def add_arguments(p):
    p.add_argument("files", nargs="+", help="xfbench / peer runner JSON files with repetitions")
    p.add_argument("--metric", default="time",
                   help="what varies: time (default; the launch time) or a counter (TFLOPS, GB/s, ...)")
    p.add_argument("--limit", type=float, default=1.0, help="CV limit in percent (default 1)")
    p.add_argument("--min-time-us", type=float, default=50.0,
                   help="cases with shorter launches are counted apart (default 50)")
    p.add_argument("--cases", action="store_true", help="also list every case with its CV")
    p.add_argument("--format", choices=["text", "md"], default="text", help="stdout format")
    p.add_argument("--check", action="store_true", help="exit 1 if any case reaches --limit")


def cv_pct(values):
    """Percent CV of repetitions (sample standard deviation / mean); None below two."""
    if len(values) < 2:
        return None
    m = statistics.mean(values)
    return 100 * statistics.stdev(values) / m if m else None


def _quantile(sorted_values, q):
    """Nearest-rank quantile of an ascending list."""
    i = min(len(sorted_values) - 1, max(0, int(-(-q * len(sorted_values) // 1)) - 1))
    return sorted_values[i]


def case_noise(runs, metric, min_time_s):
    """[(family, name, cv %, reps, timed)] for every case with >= 2 repetitions; timed: its median
    launch lasts at least min_time_s."""
    out = []
    for run in runs:
        for case in run.cases.values():
            cv = cv_pct(case.samples(metric))
            if cv is None:
                continue
            t = case.value("time")
            out.append((case.family, case.name, cv, case.n_reps, t is not None and t >= min_time_s))
    return out


def family_table(rows, limit):
    t = Table(f"CV over repetitions by family (cases with launches >= the minimum; limit {limit:g}%)",
              ["family", "cases", "median %", "p90 %", "max %", f">= {limit:g}%", "short cases"])
    families = []
    for fam, *_ in rows:
        if fam not in families:
            families.append(fam)
    for fam in families:
        timed = sorted(cv for f, _, cv, _, ok in rows if f == fam and ok)
        short = sum(1 for f, _, _, _, ok in rows if f == fam and not ok)
        if timed:
            t.add([fam, len(timed), f"{statistics.median(timed):.2f}", f"{_quantile(timed, 0.9):.2f}",
                   f"{timed[-1]:.2f}", sum(1 for cv in timed if cv >= limit), short])
        else:
            t.add([fam, 0, "—", "—", "—", 0, short])
    return t


def main(args):
    loader.require(0 < args.limit < math.inf, "--limit", args.limit, "must be a percentage above 0")
    loader.require(0 <= args.min_time_us < math.inf, "--min-time-us", args.min_time_us,
                   "must be 0 or more")
    runs = loader.load_all(args.files)
    usable = [r for r in runs if r.ok]
    if not usable:
        return 2  # each file has said why in its line
    have = list(dict.fromkeys(m for r in usable for c in r.cases.values() for m in c.metrics()))
    loader.unknown("--metric", [args.metric], have, "metric")
    rows = case_noise(usable, args.metric, args.min_time_us * 1e-6)
    render = to_markdown if args.format == "md" else to_text
    if not rows:
        loader.warn("noise: no case has two or more repetitions (run with --benchmark_repetitions=5)")
        return 2 if loader.bad_input(runs) else 1
    out = render(family_table(rows, args.limit)) + "\n"
    if args.cases:
        t = Table("Cases", ["case", "reps", "CV %", ""])
        for _, name, cv, reps, ok in rows:
            t.add([name, reps, f"{cv:.2f}", "" if ok else "short"])
        out += render(t) + "\n"
    loader.write_stdout(out)
    over = [(name, cv) for _, name, cv, _, ok in rows if ok and cv >= args.limit]
    for name, cv in over:
        loader.warn(f"noise: {name}: CV {cv:.2f}% >= {args.limit:g}%")
    if loader.bad_input(runs):
        return 2
    return 1 if args.check and over else 0
