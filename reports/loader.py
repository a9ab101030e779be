"""Shared loader: read xfbench (Google Benchmark 1.7.1) JSON into runs of cases.

Every command goes through here, so the rules live once:
  * a case's value is the median over its repetitions (DESIGN.md: "reports use the median");
    when a file holds only aggregates (--benchmark_report_aggregates_only) the `_median`
    aggregate is used, then `_mean`;
  * `/manual_time` (and Google Benchmark's other timing suffixes) are stripped from names;
  * bad input never stops a report: each problem is one line on stderr and is also kept in
    `Run.problems` so a command can decide its exit code (`bad_input`: exit 2);
  * a value no benchmark writes (NaN, infinite, negative, a time that is not a number of a known
    unit) makes its metric `invalid`: shown so, never as `—` (missing), and a problem;
  * an interrupted run (the host's top-level "interrupted" key, or a file cut off inside its
    "benchmarks" list by a kill) is read up to where it stops and said to be interrupted.
Arguments that cannot be used raise BadInput: `python3 -m reports` prints it as one line and exits 2.
Only the standard library is used so `compare` and `table` run anywhere.
"""

import json
import math
import os
import re
import statistics
import sys

from .fmt import (MARKS, fmt_bytes, fmt_case, fmt_metric, fmt_num, fmt_time,  # noqa: F401
                  is_invalid, marks_legend, valid)
from .names import as_number, name_axes, parse_name, parse_name_schema  # noqa: F401

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


# Problems (Run.problems kinds) that make a command exit 2: the file cannot be used at all
# (UNUSABLE), or it holds entries or values no benchmark writes. 'error' (a case failed),
# 'unsupported' (n/a on this machine) and 'interrupted' are results, not bad input.
UNUSABLE = {"bad-file", "empty"}
BAD_INPUT = UNUSABLE | {"bad-entry", "invalid"}

# What Case.value() returns for a metric the file holds an invalid value of: NaN, shown `invalid`.
INVALID = float("nan")


class BadInput(ValueError):
    """An argument, or an output that cannot be written: `python3 -m reports` prints
    `error: <message>` as one line on stderr and exits 2 (__main__.main, the one place)."""


def warn(msg):
    """One line on stderr (a message with line breaks is joined); reports keep going."""
    print(" ".join(str(msg).splitlines()), file=sys.stderr)


def strip_name(name):
    return _SUFFIX.sub("", name)



class Case:
    """One benchmark case of one run: repetitions, aggregates, or an error."""

    def __init__(self, name, raw_name):
        self.name = name                  # display/matching name (suffix stripped, backend mapped)
        self.raw_name = raw_name          # as written in the file
        self.family, self.variants, self.params = parse_name(name)
        self.axes = name_axes(name) or {}  # by name_schema.txt; {} for a name of no shape
        self.reps = []                    # iteration entries, one per repetition
        self.aggs = {}                    # aggregate_name -> entry
        self.error = None                 # error message if every repetition failed
        self.label = ""
        self.labels = []                  # every distinct label of its entries, in file order
        self.invalid = {}                 # metric -> what the file holds, e.g. "TFLOPS = nan"
        self.runner = "xfbench"           # the context's xfbench_runner ("pytorch" for the peer)

    def _label_part(self, key):
        """The text after `key:` in any of the case's labels ('; '-separated parts), or ''."""
        for label in self.labels:
            for part in label.split(";"):
                part = part.strip()
                if part.startswith(key + ":"):
                    return part[len(key) + 1:].strip() or key
        return ""

    @property
    def noisy(self):
        """Why the protocol gave up on it ('ci ±5.75% drift 12.01% after 10.0s'), or ''."""
        return self._label_part("noisy")

    @property
    def throttled(self):
        """The clock-event reasons active while it ran ('sw_power_cap 100%'), or ''."""
        return self._label_part("throttle")

    @property
    def marks(self):
        """What follows a number of this case wherever it is shown: MARKS."""
        return ("~" if self.noisy else "") + ("†" if self.throttled else "")

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
        """Per-repetition values of `metric` ('time' is real_time in seconds); none when invalid."""
        if metric in self.invalid:
            return []
        out = []
        for e in self.reps:
            v = _metric(e, metric)
            if v is not None:
                out.append(v)
        return out

    def value(self, metric):
        """Median over the repetitions; None when missing, INVALID when the file's is invalid."""
        if metric in self.invalid:
            return INVALID
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


def _unit(entry):
    """Seconds per time_unit of an entry (ns when absent), None when it is no known unit."""
    unit = entry.get("time_unit", "ns")
    return _UNIT_SECONDS.get(unit) if isinstance(unit, str) else None


def _metric(entry, metric):
    if metric == "time":
        t = entry.get("real_time")
        unit = _unit(entry)
        if not _is_num(t) or unit is None:
            return None
        return t * unit
    v = entry.get(metric)
    if not _is_num(v) or not math.isfinite(v):
        return None
    return float(v)


