"""The peer's multi-GPU Llama TrainStep (zero2, zero3; dp where a replica fits) without torch or a
GPU: the names are xfbench's (its fully sharded mode is `zero3`), the default listing is as before,
and the builders on fakes: the causal LM built on the meta device, sharded (FSDP2's fully_shard on
every LlamaDecoderLayer, then the root; FSDP1 unit by unit through param_init_fn), then given memory
on the GPU and initialised, the rotary inv_freq recomputed, the tied head kept tied."""

from reports_helpers import run_cli  # first: puts the repository root on sys.path
import collections
import contextlib
import sys
import types

import pytest

from peer_torch_helpers import SCRIPT, FakeTrainTorch, peer
from reports import loader
from reports import names as case_names

TAIL = "accum:1/ckpt:off/adamw:fused"
HEADLINE_NAMES = [
    f"TrainStep/torch-sdpa/{m}/bf16/seq:{s}/batch:{b}/{TAIL}/{mode}/gpus:2/p2p:on"
    for m, s, b in (("bert-large", 128, 64), ("gpt2-large", 1024, 4)) for mode in ("dp", "zero2")]


def llama_names(model, batch, modes, gpus):
    return [f"TrainStep/torch-sdpa/{model}/bf16/seq:4096/batch:{batch}/{TAIL}/{mode}/gpus:{gpus}/p2p:on"
            for mode in modes]


def multi_gpu(gpus, models=peer.DEFAULT_TRAIN_MODELS, families=("TrainStep",)):
    return [s for s in peer.default_specs(list(families), gpus=gpus, train_models=models)
            if "parallel" in s.kw]


@pytest.fixture(autouse=True)
def p2p_on(monkeypatch):
    monkeypatch.delenv("NCCL_P2P_DISABLE", raising=False)


def test_llama_8b_multi_gpu_names_are_xfbench_names():
    """--train-models llama-3.1-8b --gpus 4: zero2 and zero3 at seq 4096, batch 1 per GPU, no dp
    (a whole fp32 replica with its gradients and AdamW state is 128 GB), and no one-GPU case."""
    specs = peer.default_specs(["TrainStep"], gpus=4, train_models=["llama-3.1-8b"])
    assert [s.name for s in specs] == llama_names("llama-3.1-8b", 1, ("zero2", "zero3"), 4)
    assert specs[1].name == ("TrainStep/torch-sdpa/llama-3.1-8b/bf16/seq:4096/batch:1/accum:1/"
                             "ckpt:off/adamw:fused/zero3/gpus:4/p2p:on")
    assert specs[1].kw == {"model": "llama-3.1-8b", "precision": "bf16", "seq": 4096, "batch": 1,
                           "accum": 1, "ckpt": False, "adamw": "fused", "attention": "sdpa",
                           "parallel": "zero3", "gpus": 4}
    assert [loader.map_backend(s.name, loader.DEFAULT_BACKEND_MAP) for s in specs] == [
        "TrainStep/fused/llama-3.1-8b/bf16/seq:4096/batch:1/accum:1/ckpt:off/adamw:fused/zero2/gpus:4/"
        "p2p:on",
        "TrainStep/fused/llama-3.1-8b/bf16/seq:4096/batch:1/accum:1/ckpt:off/adamw:fused/zero3/gpus:4/"
        "p2p:on"]
    assert case_names.name_axes(specs[1].name)["parallel"] == "zero3"
    # counters: samples of all GPUs, TFLOPS per GPU (xfbench's Llama rule)
    c = peer.counters(specs[1], 2.0)
    assert c["samples/s"] == 1 * 4 / 2.0 and c["tokens/s"] == 4 * 4096 / 2.0
    assert c["TFLOPS"] == pytest.approx(peer.train_flops_per_sample("llama-3.1-8b", 4096) / 2.0 / 1e12)


def test_llama_1b_3b_keep_their_one_gpu_batch_and_dp():
    specs = multi_gpu(2, ["llama-3.2-1b", "llama-3.2-3b"])
    assert [s.name for s in specs] == (llama_names("llama-3.2-1b", 4, ("dp", "zero2", "zero3"), 2)
                                       + llama_names("llama-3.2-3b", 1, ("dp", "zero2", "zero3"), 2))
    # the one-GPU cases are listed as before, before the multi-GPU ones
    names = [s.name for s in peer.default_specs(["TrainStep"], gpus=2, train_models=["llama-3.2-1b"])]
    assert len(names) == 4 + 3 and all("/gpus:" not in n for n in names[:4])


