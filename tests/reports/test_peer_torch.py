"""The peer runner's pure-Python parts (names, FLOP formulas, JSON) and its CLI without torch."""

from reports_helpers import ROOT, run_cli  # first: puts the repository root on sys.path
import importlib.util
import json
import os
import sys
import time
import types

import pytest

from reports import loader

SCRIPT = os.path.join(ROOT, "reports", "peer_torch.py")
spec = importlib.util.spec_from_file_location("peer_torch", SCRIPT)
peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer)


def names(families):
    return [s.gb_name for s in peer.default_specs(families)]


def test_default_cases_mirror_xfbench():
    n = names(peer.DEFAULT_FAMILIES)
    assert len(n) == 16 + 7 + 3 + 13
    assert "Matmul/tf32/NN/m:16384/n:16384/k:16384/manual_time" in n
    assert "Vector/scale/fp32/n:268435456/manual_time" in n
    assert "Vector/copy/bf16/n:268435456/manual_time" in n
    assert "Memcpy/h2d/pinned/ce/bytes:268435456/manual_time" in n
    assert "Memcpy/d2d/device/ce/bytes:268435456/manual_time" in n
    assert "BertLayer/torch-sdpa/fp16/fwdbwd/seq:512/batch:64/manual_time" in n
    assert "BertLayer/torch-eager/fp16/fwd/seq:128/batch:128/manual_time" in n
    assert "BertLayer/part:attention/fp16/fwd/seq:128/batch:64/manual_time" in n
    assert not any(x.startswith(("GPT2Block", "T5", "TrainStep")) for x in n)
    allnames = names(peer.ALL_FAMILIES)
    assert "T5Decoder/torch-eager/fp16/fwdbwd/seq:512/batch:64/manual_time" in allnames
    assert not any(x.startswith("T5Encoder/torch-sdpa") for x in allnames)
    assert ("TrainStep/torch-sdpa/bert-large/bf16/seq:512/batch:16/accum:1/ckpt:on/adamw:fused/"
            "manual_time") in allnames


def test_train_names_match_xfbench_after_backend_mapping():
    """The peer's TrainStep names become xfbench's (tests/train_step lists these) once torch-sdpa
    maps to fused; samples count every micro-batch; checkpointing counts the forward twice."""
    mapped = {loader.map_backend(loader.strip_name(n), loader.DEFAULT_BACKEND_MAP)
              for n in names(["TrainStep"])}
    assert "TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused" in mapped
    assert "TrainStep/fused/gpt2-medium/bf16/seq:1024/batch:8/accum:4/ckpt:off/adamw:fused" in mapped
    # tf32: xfbench runs it on the unfused attention, the peer's HF eager attention pairs with it
    assert "TrainStep/unfused/bert-large/tf32/seq:128/batch:64/accum:1/ckpt:off/adamw:fused" in mapped
    assert "TrainStep/fused/bert-large/tf32/seq:128/batch:64/accum:1/ckpt:off/adamw:fused" in mapped
    spec = [x for x in peer.default_specs(["TrainStep"]) if "accum:4" in x.name][0]
    s, h, L, V = spec.kw["seq"], 1024, 24, 30522
    per = 3 * (L * (24 * s * h * h + 4 * s * s * h) + 2 * s * h * V)
    assert peer.train_flops_per_sample("bert-large", s) == per
    assert peer.train_flops_per_sample("bert-large", s, ckpt=True) == per * 4 // 3
    c = peer.counters(spec, 0.5)
    assert c["samples/s"] == spec.kw["batch"] * 4 / 0.5
    assert abs(c["TFLOPS"] - per * spec.kw["batch"] * 4 / 0.5 / 1e12) < 1e-9


def test_names_match_xfbench_after_backend_mapping():
    bmap = loader.DEFAULT_BACKEND_MAP
    mapped = {loader.map_backend(loader.strip_name(n), bmap) for n in names(["BertLayer"])}
    xf = set(loader.load(os.path.join(ROOT, "tests/reports/fixtures/run_a.json")).cases)
    xf.add("BertLayer/part:attention_fused/fp16/fwd/seq:128/batch:64")  # xfbench has it; the fixture not
    assert {n for n in mapped if n.startswith("BertLayer/")} <= xf


def test_flop_formulas():
    b, s, h = 128, 128, 1024
    assert peer.matmul_flops(8192, 8192, 8192) == 2 * 8192 ** 3
    fwd = 24 * b * s * h * h + 4 * b * s * s * h
    assert peer.layer_flops(b, s) == fwd
    assert peer.layer_flops(b, s, passes="fwdbwd") == 3 * fwd
    assert peer.layer_flops(b, s, kind="ffn") == 16 * b * s * h * h
    assert peer.layer_flops(b, s, kind="attention") == 8 * b * s * h * h + 4 * b * s * s * h
    assert peer.layer_flops(b, s, kind="dense") == 2 * b * s * h * 4096
    assert peer.layer_flops(b, s, kind="decoder") == fwd + 8 * b * s * h * h + 4 * b * s * s * h
    assert peer.vector_bytes("scale", 1 << 28, "fp32") == 2 * 4 * (1 << 28)
    assert peer.vector_bytes("copy", 1 << 28, "bf16") == 2 * 2 * (1 << 28)
    assert peer.vector_bytes("triad", 10, "fp32") == 120
    per = peer.train_flops_per_sample("bert-large", 512)
    assert per == 3 * (24 * (24 * 512 * h * h + 4 * 512 * 512 * h) + 2 * 512 * h * 30522)
    assert peer.train_flops_per_sample("bert-large", 512, ckpt=True) * 3 == per * 4


def test_counters():
    mm = peer.Spec("Matmul", "Matmul/bf16/NN/m:8192/n:8192/k:8192", dtype="bf16", m=8192, n=8192, k=8192)
    assert peer.counters(mm, 1e-3)["TFLOPS"] == pytest.approx(2 * 8192 ** 3 / 1e-3 / 1e12)
    v = peer.default_specs(["Vector"])[0]
    assert v.name == "Vector/scale/fp32/n:268435456"
    assert peer.counters(v, 1e-3)["GB/s"] == pytest.approx(2 * 4 * 2 ** 28 / 1e-3 / 1e9)
    lay = next(s for s in peer.default_specs(["BertLayer"]) if s.name.endswith("fwdbwd/seq:512/batch:64"))
    c = peer.counters(lay, 0.01, mem_bytes=3e9)
    assert c["TFLOPS"] == pytest.approx(peer.layer_flops(64, 512, passes="fwdbwd") / 0.01 / 1e12)
    assert c["samples/s"] == pytest.approx(6400) and c["mem_GB"] == pytest.approx(3.0)


