"""LlamaBlock (HF LlamaDecoderLayer, bf16, torch-eager / torch-sdpa / torch-compile) without torch:
names against xfbench's, FLOPs and counters, the published configs, torch.compile, and the CLI."""

from reports_helpers import run_cli  # first: puts the repository root on sys.path
import types

import pytest

from peer_torch_helpers import LLAMA_DEFAULT_NAMES, SCRIPT, names, peer
from reports import loader


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
