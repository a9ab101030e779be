"""The peer runner's pure-Python parts (names, FLOP formulas, JSON) and its CLI without torch."""

from reports_helpers import ROOT, run_cli  # first: puts the repository root on sys.path
import importlib.util
import json
import os

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
    assert "TrainStep/bert-large/fp16-ckpt/seq:512/batch:16/manual_time" in allnames


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
    samples = [0.0020, 0.0018, 0.0019]
    entries = peer.gb_entries(sp, samples, 50, 0, 0, mem_bytes=2e9)
    assert [e["run_type"] for e in entries] == ["iteration"] * 3 + ["aggregate"] * 4
    assert entries[0]["name"] == "BertLayer/torch-sdpa/fp16/fwd/seq:128/batch:128/manual_time"
    assert entries[3]["name"].endswith("/manual_time_mean") and entries[4]["aggregate_name"] == "median"
    assert entries[4]["real_time"] == pytest.approx(1.9)        # ms
    assert [e["repetition_index"] for e in entries[:3]] == [0, 1, 2]
    err = peer.error_entry(peer.default_specs(["Matmul"])[0], "RuntimeError: boom", 1, 0)
    ctx = dict(peer.base_context(), gpu_name="NVIDIA H100")
    out = tmp_path / "torch.json"
    peer.write_json(str(out), ctx, entries + [err])
    doc = json.loads(out.read_text())
    assert doc["context"]["xfbench_runner"] == "pytorch" and "date" in doc["context"]
    run = loader.load(str(out))
    c = run.cases["BertLayer/fused/fp16/fwd/seq:128/batch:128"]
    flops = peer.layer_flops(128, 128)
    assert c.value("TFLOPS") == pytest.approx(flops / 0.0019 / 1e12)
    assert run.cases["Matmul/fp32/NN/m:2048/n:2048/k:2048"].error == "RuntimeError: boom"


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
