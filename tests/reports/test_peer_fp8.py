"""The peer's FP8 cases (issue 34: torchao float8 training under torch.compile, backend
torchao-compile) without torch, torchao or a GPU: their names against xfbench's, the selection
(--llama-dtypes fp8, --train-precisions fp8), the builders on a fake torch and torchao, and the
error entry where torchao is missing."""

from reports_helpers import ROOT, run_cli  # first: puts the repository root on sys.path
import contextlib
import json
import os
import sys
import types

import pytest

from reports import loader
from peer_torch_helpers import (LLAMA_DEFAULT_NAMES, LLAMA_TRAIN_NAMES, SCRIPT, FakeTrainTorch,
                                names, peer)

FP8 = peer.builders.fp8
INSTALL = "torchao not installed: pip install torchao==0.18.0"
XF_RESULTS = os.path.join(ROOT, "reports", "results", "h100")
TO_FUSED = loader.parse_backend_map("torch-sdpa=fused,torch-eager=unfused,torchao-compile=fused")

LLAMA_FP8_NAMES = [
    f"LlamaBlock/torchao-compile/fp8/recipe:current/{passes}/seq:4096/batch:{batch}{tag}/manual_time"
    for tag, batch in (("", 2), ("/model:llama-3.2-1b", 4)) for passes in ("fwd", "fwdbwd")]
TRAIN_FP8_NAMES = [
    f"TrainStep/torchao-compile/{model}/fp8/recipe:current/seq:4096/batch:{batch}/accum:1/ckpt:off/"
    "adamw:fused/manual_time" for model, batch in (("llama-3.2-1b", 4), ("llama-3.2-3b", 1))]


# ---- names and selection ---------------------------------------------------------------------

def test_llama_block_fp8_names_are_xfbench_names():
    """xfbench's form, LlamaBlock/<backend>/fp8/recipe:<r>/<passes>/seq:S/batch:B[/model:<name>]:
    the peer's names map onto the names in xfbench's committed H100 runs (recipe current)."""
    specs = peer.default_specs(["LlamaBlock"], llama_dtypes=["fp8"])
    assert [s.gb_name for s in specs] == LLAMA_FP8_NAMES
    assert specs[1].kw == {"model": "llama-3.1-8b", "backend": "torchao-compile", "dtype": "fp8",
                           "passes": "fwdbwd", "seq": 4096, "batch": 2, "recipe": "current"}
    family, variants, params = loader.parse_name(specs[0].name)
    assert (family, variants) == ("LlamaBlock", ["torchao-compile", "fp8", "fwd"])
    assert params == {"recipe": "current", "seq": "4096", "batch": "2"}
    assert peer.llama_name("llama-3.2-3b", "fused", "fp8", "fwd", 2048, 1) == \
        "LlamaBlock/fused/fp8/recipe:current/fwd/seq:2048/batch:1/model:llama-3.2-3b"
    mapped = {loader.map_backend(loader.strip_name(n), TO_FUSED) for n in LLAMA_FP8_NAMES}
    xf = set(loader.load(os.path.join(XF_RESULTS, "llama_block_fp8", "llama_fp8_current.json")).cases)
    assert xf == {"LlamaBlock/fused/fp8/recipe:current/fwdbwd/seq:4096/batch:2"} and xf <= mapped
    # xfbench's delayed run has both passes; only the recipe differs
    xf = set(loader.load(os.path.join(XF_RESULTS, "llama_block_fp8", "llama_fp8_delayed.json")).cases)
    assert {n.replace("recipe:delayed", "recipe:current") for n in xf if "/fp8/" in n} == \
        {n for n in mapped if "batch:2" in n and "model:" not in n}
    # without the mapping torchao-compile keeps its name (as torch-compile does)
    assert all(loader.map_backend(loader.strip_name(n), loader.DEFAULT_BACKEND_MAP).startswith(
        "LlamaBlock/torchao-compile/") for n in LLAMA_FP8_NAMES)