def test_json_is_google_benchmark_shaped_and_loads(tmp_path):
    sp = next(s for s in peer.default_specs(["BertLayer"])
              if s.name == "BertLayer/torch-sdpa/fp16/fwd/seq:128/batch:128")
    reps = [peer.Rep(0.0020, 50, {"cv_pct": 0.2, "power_W": 600.0}, "throttle: sw_power_cap 100%"),
            peer.Rep(0.0018, 50, {"cv_pct": 0.3}), peer.Rep(0.0019, 50, {"cv_pct": 0.4})]
    entries = peer.gb_entries(sp, reps, 0, 0, mem_bytes=2e9)
    assert [e["run_type"] for e in entries] == ["iteration"] * 3 + ["aggregate"] * 4
    assert entries[0]["name"] == "BertLayer/torch-sdpa/fp16/fwd/seq:128/batch:128/manual_time"
    assert entries[3]["name"].endswith("/manual_time_mean") and entries[4]["aggregate_name"] == "median"
    assert entries[4]["real_time"] == pytest.approx(1.9)        # ms
    assert [e["repetition_index"] for e in entries[:3]] == [0, 1, 2]
    assert entries[0]["label"] == "throttle: sw_power_cap 100%" and "label" not in entries[1]
    assert entries[4]["cv_pct"] == pytest.approx(0.3)           # median of the repetitions
    assert "power_W" in entries[0] and "power_W" not in entries[4]   # not every repetition has it
    err = peer.error_entry(peer.default_specs(["Matmul"])[0], "RuntimeError: boom", 1, 0)
    ctx = dict(peer.base_context("steady", peer.steady_state.Options(), 0.01), gpu_name="NVIDIA H100")
    out = tmp_path / "torch.json"
    peer.write_json(str(out), ctx, entries + [err])
    doc = json.loads(out.read_text())
    assert doc["context"]["xfbench_runner"] == "pytorch" and "date" in doc["context"]
    assert {k: v for k, v in doc["context"].items() if k.startswith(("protocol_", "xfbench_mode"))} == {
        "xfbench_mode": "steady", "protocol_min_time": "0.5", "protocol_max_noise_pct": "0.5",
        "protocol_timeout": "10", "protocol_min_warmup": "0.2", "protocol_capped_warmup": "1.5",
        "protocol_window_ms": "10"}
    assert "protocol_min_time" not in peer.base_context("hot")
    run = loader.load(str(out))
    assert run.cases["BertLayer/fused/fp16/fwd/seq:128/batch:128"].label == "throttle: sw_power_cap 100%"
    c = run.cases["BertLayer/fused/fp16/fwd/seq:128/batch:128"]
    flops = peer.layer_flops(128, 128)
    assert c.value("TFLOPS") == pytest.approx(flops / 0.0019 / 1e12)
    assert run.cases["Matmul/fp32/NN/m:2048/n:2048/k:2048"].error == "RuntimeError: boom"


def test_unsupported_is_written_as_xfbench_and_not_a_failure():
    # "unsupported: why" is what xfbench writes and what the reports show as n/a, not an error.
    msg, failed = peer.error_message(peer.nccl.Unsupported("8 B is less than one fp32 element"))
    assert (msg, failed) == ("unsupported: 8 B is less than one fp32 element", False)
    assert peer.error_message(RuntimeError("CUDA error\nmore")) == ("RuntimeError: CUDA error", True)


def test_filter_and_cudnn_format():
    sel = peer.select(peer.default_specs(peer.ALL_FAMILIES), r"seq:512.*fwdbwd|fwdbwd/seq:512")
    assert sel and all("fwdbwd/seq:512" in s.name for s in sel)
    assert peer.fmt_cudnn(90102) == "9.1.2" and peer.fmt_cudnn(8902) == "8.9.2"


def test_cli_help_and_list():
    r = run_cli(SCRIPT, "--help")
    assert r.returncode == 0 and "--families" in r.stdout and "--repetitions" in r.stdout
    r = run_cli(SCRIPT, "--list", "--families", "Vector,Memcpy", "--filter", "fp32|d2d")
    assert r.returncode == 0
    assert r.stdout.split() == ["Vector/scale/fp32/n:268435456/manual_time",
                                "Vector/copy/fp32/n:268435456/manual_time",
                                "Vector/triad/fp32/n:268435456/manual_time",
                                "Memcpy/d2d/device/ce/bytes:268435456/manual_time"]
    r = run_cli(SCRIPT, "--families", "Nope")
    assert r.returncode == 2 and "unknown families Nope" in r.stderr


def test_layer_shapes_option():
    r = run_cli(SCRIPT, "--list", "--families", "BertLayer", "--filter", "torch-eager/fp16/fwd/",
                "--layer-shapes", "128x2,512x8")
    assert r.returncode == 0
    assert r.stdout.split() == ["BertLayer/torch-eager/fp16/fwd/seq:128/batch:2/manual_time",
                                "BertLayer/torch-eager/fp16/fwd/seq:512/batch:8/manual_time"]
    r = run_cli(SCRIPT, "--list", "--layer-shapes", "128")
    assert r.returncode == 2 and "expected SEQxBATCH" in r.stderr


def test_without_torch_exits_2_with_one_line(tmp_path):
    # sys.modules['torch'] = None makes `import torch` fail even where torch is installed
    code = ("import runpy, sys; sys.modules['torch'] = None; "
            f"sys.argv = ['peer_torch.py', '--out', {str(tmp_path / 't.json')!r}]; "
            f"runpy.run_path({SCRIPT!r}, run_name='__main__')")
    r = run_cli("-c", code)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torch is not installed: ")
    assert not (tmp_path / "t.json").exists()


def test_gpt2_block_cases_and_seed_shapes():
    n = names(["GPT2Block"])
    assert n == [f"GPT2Block/{b}/fp16/{p}/seq:{s}/batch:{bt}/manual_time"
                 for b in ("torch-eager", "torch-sdpa") for s, bt in ((1024, 64), (512, 64))
                 for p in ("fwd", "fwdbwd")]
    seeds = [s.name for s in peer.default_specs(["GPT2Block"], seed_shapes=True)]
    assert len(seeds) == 2 * 2 * 6 * 2
    assert "GPT2Block/torch-sdpa/fp16/fwdbwd/seq:512/batch:2" in seeds
    assert "GPT2Block/torch-eager/fp16/fwd/seq:1024/batch:32" in seeds
    bert = [s.name for s in peer.default_specs(["BertLayer"], seed_shapes=True)]
    assert "BertLayer/torch-sdpa/fp16/fwd/seq:128/batch:2" in bert and len(bert) == 2 * 2 * 7 * 2 + 5
    r = run_cli(SCRIPT, "--list", "--families", "GPT2Block", "--seed-shapes", "--filter", "eager/fp16/fwd/")
    assert r.returncode == 0 and len(r.stdout.split()) == 12
    t5 = [s.name for s in peer.default_specs(["T5Encoder", "T5Decoder"], seed_shapes=True)]
    assert len(t5) == 2 * 2 * 7 * 2 and "T5Decoder/torch-eager/fp16/fwdbwd/seq:128/batch:128" in t5