def test_default_listing_is_unchanged():
    """No Llama model named: the headlines in dp and zero2, no zero3, as before; a headline model
    beside a Llama one keeps them (and adds the Llama cases after)."""
    assert [s.name for s in multi_gpu(2)] == HEADLINE_NAMES
    assert multi_gpu(0, ["llama-3.1-8b"]) == []
    assert not any("zero3" in s.name or "llama" in s.name for s in multi_gpu(8, families=peer.ALL_FAMILIES))
    assert peer.parallel.PARALLEL_MODES == ("dp", "zero2")
    mixed = [s.name for s in multi_gpu(2, ["bert-large", "llama-3.1-8b"])]
    assert mixed == HEADLINE_NAMES + llama_names("llama-3.1-8b", 1, ("zero2", "zero3"), 2)


def test_cli_lists_the_8b_cases_with_gpus_only():
    r = run_cli(SCRIPT, "--list", "--families", "TrainStep", "--train-models", "llama-3.1-8b",
                "--gpus", "4")
    assert r.returncode == 0, r.stderr
    want = llama_names("llama-3.1-8b", 1, ("zero2", "zero3"), 4)
    assert r.stdout.split() == [n + "/manual_time" for n in want]
    r = run_cli(SCRIPT, "--list", "--families", "TrainStep", "--train-models", "llama-3.1-8b")
    assert r.returncode == 2 and "its multi-GPU cases run with --gpus N under torchrun" in r.stderr
    assert "zero3 (FSDP2 fully_shard)" in " ".join(run_cli(SCRIPT, "--help").stdout.split())


# ---- the builders on fakes: a module tree as HF's LlamaForCausalLM, torch.distributed.fsdp -------

class Tensor:
    """A parameter or buffer: its device and what was last written into it."""

    def __init__(self, n, device, value="random"):
        self.n, self.device, self.value = n, str(device), value

    @property
    def is_meta(self):
        return self.device == "meta"

    def numel(self):
        return self.n

    def copy_(self, src):
        self.value = src.value
        return self

    def fill_(self, v):
        self.value = v
        return self


class Module:
    """Children and tensors from attributes, as nn.Module registers them (_buffers: the buffers)."""

    def __init__(self, name):
        self.name, self._buffers = name, {}

    def children(self):
        for v in list(vars(self).values()):
            yield from (x for x in (v if isinstance(v, list) else [v]) if isinstance(x, Module))

    def modules(self):
        return [self] + [m for c in self.children() for m in c.modules()]

    def own(self):
        return [(k, v) for k, v in vars(self).items() if isinstance(v, Tensor)]

    def parameters(self, recurse=True):
        found = {id(t): t for m in (self.modules() if recurse else [self]) for k, t in m.own()
                 if k not in m._buffers}
        return list(found.values())

    def buffers(self, recurse=True):
        return list(self._buffers.values())

    def named_buffers(self, recurse=True):
        return list(self._buffers.items())

    def to_empty(self, device, recurse=True):
        """recurse: the tensors keep their objects (FSDP2's DTensors are swapped in place); one
        module (FSDP1's param_init_fn): a new Parameter each, as a meta tensor's to_empty makes."""
        self.log.append(f"to_empty {self.name} {device}")
        for m in self.modules() if recurse else [self]:
            for k, t in m.own():
                if recurse:
                    t.device, t.value = str(device), "empty"
                else:
                    setattr(m, k, Tensor(t.n, device, "empty"))
                    if k in m._buffers:
                        m._buffers[k] = getattr(m, k)


