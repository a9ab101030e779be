"""Writes tests/protocol/steady_state_cases.txt: synthetic window timings with the stopping rule's
expected outcome, shared by the C++ test of xfbench's SDK and the Python test of the PyTorch peer
(committed; rerun only to change it).

Each case is a synthetic GPU timer (a launch time that follows a curve over GPU time, with Gaussian
noise from a fixed seed, white or AR(1)) fed window by window to reports/steady_state.py until it
stops; a few windows after the stop are written too, so an implementation that reads past it is
caught. The `expect` line is what the Python rule computed. A case whose outcome would change if any
threshold (min_time, max_noise, timeout, min_warmup, capped_warmup, the 1/2 of the span target
E_n / 2, and the 0.3 s a batch mean must last before ci may decide) moved by 1e-9 (relative) is rejected and the next
seed tried, so summation order or rounding cannot make two correct implementations disagree.

    python3 tests/protocol/make_steady_cases.py            # rewrite the fixture
    python3 tests/protocol/make_steady_cases.py --check    # exit 1 if the fixture is out of date

Format (one case = four or five lines; numbers are shortest round-trip decimals):
  case <name>
  params <min_time> <max_noise_fraction> <timeout> <min_warmup> <groups G> <batch>
  capped <window> <capped_warmup>  only in cases where the GPU reports its power cap: power_capped()
                                   is called before window <window> (0-based) is added
  windows <x1> ... <xN>          seconds per launch; d_i = x_i * batch
  expect <n_stop> <k> <mean> <cv> <ci> <drift> <converged 0|1>
"""

import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from reports import steady_state as ss  # noqa: E402  (after the path set-up)

FIXTURE = os.path.join(HERE, "steady_state_cases.txt")
EXTRA_WINDOWS = 5
DEFAULTS = (0.5, 0.005, 10.0, 0.2, 10)   # min_time, max_noise, timeout, min_warmup, groups


def noisy(curve, sigma):
    """A timer: seconds per launch at GPU time t = curve(t) * (1 + sigma * N(0, 1))."""
    return lambda t, dt, rng, state: curve(t) * (1 + sigma * rng.gauss(0.0, 1.0))


def wander(curve, sigma, tau):
    """A timer whose relative error is an AR(1) process (stationary standard deviation sigma,
    correlation time tau seconds of GPU time): the clock of a power-capped GPU."""
    def timer(t, dt, rng, state):
        phi = math.exp(-dt / tau)
        e = state.get("e", sigma * rng.gauss(0.0, 1.0))
        state["e"] = phi * e + math.sqrt(1 - phi * phi) * sigma * rng.gauss(0.0, 1.0)
        return curve(t) * (1 + state["e"])
    return timer


def flat(x):
    return lambda t: x