def _invalid_values(entry):
    """{metric: what the entry holds} for values no benchmark writes: a real_time that is not a
    number or has an unknown time_unit; NaN, infinite or negative times and counters."""
    bad = {}
    t = entry.get("real_time")
    if t is not None and not _is_num(t):
        bad["time"] = f"real_time = {t!r}"
    elif t is not None and _unit(entry) is None:
        bad["time"] = f"time_unit = {entry.get('time_unit')!r}"
    for k, v in entry.items():
        if (k == "real_time" or k not in _NON_COUNTERS) and _is_num(v) and \
                not (math.isfinite(v) and v >= 0):
            bad["time" if k == "real_time" else k] = f"{k} = {v}"
    return bad


class Run:
    """One JSON file: context, cases by name (in file order), and problems found."""

    def __init__(self, path, label=None):
        self.path = path
        self.label = label or os.path.splitext(os.path.basename(path))[0]
        self.context = {}
        self.cases = {}
        self.interrupted = None  # why the run stopped early, when it did
        # (kind, message): 'bad-file', 'empty', 'bad-entry', 'invalid', 'error', 'unsupported',
        # 'interrupted'
        self.problems = []

    def problem(self, kind, msg, quiet=False):
        """Keep a problem; one line on stderr unless quiet (True, or a set of kinds kept quiet)."""
        self.problems.append((kind, msg))
        if not (quiet is True or (quiet and kind in quiet)):
            warn(f"{self.path}: {msg}")

    @property
    def ok(self):
        """Usable: read, and has cases."""
        return not any(k in UNUSABLE for k, _ in self.problems)

    @property
    def bad_input(self):
        return any(k in BAD_INPUT for k, _ in self.problems)

    def families(self):
        seen = []
        for c in self.cases.values():
            if c.family not in seen:
                seen.append(c.family)
        return seen

    def by_family(self, family):
        return [c for c in self.cases.values() if c.family == family]


def map_backend(name, backend_map):
    """Rename the backend component (2nd path part) e.g. BertLayer/torch-sdpa/... -> BertLayer/fused/...,
    and any key:value part the map names (recipe:current -> recipe:delayed: torchao's scaling is
    the current recipe's, TransformerEngine's default the delayed one)."""
    parts = name.split("/")
    if len(parts) > 1 and ":" not in parts[1] and parts[1] in backend_map:
        parts[1] = backend_map[parts[1]]
    for i in range(2, len(parts)):
        if ":" in parts[i] and parts[i] in backend_map:
            parts[i] = backend_map[parts[i]]
    return "/".join(parts)


