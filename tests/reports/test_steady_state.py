"""The steady-state protocol in Python (reports/steady_state.py): the stopping rule on synthetic
timers and on the fixture shared with xfbench's C++ test, and the telemetry arithmetic."""

from reports_helpers import ROOT  # first: puts the repository root on sys.path
import math
import os
import subprocess
import sys

import pytest

from reports import steady_state as ss
from reports.nvml import Sample

FIXTURE = os.path.join(ROOT, "tests", "protocol", "steady_state_cases.txt")
GENERATOR = os.path.join(ROOT, "tests", "protocol", "make_steady_cases.py")


def read_cases(path):
    """The fixture as {name: (params, windows, expect, capped_from)} (capped_from: the window
    before which the GPU reports its power cap, or None)."""
    cases, name = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            key, vals = words[0], words[1:]
            if key == "case":
                name = vals[0]
                cases[name] = {}
            else:
                cases[name][key] = vals
    out = {}
    for name, c in cases.items():
        p = c["params"]
        params = (float(p[0]), float(p[1]), float(p[2]), float(p[3]), int(p[4]), int(p[5]))
        e = c["expect"]
        expect = (int(e[0]), int(e[1]), float(e[2]), float(e[3]), float(e[4]), float(e[5]),
                  e[6] == "1")
        capped = c.get("capped")
        out[name] = (params, [float(x) for x in c["windows"]], expect,
                     (int(capped[0]), float(capped[1])) if capped else None)
    return out


def run_rule(params, windows, capped=None):
    *opts, batch = params
    rule = ss.SteadyState(ss.Options(*opts, capped_warmup=capped[1] if capped else 1.5))
    for i, x in enumerate(windows):
        if capped and i >= capped[0]:
            rule.power_capped()
        r = rule.add(x, x * batch)
        if r is not None:
            return r
    raise AssertionError("the rule never stopped")


CASES = read_cases(FIXTURE)


def test_fixture_has_the_agreed_scenarios():
    assert set(CASES) == {"stable", "settling_clock", "noise_2pct", "linear_drift", "step_change",
                          "long_launches", "tiny_launches", "too_few_windows", "one_window",
                          "no_warmup", "power_capped", "slow_settling", "capped_wander",
                          "capped_burst"}
    for params, windows, expect, _ in CASES.values():
        assert len(windows) > expect[0]   # windows after the stop: reading past it must show


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_reproduces_fixture(name):
    params, windows, (n_stop, k, mean, cv, ci, drift, converged), capped = CASES[name]
    r = run_rule(params, windows, capped)
    assert (r.n_stop, r.k, r.converged) == (n_stop, k, converged)
    assert r.mean == pytest.approx(mean, rel=1e-9, abs=0)
    assert r.cv == pytest.approx(cv, rel=1e-9, abs=0)
    assert r.ci == pytest.approx(ci, rel=1e-9, abs=0)
    assert r.drift == pytest.approx(drift, rel=1e-9, abs=0)