# (name, comment, timer, batch, params, seed)
CASES = [
    ("stable", "1 ms launches, 0.2% noise: the windows agree (cv), so it converges once the "
     "warm-up has lasted 0.2 s",
     noisy(flat(1e-3), 0.002), 10, DEFAULTS, 1),
    ("settling_clock", "a clock settling: +5% decaying exponentially (tau 60 ms, ~0.3 s), then "
     "stable with 0.2% noise", noisy(lambda t: 1e-3 * (1 + 0.05 * math.exp(-t / 0.06)), 0.002),
     10, DEFAULTS, 2),
    ("noise_2pct", "2% white noise: the windows disagree (cv ~2%), so only the batch means can "
     "decide, once S lasts G * 0.3 s = 3 s (6 s into the run); by then their ci is ~0.2% (v2 "
     "stopped at 1.1 s)", noisy(flat(1e-3), 0.02), 10, DEFAULTS, 3),
    ("linear_drift", "slow linear drift of 3%/s with 0.2% noise: S is the later half of the run, "
     "so its halves differ by ~0.75% per s of run: never within 0.5%, times out after 10 s",
     noisy(lambda t: 1e-3 * (1 + 0.03 * t), 0.002), 10, DEFAULTS, 4),
    ("step_change", "a 3% step at 0.4 s of GPU time, 0.2% noise: converges once S lies (nearly) "
     "all after it, so that its cv is within 0.5%",
     noisy(lambda t: 1e-3 * (1.03 if t >= 0.4 else 1.0), 0.002), 10, DEFAULTS, 5),
    ("long_launches", "batch 1 of 0.1 s launches, 0.2% noise: S needs G = 10 windows, not "
     "min_time", noisy(flat(0.1), 0.002), 1, DEFAULTS, 6),
    ("tiny_launches", "batch 2000 of 5 us launches (10 ms windows), 0.2% noise",
     noisy(flat(5e-6), 0.002), 2000, DEFAULTS, 7),
    ("too_few_windows", "1.5 s launches: the time-out comes after 7 windows, before S exists, "
     "so S = all windows", noisy(flat(1.5), 0.002), 1, DEFAULTS, 8),
    ("one_window", "one 12 s launch: times out after one window (cv, ci and drift are 0)",
     noisy(flat(12.0), 0.002), 1, DEFAULTS, 9),
    ("no_warmup", "min_warmup 0 and min_time 0.1: stops at the first S (about 10 windows)",
     noisy(flat(1e-3), 0.002), 10, (0.1, 0.005, 10.0, 0.0, 10), 10),
    ("power_capped", "batch 1 of 10 ms launches wandering as an AR(1) process (1.5% standard "
     "deviation, 100 ms correlation time) around a constant mean: the per-window cv stays above "
     "1%, so it converges through the batch-means ci only, once S has lasted G * 0.3 s = 3 s (here "
     "at 3.9 s of span, 7.8 s into the run, ci 0.49%; v2 stopped at 1.7 s); even so its mean is "
     "0.52% off the true one, just outside that ci (reports/README.md: 19% of such runs miss)",
     wander(flat(1e-2), 0.015, 0.1), 1, DEFAULTS, 11),
    ("slow_settling", "a clock settling over ~1 s: +10% decaying exponentially (tau 0.25 s), 0.2% "
     "noise; without the drift check the rule would stop at window 89 (cv 0.496%), with it only "
     "once the decay is (nearly) over",
     noisy(lambda t: 1e-3 * (1 + 0.1 * math.exp(-t / 0.25)), 0.002), 10, DEFAULTS, 12),
    ("capped_wander", "power_capped's AR(1) wander, the GPU at its power cap from the first window "
     "(v4): the warm-up lasts capped_warmup = 1.5 s and S is every window after it; the batch "
     "means may decide once S lasts 3 s (4.5 s into the run; v3 took the later half: 6 s), here "
     "when their ci first falls within 0.5%, S 5.2 s, 6.7 s into the run",
     wander(flat(1e-2), 0.015, 0.1), 1, DEFAULTS, 13),
    ("capped_burst", "the limiter's burst: launches 2.5% faster at first, decaying with tau 0.3 s, "
     "1% AR(1) wander; the power cap reported from window 20 (0.2 s) on: S starts after the 1.5 s "
     "warm-up, when the burst has decayed to 0.02%",
     wander(lambda t: 1e-2 * (1 - 0.025 * math.exp(-t / 0.3)), 0.01, 0.1), 1, DEFAULTS, 14),
]

# Cases in which the GPU reports its power cap: name -> the window before which power_capped() is
# called.
CAPPED = {"capped_wander": 0, "capped_burst": 20}


def simulate(timer, batch, params, seed, capped_from=None):
    """The windows (per-launch seconds) until the rule stops plus EXTRA_WINDOWS, and the Result."""
    rng, state = random.Random(seed), {}
    rule = ss.SteadyState(ss.Options(*params))
    xs, t, result = [], 0.0, None
    while result is None or len(xs) < result.n_stop + EXTRA_WINDOWS:
        x = timer(t, xs[-1] * batch if xs else 0.0, rng, state)
        if result is None and capped_from is not None and len(xs) >= capped_from:
            rule.power_capped()
        xs.append(x)
        d = x * batch
        t += d
        if result is None:
            result = rule.add(x, d)
    return xs, result