def test_gpt2_models_named_as_xfbench():
    specs = peer.default_specs(["GPT2Block"], gpt2_models=["gpt2-medium", "gpt2-large"])
    large = [s for s in specs if s.name.endswith("/model:gpt2-large")]
    assert len(large) == len(specs) // 2
    sp = next(s for s in large
              if s.name == "GPT2Block/torch-sdpa/fp16/fwdbwd/seq:1024/batch:64/model:gpt2-large")
    assert (sp.kw["hidden"], sp.kw["heads"]) == (1280, 20)
    h, b, s = 1280, 64, 1024
    flops = 3 * (24 * b * s * h * h + 4 * b * s * s * h)
    assert peer.counters(sp, 0.1)["TFLOPS"] == pytest.approx(flops / 0.1 / 1e12)
    # xfbench's name of the same case, after the backend mapping
    assert loader.map_backend(sp.name, loader.DEFAULT_BACKEND_MAP) == \
        "GPT2Block/fused/fp16/fwdbwd/seq:1024/batch:64/model:gpt2-large"
    r = run_cli(SCRIPT, "--list", "--gpt2-models", "gpt2-small")
    assert r.returncode == 2 and "unknown --gpt2-models gpt2-small" in r.stderr


def test_protocol_options():
    a = peer.parse_args([])
    assert a.mode == "steady" and a.min_time == 0.5
    o = a.options
    assert (o.min_time, o.max_noise, o.timeout, o.min_warmup, o.groups) == (0.5, 0.005, 10.0, 0.2, 10)
    a = peer.parse_args(["--mode", "hot"])
    assert a.min_time == 0.1 and a.warmup == 0.2
    a = peer.parse_args(["--min-time", "1", "--max-noise", "1", "--timeout", "20", "--min-warmup", "0",
                         "--window-ms", "5"])
    assert (a.options.min_time, a.options.max_noise, a.options.timeout, a.options.min_warmup,
            a.window_ms) == (1.0, 0.01, 20.0, 0.0, 5.0)
    r = run_cli(SCRIPT, "--list", "--max-noise", "0")
    assert r.returncode == 2 and "--max-noise must be > 0" in r.stderr


# ---- the steady protocol on a fake torch: a GPU whose clock advances by each launch's time --------

class FakeGpu:
    """Launches advance a GPU clock by their duration at enqueue; each wait on an event advances
    the host clock by host_wait (dyadic steps, so every sum is exact)."""

    def __init__(self, launch_seconds, host_wait=2.0 ** -7):
        self.launch_seconds = launch_seconds
        self.host_wait = host_wait
        self.clock = 0.0               # GPU time at the end of the queue
        self.host = 0.0                # host clock (replaces time.perf_counter)
        self.calls = 0
        self.log = []                  # "record" / "wait", in host order

    def fn(self):
        self.calls += 1
        self.clock += self.launch_seconds


class FakeEvent:
    def __init__(self, gpu):
        self.gpu, self.t = gpu, None

    def record(self):
        self.t = self.gpu.clock
        self.gpu.log.append("record")

    def synchronize(self):
        self.gpu.log.append("wait")
        self.gpu.host += self.gpu.host_wait

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class FakeTorch:
    def __init__(self, gpu):
        self.cuda = types.SimpleNamespace(Event=lambda enable_timing=True: FakeEvent(gpu),
                                          synchronize=lambda: None)


class FakeNvml:
    """The device handed to the sampler; v2 reads no energy in the timing loop."""

    def __init__(self, gpu):
        self.gpu = gpu

    def energy_mj(self):
        raise AssertionError("the timing loop read the energy counter")


def fake_sampler(inside, reasons_seen=0):
    """Samples every 2^-8 s of host time: SM 1980 MHz with the power cap for j in `inside`,
    1000 MHz and idle elsewhere; the energy counter steps every 32 samples (0.125 s) by 700 W's
    worth; NVML's power reading says 650 W (used only without two steps). reasons_seen: what the
    sampler reports live while the case runs."""
    class Sampler:
        def __init__(self, device):
            self.device = device
            self.reasons_seen = reasons_seen

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


# ---- LlamaBlock: HF LlamaDecoderLayer, bf16, torch-eager / torch-sdpa / torch-compile -----------

LLAMA_DEFAULT_NAMES = [
    f"LlamaBlock/{backend}/bf16/{passes}/seq:4096/batch:{batch}{tag}/manual_time"
    for tag, batch in (("", 2), ("/model:llama-3.2-1b", 4))
    for backend in ("torch-eager", "torch-sdpa", "torch-compile")
    for passes in ("fwd", "fwdbwd")]


def test_llama_block_default_cases_named_as_xfbench():
    assert names(["LlamaBlock"]) == LLAMA_DEFAULT_NAMES
    assert LLAMA_DEFAULT_NAMES[0] == "LlamaBlock/torch-eager/bf16/fwd/seq:4096/batch:2/manual_time"
    assert LLAMA_DEFAULT_NAMES[-1] == \
        "LlamaBlock/torch-compile/bf16/fwdbwd/seq:4096/batch:4/model:llama-3.2-1b/manual_time"
    assert "LlamaBlock" in peer.ALL_FAMILIES and "LlamaBlock" not in peer.DEFAULT_FAMILIES
    assert set(LLAMA_DEFAULT_NAMES) <= set(names(peer.ALL_FAMILIES))
    sp = peer.default_specs(["LlamaBlock"])[0]
    assert sp.kw == {"model": "llama-3.1-8b", "backend": "torch-eager", "dtype": "bf16",
                     "passes": "fwd", "seq": 4096, "batch": 2}
    # other models, shapes and dtypes; --llama-shapes before --layer-shapes before the model's own
    specs = peer.default_specs(["LlamaBlock"], llama_models=["llama-3.2-3b", "llama-3.1-70b"],
                               llama_dtypes=["bf16", "fp16"], llama_shapes=[(2048, 8), (8192, 1)],
                               layer_shapes=[(128, 64)])
    n = [s.name for s in specs]
    assert len(n) == 2 * 3 * 2 * 2 * 2
    assert "LlamaBlock/torch-sdpa/fp16/fwdbwd/seq:8192/batch:1/model:llama-3.1-70b" in n
    assert "LlamaBlock/torch-compile/bf16/fwd/seq:2048/batch:8/model:llama-3.2-3b" in n
    n = [s.name for s in peer.default_specs(["LlamaBlock"], layer_shapes=[(128, 64)])]
    assert all("/seq:128/batch:64" in x for x in n) and len(n) == 12
    n = [s.name for s in peer.default_specs(["LlamaBlock"], llama_models=["llama-3.1-70b"])]
    assert n[0] == "LlamaBlock/torch-eager/bf16/fwd/seq:4096/batch:1/model:llama-3.1-70b"