def test_fixture_is_what_the_generator_writes():
    r = subprocess.run([sys.executable, GENERATOR, "--check"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


# The protocol's meaning, checked on the fixture's scenarios independently of the exact numbers.
def test_scenarios_behave_as_the_protocol_says(monkeypatch):
    def result(name):
        return run_rule(CASES[name][0], CASES[name][1], CASES[name][3])

    stable = result("stable")     # the windows agree: cv decides, S need not last 3 s
    assert stable.converged and stable.k == 50 and stable.warmup_s >= 0.2
    assert stable.cv <= 0.005 and stable.span_s < 10 * ss.MIN_GROUP_SECONDS
    assert stable.n_stop - stable.k <= 21              # stops as soon as the warm-up allows
    settle = result("settling_clock")
    assert settle.converged and settle.warmup_s >= 0.2
    white = result("noise_2pct")    # windows disagree by 2%: the ci decides once S lasts 3 s
    assert white.converged and white.ci <= 0.005 < white.cv and 3.0 <= white.span_s < 3.1
    drift = result("linear_drift")
    assert not drift.converged and drift.elapsed_s >= 10.0 and drift.drift > 0.005
    assert drift.elapsed_s - CASES["linear_drift"][1][drift.n_stop - 1] * 10 < 10.0  # first past it
    step = result("step_change")
    windows = CASES["step_change"][1]
    start_of = [sum(x * 10 for x in windows[:i]) for i in range(len(windows))]
    assert step.converged and start_of[step.first + 3] >= 0.4  # <= 3 windows before the step
    longl = result("long_launches")
    assert longl.converged and longl.k == 10 and longl.n_stop == 13   # 0.2 s of warm-up = 2-3 windows
    tiny = result("tiny_launches")
    assert tiny.converged and tiny.mean == pytest.approx(5e-6, rel=0.01)
    few = result("too_few_windows")   # k < G: k groups of one window
    assert not few.converged and few.k == few.n_stop == 7 and few.first == 0
    assert few.ci == pytest.approx(2 * few.cv / 7 ** 0.5, rel=1e-12)
    one = result("one_window")
    assert (one.k, one.cv, one.ci, one.drift, one.converged) == (1, 0.0, 0.0, 0.0, False)
    capped = result("power_capped")   # v1 (cv <= 0.5%) would run into the time-out
    assert capped.converged and capped.ci <= 0.005 < capped.cv
    assert 3.0 <= capped.span_s and capped.elapsed_s < 10.0
    settling = result("slow_settling")
    assert settling.converged and settling.drift > settling.ci
    real_stats = ss.window_stats
    monkeypatch.setattr(ss, "window_stats", lambda *a: real_stats(*a)[:3] + (0.0,))
    assert result("slow_settling").n_stop < settling.n_stop - 15   # the drift check held it back


@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n][3] is None))
def test_measured_span_is_the_shortest_later_half(name):
    (min_time, _, _, _, groups, batch), windows, _, capped = CASES[name]
    r = run_rule(CASES[name][0], windows, capped)
    d = [x * batch for x in windows[:r.n_stop]]
    target = max(min_time, sum(d) / 2)
    if sum(d[r.first:]) >= target and r.k >= groups:
        assert r.k == groups or sum(d[r.first + 1:]) < target   # one window fewer is not enough
    else:   # no such run yet: timed out with all windows
        assert not r.converged and r.first == 0
    assert r.warmup_s == pytest.approx(sum(d[:r.first]), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n][3] is not None))
def test_capped_span_is_every_window_after_the_capped_warmup(name):
    # v4: once the GPU reports its power cap, S starts at the first window after a warm-up lasting
    # capped_warmup (no window fewer would do), whatever the length of the run.
    (min_time, _, _, _, groups, batch), windows, _, capped = CASES[name]
    r = run_rule(CASES[name][0], windows, capped)
    d = [x * batch for x in windows[:r.n_stop]]
    assert r.converged and r.k >= groups and sum(d[r.first:]) >= min_time
    assert sum(d[:r.first]) >= capped[1] > sum(d[:r.first - 1])
    assert r.elapsed_s < 2 * sum(d[:r.first]) + sum(d[r.first:])  # shorter than the later half


def test_exact_arithmetic_case():
    # Dyadic times add exactly: 2^-10 s launches, batch 8 -> 2^-7 s windows; min_time 0.5 = 64
    # windows (more than half the run until it lasts 1 s), min_warmup 0.2 needs 26 windows
    # (0.203125 s) before them: stops at 90.
    rule = ss.SteadyState(ss.Options())
    results = [rule.add(2.0 ** -10, 2.0 ** -7) for _ in range(90)]
    assert results[:89] == [None] * 89
    r = results[89]
    assert (r.n_stop, r.k, r.first, r.warmup_s, r.cv, r.ci, r.drift) == (
        90, 64, 26, 0.203125, 0.0, 0.0, 0.0)