def fake_stack(fake):
    """transformers (LlamaConfig, LlamaForCausalLM as a Module tree whose tensors are made on the
    fake's current device) and torch.distributed.fsdp (FSDP2's fully_shard, FSDP1), logging into
    fake.log. Returns (transformers, the fsdp modules by name, the models built)."""
    log, built = fake.log, []
    Module.log = log

    class LlamaConfig:
        def __init__(self, rope_parameters=None, **kw):
            self.kw = dict(kw, rope_parameters=rope_parameters)

    class Leaf(Module):
        def __init__(self, name, n):
            super().__init__(name)
            self.weight = Tensor(n, fake.current)

    class Linear(Leaf):
        pass

    class Embedding(Leaf):
        pass

    class LlamaDecoderLayer(Leaf):
        pass

    class LlamaRMSNorm(Leaf):
        pass

    class LlamaRotaryEmbedding(Module):
        def __init__(self, config):
            super().__init__("model.rotary_emb")
            self.config, self.attention_scaling = config, 1.0
            theta = config.kw["rope_parameters"]["rope_theta"]
            self.inv_freq = Tensor(64, fake.current, f"inv_freq(theta={theta})")
            self.original_inv_freq = Tensor(64, fake.current, f"inv_freq(theta={theta})")
            self._buffers = {"inv_freq": self.inv_freq, "original_inv_freq": self.original_inv_freq}

    class LlamaForCausalLM(Module):
        def __init__(self, config):
            super().__init__("root")
            c = config.kw
            self.config = config
            L, h, V, tied = (c["num_hidden_layers"], c["hidden_size"], c["vocab_size"],
                             c["tie_word_embeddings"])
            name = next(m for m in peer.LLAMA_TRAIN if peer.llama_train_config(m) == c)
            per_layer, rest = divmod(peer.llama_param_count(name) - V * h * (1 if tied else 2) - h, L)
            assert rest == 0
            self.model = Module("model")
            self.model.embed_tokens = Embedding("model.embed_tokens", V * h)
            self.model.layers = [LlamaDecoderLayer(f"model.layers.{i}", per_layer) for i in range(L)]
            self.model.norm = LlamaRMSNorm("model.norm", h)
            self.model.rotary_emb = LlamaRotaryEmbedding(config)
            self.lm_head = Linear("lm_head", V * h)
            if tied:
                self.lm_head.weight = self.model.embed_tokens.weight
            log.append(f"LlamaForCausalLM layers={L} tied={tied} on {fake.current}")
            built.append(self)

        def _init_weights(self, module):
            """HF 4.x's: normal for the linear layers and the embedding; norms and the rotary
            buffers untouched (the builder does them)."""
            for k, t in module.own():
                if t.is_meta:
                    raise AssertionError(f"init of {module.name}.{k} on the meta device")
                if k not in module._buffers and not isinstance(module, LlamaRMSNorm):
                    t.value = f"normal({module.name})"
            log.append(f"init {module.name}")

        def to(self, *a, **kw):
            return self

        def train(self):
            return self

        def __call__(self, input_ids, labels):
            log.append("forward")
            return types.SimpleNamespace(loss=Loss())

    class Loss:
        def __truediv__(self, n):
            return self

        def backward(self):
            log.append("backward")

    def fully_shard(module, mp_policy):
        log.append(f"fully_shard {module.name} {mp_policy}")
        return module

    def MixedPrecisionPolicy(param_dtype, reduce_dtype):
        return f"MixedPrecisionPolicy({param_dtype},{reduce_dtype})"

    def MixedPrecision(param_dtype, reduce_dtype, buffer_dtype):
        return f"MixedPrecision({param_dtype},{reduce_dtype},{buffer_dtype})"

    def bfs(root, skip):
        queue, out = collections.deque([root]), []
        while queue:
            m = queue.popleft()
            out.append(m)
            queue.extend(c for c in m.children() if c not in skip)
        return out

    def FullyShardedDataParallel(module, sharding_strategy, mixed_precision, auto_wrap_policy,
                                 device_id, use_orig_params, param_init_fn):
        """FSDP1's meta-device path: each unit (the policy's layers, then the root without them)
        materialised module by module, breadth first, through param_init_fn."""
        log.append(f"FSDP {sharding_strategy} {mixed_precision} device_id={device_id} "
                   f"use_orig_params={use_orig_params}")
        units = [m for m in module.modules()
                 if type(m) in auto_wrap_policy.keywords["transformer_layer_cls"]]
        for root, skip in [(u, ()) for u in units] + [(module, set(units))]:
            for m in bfs(root, skip):
                param_init_fn(m)
        return Wrapped(module)

    class Wrapped:
        def __init__(self, module):
            self.module, self.parameters = module, module.parameters

        def __call__(self, **kw):
            return self.module(**kw)

        def clip_grad_norm_(self, max_norm):
            log.append(f"FSDP clip {max_norm}")

    class ShardedGradScaler(fake.amp.GradScaler):
        pass
    fsdp = types.SimpleNamespace(
        fully_shard=fully_shard, MixedPrecisionPolicy=MixedPrecisionPolicy, MixedPrecision=MixedPrecision,
        FullyShardedDataParallel=FullyShardedDataParallel,
        ShardingStrategy=types.SimpleNamespace(SHARD_GRAD_OP="SHARD_GRAD_OP"))
    modules = {"torch": types.SimpleNamespace(), "torch.distributed": types.SimpleNamespace(),
               "torch.distributed.fsdp": fsdp,
               "torch.distributed.fsdp.wrap": types.SimpleNamespace(
                   transformer_auto_wrap_policy=lambda *a, **kw: True),
               "torch.distributed.fsdp.sharded_grad_scaler": types.SimpleNamespace(
                   ShardedGradScaler=ShardedGradScaler)}
    transformers = types.SimpleNamespace(__version__="5.17.0", LlamaConfig=LlamaConfig,
                                         LlamaForCausalLM=LlamaForCausalLM)
    return transformers, modules, built