def test_llama_names_match_xfbench_after_backend_mapping(tmp_path):
    """torch-sdpa pairs with xfbench's fused, torch-eager with unfused by default; torch-compile keeps
    its name by default (one file holds it beside torch-sdpa: both mapped to fused would be one
    case) and pairs with fused when asked: --match-backend torch-compile=fused,torch-eager=unfused."""
    bmap = loader.DEFAULT_BACKEND_MAP
    mapped = [loader.map_backend(loader.strip_name(n), bmap) for n in LLAMA_DEFAULT_NAMES]
    assert "LlamaBlock/fused/bf16/fwd/seq:4096/batch:2" in mapped
    assert "LlamaBlock/unfused/bf16/fwdbwd/seq:4096/batch:4/model:llama-3.2-1b" in mapped
    asked = loader.parse_backend_map("torch-compile=fused,torch-eager=unfused")
    assert loader.map_backend("LlamaBlock/torch-compile/bf16/fwd/seq:4096/batch:2", asked) == \
        "LlamaBlock/fused/bf16/fwd/seq:4096/batch:2"
    # a peer file with both: by default two cases, each with its own repetitions
    specs = [s for s in peer.default_specs(["LlamaBlock"])
             if s.name.endswith("bf16/fwd/seq:4096/batch:2") and s.kw["backend"] != "torch-eager"]
    entries = []
    for i, (sp, t) in enumerate(zip(specs, (0.004, 0.003))):
        entries += peer.gb_entries(sp, [peer.Rep(t, 10), peer.Rep(t, 10)], 0, i)
    out = tmp_path / "torch_llama.json"
    peer.write_json(str(out), peer.base_context("hot"), entries)
    run = loader.load(str(out))
    assert len(run.cases) == 2
    sdpa = run.cases["LlamaBlock/fused/bf16/fwd/seq:4096/batch:2"]
    assert sdpa.raw_name.split("/")[1] == "torch-sdpa" and len(sdpa.reps) == 2
    compiled = next(c for c in run.cases.values() if c is not sdpa)
    assert "torch-compile" in compiled.raw_name and len(compiled.reps) == 2
    run = loader.load(str(out), backend_map=asked)
    assert run.cases["LlamaBlock/fused/bf16/fwd/seq:4096/batch:2"].raw_name.split("/")[1] == "torch-compile"
    assert run.cases["LlamaBlock/fused/bf16/fwd/seq:4096/batch:2"].value("TFLOPS") == \
        pytest.approx(peer.llama_flops(2, 4096, "llama-3.1-8b") / 0.003 / 1e12)


