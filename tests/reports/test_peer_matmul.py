"""Matmul's own names (--names), the hot protocol's idle pause and --paired: what the second peer
(plugins/matmul/torch_peer.py) did, now in the one package."""

from reports_helpers import run_cli  # first: puts the repository root on sys.path
import types

import pytest

from peer_torch_helpers import SCRIPT, peer


def test_matmul_specs_from_xfbench_names():
    specs = peer.specs_from_names([
        "Matmul/bf16/NN/m:8192/n:8192/k:8192/iterations:1/manual_time",
        "Matmul/sweep/fp8/NT/m:256/n:512/k:1024/iterations:1/manual_time",
        "Matmul/fp16/TN/model:bert-large/gemm:qkv/batch:4/m:512/n:3072/k:1024", ""])
    assert [s.name for s in specs] == [
        "Matmul/bf16/NN/m:8192/n:8192/k:8192", "Matmul/sweep/fp8/NT/m:256/n:512/k:1024",
        "Matmul/fp16/TN/model:bert-large/gemm:qkv/batch:4/m:512/n:3072/k:1024"]
    assert specs[1].kw == {"dtype": "fp8", "layout": "NT", "m": 256, "n": 512, "k": 1024,
                           "batch": 1, "fast_accum": False}
    fast = peer.specs_from_names(["Matmul/sweep/fp8/NT/accum:fast/m:256/n:512/k:1024"])[0]
    assert fast.kw["fast_accum"] and fast.kw["m"] == 256 and fast.kw["dtype"] == "fp8"
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


def test_fp8_products_accumulate_as_the_name_says():
    """accum:fast reaches torch._scaled_mm as use_fast_accum=True; a name without it, False."""
    from reports.peer.builders.kernels import build_matmul

    class T:  # a tensor that only remembers nothing: every op returns another
        def __mul__(self, o): return self
        def __sub__(self, o): return self
        def to(self, *a): return self
        def transpose(self, *a): return self

    calls = []
    torch = types.SimpleNamespace(
        float32="f32", bfloat16="bf16", float16="f16", float8_e4m3fn="e4m3",
        backends=types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace())),
        rand=lambda *a, **k: T(), ones=lambda *a, **k: T(),
        _scaled_mm=lambda a, b, **kw: calls.append(kw["use_fast_accum"]))
    for name in ("Matmul/fp8/NT/accum:fast/m:16/n:16/k:16", "Matmul/fp8/NT/m:16/n:16/k:16"):
        build_matmul(torch, peer.specs_from_names([name])[0], "cuda")()
    assert calls == [True, False]