class FakeShardTorch(FakeTrainTorch):
    """FakeTrainTorch with a current device (torch.device as a context), seeds and DDP."""

    def __init__(self):
        super().__init__()
        self.current = "cpu"

        @contextlib.contextmanager
        def device(dev):
            self.log.append(f"device {dev}")
            before, self.current = self.current, str(dev)
            yield
            self.current = before
        self.device = device
        def ddp(model, device_ids, bucket_cap_mb):
            self.log.append(f"DDP device_ids={device_ids} bucket_cap_mb={bucket_cap_mb}")
            return model
        self.nn.parallel = types.SimpleNamespace(DistributedDataParallel=ddp)

    def manual_seed(self, seed):
        self.log.append(f"manual_seed {seed}")

    def no_grad(self):
        return contextlib.nullcontext()


class Dev:
    index = 0

    def __str__(self):
        return "cuda:0"


def build(monkeypatch, model, mode):
    fake = FakeShardTorch()
    transformers, modules, built = fake_stack(fake)
    monkeypatch.setitem(sys.modules, "transformers", transformers)
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    spec = next(s for s in multi_gpu(4, [model]) if s.kw["parallel"] == mode)
    step = peer.build_train(fake, spec, Dev())
    return fake, step, built[0]


def assert_materialised(lm):
    """Every tensor on the GPU and written: linear layers and embedding by HF's init, norms 1, the
    rotary buffers recomputed from the config (to_empty leaves them uninitialised)."""
    for m in lm.modules():
        for k, t in m.own():
            assert t.device == "cuda:0" and t.value != "empty", (m.name, k, t.device, t.value)
    assert lm.model.norm.weight.value == 1.0
    assert lm.model.layers[0].weight.value == "normal(model.layers.0)"
    rotary = lm.model.rotary_emb
    assert rotary.inv_freq.value == rotary.original_inv_freq.value == "inv_freq(theta=500000.0)"
    assert rotary.inv_freq is rotary._buffers["inv_freq"]


def test_zero3_shards_every_decoder_layer_then_the_root_before_materialising(monkeypatch):
    """llama-3.1-8b zero3: built on the meta device, fully_shard on each of the 32 LlamaDecoderLayers
    in order and then the root, bf16 gathers and fp32 reductions; only then to_empty on the GPU and
    HF's init of every module from seed 0 (every rank the same model), rotary recomputed; AdamW
    (fused) over the whole model's parameters, clipping by torch's clip_grad_norm_."""
    fake, step, lm = build(monkeypatch, "llama-3.1-8b", "zero3")
    log = fake.log
    assert log[:2] == ["device meta", "LlamaForCausalLM layers=32 tied=False on meta"]
    policy = "MixedPrecisionPolicy(bfloat16,float32)"
    shards = [x for x in log if x.startswith("fully_shard")]
    assert shards == ([f"fully_shard model.layers.{i} {policy}" for i in range(32)]
                      + [f"fully_shard root {policy}"])
    seed, first, last = log.index("manual_seed 0"), log.index(shards[0]), log.index(shards[-1])
    empty = log.index("to_empty root cuda:0")
    inits = [i for i, x in enumerate(log) if x.startswith("init ")]
    assert seed < first < last < empty < min(inits)
    assert max(inits) < log.index("manual_seed 1000")  # then each rank its own batches
    assert sorted(log[i][5:] for i in inits) == sorted(m.name for m in lm.modules())
    assert log.count("to_empty root cuda:0") == 1 and not any(x.startswith("FSDP") for x in log)
    assert_materialised(lm)
    assert lm.lm_head.weight is not lm.model.embed_tokens.weight
    assert "AdamW n=8030261248 lr=0.0001 fused=True foreach=None" in log
    assert "GradScaler enabled=False" in log
    del log[:]
    step()
    assert log == ["autocast cuda bfloat16 True", "forward", "backward", "clip 1.0", "opt.step",
                   "zero_grad"]


