"""Timing a case's call on the GPU: the steady-state protocol (the default; the rule in
steady_state.py, NVML power and clocks over the measured windows from the 10 ms sampler in
nvml.py) and --mode hot (a fixed warm-up, then a short burst per repetition). Under torchrun every
decision that sets how many launches run is rank 0's (siblings.DIST), so all ranks issue the same
collectives. torch is handed in."""

import sys
import time

from . import siblings
from .siblings import nvml, steady_state


class Rep:
    """One repetition: seconds per launch, launches timed, extra counters (protocol, telemetry)
    and its label."""

    def __init__(self, seconds, iterations, extra=None, label=""):
        self.seconds = seconds
        self.iterations = iterations
        self.extra = extra or {}
        self.label = label


def measure_hot(torch, fn, repetitions, min_time, warmup):
    """--mode hot: a fixed warm-up, then per repetition back-to-back calls for about min_time."""
    t_end = time.perf_counter() + warmup
    n = 0
    # first calls: handles, autotuning, allocator; torchrun: as many as rank 0 makes
    while siblings.DIST.decide(n < 3 or time.perf_counter() < t_end):
        fn()
        torch.cuda.synchronize()
        n += 1
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    one = max(start.elapsed_time(stop) / 1e3, 1e-7)
    iters = siblings.DIST.share(max(1, min(100000, int(min_time / one))))  # torchrun: rank 0's count
    reps = []
    for _ in range(repetitions):
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        reps.append(Rep(start.elapsed_time(stop) / 1e3 / iters, iters))
    return reps


def measure_steady(torch, fn, options, window_s, device_nvml, rates):
    """One repetition by the steady-state protocol (steady_state.py): size a batch from one timed
    launch, then windows of `batch` launches, each enqueued before the host waits on the previous
    one so the GPU never idles, until the stopping rule says stop. The loop only stamps the host
    time of every window's completion; the 10 ms sampler (energy, clocks, reasons) runs throughout
    and is read over the measured span afterwards. rates(seconds) gives the case's TFLOPS / GB/s for
    its work per watt."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    batch = siblings.DIST.share(steady_state.batch_size(window_s, start.elapsed_time(stop) / 1e3))

    events = [[torch.cuda.Event(enable_timing=True) for _ in range(2)] for _ in range(2)]

    def enqueue(window):
        window[0].record()
        for _ in range(batch):
            fn()
        window[1].record()

    rule = steady_state.SteadyState(options)
    sampler = nvml.Sampler(device_nvml).start() if device_nvml else None
    try:
        done_at = [time.perf_counter()]   # done_at[i]: host time at the completion of window i
        enqueue(events[0])
        result, i, stop = None, 0, None
        while True:
            enqueue(events[(i + 1) % 2])  # the next window is queued before this one is waited on
            if stop is not None and stop():  # torchrun: rank 0's decision on the window before
                break
            begin, end = events[i % 2]
            end.synchronize()
            done_at.append(time.perf_counter())
            d = begin.elapsed_time(end) / 1e3
            if sampler and (sampler.reasons_seen & steady_state.SW_POWER_CAP or
                            steady_state.at_power_limit(sampler.samples, sampler.limit_w)):
                rule.power_capped()
            if result is None:
                result = rule.add(d / batch, d)
            i += 1
            if siblings.DIST.active:  # every rank stops with rank 0, told while the GPU has work queued
                stop = siblings.DIST.decide_later(result is not None)
            elif result is not None:
                break
        torch.cuda.synchronize()  # the windows queued ahead are not measured
    finally:
        samples = sampler.stop() if sampler else []
    if result is None:  # a torchrun rank that followed rank 0: rank 0 reports
        return None

    extra = steady_state.result_counters(result)
    t0, t1 = done_at[result.first], done_at[result.n_stop]
    power = steady_state.span_power(samples, t0, t1)
    extra.update(steady_state.energy_counters(power, result.mean, rates(result.mean)))
    clocks, reasons = steady_state.sample_summary(samples, t0, t1)
    extra.update(clocks)
    return Rep(result.mean, result.k * batch, extra, steady_state.label(result, reasons))


def open_nvml(torch, device):
    """The NVML device of the torch device (by PCI bus id where torch exposes it), or None with a
    one-line note: the run goes on without energy and clocks."""
    p = torch.cuda.get_device_properties(device)
    bus = None
    if getattr(p, "pci_bus_id", None) is not None:
        bus = f"{getattr(p, 'pci_domain_id', 0):x}:{p.pci_bus_id:x}:{getattr(p, 'pci_device_id', 0):x}.0"
    dev, why = nvml.Nvml.open(pci_bus_id=bus, index=device)
    if dev is None:
        print(f"note: no GPU telemetry (power_W, J, sm_MHz, ...): {why}", file=sys.stderr, flush=True)
    return dev
