"""The peer runner's output and command line without torch: the Google-Benchmark-shaped JSON and its
error entries, case selection, the CLI's options and refusals, and the one line without torch."""

from reports_helpers import run_cli  # first: puts the repository root on sys.path
import json

import pytest

from peer_torch_helpers import SCRIPT, peer
from reports import loader


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