def test_train_step_fp8_names_are_xfbench_names():
    """xfbench's TrainStep/<backend>/<model>/fp8/recipe:<r>/seq:S/batch:B/accum:1/ckpt:off/
    adamw:fused: its one-GPU fp8 cases (tests/harness/all_cases.txt, recipe delayed by default) and
    its committed current run."""
    specs = peer.default_specs(["TrainStep"], train_models=["llama-3.2-1b", "llama-3.2-3b"],
                               train_precisions=["fp8"])
    assert [s.gb_name for s in specs] == TRAIN_FP8_NAMES
    assert specs[0].kw == {"model": "llama-3.2-1b", "precision": "fp8", "recipe": "current",
                           "seq": 4096, "batch": 4, "accum": 1, "ckpt": False, "adamw": "fused",
                           "attention": "sdpa", "backend": "torchao-compile"}
    assert peer.train_name("llama-3.2-1b", "fp8", 4096, 4) == \
        "TrainStep/torch-sdpa/llama-3.2-1b/fp8/recipe:current/seq:4096/batch:4/accum:1/ckpt:off/adamw:fused"
    mapped = [loader.map_backend(loader.strip_name(n), TO_FUSED) for n in TRAIN_FP8_NAMES]
    with open(os.path.join(ROOT, "tests", "harness", "all_cases.txt"), encoding="utf-8") as f:
        xf_all = {line.strip() for line in f if "/fp8/" in line and line.startswith("TrainStep/")}
    assert {n.replace("recipe:current", "recipe:delayed") for n in mapped} == xf_all
    xf = set(loader.load(os.path.join(XF_RESULTS, "train_step_fp8", "train_fp8_current.json")).cases)
    assert xf == {mapped[0]}
    # the same counters as the bf16 case of that shape
    bf16 = next(s for s in peer.default_specs(["TrainStep"], train_models=["llama-3.2-1b"])
                if not s.kw["ckpt"])
    assert peer.counters(specs[0], 0.25) == peer.counters(bf16, 0.25)



def test_fp8_only_when_asked_and_after_the_other_cases():
    assert peer.DEFAULT_LLAMA_DTYPES == ("bf16",) and peer.DEFAULT_TRAIN_PRECISIONS == ("bf16",)
    assert not any("fp8" in n or "torchao" in n for n in names(peer.ALL_FAMILIES))
    assert names(["LlamaBlock"]) == LLAMA_DEFAULT_NAMES
    # bf16 and fp8: every bf16 case first (torchao patches inductor for the process), then fp8
    n = [s.gb_name for s in peer.default_specs(["LlamaBlock"], llama_dtypes=["fp8", "bf16"])]
    assert n == LLAMA_DEFAULT_NAMES + LLAMA_FP8_NAMES
    n = [s.gb_name for s in peer.default_specs(["TrainStep"], train_models=["llama-3.2-1b", "llama-3.2-3b"],
                                               train_precisions=["bf16", "fp8"])]
    assert n == LLAMA_TRAIN_NAMES + TRAIN_FP8_NAMES
    # the headline models and the multi-GPU cases are as they are
    specs = peer.default_specs(["TrainStep"], gpus=4, train_models=["bert-large", "llama-3.2-3b"],
                               train_precisions=["fp8"])
    n = [s.name for s in specs]
    assert n[:7] == [s.name for s in peer.default_specs(["TrainStep"], train_models=["bert-large"])
                     if "bert-large" in s.name and "gpus:" not in s.name][:7]
    assert [x for x in n if "fp8" in x] == [TRAIN_FP8_NAMES[1][:-len("/manual_time")]]
    assert all("fp8" not in x for x in n if "gpus:" in x) and any("gpus:4" in x for x in n)
    # other shapes and models follow --llama-shapes / --llama-models as bf16's do
    n = [s.name for s in peer.default_specs(["LlamaBlock"], llama_models=["llama-3.1-70b"],
                                            llama_dtypes=["fp8"], llama_shapes=[(8192, 1)])]
    assert n == [f"LlamaBlock/torchao-compile/fp8/recipe:current/{p}/seq:8192/batch:1/model:llama-3.1-70b"
                 for p in ("fwd", "fwdbwd")]
    sel = peer.select(peer.default_specs(["LlamaBlock"], llama_dtypes=["bf16", "fp8"]), r"recipe:current/fwdbwd")
    assert [s.gb_name for s in sel] == LLAMA_FP8_NAMES[1::2]


