"""The peer runner's case catalogue without torch: its default cases and their names against
xfbench's, the FLOP formulas and counters, and GPT-2's cases and models."""

from reports_helpers import ROOT, run_cli  # first: puts the repository root on sys.path
import os

import pytest

from peer_torch_helpers import SCRIPT, names, peer
from reports import loader


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