def _read(run, quiet):
    """(True, JSON document of run.path, whether it was cut off), or (False, None, False) after
    one line saying why it cannot be used. A file cut off inside its "benchmarks" list (a run
    killed mid-write) gives the entries complete before the cut."""
    try:
        with open(run.path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        run.problem("bad-file", f"cannot read: {e.strerror or e}", quiet)
        return False, None, False
    except UnicodeDecodeError:
        run.problem("bad-file", "not a text file (not UTF-8): not xfbench JSON", quiet)
        return False, None, False
    if not text.strip():
        run.problem("bad-file", "empty file: not xfbench JSON", quiet)
        return False, None, False
    try:
        return True, json.loads(text), False
    except RecursionError:
        run.problem("bad-file", "not valid JSON (nested too deeply)", quiet)
        return False, None, False
    except json.JSONDecodeError as e:
        doc = _parse_cut(text)
        if doc is None:
            run.problem("bad-file", f"not valid JSON ({e}); truncated or not an xfbench output?", quiet)
        return doc is not None, doc, True


def _parse_cut(text):
    """A Google Benchmark JSON document cut off inside its "benchmarks" list: the keys before the
    list and the list's complete entries; None for any other text."""
    dec, space = json.JSONDecoder(), re.compile(r"\s*")
    i = space.match(text).end()
    if not text.startswith("{", i):
        return None
    doc, i = {}, i + 1
    try:
        while True:  # top-level keys up to "benchmarks"
            key, i = dec.raw_decode(text, space.match(text, i).end())
            i = space.match(text, i).end()
            if not isinstance(key, str) or not text.startswith(":", i):
                return None
            i = space.match(text, i + 1).end()
            if key == "benchmarks":
                break
            doc[key], i = dec.raw_decode(text, i)
            i = space.match(text, i).end()
            if not text.startswith(",", i):
                return None
            i += 1
    except (ValueError, RecursionError):
        return None
    if not text.startswith("[", i):
        return None
    entries, i = [], i + 1
    while True:  # entries until the cut
        try:
            entry, i = dec.raw_decode(text, space.match(text, i).end())
        except (ValueError, RecursionError):
            break
        entries.append(entry)
        i = space.match(text, i).end()
        if not text.startswith(",", i):
            break
        i += 1
    doc["benchmarks"] = entries
    return doc


def load(path, label=None, backend_map=None, quiet=False):
    """Read one file. Never raises for bad content: problems go to stderr and Run.problems
    (quiet: True, or a set of problem kinds not to print)."""
    run = Run(path, label)
    ok, doc, cut = _read(run, quiet)
    if not ok:
        return run
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        run.problem("bad-file", 'not xfbench/Google Benchmark JSON (no "benchmarks" list)', quiet)
        return run
    ctx = doc.get("context")
    run.context = ctx if isinstance(ctx, dict) else {}
    if doc.get("interrupted") not in (None, False):  # the host's key after Ctrl-C / SIGTERM
        run.interrupted = str(doc["interrupted"]) or "no reason given"

    backend_map = DEFAULT_BACKEND_MAP if backend_map is None else backend_map
    named = [e for e in doc["benchmarks"]
             if isinstance(e, dict) and isinstance(e.get("name"), str) and e["name"]]

    def base_name(e):
        run_name = e.get("run_name")
        return strip_name(run_name if isinstance(run_name, str) and run_name else e["name"])
    raw_names = {base_name(e) for e in named}
    for e in named:
        raw = base_name(e)
        name = map_backend(raw, backend_map)
        if name != raw and name in raw_names:
            name = raw  # the mapped name exists in this file already: keep both apart
        case = run.cases.get(name)
        if case is None:
            case = run.cases[name] = Case(name, raw)
            case.runner = str(run.context.get("xfbench_runner") or "xfbench")
        if e.get("label"):
            case.label = str(e["label"])
            if case.label not in case.labels:
                case.labels.append(case.label)
        if e.get("error_occurred"):
            case.error = str(e.get("error_message") or "error (no message)")
            continue
        if e.get("run_type") == "aggregate":
            case.aggs[str(e.get("aggregate_name", ""))] = e
            if e.get("aggregate_name") not in ("median", "mean"):
                continue  # a cv of counters that are 0 is NaN in a good file
        else:
            case.reps.append(e)
        case.invalid.update(_invalid_values(e))

    for case in run.cases.values():
        if case.error and (case.reps or case.aggs):
            case.error = None  # some repetitions succeeded; the failed ones are dropped
        if case.unsupported:  # listed by the tables, not a failure
            run.problem("unsupported", f"{case.name}: {case.error}", quiet=True)
        elif case.error:
            run.problem("error", f"{case.name}: {case.error}", quiet)
        elif case.invalid:
            run.problem("invalid", f"{case.name}: invalid value: {', '.join(case.invalid.values())}",
                        quiet)
    if cut:
        run.interrupted = f"file ends early: truncated after {len(run.cases)} cases"
    skipped = len(doc["benchmarks"]) - len(named)
    if not run.cases:
        why = f"interrupted: {run.interrupted}" if run.interrupted else "no benchmark results"
        if skipped:
            why += f"; {skipped} entr{'y' if skipped == 1 else 'ies'} without a name"
        run.problem("empty", f"empty run ({why})", quiet)
        return run
    if skipped:
        run.problem("bad-entry", f"skipped {skipped} benchmark entr{'y' if skipped == 1 else 'ies'}"
                    " without a name", quiet)
    if run.interrupted:
        run.problem("interrupted", f"interrupted run: {run.interrupted}", quiet)
    return run


def load_all(paths, labels=None, backend_map=None, quiet=False):
    """Load several files; labels default to file stems, made unique. quiet: as load's, or a
    list of those, one per file."""
    runs = []
    used = set()
    for i, p in enumerate(paths):
        label = labels[i] if labels and i < len(labels) else None
        r = load(p, label, backend_map, quiet[i] if isinstance(quiet, list) else quiet)
        base, n = r.label, 2
        while r.label in used:
            r.label = f"{base}#{n}"
            n += 1
        used.add(r.label)
        runs.append(r)
    return runs


def merge(runs):
    """Several runs of one machine as one (every run's context keys, the first's where they
    differ; a case in several from the first; every run's problems)."""
    if len(runs) == 1:
        return runs[0]
    merged = Run(runs[0].path, runs[0].label)
    merged.context = {}
    for r in reversed(runs):  # a key the first lacks (the peer writes no peak table) from another
        merged.context.update(r.context)
    for r in runs:
        for name, c in r.cases.items():
            merged.cases.setdefault(name, c)
        merged.problems += r.problems
    return merged


def parse_backend_map(text):
    """'torch-sdpa=fused,torch-eager=unfused' -> dict; 'none' or '' -> {} (no mapping). An item
    KEY:A=KEY:B renames a name part (recipe:current=recipe:delayed), within its key only."""
    if text is None:
        return dict(DEFAULT_BACKEND_MAP)
    if text.strip().lower() in ("", "none"):
        return {}
    out = {}
    for item in text.split(","):
        k, eq, v = (x.strip() for x in item.partition("="))
        if not (k and eq and v):
            raise BadInput(f"--match-backend {text}: {item!r} is not FROM=TO")
        if (":" in k or ":" in v) and k.split(":", 1)[0] != v.split(":", 1)[0]:
            raise BadInput(f"--match-backend {text}: {item!r} renames a name part into another "
                           "key (KEY:A=KEY:B)")
        out[k] = v
    return out


# ---- arguments and outputs: checked before any file is read; BadInput is one line, exit 2 ----

def bad_input(runs):
    """Whether any run holds bad input (BAD_INPUT kinds): the command exits 2."""
    return any(r.bad_input for r in runs)


def read_text(path):
    """A text input's whole content (ncu tables, GEMM plans files); BadInput when unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror or e})") from None


def require(ok, option, value, why):
    if not ok:
        raise BadInput(f"{option} {value:g}: {why}" if isinstance(value, float)
                       else f"{option} {value}: {why}")


def split_list(text, option):
    """'a,b' -> ['a', 'b']; None -> None; an empty item is an error."""
    if text is None:
        return None
    items = [x.strip() for x in text.split(",")]
    require(all(items), option, repr(text), "an empty item in the comma-separated list")
    return items


def labels_for(text, files):
    """--labels: one per file."""
    labels = split_list(text, "--labels")
    if labels is not None:
        require(len(labels) == len(files), "--labels", text,
                f"{len(labels)} label(s) for {len(files)} file(s)")
    return labels


def regex(text, option):
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as e:
        raise BadInput(f"{option} {text}: not a regular expression ({e})") from None


def unknown(option, asked, have, what):
    """Names in `asked` (a list from the command line) that no run has: an error listing them."""
    missing = [a for a in asked or [] if a not in have]
    if missing:
        shown = ", ".join(list(have)[:12]) + (", ..." if len(have) > 12 else "")
        raise BadInput(f"{option} {','.join(missing)}: no {what} of that name in the runs "
                       f"(they have: {shown or 'none'})")


def output_dir(path, option):
    """Make the output folder `path`; an error when it cannot be made or written to."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise BadInput(f"{option} {path}: not a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise BadInput(f"{option} {path}: cannot make this folder ({e.strerror or e})") from None
    if not os.access(path, os.W_OK):
        raise BadInput(f"{option} {path}: folder not writable")


def output_file(path, option, make_folder=False):
    """Check, before any work, that the file `path` can be written: not a folder, its folder
    exists (or is made: make_folder) and is writable. The write itself: write_file."""
    if os.path.isdir(path):
        raise BadInput(f"{option} {path}: is a folder, not a file")
    folder = os.path.dirname(os.path.abspath(path))
    if make_folder and not os.path.exists(folder):
        try:
            os.makedirs(folder)
        except OSError as e:
            raise BadInput(f"{option} {path}: cannot make its folder ({e.strerror or e})") from None
    if not os.path.isdir(folder):
        why = "is not a folder" if os.path.exists(folder) else "does not exist"
        raise BadInput(f"{option} {path}: its folder {folder} {why}")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise BadInput(f"{option} {path}: not writable")


def write_file(path, text, option):
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise BadInput(f"{option} {path}: cannot write ({e.strerror or e})") from None


def write_stdout(text):
    """The report on stdout; a failed write (a full disk) is an error, a closed pipe is not."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise BadInput(f"stdout: cannot write ({e.strerror or e})") from None


# Context keys whose difference makes two runs different setups: the GPU, its driver and how
# each case was timed. Versions of the runner's own software (xfbench's cuBLAS, the peer's
# torch) differ between xfbench and its PyTorch peer by design and are shown, not flagged.
SETUP_KEYS = ["gpu_name", "driver_version", "xfbench_mode", "protocol_min_time",
              "protocol_max_noise_pct", "protocol_timeout", "protocol_min_warmup",
              "protocol_capped_warmup", "protocol_window_ms"]


def context_rows(runs, keys=None):
    """[(key, [value per run], differs)] for the context keys any run has. `differs`: a SETUP_KEYS
    key with two different values (a run that does not write the key is not counted)."""
    keys = keys or CONTEXT_KEYS
    rows = []
    if any(r.interrupted for r in runs):  # first: the numbers below it are a part of a run
        rows.append(("interrupted", [r.interrupted or "" for r in runs], False))
    for k in keys:
        vals = [str(r.context.get(k, "")) for r in runs]
        if not any(vals):
            continue
        differs = k in SETUP_KEYS and len({v for v in vals if v}) > 1
        rows.append((k, vals, differs))
    return rows
