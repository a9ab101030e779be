"""The peer's steady protocol on a fake torch (a GPU whose clock advances by each launch's time) and
a fake NVML: windows queued ahead, warm-up, time-out, and the telemetry of the measured span."""

import types

import pytest

from peer_torch_helpers import FakeGpu, FakeTorch, peer


class FakeNvml:
    """The device handed to the sampler; v2 reads no energy in the timing loop."""

    def __init__(self, gpu):
        self.gpu = gpu

    def energy_mj(self):
        raise AssertionError("the timing loop read the energy counter")


def fake_sampler(inside, reasons_seen=0, live=(), limit_w=None):
    """Samples every 2^-8 s of host time: SM 1980 MHz with the power cap for j in `inside`,
    1000 MHz and idle elsewhere; the energy counter steps every 32 samples (0.125 s) by 700 W's
    worth; NVML's power reading says 650 W (used only without two steps). reasons_seen, live
    (the samples so far) and limit_w (the enforced power limit): what the sampler reports live
    while the case runs."""
    class Sampler:
        def __init__(self, device):
            self.device = device
            self.reasons_seen = reasons_seen
            self.samples = list(live)
            self.limit_w = limit_w

        def start(self):
            return self

        def stop(self):
            end = int(self.device.gpu.host * 256)
            return [peer.nvml.Sample(j / 256, 700e3 * 0.125 * (j // 32),
                                     *((1980, 2619, 61, 0x4) if j in inside else (1000, 2619, 70, 0x1)),
                                     650.0)
                    for j in range(end + 1)]
    return Sampler


def test_steady_windows_are_queued_ahead_and_measured_by_the_rule(monkeypatch):
    # 2^-10 s launches: batch floor(10 ms / 0.977 ms) = 10, windows of 10 * 2^-10 s = 9.765625 ms:
    # 0.5 s needs 52 windows, 0.2 s of warm-up 21, so the rule stops after window 73.
    gpu = FakeGpu(2.0 ** -10)
    monkeypatch.setattr(peer.measure, "time", types.SimpleNamespace(perf_counter=lambda: gpu.host))
    # host readings: after window i at (i + 1) * 2^-7 s; the measured span is windows 22..73,
    # from reading 21 (22 * 2^-7 s) to reading 73 (74 * 2^-7 s) = samples 44..148
    monkeypatch.setattr(peer.nvml, "Sampler", fake_sampler(range(44, 149)))
    rep = peer.measure_steady(FakeTorch(gpu), gpu.fn, peer.steady_state.Options(), 0.01, FakeNvml(gpu),
                              lambda t: {"TFLOPS": 1e-3 / t})
    assert rep.seconds == 2.0 ** -10 and rep.iterations == 52 * 10
    assert rep.extra["windows"] == 52 and rep.extra["warmup_s"] == 21 * 10 * 2.0 ** -10
    assert rep.extra["cv_pct"] == rep.extra["ci_pct"] == rep.extra["drift_pct"] == 0.0
    # sizing: 3 + 1 launches; then 73 windows and the one queued ahead of the last wait
    assert gpu.calls == 4 + 74 * 10
    # every window's stop event is waited on only after the next window's events are recorded
    waits = [i for i, e in enumerate(gpu.log) if e == "wait"][1:]   # [0]: the sizing launch
    assert len(waits) == 73
    for j, pos in enumerate(waits):
        assert gpu.log[:pos].count("record") == 2 + 2 * (j + 2)
    # power from the energy steps in the last second up to window 73 (not the 650 W readings)
    assert rep.extra["power_W"] == pytest.approx(700.0, rel=1e-12)
    assert rep.extra["J"] == pytest.approx(700.0 * 2.0 ** -10, rel=1e-12)
    assert rep.extra["TFLOPS/W"] == pytest.approx(1e-3 / 2.0 ** -10 / 700.0, rel=1e-12)
    # telemetry from exactly the measured span: none of the 1000 MHz / idle samples around it
    assert (rep.extra["sm_MHz"], rep.extra["mem_MHz"], rep.extra["temp_C"]) == (1980, 2619, 61.0)
    assert rep.label == "throttle: sw_power_cap 100%"


def test_a_power_capped_case_warms_up_longer(monkeypatch):
    # The sampler reports the power cap while the case runs: the warm-up lasts capped_warmup =
    # 1.5 s (154 windows of 9.765625 ms), then S every window after it (v4) until min_time 0.5 s:
    # 52 windows (v3 measured the later half, as long as the warm-up: 154).
    gpu = FakeGpu(2.0 ** -10)
    monkeypatch.setattr(peer.measure, "time", types.SimpleNamespace(perf_counter=lambda: gpu.host))
    monkeypatch.setattr(peer.nvml, "Sampler", fake_sampler(range(0), reasons_seen=0x4))
    rep = peer.measure_steady(FakeTorch(gpu), gpu.fn, peer.steady_state.Options(), 0.01, FakeNvml(gpu),
                              lambda t: {"TFLOPS": 1e-3 / t})
    assert rep.extra["warmup_s"] == 154 * 10 * 2.0 ** -10 and rep.extra["windows"] == 52


def test_a_case_at_the_power_limit_warms_up_longer(monkeypatch):
    # No cap reported yet, but the live energy steps say 742 W against a 700 W limit: the same
    # capped warm-up as above (the SDK's at_power_limit, steady_state.at_power_limit).
    live = [peer.nvml.Sample(j / 100, 742 * 0.1 * 1e3 * (j // 10), 1980, 2619, 61, 0, 742.0)
            for j in range(51)]
    gpu = FakeGpu(2.0 ** -10)
    monkeypatch.setattr(peer.measure, "time", types.SimpleNamespace(perf_counter=lambda: gpu.host))
    monkeypatch.setattr(peer.nvml, "Sampler", fake_sampler(range(0), live=live, limit_w=700.0))
    rep = peer.measure_steady(FakeTorch(gpu), gpu.fn, peer.steady_state.Options(), 0.01, FakeNvml(gpu),
                              lambda t: {"TFLOPS": 1e-3 / t})
    assert rep.extra["warmup_s"] == 154 * 10 * 2.0 ** -10 and rep.extra["windows"] == 52
    # below 97% of the limit: the default warm-up (as the first test: 21 windows)
    monkeypatch.setattr(peer.nvml, "Sampler", fake_sampler(range(0), live=live, limit_w=800.0))
    gpu = FakeGpu(2.0 ** -10)
    rep = peer.measure_steady(FakeTorch(gpu), gpu.fn, peer.steady_state.Options(), 0.01, FakeNvml(gpu),
                              lambda t: {"TFLOPS": 1e-3 / t})
    assert rep.extra["warmup_s"] < 154 * 10 * 2.0 ** -10


def test_steady_times_out_as_noisy_without_telemetry():
    gpu = FakeGpu(0.05)
    gpu_fn = gpu.fn

    def wandering():   # +-5% for 6 launches at a time: the group means disagree, never steady
        gpu.launch_seconds = 0.05 * (1.05 if (gpu.calls // 6) % 2 else 0.95)
        gpu_fn()
    rep = peer.measure_steady(FakeTorch(gpu), wandering, peer.steady_state.Options(timeout=2.0),
                              0.01, None, lambda t: {"GB/s": 1.0 / t})
    assert rep.label.startswith("noisy: ci ±") and rep.label.endswith(" after 2.0s")
    assert rep.extra["ci_pct"] > 0.5 and "power_W" not in rep.extra and "sm_MHz" not in rep.extra


def test_open_nvml_by_pci_bus_id_or_one_note(monkeypatch, capsys):
    props = types.SimpleNamespace(pci_domain_id=0, pci_bus_id=0x1B, pci_device_id=0)
    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(get_device_properties=lambda d: props))
    asked = []

    def fake_open(pci_bus_id=None, index=0):
        asked.append((pci_bus_id, index))
        return None, "libnvidia-ml.so.1 not loadable: no such file"
    monkeypatch.setattr(peer.nvml.Nvml, "open", staticmethod(fake_open))
    assert peer.open_nvml(torch, 3) is None
    assert asked == [("0:1b:0.0", 3)]
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["note: no GPU telemetry (power_W, J, sm_MHz, ...): libnvidia-ml.so.1 not loadable: "
                   "no such file"]


def test_real_nvml_opens_or_says_why():
    dev, why = peer.nvml.Nvml.open(index=0)
    if dev is None:     # no driver here (CI, the build machine): a reason a person can act on
        assert why and ("libnvidia-ml" in why or "nvml" in why.lower() or "NVML" in why)
    else:
        assert isinstance(dev.energy_mj(), int) and dev.sample() is not None


def test_nvml_sample_reads_energy_first_then_the_time():
    order = []

    def reader(name, value):
        def fn(handle, *args):
            order.append(name)
            args[-1]._obj.value = value   # the ctypes.byref(...) out-parameter
            return peer.nvml.NVML_SUCCESS
        return fn
    lib = types.SimpleNamespace(
        nvmlDeviceGetTotalEnergyConsumption=reader("energy", 123456),
        nvmlDeviceGetClockInfo=reader("clock", 1980), nvmlDeviceGetTemperature=reader("temp", 61),
        nvmlDeviceGetPowerUsage=reader("power", 693500),
        nvmlDeviceGetCurrentClocksEventReasons=reader("reasons", 0x4))
    real_time = peer.nvml.time
    peer.nvml.time = types.SimpleNamespace(perf_counter=lambda: order.append("time") or 42.0)
    try:
        s = peer.nvml.Nvml(lib, None, "index 0").sample()
    finally:
        peer.nvml.time = real_time
    assert order[:2] == ["energy", "time"]
    assert s == peer.nvml.Sample(42.0, 123456, 1980, 1980, 61, 0x4, 693.5)