def test_fp8_cli():
    r = run_cli(SCRIPT, "--list", "--families", "LlamaBlock", "--llama-dtypes", "fp8")
    assert r.returncode == 0 and r.stdout.split() == LLAMA_FP8_NAMES
    r = run_cli(SCRIPT, "--list", "--families", "TrainStep", "--train-models", "llama-3.2-1b",
                "--train-precisions", "fp8")
    assert r.returncode == 0 and r.stdout.split() == TRAIN_FP8_NAMES[:1]
    r = run_cli(SCRIPT, "--list", "--families", "LlamaBlock,TrainStep", "--llama-models", "llama-3.1-8b",
                "--train-models", "llama-3.2-1b,llama-3.2-3b", "--llama-dtypes", "bf16,fp8",
                "--train-precisions", "fp8,bf16", "--filter", "fp8")
    assert r.returncode == 0 and r.stdout.split() == LLAMA_FP8_NAMES[:2] + TRAIN_FP8_NAMES
    r = run_cli(SCRIPT, "--help")
    words = " ".join(r.stdout.split())  # argparse wraps the help where it likes
    for text in ("--train-precisions", "bf16,fp16,fp8", "torchao-compile", "fp8/recipe:current",
                 "pip install torchao==0.18.0", "gpt2-xl seq 1024 batch 2", "Conv1D"):
        assert text in words, text
    a = peer.parse_args(["--train-precisions", "fp8, bf16,fp8"])
    assert a.train_precision_list == ["fp8", "bf16"] and peer.parse_args([]).train_precision_list == ["bf16"]
    for args, message in ((("--train-precisions", "fp16"), "unknown --train-precisions fp16; known: bf16,fp8"),
                          (("--llama-dtypes", "fp8,int8"), "unknown --llama-dtypes int8"),
                          (("--families", "TrainStep", "--train-precisions", "fp8"),
                           "--train-precisions fp8: the models with FP8 cases only (--train-models "
                           "llama-3.2-1b,llama-3.2-3b,gpt2-xl)")):
        r = run_cli(SCRIPT, "--list", *args)
        assert r.returncode == 2 and message in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
    # fp8 without TrainStep in the families asks nothing of --train-models
    assert run_cli(SCRIPT, "--list", "--families", "Vector", "--train-precisions", "fp8").returncode == 0


# ---- torchao missing -------------------------------------------------------------------------

class RunTorch:
    """What run_cases touches of torch around a builder that fails at once."""

    def __init__(self):
        self.cuda = types.SimpleNamespace(synchronize=lambda: None, empty_cache=lambda: None,
                                          reset_peak_memory_stats=lambda dev: None,
                                          get_device_capability=lambda dev: (9, 0))
        self.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(
            matmul=types.SimpleNamespace(allow_tf32=False)))
        self.resets = 0
        self._dynamo = types.SimpleNamespace(reset=self.reset)

    def reset(self):
        self.resets += 1

    def device(self, kind, index):
        return f"{kind}:{index}"

    def manual_seed(self, seed):
        pass


def test_without_torchao_each_fp8_case_is_one_error_entry(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "torchao", None)  # `import torchao` fails even where installed
    with pytest.raises(FP8.NotInstalled, match="^torchao not installed: pip install torchao==0.18.0$"):
        FP8.import_torchao()
    assert FP8.context() == {}
    specs = (peer.default_specs(["LlamaBlock"], llama_dtypes=["fp8"])
             + peer.default_specs(["TrainStep"], train_models=["llama-3.2-1b", "llama-3.2-3b"],
                                  train_precisions=["fp8"]))
    out = tmp_path / "torch_fp8.json"
    args = types.SimpleNamespace(device=0, mode="hot", out=str(out), repetitions=1, min_time=0.1,
                                 warmup=0.1)
    torch = RunTorch()
    failed = peer.run_cases(torch, specs, args, {"xfbench_runner": "pytorch"})
    assert failed == len(specs) == 6 and torch.resets == 6  # compiled backends: the cache goes too
    doc = json.loads(out.read_text())
    assert [e["name"] for e in doc["benchmarks"]] == LLAMA_FP8_NAMES + TRAIN_FP8_NAMES
    assert all(e["error_occurred"] and e["error_message"] == INSTALL for e in doc["benchmarks"])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 6 and all(line.endswith(f" ERROR {INSTALL}") for line in err)
    run = loader.load(str(out))
    assert run.cases["TrainStep/torchao-compile/llama-3.2-1b/fp8/recipe:current/seq:4096/batch:4/"
                     "accum:1/ckpt:off/adamw:fused"].error == INSTALL


def test_torchao_that_does_not_import_says_why(monkeypatch):
    broken = types.ModuleType("torchao")
    monkeypatch.setitem(sys.modules, "torchao", broken)
    monkeypatch.setitem(sys.modules, "torchao.float8", None)
    broken.__version__ = "0.3.0"
    with pytest.raises(FP8.NotInstalled) as e:
        FP8.import_torchao()
    assert str(e.value).startswith("torchao 0.3.0 has no float8 training (ModuleNotFoundError: ")
    assert str(e.value).endswith("): pip install torchao==0.18.0")
    assert peer.error_message(e.value) == (str(e.value), True)


