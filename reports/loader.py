"""Shared loader: read xfbench (Google Benchmark 1.7.1) JSON into runs of cases.

Every command goes through here, so the rules live once:
  * a case's value is the median over its repetitions (DESIGN.md: "reports use the median");
    when a file holds only aggregates (--benchmark_report_aggregates_only) the `_median`
    aggregate is used, then `_mean`;
  * `/manual_time` (and Google Benchmark's other timing suffixes) are stripped from names;
  * bad input never stops a report: each problem is one line on stderr and is also kept in
    `Run.problems` so a command can decide its exit code.
Only the standard library is used so `compare` and `table` run anywhere.
"""

import json
import math
import os
import re
import statistics
import sys

# Keys of a Google Benchmark entry that are not user counters.
_NON_COUNTERS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type",
    "repetitions", "repetition_index", "threads", "iterations", "real_time", "cpu_time",
    "time_unit", "label", "error_occurred", "error_message", "aggregate_name",
    "aggregate_unit", "big_o", "rms", "complexity_n",
}
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# Suffixes Google Benchmark appends for the timing mode / fixed repetitions; they say how a case
# was timed, not what it is, so two runs must match without them.
_SUFFIX = re.compile(r"(/(manual_time|real_time|process_time|repeats:\d+|iterations:\d+|min_time:[0-9.]+))+$")

# The torch peer runner names its layer backends torch-eager / torch-sdpa; by default they are
# matched against xfbench's unfused / fused layers so `compare` lines them up without options.
DEFAULT_BACKEND_MAP = {"torch-sdpa": "fused", "torch-eager": "unfused"}

# Context keys a reader needs to judge whether two runs are comparable, in display order.
CONTEXT_KEYS = [
    "gpu_name", "gpu_cc", "gpu_sm_count", "gpu_mem_GB", "gpu_max_sm_MHz", "gpu_max_mem_MHz",
    "driver_version", "cuda_runtime", "cublas_version", "cudnn_version", "nccl_version",
    "xfbench_version", "xfbench_runner", "torch_version", "transformers_version",
    "xfbench_mode", "protocol_min_time", "protocol_max_noise_pct", "protocol_timeout",
    "protocol_min_warmup", "protocol_capped_warmup", "protocol_window_ms", "host_name", "date",
]


def warn(msg):
    """One line on stderr; reports keep going."""
    print(msg, file=sys.stderr)


def strip_name(name):
    return _SUFFIX.sub("", name)


def parse_name(name):
    """`Family/a/b/key:v/...` -> (family, [a, b], {key: v}). Values stay strings."""
    parts = name.split("/")
    variants, params = [], {}
    for p in parts[1:]:
        if ":" in p:
            k, v = p.split(":", 1)
            params[k] = v
        else:
            variants.append(p)
    return parts[0], variants, params


def as_number(v):
    """'8192' -> 8192, '1.5' -> 1.5, other strings unchanged (for sorting axes numerically)."""
    try:
        return int(v)
    except (TypeError, ValueError):
        try:
            return float(v)
        except (TypeError, ValueError):
            return v


class Case:
    """One benchmark case of one run: repetitions, aggregates, or an error."""

    def __init__(self, name, raw_name):
        self.name = name                  # display/matching name (suffix stripped, backend mapped)
        self.raw_name = raw_name          # as written in the file
        self.family, self.variants, self.params = parse_name(name)
        self.reps = []                    # iteration entries, one per repetition
        self.aggs = {}                    # aggregate_name -> entry
        self.error = None                 # error message if every repetition failed
        self.label = ""

    @property
    def unsupported(self):
        """Not run because this machine cannot (xfbench's and the peers' 'unsupported: why')."""
        return bool(self.error) and self.error.lower().startswith("unsupported")

    def error_cell(self):
        """What a table cell of a failed case shows."""
        return "n/a" if self.unsupported else "error"

    def _entries(self):
        """Entries the value is taken from: repetitions, else the median/mean aggregate."""
        if self.reps:
            return self.reps
        for agg in ("median", "mean"):
            if agg in self.aggs:
                return [self.aggs[agg]]
        return []

    def samples(self, metric):
        """Per-repetition values of `metric` ('time' is real_time in seconds)."""
        out = []
        for e in self.reps:
            v = _metric(e, metric)
            if v is not None:
                out.append(v)
        return out

    def value(self, metric):
        vals = [v for v in (_metric(e, metric) for e in self._entries()) if v is not None]
        return statistics.median(vals) if vals else None

    def metrics(self):
        """Counter names present (time first)."""
        names = ["time"]
        for e in self._entries():
            for k, v in e.items():
                if k not in _NON_COUNTERS and _is_num(v) and k not in names:
                    names.append(k)
        return names

    @property
    def n_reps(self):
        return len(self.reps)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _metric(entry, metric):
    if metric == "time":
        t = entry.get("real_time")
        unit = _UNIT_SECONDS.get(entry.get("time_unit", "ns"))
        if not _is_num(t) or unit is None:
            return None
        return t * unit
    v = entry.get(metric)
    if not _is_num(v) or math.isnan(v):
        return None
    return float(v)


