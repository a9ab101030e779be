"""The steady-state measurement protocol, version 4 (DESIGN.md "Timing"; the rule: versions 2 to 4
of the protocol notes in reports/README.md) in pure Python, for the PyTorch peer: the stopping rule, the telemetry
arithmetic over the measured span (power from the sampler's energy steps), and the case label.

xfbench's C++ SDK (harness/src/sdk/steady_state.cpp) implements the same rule; both must reproduce
tests/protocol/steady_state_cases.txt. Standard library only and no GPU, so the tests run the rule
on synthetic timers and the PyTorch peer (peer_torch.py, reports/peer/) can load this file by path
on a GPU machine.

The rule, after each completed window n (x_i = seconds per launch, d_i = the window's duration,
E_n = all windows' duration): S is the shortest trailing run of windows lasting >= max(min_time,
E_n / 2) with >= G = 10 windows. The case stops when everything before S (the warm-up) lasted
>= min_warmup, S's drift (|mean of its last half - mean of its first half| / mean) is <= max_noise,
and either the windows agree (their cv <= max_noise) or S's mean is known: the ~95% confidence
half-width from G batch means (ci) is <= max_noise and S lasts >= G * MIN_GROUP_SECONDS. Otherwise
it stops as noisy once E_n >= timeout. Batch means, because power-capped GPUs wander by 1-2% over
hundreds of ms, so single windows never agree within 0.5% although the mean of a few seconds does;
but only over groups much longer than that wander, or the ci is optimistic (v3). S growing with the
run lets slow wander average out. Once the GPU reports its power cap or draws at its limit
(at_power_limit; the caller calls power_capped()), the warm-up lasts at least capped_warmup: after a lighter phase the limiter lets a case run above the limit for
about a second (H100: 749 W and +2.5% over a span starting 0.2 s into a case, 689 W once settled),
and S is every window after that warm-up instead of the later half of the run (v4): the limiter's
transient is known to end within it, and a capped case, which needs S of G * 0.3 s = 3 s, then
stops after 4.5 s instead of 6 s.
"""

import bisect
import math

GROUPS = 10        # batch means per ci; also the fewest windows S may have
MIN_GROUP_SECONDS = 0.3   # a batch mean's shortest span before ci may decide (C++ kMinGroupSeconds)
MAX_BATCH = 2000   # launches per window at most
SW_POWER_CAP = 0x4  # the clock-event reason bit that makes the warm-up capped_warmup long