# ---- the builders on a fake torch and torchao --------------------------------------------------

class Linear:
    def __init__(self, fan_in, fan_out):
        self.in_features, self.out_features = fan_in, fan_out


class Float8Linear(Linear):
    pass


class Modules:
    """named_modules() over a flat {name: module} table, as nn.Module's (itself first, as "")."""

    def __init__(self, linears):
        self.mods = dict(linears)

    def named_modules(self):
        return [("", self)] + list(self.mods.items())


def llama_linears(model, prefix=""):
    h, heads, kv, d, inter, _ = peer.LLAMA_MODELS[model]
    shapes = {"self_attn.q_proj": (h, heads * d), "self_attn.k_proj": (h, kv * d),
              "self_attn.v_proj": (h, kv * d), "self_attn.o_proj": (heads * d, h),
              "mlp.gate_proj": (h, inter), "mlp.up_proj": (h, inter), "mlp.down_proj": (inter, h)}
    return {prefix + name: Linear(*shape) for name, shape in shapes.items()}


def fake_torchao(log, version="0.18.0", skip_one=False):
    """torchao and torchao.float8: from_recipe_name and convert_to_float8_training as 0.18's, the
    swap in place by the filter's answer (the first linear left out when skip_one)."""
    class Float8LinearConfig:
        def __init__(self, recipe):
            self.recipe = recipe

        @staticmethod
        def from_recipe_name(name):
            log.append(f"from_recipe_name {name}")
            return Float8LinearConfig(name)

    def convert_to_float8_training(module, *, module_filter_fn=None, config=None):
        kept = [n for n, m in module.mods.items() if not module_filter_fn(m, n)]
        log.append(f"convert recipe={config.recipe} kept={kept}")
        for i, (name, m) in enumerate(list(module.mods.items())):
            if module_filter_fn(m, name) and not (skip_one and i == 0):
                module.mods[name] = Float8Linear(m.in_features, m.out_features)
        return module
    torchao = types.ModuleType("torchao")
    torchao.__version__ = version
    float8 = types.ModuleType("torchao.float8")
    float8.Float8LinearConfig = Float8LinearConfig
    float8.convert_to_float8_training = convert_to_float8_training
    torchao.float8 = float8
    return {"torchao": torchao, "torchao.float8": float8}


def install(monkeypatch, modules):
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)


def fp8_train_torch(cc=(9, 0)):
    fake = FakeTrainTorch()
    fake.nn.Linear = Linear
    fake.cuda.get_device_capability = lambda dev: fake.log.append(f"capability {dev}") or cc
    return fake


def fake_llama_lm(log, model, linears=None):
    """LlamaForCausalLM as build_train uses it: the blocks' linear layers and lm_head by name; its
    forward logs how many of them are torchao's."""
    table = {}
    for i in range(peer.LLAMA_TRAIN[model][0]):
        table.update(llama_linears(model, f"model.layers.{i}."))
    table["lm_head"] = Linear(peer.LLAMA_MODELS[model][0], peer.LLAMA_VOCAB)

    class Loss:
        def __truediv__(self, n):
            return self

        def backward(self):
            log.append("backward")

    class LM(Modules):
        def parameters(self):
            return [types.SimpleNamespace(numel=lambda: 1)]

        def to(self, *a, **kw):
            return self

        def train(self):
            return self

        def __call__(self, input_ids, labels):
            swapped = sum(type(m) is Float8Linear for m in self.mods.values())
            log.append(f"forward {input_ids} fp8 linears={swapped}")
            return types.SimpleNamespace(loss=Loss())
    return LM(linears if linears is not None else table)