class Run:
    """One JSON file: context, cases by name (in file order), and problems found."""

    def __init__(self, path, label=None):
        self.path = path
        self.label = label or os.path.splitext(os.path.basename(path))[0]
        self.context = {}
        self.cases = {}
        self.problems = []   # (kind, message): 'bad-file', 'empty', 'error' or 'unsupported'

    def problem(self, kind, msg, quiet=False):
        self.problems.append((kind, msg))
        if not quiet:
            warn(f"{self.path}: {msg}")

    @property
    def ok(self):
        return not any(k == "bad-file" for k, _ in self.problems)

    def families(self):
        seen = []
        for c in self.cases.values():
            if c.family not in seen:
                seen.append(c.family)
        return seen

    def by_family(self, family):
        return [c for c in self.cases.values() if c.family == family]


def map_backend(name, backend_map):
    """Rename the backend component (2nd path part) e.g. BertLayer/torch-sdpa/... -> BertLayer/fused/..."""
    parts = name.split("/")
    if len(parts) > 1 and parts[1] in backend_map:
        parts[1] = backend_map[parts[1]]
    return "/".join(parts)


def load(path, label=None, backend_map=None, quiet=False):
    """Read one file. Never raises for bad content: problems go to stderr and Run.problems."""
    run = Run(path, label)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        run.problem("bad-file", f"cannot read: {e.strerror or e}", quiet)
        return run
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        # A crashed run leaves a truncated file; say so in one line.
        run.problem("bad-file", f"not valid JSON ({e}); truncated or not an xfbench output?", quiet)
        return run
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        run.problem("bad-file", 'not xfbench/Google Benchmark JSON (no "benchmarks" list)', quiet)
        return run
    ctx = doc.get("context")
    run.context = ctx if isinstance(ctx, dict) else {}

    backend_map = DEFAULT_BACKEND_MAP if backend_map is None else backend_map
    raw_names = set()
    for e in doc["benchmarks"]:
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            continue
        base = strip_name(e.get("run_name") or e["name"])
        raw_names.add(base)
    for e in doc["benchmarks"]:
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            run.problem("bad-file", "skipped a benchmark entry without a name", quiet)
            continue
        raw = strip_name(e.get("run_name") or e["name"])
        name = map_backend(raw, backend_map)
        if name != raw and name in raw_names:
            name = raw  # the mapped name exists in this file already: keep both apart
        case = run.cases.get(name)
        if case is None:
            case = run.cases[name] = Case(name, raw)
        if e.get("label"):
            case.label = e["label"]
        if e.get("error_occurred"):
            case.error = e.get("error_message") or "error (no message)"
        elif e.get("run_type") == "aggregate":
            case.aggs[e.get("aggregate_name", "")] = e
        else:
            case.reps.append(e)

    for case in run.cases.values():
        if case.error and (case.reps or case.aggs):
            case.error = None  # some repetitions succeeded; the failed ones are dropped
        if case.unsupported:  # listed by the tables, not a failure
            run.problem("unsupported", f"{case.name}: {case.error}", quiet=True)
        elif case.error:
            run.problem("error", f"{case.name}: {case.error}", quiet)
    if not run.cases:
        run.problem("empty", "empty run (no benchmark results)", quiet)
    return run


def load_all(paths, labels=None, backend_map=None, quiet=False):
    """Load several files; labels default to file stems, made unique."""
    runs = []
    used = set()
    for i, p in enumerate(paths):
        label = labels[i] if labels and i < len(labels) else None
        r = load(p, label, backend_map, quiet)
        base, n = r.label, 2
        while r.label in used:
            r.label = f"{base}#{n}"
            n += 1
        used.add(r.label)
        runs.append(r)
    return runs


def merge(runs):
    """Several runs of one machine as one (the first's context; a case in several from the
    first; every run's problems)."""
    if len(runs) == 1:
        return runs[0]
    merged = Run(runs[0].path, runs[0].label)
    merged.context = runs[0].context
    for r in runs:
        for name, c in r.cases.items():
            merged.cases.setdefault(name, c)
        merged.problems += r.problems
    return merged


def parse_backend_map(text):
    """'torch-sdpa=fused,torch-eager=unfused' -> dict; 'none' or '' -> {} (no mapping)."""
    if text is None:
        return dict(DEFAULT_BACKEND_MAP)
    if text.strip().lower() in ("", "none"):
        return {}
    out = {}
    for item in text.split(","):
        if "=" not in item:
            raise ValueError(f"bad --match-backend item {item!r}: expected FROM=TO")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


# ---- formatting shared by the commands -------------------------------------------------------

def fmt_time(seconds):
    if seconds is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_num(v):
    if v is None:
        return "—"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e7:
        return f"{v:.4g}"
    if a >= 1000:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def fmt_metric(metric, v):
    return fmt_time(v) if metric == "time" else fmt_num(v)


def fmt_bytes(n):
    n = as_number(n)
    if not isinstance(n, (int, float)):
        return str(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % (scale // 1024 or 1) == 0:
            v = n / scale
            return f"{v:g} {unit}"
    return f"{n:g} B"


def context_rows(runs, keys=None):
    """[(key, [value per run], differs)] for the context keys any run has."""
    keys = keys or CONTEXT_KEYS
    rows = []
    for k in keys:
        vals = [str(r.context.get(k, "")) for r in runs]
        if not any(vals):
            continue
        # date and host always differ between runs; they are information, not a mismatch
        differs = len(set(vals)) > 1 and k not in ("date", "host_name")
        rows.append((k, vals, differs))
    return rows