def test_zero3_keeps_the_tied_head_tied(monkeypatch):
    fake, step, lm = build(monkeypatch, "llama-3.2-1b", "zero3")
    assert "LlamaForCausalLM layers=16 tied=True on meta" in fake.log
    assert sum(x.startswith("fully_shard model.layers.") for x in fake.log) == 16
    assert lm.lm_head.weight is lm.model.embed_tokens.weight
    assert_materialised(lm)
    assert "AdamW n=1235814400 lr=0.0001 fused=True foreach=None" in fake.log


@pytest.mark.parametrize("model", ["llama-3.1-8b", "llama-3.2-1b"])
def test_zero2_materialises_unit_by_unit(monkeypatch, model):
    """zero2 (FSDP1, SHARD_GRAD_OP): built on the meta device, handed to FSDP with param_init_fn,
    which gives each module its own tensors on the GPU (to_empty, not recursive) and initialises
    them as FSDP wraps the unit; buffers not cast (inv_freq stays fp32); the tied head tied again
    after to_empty gave the embedding a new Parameter; FSDP's clipping."""
    fake, step, lm = build(monkeypatch, model, "zero2")
    log = fake.log
    assert log[0] == "device meta" and log[1].endswith("on meta")
    fsdp = log.index("FSDP SHARD_GRAD_OP MixedPrecision(bfloat16,bfloat16,None) device_id=0 "
                     "use_orig_params=True")
    assert log.index("manual_seed 0") < fsdp < log.index("to_empty model.layers.0 cuda:0")
    last = peer.LLAMA_TRAIN[model][0] - 1  # the layers (units) first, then the root's modules
    assert log.index(f"to_empty model.layers.{last} cuda:0") < log.index("to_empty lm_head cuda:0")
    assert not any(x == "to_empty root cuda:0" for x in log)  # the root has no tensors of its own
    assert_materialised(lm)
    assert (lm.lm_head.weight is lm.model.embed_tokens.weight) == (model == "llama-3.2-1b")
    assert f"AdamW n={peer.llama_param_count(model)} lr=0.0001 fused=True foreach=None" in log
    del log[:]
    step()
    assert "FSDP clip 1.0" in log and "clip 1.0" not in log


def test_dp_builds_the_whole_model_on_the_gpu(monkeypatch):
    fake, step, lm = build(monkeypatch, "llama-3.2-3b", "dp")
    assert fake.log[:2] == ["device cuda:0", "LlamaForCausalLM layers=28 tied=True on cuda:0"]
    assert "DDP device_ids=[0] bucket_cap_mb=25" in fake.log
    assert not any(x.startswith(("fully_shard", "FSDP", "to_empty")) for x in fake.log)


def test_fully_shard_wraps_each_layer_class_instance_then_the_root(monkeypatch):
    log = []
    fsdp = types.SimpleNamespace(
        fully_shard=lambda m, mp_policy: (log.append((m, mp_policy)), m)[1],
        MixedPrecisionPolicy=lambda param_dtype, reduce_dtype: (param_dtype, reduce_dtype))
    for name, module in {"torch": types.SimpleNamespace(), "torch.distributed": types.SimpleNamespace(),
                         "torch.distributed.fsdp": fsdp}.items():
        monkeypatch.setitem(sys.modules, name, module)

    class Layer:
        pass
    layers = [Layer(), Layer()]
    model = types.SimpleNamespace(model=types.SimpleNamespace(layers=layers),
                                  modules=lambda: [model, model.model, layers[0], "norm", layers[1]])
    torch = types.SimpleNamespace(float32="float32")
    assert peer.parallel.layer_class(model) is Layer
    assert peer.parallel.fully_shard(torch, model, "bfloat16") is model
    assert log == [(layers[0], ("bfloat16", "float32")), (layers[1], ("bfloat16", "float32")),
                   (model, ("bfloat16", "float32"))]