def test_train_step_fp8_converts_the_blocks_linears_then_compiles(monkeypatch):
    """fp8 TrainStep: torchao and the GPU checked before the model is built; the blocks' 7·L linear
    layers swapped with the tensorwise recipe, lm_head left bf16; bf16 autocast around them, fused
    AdamW, compiled before the timing; the label says torchao's version and recipe."""
    spec = peer.default_specs(["TrainStep"], train_models=["llama-3.2-1b"], train_precisions=["fp8"])[0]
    fake = fp8_train_torch()
    install(monkeypatch, fake_torchao(fake.log))
    built = []

    def build_llama_lm(torch, sp, dev):
        fake.log.append("build_llama_lm")
        built.append(fake_llama_lm(fake.log, sp.kw["model"]))
        return built[-1], peer.LLAMA_VOCAB
    monkeypatch.setattr(peer.builders.train, "build_llama_lm", build_llama_lm)
    step = peer.build_train(fake, spec, "cuda:0")
    log = fake.log
    assert log[:7] == ["capability cuda:0", "build_llama_lm", "from_recipe_name tensorwise",
                       "convert recipe=tensorwise kept=['lm_head']",
                       "AdamW n=1 lr=0.0001 fused=True foreach=None", "GradScaler enabled=False",
                       "dynamo.reset"]
    mods = built[0].mods
    assert sum(type(m) is Float8Linear for m in mods.values()) == 7 * 16
    assert type(mods["lm_head"]) is Linear
    i = log.index("compile fullgraph=True dynamic=False")
    assert log[i - 1] == "dynamo.reset" and log[i + 1:].count("opt.step") == 2
    assert "autocast cuda bfloat16 True" in log[i + 1:]
    assert "forward ids(4, 4096)<128256 fp8 linears=112" in log
    assert step.case_label.startswith("torchao 0.18.0 float8 tensorwise; compiled in ")
    assert fake.backends.cuda.matmul.allow_tf32 is False


def test_train_step_fp8_refuses_what_it_cannot_run(monkeypatch):
    spec = peer.default_specs(["TrainStep"], train_models=["llama-3.2-1b"], train_precisions=["fp8"])[0]
    built = []

    def build_llama_lm(torch, sp, dev):
        built.append(sp.kw["model"])
        return fake_llama_lm(torch.log, sp.kw["model"], linears=lm_linears), peer.LLAMA_VOCAB
    monkeypatch.setattr(peer.builders.train, "build_llama_lm", build_llama_lm)
    lm_linears = None
    # no torchao: nothing built, the entry says how to install it
    monkeypatch.setitem(sys.modules, "torchao", None)
    with pytest.raises(FP8.NotInstalled) as e:
        peer.build_train(fp8_train_torch(), spec, "cuda:0")
    assert peer.error_message(e.value) == (INSTALL, True) and built == []
    # a GPU without FP8: unsupported, as xfbench skips it
    fake = fp8_train_torch(cc=(8, 0))
    install(monkeypatch, fake_torchao(fake.log))
    with pytest.raises(FP8.Unsupported) as e:
        peer.build_train(fake, spec, "cuda:0")
    assert peer.error_message(e.value) == (
        "unsupported: no FP8 tensor cores on this GPU (compute capability 8.0; FP8 needs 8.9 or later)",
        False)
    assert built == []
    # tokens not a multiple of 16 (torch._scaled_mm's inner dimension in the weight gradient)
    odd = peer.Spec("TrainStep", "x", **dict(spec.kw, seq=4095, batch=1))
    with pytest.raises(FP8.Unsupported, match="4095 tokens"):
        peer.build_train(fp8_train_torch(), odd, "cuda:0")
    # a width that is not a multiple of 16
    lm_linears = dict(llama_linears("llama-3.2-1b", "model.layers.0."), **{"lm_head": Linear(2048, 10)})
    lm_linears["model.layers.0.mlp.up_proj"] = Linear(2048, 8200)
    lm_linears.update({f"model.layers.{i}.{n}": Linear(64, 64) for i in range(1, 16)
                       for n in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                 "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")})
    with pytest.raises(FP8.Unsupported, match=r"multiples of 16: model\.layers\.0\.mlp\.up_proj 2048x8200$"):
        peer.build_train(fp8_train_torch(), spec, "cuda:0")
    # fewer linear layers than the blocks have, or one torchao left out: the case fails, loudly
    lm_linears = llama_linears("llama-3.2-1b", "model.layers.0.")
    with pytest.raises(RuntimeError, match="^7 linear layers to run in FP8, expected 112: "):
        peer.build_train(fp8_train_torch(), spec, "cuda:0")
    lm_linears = None
    fake = fp8_train_torch()
    install(monkeypatch, fake_torchao(fake.log, skip_one=True))
    with pytest.raises(RuntimeError, match=r"swapped 111 linear layers, not the 112 asked "
                                           r"\(differ: model\.layers\.0\.self_attn\.q_proj\)"):
        peer.build_train(fake, spec, "cuda:0")
    # a model without FP8 cases (BERT, the smaller GPT-2s) is refused when asked anyway
    bert = peer.Spec("TrainStep", "x", **dict(spec.kw, model="bert-large"))
    with pytest.raises(ValueError, match="gpt2-xl only, not bert-large"):
        peer.build_train(fp8_train_torch(), bert, "cuda:0")


