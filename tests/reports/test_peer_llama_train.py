"""TrainStep for Llama (HF LlamaForCausalLM, bf16 autocast, torch-sdpa / torch-compile) without torch
or a GPU: names against xfbench's, FLOPs per sample, the published configs, the CLI, and build_train."""

from reports_helpers import run_cli  # first: puts the repository root on sys.path
import sys
import types

import pytest

from peer_torch_helpers import LLAMA_TRAIN_NAMES, SCRIPT, FakeTrainTorch, names, peer
from reports import loader


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
