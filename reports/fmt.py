"""Numbers, times and sizes as every command shows them, with the marks of cases the protocol could
not vouch for."""

import math

from .names import as_number


def valid(v):
    """A number that can be shown and compared: not missing (None), not INVALID."""
    return v is not None and math.isfinite(v)


def is_invalid(v):
    return isinstance(v, float) and math.isnan(v)


def fmt_time(seconds):
    if seconds is None:
        return "—"
    if is_invalid(seconds):
        return "invalid"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_num(v):
    if v is None:
        return "—"
    if is_invalid(v):
        return "invalid"
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


# Marks after a number of a case the protocol could not vouch for, in every table and plot.
MARKS = {"~": "noisy: the case ran into the protocol's time-out without settling (its label "
              "'noisy: ...' says how far)",
         "†": "throttled: clocks held down while it ran (label 'throttle: ...', e.g. "
              "sw_power_cap, the GPU at its power limit)"}


def fmt_case(case, metric, v=None):
    """A case's value as shown in a table: the number with the case's marks (`386.2~†`); no mark
    on `—` or `invalid`."""
    v = case.value(metric) if v is None else v
    text = fmt_metric(metric, v)
    return text + case.marks if valid(v) else text


def marks_legend(cells):
    """Notes explaining the marks that occur in `cells` (strings), one line per mark."""
    text = "".join(cells)
    return [f"{m} {why}" for m, why in MARKS.items() if m in text]


def fmt_bytes(n):
    n = as_number(n)
    if not isinstance(n, (int, float)):
        return str(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % (scale // 1024 or 1) == 0:
            v = n / scale
            return f"{v:g} {unit}"
    return f"{n:g} B"