class Tensor:
    def __init__(self, log, shape, name="x"):
        self.log, self.shape, self.name = log, shape, name

    def unsqueeze(self, dim):
        return self

    def backward(self, dy):
        self.log.append(f"backward {dy.name}")


class LlamaTorch(FakeTrainTorch):
    """FakeTrainTorch with what build_llama adds: tensors with shapes, no_grad, randn, arange."""

    def __init__(self, cc=(9, 0)):
        super().__init__()
        self.nn.Linear = Linear
        self.cuda.get_device_capability = lambda dev: cc

    def no_grad(self):
        return contextlib.nullcontext()

    def arange(self, n, device):
        return Tensor(self.log, (n,), "positions")

    def randn(self, *shape, device, dtype, requires_grad=False):
        self.log.append(f"randn {shape} {dtype} grad={requires_grad}")
        first = sum(x.startswith("randn") for x in self.log) == 1
        return Tensor(self.log, shape, "x" if first else "dy")  # the input, then dy


def fake_llama_transformers(log, model, cls_log):
    """transformers 5.x's LlamaConfig, LlamaDecoderLayer (its 7 linear layers by name) and
    LlamaRotaryEmbedding."""
    class LlamaConfig:
        def __init__(self, rope_parameters=None, **kw):
            self.kw = dict(kw, rope_parameters=rope_parameters)

    class LlamaDecoderLayer(Modules):
        def __init__(self, config, layer_idx=0):
            super().__init__(llama_linears(model))
            self.self_attn = types.SimpleNamespace(config=config)
            self.h = config.kw["hidden_size"]
            cls_log.append(self)

        def forward(self, hidden_states, attention_mask=None, position_ids=None,
                    position_embeddings=None):
            pass

        def to(self, *a):
            log.append(f"layer.to {a}")
            return self

        def train(self):
            return self

        def __call__(self, x, attention_mask, position_ids, position_embeddings):
            swapped = sum(type(m) is Float8Linear for m in self.mods.values())
            log.append(f"layer {x.name} mask={attention_mask} fp8 linears={swapped}")
            return (Tensor(log, x.shape, "y"),)

    class LlamaRotaryEmbedding:
        rope_type = "llama3"

        def __init__(self, config):
            pass

        def __call__(self, x, position_ids):
            return "cos", "sin"
    ml = types.SimpleNamespace(LlamaDecoderLayer=LlamaDecoderLayer,
                               LlamaRotaryEmbedding=LlamaRotaryEmbedding)
    transformers = types.ModuleType("transformers")
    transformers.__version__ = "5.17.0"
    transformers.LlamaConfig = LlamaConfig
    models = types.ModuleType("transformers.models")
    llama = types.ModuleType("transformers.models.llama")
    llama.modeling_llama = ml
    return {"transformers": transformers, "transformers.models": models,
            "transformers.models.llama": llama, "transformers.models.llama.modeling_llama": ml}


@pytest.mark.parametrize("passes", ["fwd", "fwdbwd"])
def test_llama_block_fp8_converts_the_seven_linears_then_compiles(monkeypatch, passes):
    """fp8 LlamaBlock: the bf16 sdpa layer (no mask), its seven linear layers swapped with the
    tensorwise recipe before the checking forward, then compiled before the timing; fwd under
    no_grad, fwdbwd backward(dy)."""
    spec = next(s for s in peer.default_specs(["LlamaBlock"], llama_dtypes=["fp8"])
                if s.kw["passes"] == passes and s.kw["model"] == "llama-3.2-1b")
    torch = LlamaTorch()
    layers = []
    install(monkeypatch, fake_torchao(torch.log))
    install(monkeypatch, fake_llama_transformers(torch.log, "llama-3.2-1b", layers))
    run = peer.build_llama(torch, spec, "cuda:0")
    log = torch.log
    assert log.index("layer.to ('cuda:0', 'bfloat16')") < log.index("from_recipe_name tensorwise") < \
        log.index("convert recipe=tensorwise kept=[]") < log.index("layer x mask=None fp8 linears=7")
    assert all(type(m) is Float8Linear for m in layers[0].mods.values()) and len(layers[0].mods) == 7
    assert f"randn (4, 4096, 2048) bfloat16 grad={passes == 'fwdbwd'}" in log
    # the checking forward and the two compiled calls, each through the seven FP8 linears
    assert [x for x in log if x.startswith("layer ")] == ["layer x mask=None fp8 linears=7"] * 3
    i = log.index("compile fullgraph=True dynamic=False")
    assert log[i - 1] == "dynamo.reset"
    assert log[i + 1:].count("layer x mask=None fp8 linears=7") == 2
    assert log[i + 1:].count("backward dy") == (2 if passes == "fwdbwd" else 0)
    assert run.case_label.startswith("torchao 0.18.0 float8 tensorwise; compiled in ")
    # without torchao nothing is built
    torch = LlamaTorch()
    monkeypatch.setitem(sys.modules, "torchao", None)
    with pytest.raises(FP8.NotInstalled, match=f"^{INSTALL}$"):
        peer.build_llama(torch, spec, "cuda:0")
    assert torch.log == []