# NVML clock-event ("throttle") reason bits (nvmlClocksEventReason*), named as in the labels.
CLOCK_EVENT_REASONS = [
    (0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"), (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
]


class Options:
    """The protocol's parameters (defaults as xfbench's flags); max_noise is a fraction; groups is
    G (a constant of the protocol, a parameter only so that the fixture can state it)."""

    def __init__(self, min_time=0.5, max_noise=0.005, timeout=10.0, min_warmup=0.2, groups=GROUPS,
                 capped_warmup=1.5):
        self.min_time = min_time
        self.max_noise = max_noise
        self.timeout = timeout
        self.min_warmup = min_warmup
        self.groups = groups
        self.capped_warmup = capped_warmup


class Result:
    """Where a case stopped: windows first+1..n_stop (1-based) are the measured run S."""

    def __init__(self, n_stop, k, mean, cv, ci, drift, warmup_s, elapsed_s, converged,
                 span_s=None):
        self.n_stop = n_stop
        self.k = k                    # measured windows
        self.first = n_stop - k       # windows before S
        self.mean = mean              # seconds per launch
        self.cv = cv                  # fractions
        self.ci = ci
        self.drift = drift
        self.warmup_s = warmup_s
        self.elapsed_s = elapsed_s    # all windows' duration (GPU time)
        self.converged = converged
        self.span_s = span_s          # S's duration (d-sum)


def batch_size(window_s, single_s):
    """Launches per window: as many as fit the target window, 1..MAX_BATCH."""
    return int(min(max(math.floor(window_s / max(single_s, 1e-7)), 1), MAX_BATCH))


def _mean(xs):
    return sum(xs) / len(xs)


def _sample_sd(xs):
    m = _mean(xs)
    return math.sqrt(sum((v - m) ** 2 for v in xs) / (len(xs) - 1))


def window_stats(x, first, n, groups=GROUPS):
    """(mean, cv, ci, drift) of x[first:n]. ci: twice the standard error of the mean estimated from
    min(groups, k) batch means, relative; cv and ci are 0 for a single window, drift below two."""
    s = x[first:n]
    k = len(s)
    m = _mean(s)
    if k < 2 or m <= 0:
        return m, 0.0, 0.0, 0.0
    g = min(groups, k)
    means = [_mean(s[i * k // g:(i + 1) * k // g]) for i in range(g)]
    ci = 2 * _sample_sd(means) / math.sqrt(g) / m
    h = k // 2
    drift = abs(_mean(s[k - h:]) - _mean(s[:h])) / m
    return m, _sample_sd(s) / m, ci, drift


class SteadyState:
    """Feed it windows with add(); it returns a Result when the case stops, else None."""

    min_group_seconds = MIN_GROUP_SECONDS   # the protocol's; an attribute for the fixture's check

    def __init__(self, options=None):
        self.o = options or Options()
        self.min_warmup = self.o.min_warmup
        self.capped = False
        self.x, self.d = [], []
        self.elapsed = 0.0

    def power_capped(self):
        """The GPU has reported its power cap: the warm-up lasts at least capped_warmup from now on."""
        self.min_warmup = max(self.min_warmup, self.o.capped_warmup)
        self.capped = True

    def target(self):
        """The span S must last: the later half of the run, at least min_time."""
        return max(self.o.min_time, self.elapsed / 2)

    def _after_warmup(self):
        """Once capped (v4): the windows of the warm-up (the shortest leading run lasting
        min_warmup), or None while the windows after it last < min_time or are fewer than G."""
        n, first, warmup = len(self.d), 0, 0.0
        while first < n and warmup < self.min_warmup:
            warmup += self.d[first]
            first += 1
        span = sum(self.d[first:n])
        ok = warmup >= self.min_warmup and span >= self.o.min_time and n - first >= self.o.groups
        return first if ok else None

    def _trailing_run(self):
        """Windows before the shortest trailing run lasting target() with >= G windows (every
        window after the warm-up once capped), or None if there is none yet."""
        if self.capped:
            return self._after_warmup()
        n, span, target = len(self.d), 0.0, self.target()
        for first in range(n - 1, -1, -1):
            span += self.d[first]
            if span >= target and n - first >= self.o.groups:
                return first
        return None

    def _result(self, first, converged):
        n = len(self.x)
        m, cv, ci, drift = window_stats(self.x, first, n, self.o.groups)
        span = sum(self.d[first:n])
        return Result(n, n - first, m, cv, ci, drift, self.elapsed - span, self.elapsed, converged,
                      span)

    def _steady(self, r):
        """Warm-up over, not drifting, and either the windows agree or the batch means know the
        mean, trusted only once each group lasts min_group_seconds (longer than clocks wander)."""
        noise = self.o.max_noise
        windows_steady = r.cv <= noise
        mean_known = r.span_s >= self.o.groups * self.min_group_seconds and r.ci <= noise
        return (r.warmup_s >= self.min_warmup and r.drift <= noise
                and (windows_steady or mean_known))

    def add(self, seconds_per_launch, window_seconds):
        self.x.append(seconds_per_launch)
        self.d.append(window_seconds)
        self.elapsed += window_seconds
        first = self._trailing_run()
        if first is not None:
            r = self._result(first, True)
            if self._steady(r):
                return r
        if self.elapsed >= self.o.timeout:
            return self._result(first if first is not None else 0, False)
        return None


# ---- telemetry over the measured windows -----------------------------------------------------

def energy_slope(samples, begin, t1):
    """The energy counter's slope in W between the first and the last samples of [begin, t1] that
    saw it step since the sample before (samples in time order); None with fewer than two."""
    i = bisect.bisect_left(samples, begin, key=lambda s: s.t)
    first = last = None
    previous = samples[i - 1].energy_mj if i > 0 else None
    for s in samples[i:]:
        if s.t > t1:
            break
        if s.energy_mj is None:
            continue
        if previous is not None and s.energy_mj > previous:
            first = first or s
            last = s
        previous = s.energy_mj
    if first is None or not last.t > first.t:
        return None
    return (last.energy_mj - first.energy_mj) / 1e3 / (last.t - first.t)


def span_power(samples, t0, t1, min_span_s=1.0):
    """Mean power in W over the measured span [t0, t1] (host seconds at the completions of windows
    n-k and n) from the sampler's readings (nvml.Sample: t, energy_mj, ..., power_w). NVML's energy
    counter steps only every ~100 ms, so the power is taken between the first and the last step
    in [min(t0, t1 - min_span_s), t1] (at least the last second); with fewer than two steps, the
    mean of NVML's power readings in [t0, t1]; None without either."""
    slope = energy_slope(samples, min(t0, t1 - min_span_s), t1)
    if slope is not None:
        return slope
    readings = [s.power_w for s in samples if t0 <= s.t <= t1 and s.power_w is not None]
    return _mean(readings) if readings else None


CAP_SPAN_S = 0.3   # at_power_limit: the last 0.3 s of energy steps ...
AT_LIMIT = 0.97    # ... at or above 97% of the enforced limit (the SDK's kCapSpan, kAtLimit)


def at_power_limit(samples, limit_w):
    """At the power limit, as the SDK's at_power_limit decides it: the energy counter's slope
    between the first and last samples of the last CAP_SPAN_S seconds that saw it step, at or above
    AT_LIMIT of the enforced limit (W). A case drawing that much meets the limiter within about a
    second, before NVML reports sw_power_cap, so its warm-up is the capped one."""
    if not samples or not limit_w or limit_w <= 0:
        return False
    slope = energy_slope(samples, samples[-1].t - CAP_SPAN_S, samples[-1].t)
    return slope is not None and slope >= AT_LIMIT * limit_w


def energy_counters(power_w, seconds_per_launch, rates):
    """power_W, J (joules per launch) and work per watt: TFLOPS/W, or GB/s/W when the case counts
    bytes only. `rates` holds the case's TFLOPS / GB/s counters."""
    if not power_w or power_w <= 0:
        return {}
    c = {"power_W": power_w, "J": power_w * seconds_per_launch}
    if "TFLOPS" in rates:
        c["TFLOPS/W"] = rates["TFLOPS"] / power_w
    elif "GB/s" in rates:
        c["GB/s/W"] = rates["GB/s"] / power_w
    return c


def sample_summary(samples, t0, t1):
    """Sampler readings (nvml.Sample) inside [t0, t1] -> ({sm_MHz, mem_MHz: means, temp_C: max},
    {reason: fraction of samples it was active})."""
    inside = [s for s in samples if t0 <= s.t <= t1]
    if not inside:
        return {}, {}
    counters = {"sm_MHz": _mean([s.sm_mhz for s in inside]),
                "mem_MHz": _mean([s.mem_mhz for s in inside]),
                "temp_C": float(max(s.temp_c for s in inside))}
    reasons = {}
    for bit, name in CLOCK_EVENT_REASONS:
        active = sum(1 for s in inside if s.reasons & bit)
        if active:
            reasons[name] = active / len(inside)
    return counters, reasons


def label(result, reasons=None):
    """'noisy: ci ±X.XX% drift Y.YY% after Z.Zs' when timed out; 'throttle: sw_power_cap 100%' for
    the clock-event reasons active in at least 0.5% of the samples; joined by '; '."""
    parts = []
    if not result.converged:
        parts.append(f"noisy: ci ±{100 * result.ci:.2f}% drift {100 * result.drift:.2f}%"
                     f" after {result.elapsed_s:.1f}s")
    active = [f"{name} {100 * f:.0f}%" for name, f in (reasons or {}).items() if f >= 0.005]
    if active:
        parts.append("throttle: " + ", ".join(active))
    return "; ".join(parts)


def result_counters(result):
    """The protocol's per-case counters."""
    return {"cv_pct": 100 * result.cv, "ci_pct": 100 * result.ci, "drift_pct": 100 * result.drift,
            "windows": result.k, "warmup_s": result.warmup_s}