def test_span_grows_with_the_run():
    # A 5% square wave of 64 windows (0.5 s) never settles; the run goes on and S stays its later
    # half. Dyadic windows (2^-7 s) add exactly: the 4 s time-out comes at window 512, S = 256.
    rule = ss.SteadyState(ss.Options(timeout=4.0))
    r, n = None, 0
    while r is None:
        r = rule.add(1e-3 * (1.05 if (n // 32) % 2 else 0.95), 2.0 ** -7)
        n += 1
    assert (r.n_stop, r.k, r.warmup_s, r.converged) == (512, 256, 2.0, False)


def test_statistics_by_hand():
    x = [9.0] + [1.0, 2.0, 3.0, 4.0, 10.0, 6.0, 7.0, 8.0, 5.0, 1.0, 2.0, 9.0, 4.0]   # k = 13 after 9
    m, cv, ci, drift = ss.window_stats(x, 1, 14)
    s = x[1:]
    assert m == pytest.approx(sum(s) / 13, rel=1e-15)
    sd = (sum((v - m) ** 2 for v in s) / 12) ** 0.5
    assert cv == pytest.approx(sd / m, rel=1e-14)
    # G = 10 groups of 13 windows: offsets floor(g * 13 / 10) = 0 1 2 3 5 6 7 9 10 11 13
    groups = [[1.0], [2.0], [3.0], [4.0, 10.0], [6.0], [7.0], [8.0, 5.0], [1.0], [2.0], [9.0, 4.0]]
    mu = [sum(g) / len(g) for g in groups]
    mu_mean = sum(mu) / 10
    sd_mu = (sum((v - mu_mean) ** 2 for v in mu) / 9) ** 0.5
    assert ci == pytest.approx(2 * sd_mu / 10 ** 0.5 / m, rel=1e-14)
    assert drift == pytest.approx(abs(sum(s[7:]) / 6 - sum(s[:6]) / 6) / m, rel=1e-14)  # middle out
    # 20 windows: groups of two; alternating windows make every group mean equal: ci 0, cv large
    m, cv, ci, drift = ss.window_stats([1.1, 0.9] * 10, 0, 20)
    assert ci == pytest.approx(0.0, abs=1e-15) and cv > 0.1
    assert ss.window_stats([3.0], 0, 1) == (3.0, 0.0, 0.0, 0.0)


def test_ci_decides_only_once_each_group_lasts_0_3_s():
    # Windows alternating +-10% (cv 10%) whose group means agree (ci ~0.1%) and whose halves too:
    # only the span keeps the case running until S lasts G * 0.3 s = 3 s. Dyadic windows (2^-7 s)
    # add exactly: S = 384 windows = 3.0 s at window 767 (E = 5.99 s, so E / 2 < 3 s).
    rule = ss.SteadyState(ss.Options())
    r, n = None, 0
    while r is None:
        r = rule.add(1e-3 * (1.1 if n % 2 else 0.9), 2.0 ** -7)
        n += 1
    assert ss.MIN_GROUP_SECONDS == 0.3
    assert (r.n_stop, r.k, r.span_s, r.converged) == (767, 384, 3.0, True)
    assert r.ci <= 0.005 < r.cv and r.drift <= 0.005


def test_drift_alone_keeps_a_case_running():
    # A ramp of 2.4%/s: over S (half the run) the halves' means differ by 1.2% per s of S, while
    # the group means of a straight line spread only ~0.3 of the ramp over S.
    rule = ss.SteadyState(ss.Options(timeout=2.0))
    r, t = None, 0.0
    while r is None:
        x = 1e-3 * (1 + 0.024 * t)
        r = rule.add(x, 10 * x)
        t += 10 * x
    assert not r.converged and r.ci <= 0.005 < r.drift


def test_timeout_counts_gpu_time_and_labels_noisy():
    rule = ss.SteadyState(ss.Options(timeout=1.0))
    r, n = None, 0
    while r is None:
        n += 1
        r = rule.add(1e-3 * (1.05 if (n // 7) % 2 else 0.95), 2.0 ** -7)
    assert not r.converged and r.elapsed_s == 1.0 and r.ci > 0.005 and (r.n_stop, r.k) == (128, 64)
    assert ss.label(r, {"sw_power_cap": 1.0, "hw_slowdown": 0.001}) == (
        ss.label(r) + "; throttle: sw_power_cap 100%")
    c = ss.result_counters(r)
    assert c == {"cv_pct": 100 * r.cv, "ci_pct": 100 * r.ci, "drift_pct": 100 * r.drift,
                 "windows": 64, "warmup_s": 0.5}
    by_hand = ss.Result(1003, 501, 1e-3, 0.02, 0.01234, 0.0045, 5.0, 10.04, False)
    assert ss.label(by_hand) == "noisy: ci ±1.23% drift 0.45% after 10.0s"


def test_batch_size():
    assert ss.batch_size(0.01, 1e-3) == 10
    assert ss.batch_size(0.01, 0.1) == 1
    assert ss.batch_size(0.01, 4e-6) == 2000             # 2500 fit, capped
    assert ss.batch_size(0.01, 1e-9) == 2000
    assert ss.batch_size(0.01, 0.0015) == 6            # floor


# ---- energy arithmetic -----------------------------------------------------------------------

def sample(t, energy_mj, power_w=None, sm=1980, reasons=0x4):
    return Sample(t, energy_mj, sm, 2619, 60, reasons, power_w)


def test_span_power_between_energy_steps():
    # The counter steps every 0.1 s (sampled every 0.01 s): 600 W before t = 2.0, 700 W after.
    samples, e = [], 0.0
    for j in range(400):
        t = j / 100
        if j % 10 == 0 and j:
            e += (600 if t <= 2.0 else 700) * 0.1 * 1e3
        samples.append(sample(t, e, power_w=650.0))
    # a 3 s span: steps at 1.0, 1.1, ..., 3.9; 1.0 s of them at 600 W, then 1.9 s at 700 W
    assert ss.span_power(samples, 1.0, 3.99) == pytest.approx((600 * 1.0 + 700 * 1.9) / 2.9)
    # a 0.5 s span at 700 W: widened to the last second, still all after the change
    assert ss.span_power(samples, 3.4, 3.9) == pytest.approx(700.0)
    # a 0.3 s span just after the change: the last second reaches back into the 600 W part
    assert ss.span_power(samples, 2.2, 2.5) == pytest.approx((600 * 0.5 + 700 * 0.5) / 1.0)
    # the first sample is no step (nothing before it), nor is a repeated value
    assert ss.span_power(samples[:15], 0.0, 0.14) == 650.0
    # fewer than two steps: the mean of NVML's power readings inside [t0, t1] only
    flat = [sample(0.0, 5.0, 100.0), sample(0.5, 5.0, 300.0), sample(0.6, 5.0, 500.0),
            sample(0.7, 9.0, 700.0), sample(0.9, 9.0, 900.0)]
    assert ss.span_power(flat, 0.5, 0.7) == pytest.approx(500.0)
    assert ss.span_power([sample(0.0, None), sample(0.1, None)], 0.0, 0.1) is None
    assert ss.span_power([], 0.0, 1.0) is None


def _energy(watts, seconds, t0=0.0, e0=0.0):
    """A counter stepping by watts x 0.1 s every 100 ms, sampled every 10 ms from t0."""
    out, j = [], 0
    while j * 0.01 <= seconds + 1e-12:
        t = j * 0.01
        out.append(sample(t0 + t, e0 + watts * 0.1 * 1e3 * math.floor(t / 0.1 + 1e-9)))
        j += 1
    return out


def _joined(first, seconds, then):
    s = _energy(first, seconds)
    return s + _energy(then, 0.5, seconds + 0.01, s[-1].energy_mj + then * 0.1 * 1e3)


def test_at_power_limit_from_the_last_steps_only():
    # the SDK's Energy.AtThePowerLimitFromTheLastStepsOnly, case for case
    assert ss.at_power_limit(_joined(300, 1.0, 742), 700)       # idle, then 742 W
    assert not ss.at_power_limit(_joined(300, 1.0, 742), 800)   # below 97% of 800
    assert ss.at_power_limit(_energy(680, 2.0), 700)            # 97.1%
    assert not ss.at_power_limit(_energy(670, 2.0), 700)        # 95.7%
    assert not ss.at_power_limit(_joined(742, 1.0, 300), 700)   # a burst that ended
    assert not ss.at_power_limit(_energy(742, 0.15), 700)       # one step: no slope
    assert not ss.at_power_limit(_energy(742, 2.0), None)       # limit unknown
    assert not ss.at_power_limit([], 700)


def test_energy_counters():
    c = ss.energy_counters(700.0, 2e-3, {"TFLOPS": 350.0, "samples/s": 32000.0})
    assert c == {"power_W": 700.0, "J": pytest.approx(1.4), "TFLOPS/W": pytest.approx(0.5)}
    c = ss.energy_counters(500.0, 1e-3, {"GB/s": 3000.0})
    assert c == {"power_W": 500.0, "J": pytest.approx(0.5), "GB/s/W": pytest.approx(6.0)}
    assert ss.energy_counters(None, 1e-3, {"GB/s": 1.0}) == {}
    # J per launch x launches per second = W
    c = ss.energy_counters(650.0, 0.0375, {"TFLOPS": 150.0})
    assert c["J"] / 0.0375 == pytest.approx(650.0)


def test_sample_summary_keeps_the_measured_span():
    samples = [Sample(*s[:1], 0, *s[1:], None) for s in [
        (0.00, 1000, 2600, 40, 0x0),    # before the span: ignored
        (0.10, 1980, 2619, 60, 0x4), (0.11, 1800, 2619, 65, 0x4 | 0x20),
        (0.12, 1700, 2619, 62, 0x4), (0.13, 1760, 2619, 61, 0x4),
        (0.50, 500, 1000, 90, 0x40)]]    # after: ignored
    counters, reasons = ss.sample_summary(samples, 0.10, 0.13)
    assert counters == {"sm_MHz": pytest.approx(1810.0), "mem_MHz": pytest.approx(2619.0),
                        "temp_C": 65.0}
    assert reasons == {"sw_power_cap": 1.0, "sw_thermal_slowdown": 0.25}
    assert ss.sample_summary(samples, 0.2, 0.3) == ({}, {})
    r = ss.Result(10, 10, 1e-3, 0.001, 0.001, 0.001, 0.2, 0.7, True)
    assert ss.label(r, reasons) == "throttle: sw_power_cap 100%, sw_thermal_slowdown 25%"
    assert ss.label(r) == ""


def test_power_cap_lengthens_the_warmup():
    # Steady dyadic windows (2^-7 s): 0.2 s of warm-up would do, but once the GPU reports its power
    # cap (here from the 5th window on) the warm-up lasts capped_warmup = 1.5 s = 192 windows, and
    # S is every window after it (v4; v3: the later half, 384 windows): min_time 0.5 s = 64
    # windows, so the case stops at window 256. harness/test_steady_state.cpp agrees.
    def run(capped_from):
        rule = ss.SteadyState(ss.Options())
        r, n = None, 0
        while r is None:
            if n >= capped_from:
                rule.power_capped()
            r = rule.add(1e-3, 2.0 ** -7)
            n += 1
        return r
    r = run(4)
    assert (r.n_stop, r.k, r.warmup_s, r.converged) == (256, 64, 1.5, True)
    assert run(10 ** 9).n_stop < 100
    assert ss.Options().capped_warmup == 1.5 and ss.SW_POWER_CAP == 0x4