def test_context_names_torchao_where_it_imports(monkeypatch):
    install(monkeypatch, fake_torchao([], version="0.18.0+cu130"))
    assert FP8.context() == {"torchao_version": "0.18.0+cu130"}


# ---- gpt2-xl (issue 34's other training target) ------------------------------------------------

def test_gpt2_xl_fp8_is_xfbench_s_case():
    """gpt2-xl s1024 batch 2 and 8 in fp8 (issue 34's other training target): the names xfbench
    gives its fp8 cases of those shapes (its plugin lists them with --xfbench_train_models=gpt2-xl
    --xfbench_train_batches=2,8 --xfbench_train_precisions=fp8), counters as its bf16 case's."""
    specs = peer.default_specs(["TrainStep"], train_models=["gpt2-xl"], train_precisions=["fp8"])
    assert [s.gb_name for s in specs] == [
        f"TrainStep/torchao-compile/gpt2-xl/fp8/recipe:current/seq:1024/batch:{b}/accum:1/ckpt:off/"
        "adamw:fused/manual_time" for b in (2, 8)]
    assert specs[0].kw["model"] == "gpt2-xl" and specs[0].kw["backend"] == "torchao-compile"
    assert loader.map_backend(loader.strip_name(specs[0].gb_name), TO_FUSED) == (
        "TrainStep/fused/gpt2-xl/fp8/recipe:current/seq:1024/batch:2/accum:1/ckpt:off/adamw:fused")
    assert peer.default_specs(["TrainStep"], train_models=["gpt2-xl"]) == []  # no bf16 headline
    per = 3 * (48 * (24 * 1024 * 1600 ** 2 + 4 * 1024 ** 2 * 1600) + 2 * 1024 * 1600 * 50257)
    assert peer.counters(specs[0], 0.5)["TFLOPS"] == pytest.approx(per * 2 / 0.5 / 1e12)


class Weight:
    """A weight or bias with a shape, t() and copy_ as the swap uses them."""

    def __init__(self, *shape, device="cpu", dtype="float32", tag=""):
        self.shape, self.device, self.dtype, self.tag = shape, device, dtype, tag

    def t(self):
        return Weight(*reversed(self.shape), tag=self.tag + ".T")

    def copy_(self, other):
        assert other.shape == self.shape, (other.shape, self.shape)
        self.tag = other.tag


class Conv1D:
    def __init__(self, nf, nx, tag):  # HF's argument order: out features, then in
        self.weight, self.bias = Weight(nx, nf, tag=tag + ".w"), Weight(nf, tag=tag + ".b")


class GptModules(Modules):
    def get_submodule(self, name):
        return self.mods[name]


class Block:
    """transformer.h.<i>: attributes by name, as setattr reaches them."""


def fake_gpt2_lm(layers, h):
    mods = {}
    for i in range(layers):
        block = f"transformer.h.{i}"
        attn, mlp = Block(), Block()
        attn.c_attn, attn.c_proj = Conv1D(3 * h, h, f"{i}.c_attn"), Conv1D(h, h, f"{i}.attn.c_proj")
        mlp.c_fc, mlp.c_proj = Conv1D(4 * h, h, f"{i}.c_fc"), Conv1D(h, 4 * h, f"{i}.mlp.c_proj")
        mods[block + ".attn"], mods[block + ".mlp"] = attn, mlp
    model = GptModules(mods)
    model.named_modules = lambda: [("", model)] + [
        (f"{p}.{c}", getattr(m, c)) for p, m in mods.items() for c in ("c_attn", "c_proj", "c_fc")
        if hasattr(m, c)] + [("lm_head", Linear(h, 50257))]
    return model