class Shifted(ss.SteadyState):
    """The rule with the span target's 1/2 and the shortest group moved by factors (the robustness
    check only)."""

    def __init__(self, options, half_factor, group_factor):
        super().__init__(options)
        self.half_factor = half_factor
        self.min_group_seconds = ss.MIN_GROUP_SECONDS * group_factor

    def target(self):
        return max(self.o.min_time, self.elapsed / 2 * self.half_factor)


def replay(xs, batch, params, half_factor=1.0, group_factor=1.0, capped_from=None,
           capped_warmup=1.5):
    rule = Shifted(ss.Options(*params, capped_warmup=capped_warmup), half_factor, group_factor)
    for i, x in enumerate(xs):
        if capped_from is not None and i >= capped_from:
            rule.power_capped()
        r = rule.add(x, x * batch)
        if r is not None:
            return r
    return None


def robust(xs, batch, params, result, capped_from=None):
    """True if moving any threshold by 1e-9 (relative) either way leaves n_stop and k as they are."""
    for i in range(7):  # min_time, max_noise, timeout, min_warmup, the target's 1/2, the 0.3 s,
        for f in (1 - 1e-9, 1 + 1e-9):  # capped_warmup
            p = list(params)
            if i < 4:
                p[i] *= f
            r = replay(xs, batch, p, f if i == 4 else 1.0, f if i == 5 else 1.0, capped_from,
                       1.5 * (f if i == 6 else 1.0))
            if r is None or (r.n_stop, r.k) != (result.n_stop, result.k):
                return False
    return True


def case_text(name, comment, timer, batch, params, seed):
    capped_from = CAPPED.get(name)
    for s in range(seed, seed + 1000, 100):
        xs, r = simulate(timer, batch, params, s, capped_from)
        if robust(xs, batch, params, r, capped_from):
            break
    else:
        raise RuntimeError(f"{name}: no seed gives an outcome clear of the thresholds")
    lines = [f"# {comment} (seed {s})", f"case {name}",
             "params " + " ".join(repr(v) for v in params) + f" {batch}",
             *([f"capped {capped_from} 1.5"] if capped_from is not None else []),
             "windows " + " ".join(repr(x) for x in xs),
             f"expect {r.n_stop} {r.k} {r.mean!r} {r.cv!r} {r.ci!r} {r.drift!r} {int(r.converged)}"]
    return "\n".join(lines) + "\n"


def fixture_text():
    head = ("# The steady-state stopping rule's shared cases (xfbench SDK and reports/peer_torch.py),\n"
            "# generated by tests/protocol/make_steady_cases.py. Per case:\n"
            "#   case <name>\n"
            "#   params <min_time> <max_noise_fraction> <timeout> <min_warmup> <groups G> <batch>\n"
            "#   windows <x1> ... <xN>      seconds per launch; d_i = x_i * batch; N > n_stop\n"
            "#   expect <n_stop> <k> <mean> <cv> <ci> <drift> <converged 0|1>\n"
            "#   capped <window> <capped_warmup>   only where the GPU reports its power cap:\n"
            "#                         power_capped() before window <window> (0-based) is added\n"
            "# The rule is version 4 (span target max(min_time, E_n / 2), or once capped every\n"
            "# window after a warm-up of capped_warmup; converged when the warm-up and drift\n"
            "# allow and cv <= max_noise, or S lasts >= G * 0.3 s and its batch-means\n"
            "# ci <= max_noise).\n"
            "# Implementations must reproduce n_stop and k exactly and mean, cv, ci, drift to\n"
            "# 1e-9 relative (0 exactly where the expectation is 0).\n")
    return head + "".join("\n" + case_text(*c) for c in CASES)


def main(argv):
    text = fixture_text()
    if "--check" in argv:
        with open(FIXTURE, encoding="utf-8") as f:
            same = f.read() == text
        print("up to date" if same else f"{FIXTURE} is out of date: rerun {__file__}")
        return 0 if same else 1
    with open(FIXTURE, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {FIXTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