def test_llama_flop_formula():
    # llama-3.1-8b, s 4096, b 2: h 4096, 32 heads x 128 = A 4096, 8 kv heads, I 14336
    b, s, h, a, kv, d, inter = 2, 4096, 4096, 4096, 8, 128, 14336
    qkv = 2 * b * s * h * (a + 2 * kv * d)
    o_proj = 2 * b * s * a * h
    mlp = 6 * b * s * h * inter
    att = 4 * b * s * s * a
    fwd = qkv + o_proj + mlp + att
    assert fwd == 4_123_168_604_160
    assert peer.llama_flops(2, 4096, "llama-3.1-8b") == fwd
    assert peer.llama_flops(2, 4096, "llama-3.1-8b", passes="fwdbwd") == 3 * fwd
    assert peer.llama_flops(2, 4096, "llama-3.1-8b", causal=True) == fwd - att // 2
    assert peer.llama_flops(2, 4096, "llama-3.1-8b", "fwdbwd", causal=True) == 3 * (fwd - att // 2)
    # llama-3.2-1b (GQA: 8 kv heads of 32, head_dim 64): k and v together are half of q's width
    b, s, h, a, kv, d, inter = 4, 4096, 2048, 2048, 8, 64, 8192
    kv_term = 2 * b * s * h * 2 * kv * d
    assert kv_term == 2 * b * s * h * a // 2
    fwd = 2 * b * s * h * a + kv_term + 2 * b * s * a * h + 6 * b * s * h * inter + 4 * b * s * s * a
    assert peer.llama_flops(4, 4096, "llama-3.2-1b") == fwd == 2_542_620_639_232
    # llama-3.2-3b: 24 heads x 128 = 3072 = h; llama-3.1-70b: 64 x 128 = 8192 = h
    for model, (h, a, kv, d, inter) in {"llama-3.2-3b": (3072, 3072, 8, 128, 8192),
                                        "llama-3.1-70b": (8192, 8192, 8, 128, 28672)}.items():
        b, s = 1, 2048
        assert peer.llama_flops(b, s, model) == (2 * b * s * h * (a + 2 * kv * d) + 2 * b * s * a * h
                                                 + 6 * b * s * h * inter + 4 * b * s * s * a)


def test_llama_counters():
    sp = next(s for s in peer.default_specs(["LlamaBlock"])
              if s.name == "LlamaBlock/torch-sdpa/bf16/fwdbwd/seq:4096/batch:4/model:llama-3.2-1b")
    c = peer.counters(sp, 0.05, mem_bytes=12e9)
    flops = peer.llama_flops(4, 4096, "llama-3.2-1b", "fwdbwd")
    assert c["TFLOPS"] == pytest.approx(flops / 0.05 / 1e12)
    assert c["TFLOPS_causal"] == pytest.approx(
        peer.llama_flops(4, 4096, "llama-3.2-1b", "fwdbwd", causal=True) / 0.05 / 1e12)
    assert c["TFLOPS_causal"] < c["TFLOPS"]
    assert c["samples/s"] == pytest.approx(80) and c["tokens/s"] == pytest.approx(80 * 4096)
    assert c["mem_GB"] == pytest.approx(12.0)
    assert list(c)[0] == "TFLOPS"  # the summary line's and the tables' headline


def test_llama_configs_are_the_published_ones():
    def rope(factor):
        return {"rope_type": "llama3", "rope_theta": 500000.0, "factor": factor, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    common = {"hidden_act": "silu", "rms_norm_eps": 1e-5, "attention_bias": False, "mlp_bias": False,
              "attention_dropout": 0.0, "max_position_embeddings": 131072, "num_hidden_layers": 1}
    want = {"llama-3.2-1b": (2048, 32, 8, 64, 8192, 32.0), "llama-3.2-3b": (3072, 24, 8, 128, 8192, 32.0),
            "llama-3.1-8b": (4096, 32, 8, 128, 14336, 8.0), "llama-3.1-70b": (8192, 64, 8, 128, 28672, 8.0)}
    assert set(peer.LLAMA_MODELS) == set(want)
    for model, (h, heads, kv, d, inter, factor) in want.items():
        assert peer.llama_config(model) == dict(
            common, hidden_size=h, num_attention_heads=heads, num_key_value_heads=kv, head_dim=d,
            intermediate_size=inter, rope_parameters=rope(factor)), model
    assert peer.llama_config("llama-3.1-8b", 262144)["max_position_embeddings"] == 262144
    # a fresh dict each time: LlamaConfig completes rope_parameters in place
    assert peer.llama_config("llama-3.1-8b")["rope_parameters"] is not \
        peer.llama_config("llama-3.1-8b")["rope_parameters"]


def test_llama_config_for_transformers_5_and_4():
    """transformers 5.x takes rope_parameters (rope_theta inside); 4.x rope_theta + rope_scaling."""
    class Config5:
        def __init__(self, hidden_size=1, rope_parameters=None, **kw):
            self.kw = dict(kw, hidden_size=hidden_size, rope_parameters=rope_parameters)

    class Config4:
        def __init__(self, hidden_size=1, rope_theta=1e4, rope_scaling=None, **kw):
            self.kw = dict(kw, hidden_size=hidden_size, rope_theta=rope_theta, rope_scaling=rope_scaling)
    kw = peer.llama_config("llama-3.2-1b", 4096)
    c5 = peer.builders.llama.layer_config(Config5, "sdpa", kw)
    assert c5.kw == kw and c5._attn_implementation == "sdpa"
    assert c5.kw["rope_parameters"] is not kw["rope_parameters"]
    c4 = peer.builders.llama.layer_config(Config4, "eager", kw)
    assert c4.kw["rope_theta"] == 500000.0 and "rope_parameters" not in c4.kw
    assert c4.kw["rope_scaling"] == {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    assert c4._attn_implementation == "eager" and kw["rope_parameters"]["rope_theta"] == 500000.0


class FakeCompileTorch:
    """torch.compile whose fullgraph=True attempt raises `breaks` at the first call, if any."""

    def __init__(self, breaks):
        self.breaks, self.log = breaks, []
        self._dynamo = types.SimpleNamespace(reset=lambda: self.log.append("reset"))
        self.cuda = types.SimpleNamespace(synchronize=lambda: self.log.append("sync"))

    def compile(self, mod, fullgraph=False, dynamic=None):
        self.log.append(f"compile fullgraph={fullgraph} dynamic={dynamic}")
        return ("compiled", mod, fullgraph)


class Unsupported(Exception):
    """As torch._dynamo.exc.Unsupported: what fullgraph=True raises at a graph break."""


Unsupported.__module__ = "torch._dynamo.exc"


def test_torch_compile_is_compiled_before_the_timing():
    def runner(compiled):
        def run():
            fake.log.append(f"run {compiled[2]}")
            if compiled[2] and fake.breaks:
                raise fake.breaks
        return run
    fake = FakeCompileTorch(breaks=False)
    run, label = peer.builders.common.compiled(fake, "layer", runner)
    assert fake.log == ["reset", "compile fullgraph=True dynamic=False", "run True", "run True", "sync"]
    assert label.startswith("compiled in ") and label.endswith(" s")
    fake = FakeCompileTorch(breaks=Unsupported("graph break in foo\nmore"))
    run, label = peer.builders.common.compiled(fake, "layer", runner)
    assert fake.log == ["reset", "compile fullgraph=True dynamic=False", "run True",
                        "reset", "compile fullgraph=False dynamic=False", "run False", "run False", "sync"]
    assert label.startswith("compiled with graph breaks in ")
    assert label.endswith("(fullgraph: graph break in foo)")
    # any other error (out of memory, a kernel's) is the case's error, not a reason to retry
    fake = FakeCompileTorch(breaks=RuntimeError("CUDA out of memory"))
    with pytest.raises(RuntimeError, match="CUDA out of memory"):
        peer.builders.common.compiled(fake, "layer", runner)
    assert fake.log.count("reset") == 1


def test_llama_cli_flags():
    r = run_cli(SCRIPT, "--help")
    for flag in ("--llama-models", "--llama-shapes", "--llama-dtypes", "torch-compile", "llama-3.1-70b"):
        assert flag in r.stdout
    r = run_cli(SCRIPT, "--list", "--families", "LlamaBlock")
    assert r.returncode == 0 and r.stdout.split() == LLAMA_DEFAULT_NAMES
    r = run_cli(SCRIPT, "--list", "--families", "LlamaBlock", "--llama-models", "llama-3.2-3b",
                "--llama-shapes", "2048x4,8192x1", "--llama-dtypes", "fp16", "--filter", "torch-sdpa")
    assert r.returncode == 0
    assert r.stdout.split() == [f"LlamaBlock/torch-sdpa/fp16/{p}/seq:{s}/batch:{b}/model:llama-3.2-3b/manual_time"
                                for s, b in ((2048, 4), (8192, 1)) for p in ("fwd", "fwdbwd")]
    r = run_cli(SCRIPT, "--list", "--families", "all", "--filter", r"^LlamaBlock/torch-compile/.*batch:2/")
    assert r.returncode == 0 and r.stdout.split() == [
        "LlamaBlock/torch-compile/bf16/fwd/seq:4096/batch:2/manual_time",
        "LlamaBlock/torch-compile/bf16/fwdbwd/seq:4096/batch:2/manual_time"]
    a = peer.parse_args(["--families", "LlamaBlock", "--llama-models", "llama-3.1-70b, llama-3.2-1b",
                         "--llama-shapes", "8192x1", "--llama-dtypes", "bf16,fp16"])
    assert a.llama_model_list == ["llama-3.1-70b", "llama-3.2-1b"] and a.llama_shapes == [(8192, 1)]
    assert a.llama_dtype_list == ["bf16", "fp16"] and a.family_list == ["LlamaBlock"]
    a = peer.parse_args([])
    assert a.llama_model_list == ["llama-3.1-8b", "llama-3.2-1b"] and a.llama_shapes is None
    assert a.llama_dtype_list == ["bf16"]
    for args, message in ((("--llama-models", "llama-3-8b"), "unknown --llama-models llama-3-8b"),
                          (("--llama-models", ","), "unknown --llama-models"),
                          (("--llama-dtypes", "fp32"), "unknown --llama-dtypes fp32"),
                          (("--llama-shapes", "4096"), "bad --llama-shapes item '4096'"),
                          (("--llama-shapes", "4096x0"), "bad --llama-shapes item '4096x0'")):
        r = run_cli(SCRIPT, "--list", *args)
        assert r.returncode == 2 and message in r.stderr, args
        assert len(r.stderr.strip().splitlines()) == 1


def test_llama_filter_selects_by_regex():
    specs = peer.default_specs(["LlamaBlock"])
    sel = peer.select(specs, r"torch-compile/.*model:llama-3\.2-1b")
    assert [s.name for s in sel] == [
        "LlamaBlock/torch-compile/bf16/fwd/seq:4096/batch:4/model:llama-3.2-1b",
        "LlamaBlock/torch-compile/bf16/fwdbwd/seq:4096/batch:4/model:llama-3.2-1b"]
    sel = peer.select(specs, r"fwdbwd/seq:4096/batch:2/manual_time$")  # llama-3.1-8b: no model tag
    assert [s.kw["backend"] for s in sel] == ["torch-eager", "torch-sdpa", "torch-compile"]
    assert all(s.kw["model"] == "llama-3.1-8b" for s in sel)


# ---- TrainStep for Llama: HF LlamaForCausalLM, bf16 autocast, torch-sdpa / torch-compile ---------

LLAMA_TRAIN_NAMES = [
    f"TrainStep/{backend}/{model}/bf16/seq:4096/batch:{batch}/accum:1/ckpt:{ckpt}/adamw:fused/manual_time"
    for model, cases in (("llama-3.2-1b", ((4, "off"), (4, "on"))),
                         ("llama-3.2-3b", ((1, "off"), (2, "on"))))
    for backend in ("torch-sdpa", "torch-compile")
    for batch, ckpt in cases]


def test_llama_train_step_cases_named_as_xfbench():
    """Only when asked (--train-models); torch-sdpa becomes xfbench's fused (its extended suite's
    Llama names, tests/train_step/test_train_config.cpp); torch-compile keeps its name."""
    specs = peer.default_specs(["TrainStep"], train_models=["llama-3.2-1b", "llama-3.2-3b"])
    assert [s.gb_name for s in specs] == LLAMA_TRAIN_NAMES
    assert LLAMA_TRAIN_NAMES[0] == \
        "TrainStep/torch-sdpa/llama-3.2-1b/bf16/seq:4096/batch:4/accum:1/ckpt:off/adamw:fused/manual_time"
    assert LLAMA_TRAIN_NAMES[-1] == \
        "TrainStep/torch-compile/llama-3.2-3b/bf16/seq:4096/batch:2/accum:1/ckpt:on/adamw:fused/manual_time"
    assert specs[1].kw == {"model": "llama-3.2-1b", "precision": "bf16", "seq": 4096, "batch": 4,
                           "accum": 1, "ckpt": True, "adamw": "fused", "attention": "sdpa",
                           "backend": "torch-sdpa"}
    assert specs[2].kw["backend"] == "torch-compile" and specs[2].kw["attention"] == "sdpa"
    mapped = [loader.map_backend(loader.strip_name(n), loader.DEFAULT_BACKEND_MAP) for n in LLAMA_TRAIN_NAMES]
    assert {n for n in mapped if "/fused/" in n} == {
        "TrainStep/fused/llama-3.2-1b/bf16/seq:4096/batch:4/accum:1/ckpt:off/adamw:fused",
        "TrainStep/fused/llama-3.2-1b/bf16/seq:4096/batch:4/accum:1/ckpt:on/adamw:fused",
        "TrainStep/fused/llama-3.2-3b/bf16/seq:4096/batch:1/accum:1/ckpt:off/adamw:fused",
        "TrainStep/fused/llama-3.2-3b/bf16/seq:4096/batch:2/accum:1/ckpt:on/adamw:fused"}
    assert sum("/torch-compile/" in n for n in mapped) == 4
    # the default run, and `all`, have none: the BERT/GPT-2 TrainStep cases are as before
    assert not any(n.startswith("TrainStep/") and "llama" in n
                   for n in names(["TrainStep"]) + names(peer.ALL_FAMILIES))
    assert names(["TrainStep"]) == [s.gb_name for s in peer.default_specs(
        ["TrainStep"], train_models=["bert-large", "gpt2-medium"])]
    assert len(names(["TrainStep"])) == 3 * 7
    # one model, in the order asked, beside a headline model
    n = [s.name for s in peer.default_specs(["TrainStep"], train_models=["llama-3.2-3b", "gpt2-medium"])]
    assert n[:4] == [x[:-len("/manual_time")] for x in LLAMA_TRAIN_NAMES[4:]]
    assert len(n) == 4 + 7 and all("gpt2-medium" in x for x in n[4:])


def test_llama_train_flops_per_sample():
    # llama-3.2-1b, s 4096: per token 3 * (L * (2h(A + 2*kv*d) + 2Ah + 6hI + 4sA) + 2hV)
    L, h, A, kv, d, inter, s, V = 16, 2048, 32 * 64, 8, 64, 8192, 4096, 128256
    qkv = 2 * h * (A + 2 * kv * d)       # 12,582,912
    o_proj = 2 * A * h                   # 8,388,608
    mlp = 6 * h * inter                  # 100,663,296
    att = 4 * s * A                      # 33,554,432
    head = 2 * h * V                     # 525,336,576
    assert (qkv, o_proj, mlp, att, head) == (12_582_912, 8_388_608, 100_663_296, 33_554_432, 525_336_576)
    per_token = L * (qkv + o_proj + mlp + att) + head
    assert per_token == 3_008_364_544
    assert peer.train_flops_per_sample("llama-3.2-1b", 4096) == 3 * per_token * s == 36_966_783_516_672
    assert peer.train_flops_per_sample("llama-3.2-1b", 4096, ckpt=True) == 4 * per_token * s \
        == 49_289_044_688_896
    # the layer part is LlamaBlock's count at batch 1 (one function for both)
    for model in ("llama-3.2-3b", "llama-3.1-8b"):
        layers, hidden = peer.LLAMA_TRAIN[model][0], peer.LLAMA_MODELS[model][0]
        assert peer.train_flops_per_sample(model, 4096) == 3 * (
            layers * peer.llama_flops(1, 4096, model) + 2 * 4096 * hidden * V)
    # counters: TFLOPS over batch samples, samples/s, tokens/s (MFU: the tables, from the peak)
    sp = next(x for x in peer.default_specs(["TrainStep"], train_models=["llama-3.2-1b"])
              if x.kw["ckpt"] and x.kw["backend"] == "torch-sdpa")
    c = peer.counters(sp, 2.0, mem_bytes=70e9)
    assert c["TFLOPS"] == pytest.approx(49_289_044_688_896 * 4 / 2.0 / 1e12)
    assert c["samples/s"] == 2.0 and c["tokens/s"] == 2.0 * 4096 and c["mem_GB"] == pytest.approx(70)
    assert "MFU" not in c and "TFLOPS_causal" not in c  # as xfbench's TrainStep counters


def test_llama_train_configs_are_the_published_ones():
    def rope(factor):
        return {"rope_type": "llama3", "rope_theta": 500000.0, "factor": factor, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    common = {"hidden_act": "silu", "rms_norm_eps": 1e-5, "attention_bias": False, "mlp_bias": False,
              "attention_dropout": 0.0, "max_position_embeddings": 131072, "vocab_size": 128256,
              "use_cache": False}
    want = {"llama-3.2-1b": (16, 2048, 32, 8, 64, 8192, 32.0, True),
            "llama-3.2-3b": (28, 3072, 24, 8, 128, 8192, 32.0, True),
            "llama-3.1-8b": (32, 4096, 32, 8, 128, 14336, 8.0, False)}
    assert set(peer.LLAMA_TRAIN) == set(want)
    for model, (layers, h, heads, kv, d, inter, factor, tied) in want.items():
        assert peer.llama_train_config(model) == dict(
            common, num_hidden_layers=layers, hidden_size=h, num_attention_heads=heads,
            num_key_value_heads=kv, head_dim=d, intermediate_size=inter, tie_word_embeddings=tied,
            rope_parameters=rope(factor)), model
    # transformers 4.x gets rope_theta + rope_scaling, as LlamaBlock's layer config
    class Config4:
        def __init__(self, rope_theta=1e4, rope_scaling=None, **kw):
            self.kw = dict(kw, rope_theta=rope_theta, rope_scaling=rope_scaling)
    c4 = peer.builders.llama.layer_config(Config4, "sdpa", peer.llama_train_config("llama-3.1-8b"))
    assert c4.kw["rope_theta"] == 500000.0 and c4.kw["rope_scaling"]["factor"] == 8.0
    assert c4.kw["tie_word_embeddings"] is False and c4._attn_implementation == "sdpa"
    # the published parameter counts (the builder checks the model against them)
    assert peer.llama_param_count("llama-3.2-1b") == 1_235_814_400
    assert peer.llama_param_count("llama-3.2-3b") == 3_212_749_824
    assert peer.llama_param_count("llama-3.1-8b") == 8_030_261_248


def test_llama_train_cli():
    r = run_cli(SCRIPT, "--list", "--families", "TrainStep", "--train-models", "llama-3.2-1b,llama-3.2-3b")
    assert r.returncode == 0 and r.stdout.split() == LLAMA_TRAIN_NAMES
    r = run_cli(SCRIPT, "--list", "--families", "TrainStep", "--train-models", "llama-3.2-1b",
                "--filter", "torch-sdpa")
    assert r.returncode == 0 and r.stdout.split() == LLAMA_TRAIN_NAMES[:2]
    r = run_cli(SCRIPT, "--help")
    assert "--train-models" in r.stdout and "llama-3.2-3b" in r.stdout
    a = peer.parse_args(["--families", "TrainStep", "--train-models", "llama-3.2-3b, bert-large,llama-3.2-3b"])
    assert a.train_model_list == ["llama-3.2-3b", "bert-large"]
    assert peer.parse_args([]).train_model_list == ["bert-large", "gpt2-medium"]
    for args, message in ((("--train-models", "llama-3-1b"), "unknown --train-models llama-3-1b"),
                          (("--train-models", "gpt2-large"), "unknown --train-models gpt2-large"),
                          (("--train-models", ","), "unknown --train-models"),
                          (("--train-models", "llama-3.1-8b"),
                           "--train-models llama-3.1-8b: no one-GPU TrainStep case")):
        r = run_cli(SCRIPT, "--list", "--families", "TrainStep", *args)
        assert r.returncode == 2 and message in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1


class FakeTrainTorch:
    """What build_train touches of torch, logging what it is asked; tensors are strings."""

    float32, bfloat16, float16 = "float32", "bfloat16", "float16"

    def __init__(self):
        import contextlib
        log = self.log = []
        self.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(
            matmul=types.SimpleNamespace(allow_tf32=None)))
        self.device = lambda dev: (log.append(f"device {dev}"), contextlib.nullcontext())[1]

        def adamw(params, lr, fused, foreach):
            log.append(f"AdamW n={sum(p.numel() for p in params)} lr={lr} fused={fused} foreach={foreach}")
            return types.SimpleNamespace(step=lambda: log.append("opt.step"),
                                         zero_grad=lambda set_to_none: log.append("zero_grad"))
        self.optim = types.SimpleNamespace(AdamW=adamw)

        class Scaler:
            def __init__(self, device, enabled):
                log.append(f"GradScaler enabled={enabled}")

            def scale(self, loss):
                return loss

            def unscale_(self, opt):
                pass

            def step(self, opt):
                opt.step()

            def update(self):
                pass
        self.amp = types.SimpleNamespace(GradScaler=Scaler)
        self.nn = types.SimpleNamespace(utils=types.SimpleNamespace(
            clip_grad_norm_=lambda params, norm: log.append(f"clip {norm}")))
        self._dynamo = types.SimpleNamespace(reset=lambda: log.append("dynamo.reset"))
        self.cuda = types.SimpleNamespace(synchronize=lambda: None)

    def autocast(self, device, dtype, enabled):
        import contextlib
        self.log.append(f"autocast {device} {dtype} {enabled}")
        return contextlib.nullcontext()

    def randint(self, low, high, size, device):
        return f"ids{size}<{high}"

    def compile(self, mod, fullgraph=False, dynamic=None):
        self.log.append(f"compile fullgraph={fullgraph} dynamic={dynamic}")
        return mod


def fake_transformers(log, late_tie=False, extra_params=0):
    """transformers 5.x's LlamaConfig (rope_parameters) and a LlamaForCausalLM of the published
    parameter count (plus extra_params), its head tied at construction or by tie_weights()."""
    class Param:
        def __init__(self, n):
            self.n = n

        def numel(self):
            return self.n

    class LlamaConfig:
        def __init__(self, rope_parameters=None, **kw):
            self.kw = dict(kw, rope_parameters=rope_parameters)

    class LlamaForCausalLM:
        def __init__(self, config):
            c = config.kw
            self.config = config
            h, V, tied = c["hidden_size"], c["vocab_size"], c["tie_word_embeddings"]
            embed = Param(V * h)
            self.model = types.SimpleNamespace(embed_tokens=types.SimpleNamespace(weight=embed))
            rest = peer.llama_param_count(self.name(c)) - V * h * (1 if tied else 2) + extra_params
            self.lm_head = types.SimpleNamespace(weight=embed if tied and not late_tie else Param(V * h))
            self.rest = Param(rest)
            log.append(f"LlamaForCausalLM layers={c['num_hidden_layers']} tied={tied} "
                       f"attn={config._attn_implementation}")

        @staticmethod
        def name(c):
            return next(m for m in peer.LLAMA_TRAIN if peer.llama_train_config(m) == c)

        def tie_weights(self):
            log.append("tie_weights")
            self.lm_head.weight = self.model.embed_tokens.weight

        def parameters(self):
            return list({id(p): p for p in (self.model.embed_tokens.weight, self.lm_head.weight,
                                            self.rest)}.values())

        def to(self, *a, **kw):
            return self

        def train(self):
            return self

        def gradient_checkpointing_enable(self):
            log.append("gradient_checkpointing_enable")

        def __call__(self, input_ids, labels):
            log.append(f"forward {input_ids} labels={'ids' if labels is input_ids else labels}")

            class Loss:
                def __truediv__(self, n):
                    return self

                def backward(self):
                    log.append("backward")
            return types.SimpleNamespace(loss=Loss())
    return types.SimpleNamespace(__version__="5.17.0", LlamaConfig=LlamaConfig,
                                 LlamaForCausalLM=LlamaForCausalLM)


def test_llama_train_step_build_without_a_gpu(monkeypatch):
    """build_train's Llama path on fakes: the config, fp32 weights under bf16 autocast, fused AdamW
    over every parameter once (the tied head counted once), clipping 1.0, checkpointing for ckpt:on,
    labels = ids, torch-compile compiled before the timing; a wrong model is refused."""
    specs = {(s.kw["backend"], s.kw["ckpt"]): s
             for s in peer.default_specs(["TrainStep"], train_models=["llama-3.2-1b"])}
    fake = FakeTrainTorch()
    monkeypatch.setitem(sys.modules, "transformers", fake_transformers(fake.log, late_tie=True))
    step = peer.build_train(fake, specs[("torch-sdpa", True)], "cuda:0")
    assert fake.log == [
        "device cuda:0", "LlamaForCausalLM layers=16 tied=True attn=sdpa", "tie_weights",
        "gradient_checkpointing_enable", "AdamW n=1235814400 lr=0.0001 fused=True foreach=None",
        "GradScaler enabled=False"]
    assert fake.backends.cuda.matmul.allow_tf32 is False
    del fake.log[:]
    step()
    assert fake.log == ["autocast cuda bfloat16 True", "forward ids(4, 4096)<128256 labels=ids", "backward",
                        "clip 1.0", "opt.step", "zero_grad"]
    fake = FakeTrainTorch()
    monkeypatch.setitem(sys.modules, "transformers", fake_transformers(fake.log))
    step = peer.build_train(fake, specs[("torch-compile", False)], "cuda:0")
    assert "gradient_checkpointing_enable" not in fake.log and "tie_weights" not in fake.log
    i = fake.log.index("compile fullgraph=True dynamic=False")
    assert fake.log[i - 1] == "dynamo.reset" and fake.log[i + 1:].count("opt.step") == 2  # two steps
    assert step.case_label.startswith("compiled in ")
    # the untied 8B head has its own parameters; a model of another size is refused
    sp = peer.Spec("TrainStep", "x", model="llama-3.1-8b", precision="bf16", seq=4096, batch=1, accum=1,
                   ckpt=True, adamw="fused", attention="sdpa", backend="torch-sdpa")
    fake = FakeTrainTorch()
    monkeypatch.setitem(sys.modules, "transformers", fake_transformers(fake.log))
    peer.build_train(fake, sp, "cuda:0")
    assert "AdamW n=8030261248 lr=0.0001 fused=True foreach=None" in fake.log
    monkeypatch.setitem(sys.modules, "transformers", fake_transformers(fake.log, extra_params=1))
    with pytest.raises(RuntimeError, match="has 1,235,814,401 parameters, the published config 1,235,814,400"):
        peer.build_train(FakeTrainTorch(), specs[("torch-sdpa", False)], "cuda:0")


# ---- Matmul's own names (--names), the hot protocol's idle pause, --paired: what
# the second peer (plugins/matmul/torch_peer.py) did, now in the one package -----------------

def test_matmul_specs_from_xfbench_names():
    specs = peer.specs_from_names([
        "Matmul/bf16/NN/m:8192/n:8192/k:8192/iterations:1/manual_time",
        "Matmul/sweep/fp8/NT/m:256/n:512/k:1024/iterations:1/manual_time",
        "Matmul/fp16/TN/model:bert-large/gemm:qkv/batch:4/m:512/n:3072/k:1024", ""])
    assert [s.name for s in specs] == [
        "Matmul/bf16/NN/m:8192/n:8192/k:8192", "Matmul/sweep/fp8/NT/m:256/n:512/k:1024",
        "Matmul/fp16/TN/model:bert-large/gemm:qkv/batch:4/m:512/n:3072/k:1024"]
    assert specs[1].kw == {"dtype": "fp8", "layout": "NT", "m": 256, "n": 512, "k": 1024,
                           "batch": 1}
    assert specs[2].kw["batch"] == 4 and specs[2].kw["layout"] == "TN"
    # batch counts in the FLOPs, as xfbench's 2mnk·batch
    assert peer.counters(specs[2], 1.0)["TFLOPS"] == pytest.approx(2 * 512 * 3072 * 1024 * 4 / 1e12)
    for bad in ("Vector/scale/fp32/n:4", "Matmul/bf16/NN/m:1/n:2", "Matmul/bf16/XX/extra/m:1/n:1/k:1"):
        with pytest.raises(ValueError, match="Matmul case names"):
            peer.specs_from_names([bad])


def test_hot_protocol_idles_before_large_products_only():
    big = peer.Spec("Matmul", "m", dtype="bf16", m=8192, n=8192, k=8192)
    small = peer.Spec("Matmul", "m", dtype="bf16", m=1024, n=1024, k=1024)
    batched = peer.Spec("Matmul", "m", dtype="bf16", m=1024, n=1024, k=1024, batch=8)
    assert peer.idles_before(big) and not peer.idles_before(small)
    assert peer.idles_before(batched)  # 1.7e10 FLOPs with the batch
    assert not peer.idles_before(peer.Spec("Vector", "v", op="scale", dtype="fp32", n=1 << 30))


def test_names_option_lists_and_rejects(tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("Matmul/bf16/NN/m:8192/n:8192/k:8192/iterations:1/manual_time\n"
                     "Matmul/sweep/fp8/NT/m:256/n:256/k:256/iterations:1/manual_time\n")
    r = run_cli(SCRIPT, "--names", str(names), "--list", "--filter", "sweep")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["Matmul/sweep/fp8/NT/m:256/n:256/k:256/manual_time"]
    names.write_text("BertLayer/fused/fp16/fwd/seq:128/batch:64\n")
    r = run_cli(SCRIPT, "--names", str(names), "--list")
    assert r.returncode == 2 and "builds Matmul case names" in r.stderr
    r = run_cli(SCRIPT, "--names", str(tmp_path / "missing.txt"), "--list")
    assert r.returncode == 2 and "--names" in r.stderr
    r = run_cli(SCRIPT, "--list", "--paired", str(tmp_path / "no-xfbench"))
    assert r.returncode == 2 and "not an executable" in r.stderr
    r = run_cli(SCRIPT, "--list", "--pairs", "0")
    assert r.returncode == 2 and "--pairs" in r.stderr


def test_paired_alternates_sides_and_takes_per_pair_ratios():
    assert peer.paired.pair_order(0) == ("torch", "xfbench")
    assert peer.paired.pair_order(1) == ("xfbench", "torch")
    calls, lines = [], []
    spec = peer.Spec("Matmul", "Matmul/bf16/NN/m:8/n:8/k:8", dtype="bf16", m=8, n=8, k=8)
    torch_values = iter([100.0, 100.0, 100.0])
    xf_values = iter([110.0, 90.0, 105.0])

    def torch_side(s):
        calls.append("torch")
        return next(torch_values)

    def xfbench_side(xfbench, name, extra):
        calls.append("xfbench")
        assert (xfbench, name, extra) == ("xf", spec.name, ["--a"])
        return next(xf_values), "label", {"sm_MHz": 1980}

    results = peer.paired.run_paired(torch_side, [spec], "xf", ["--a"], 3, run=xfbench_side,
                                     out=lines.append)
    assert calls == ["torch", "xfbench", "xfbench", "torch", "torch", "xfbench"]
    assert results[0]["ratios"] == pytest.approx([1.1, 0.9, 1.05])
    assert results[0]["xfbench_labels"] == ["label"] * 3
    assert "1.050" in lines[1] and lines[-1] == "1 of 1 cases with a median paired ratio >= 1"