def test_gpt2_conv1d_projections_become_the_same_linears():
    class NnLinear(Linear):
        def __init__(self, fan_in, fan_out, bias, device, dtype):
            super().__init__(fan_in, fan_out)
            self.weight = Weight(fan_out, fan_in, device=device, dtype=dtype)
            self.bias = Weight(fan_out) if bias else None
    fake = FakeTrainTorch()
    fake.nn.Linear = NnLinear
    import contextlib
    fake.no_grad = contextlib.nullcontext
    model = fake_gpt2_lm(2, 64)
    assert peer.builders.train.conv1d_to_linear(fake, model) == 8
    c_attn = model.mods["transformer.h.1.attn"].c_attn
    assert type(c_attn) is NnLinear and (c_attn.in_features, c_attn.out_features) == (64, 192)
    assert c_attn.weight.shape == (192, 64) and c_attn.weight.tag == "1.c_attn.w.T"  # Wᵀ
    assert c_attn.bias.tag == "1.c_attn.b"
    down = model.mods["transformer.h.0.mlp"].c_proj
    assert (down.in_features, down.out_features) == (256, 64) and down.weight.tag == "0.mlp.c_proj.w.T"
    assert peer.builders.train.conv1d_to_linear(fake, model) == 0  # nothing left to swap


def test_gpt2_xl_fp8_swaps_its_projections_then_converts(monkeypatch):
    spec = peer.default_specs(["TrainStep"], train_models=["gpt2-xl"], train_precisions=["fp8"])[0]
    fake = fp8_train_torch()
    install(monkeypatch, fake_torchao(fake.log))
    swapped = {}

    def build_gpt2_lm(torch, sp):
        fake.log.append("build_gpt2_lm")
        lm = fake_llama_lm(fake.log, "llama-3.2-1b", linears={})  # an LM that logs its forward
        return lm, 50257

    def conv1d_to_linear(torch, model):
        model.mods.update({f"transformer.h.{i}.{n}": Linear(1600, 1600) for i in range(48)
                           for n in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")})
        model.mods["lm_head"] = Linear(1600, 50257)
        swapped["n"] = 4 * 48
        return swapped["n"]
    monkeypatch.setattr(peer.builders.train, "build_gpt2_lm", build_gpt2_lm)
    monkeypatch.setattr(peer.builders.train, "conv1d_to_linear", conv1d_to_linear)
    step = peer.build_train(fake, spec, "cuda:0")
    assert fake.log[:4] == ["capability cuda:0", "build_gpt2_lm", "from_recipe_name tensorwise",
                            "convert recipe=tensorwise kept=['lm_head']"]
    assert "forward ids(2, 1024)<50257 fp8 linears=192" in fake.log
    assert step.case_label.startswith("torchao 0.18.0 float8 tensorwise; compiled in ")
    # a model whose projections are not GPT-2's four a layer fails before converting anything
    monkeypatch.setattr(peer.builders.train, "conv1d_to_linear", lambda torch, model: 7)
    with pytest.raises(RuntimeError, match="not the 192 Conv1D projections"):
        peer.build_train(fp8_train_torch(), spec, "cuda:0")


def test_gpt2_lm_names_its_loss_so_the_compiled_step_has_no_graph_break(monkeypatch):
    """GPT2LMHeadModel's class name matches none of HF's loss names: without loss_type every
    forward logs a warning that torch.compile cannot trace (a graph break before the loss)."""
    made = {}

    class GPT2Config:
        def __init__(self, **kw):
            made["config"] = kw

    class GPT2LMHeadModel:
        def __init__(self, cfg):
            self.loss_type = None  # what transformers 5 derives from "GPT2LMHeadModel"
    transformers = types.ModuleType("transformers")
    transformers.GPT2Config, transformers.GPT2LMHeadModel = GPT2Config, GPT2LMHeadModel
    install(monkeypatch, {"transformers": transformers})
    spec = peer.default_specs(["TrainStep"], train_models=["gpt2-xl"], train_precisions=["fp8"])[0]
    model, vocab = peer.builders.train.build_gpt2_lm(FakeTrainTorch(), spec)
    assert model.loss_type == "ForCausalLM" and vocab == 50257
    assert made["config"]["n_layer"] == 48 and made["config"]["n_embd"] == 1600
