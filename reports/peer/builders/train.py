"""The TrainStep family: one optimizer step as HF Trainer runs it, of BERT (masked LM), GPT-2 and
Llama (causal LMs), on one GPU or (peer_parallel.py) as DDP / FSDP / FSDP2 ranks under torchrun."""

from .. import siblings
from ..catalog import (COMPILED, LLAMA_TRAIN, LLAMA_VOCAB, TRAIN_FP8_CASES, TRAIN_MODELS,
                       llama_train_config)
from ..flops import llama_param_count
from ..siblings import parallel
from . import fp8 as fp8_training
from . import llama_sharded
from .common import compiled
from .llama import LLAMA_LINEARS, layer_config

MLM_PROBABILITY = 0.15


def train_batch(torch, model_name, b, s, V, dev):
    """Random ids as the seeds' dummy datasets; BERT: 15% of the positions masked as
    DataCollatorForLanguageModeling does (80% [MASK], 10% random, 10% kept), labels -100
    elsewhere; the causal LMs (GPT-2, Llama): labels = ids (the model shifts them)."""
    ids = torch.randint(0, V, (b, s), device=dev)
    if not model_name.startswith("bert"):
        return ids, ids
    n = max(1, round(MLM_PROBABILITY * s))
    pos = torch.rand(b, s, device=dev).argsort(dim=1)[:, :n]
    labels = torch.full_like(ids, -100)
    labels.scatter_(1, pos, ids.gather(1, pos))
    u = torch.rand(b, n, device=dev)
    masked = ids.gather(1, pos)
    masked = torch.where(u < 0.8, torch.full_like(masked, 103), masked)
    masked = torch.where((u >= 0.8) & (u < 0.9), torch.randint_like(masked, V), masked)
    return ids.scatter(1, pos, masked), labels


def build_llama_lm(torch, spec, dev):
    """HF LlamaForCausalLM from llama_train_config (random weights from the config, no download),
    built on the GPU in fp32 (the bf16 runs autocast over it, as GPT-2's), attention per the
    spec's backend; checked before any timing: the attention it runs, the head tied or its own,
    the parameter count (llama_param_count). dev "meta": shapes only, no memory (the zero2 and
    zero3 ranks shard it first: llama_sharded.py)."""
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    k = spec.kw
    model_name, impl = k["model"], k["attention"]
    where = f"transformers {transformers.__version__}"
    cfg = layer_config(LlamaConfig, impl, llama_train_config(model_name, k["seq"]))
    with torch.device(dev):
        model = LlamaForCausalLM(cfg)
    model = model.to(device=dev, dtype=torch.float32)
    ran = getattr(model.config, "_attn_implementation", impl)
    if ran != impl:
        raise RuntimeError(f"{where}: the model's attention is {ran!r}, not {impl!r}")
    tied = LLAMA_TRAIN[model_name][1]
    if tied and model.lm_head.weight is not model.model.embed_tokens.weight:
        model.tie_weights()  # where this transformers ties later (from_pretrained does)
    if (model.lm_head.weight is model.model.embed_tokens.weight) != tied:
        raise RuntimeError(f"{where}: lm_head {'not ' if tied else ''}tied to embed_tokens, "
                           f"tie_word_embeddings={tied}")
    n, want = sum(p.numel() for p in model.parameters()), llama_param_count(model_name)
    if n != want:
        raise RuntimeError(f"{where}: {model_name} has {n:,} parameters, the published config "
                           f"{want:,}")
    return model, LLAMA_VOCAB


def build_gpt2_lm(torch, spec):
    """HF GPT2LMHeadModel from config (random weights, no download), attention per the spec."""
    from transformers import GPT2Config, GPT2LMHeadModel
    k = spec.kw
    L, h, heads, V = TRAIN_MODELS[k["model"]]
    cfg = GPT2Config(n_embd=h, n_layer=L, n_head=heads, vocab_size=V, n_positions=max(1024, k["seq"]))
    cfg._attn_implementation = k["attention"]
    model = GPT2LMHeadModel(cfg)
    # HF names a model's loss after its class ("...ForCausalLM"); GPT2LMHeadModel's name matches
    # none, so every forward logs "loss_type=None ... unrecognized" and takes ForCausalLM's loss:
    # the same loss, but torch.compile cannot trace the logging call, and the step then compiles
    # with a graph break before the loss (gpt2-xl: 267 s and the loss outside the graph). Named,
    # the step is one graph.
    model.loss_type = "ForCausalLM"
    return model, V


def conv1d_to_linear(torch, model):
    """HF GPT-2's projections are Conv1D (y = x·W + b, W [in, out]); torchao swaps nn.Linear
    only. Each becomes the nn.Linear of the same function (weight Wᵀ [out, in], the same bias), in
    place. Returns how many were swapped."""
    convs = [(name, m) for name, m in model.named_modules() if type(m).__name__ == "Conv1D"]
    for name, m in convs:
        fan_in, fan_out = m.weight.shape
        linear = torch.nn.Linear(fan_in, fan_out, bias=m.bias is not None, device=m.weight.device,
                                 dtype=m.weight.dtype)
        with torch.no_grad():
            linear.weight.copy_(m.weight.t())
            if m.bias is not None:
                linear.bias.copy_(m.bias)
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, linear)
    return len(convs)


def build_train(torch, spec, dev):
    """One optimizer step as HF Trainer runs it: `accum` micro-batches under autocast (GradScaler
    for fp16; tf32 and fp32: the fp32 model without autocast, TF32 products for tf32 as HF's
    `tf32=True`), clip_grad_norm_(1.0), AdamW (fused=True, or the single-tensor loop), zero_grad.
    Llama: LlamaForCausalLM (build_llama_lm); torch-compile: torch.compile of the model, compiled
    here (common.compiled; the optimizer step, clipping and zero_grad stay eager). fp8
    (torchao-compile, Llama): the bf16 step with the blocks' linear layers swapped for torchao's
    Float8Linear (fp8.to_float8; the LM head, embeddings, norms and attention stay bf16 under
    autocast, the master weights fp32), then as torch-compile; GPT-2 (gpt2-xl) the same, its
    Conv1D projections made nn.Linear first (conv1d_to_linear); without torchao the case is an
    error entry that says how to install it, before anything is built. Multi-GPU (the spec's
    `parallel`, under torchrun): dp wraps the model in DDP; zero2 (FSDP1) and zero3 (FSDP2) wrap
    BERT/GPT-2 built whole, and Llama built on the meta device then sharded and initialised shard
    by shard (llama_sharded.py); each rank its own batches, clipping over the shards."""
    k = spec.kw
    s, b = k["seq"], k["batch"]
    fp8 = k["precision"] == "fp8"
    if fp8:  # before anything is built: torchao, a GPU with FP8, a token count _scaled_mm takes
        fp8_training.import_torchao()
        fp8_training.check_gpu(torch, dev)
        fp8_training.check_tokens(b * s)
        if k["model"] not in TRAIN_FP8_CASES:
            raise ValueError(f"TrainStep fp8 runs {', '.join(TRAIN_FP8_CASES)} only, not "
                             f"{k['model']}")
    mode = k.get("parallel")  # dp: DDP, zero2: FSDP, zero3: FSDP2 (peer_parallel.py)
    # Llama under zero2 / zero3: built on the meta device, sharded, then materialised shard by
    # shard on this GPU (llama_sharded.py): 8b's fp32 model is never whole on one GPU
    sharded = mode in ("zero2", "zero3") and k["model"] in LLAMA_TRAIN
    fp8_label = ""
    if k["model"] in LLAMA_TRAIN:
        model, V = build_llama_lm(torch, spec, "meta" if sharded else dev)
        if fp8:  # before the optimizer sees the parameters (the same tensors either way)
            model, fp8_label = fp8_training.to_float8(
                torch, model, LLAMA_LINEARS * LLAMA_TRAIN[k["model"]][0], skip=("lm_head",))
    elif k["model"].startswith("bert"):
        L, h, heads, V = TRAIN_MODELS[k["model"]]
        from transformers import BertConfig, BertForMaskedLM
        cfg = BertConfig(hidden_size=h, num_hidden_layers=L, num_attention_heads=heads,
                         intermediate_size=4 * h, vocab_size=V, max_position_embeddings=max(512, s))
        cfg._attn_implementation = k["attention"]
        model = BertForMaskedLM(cfg)
    else:
        model, V = build_gpt2_lm(torch, spec)
        if fp8:  # the blocks' four projections a layer; lm_head (tied to wte) stays bf16
            L = TRAIN_MODELS[k["model"]][0]
            if conv1d_to_linear(torch, model) != 4 * L:
                raise RuntimeError(f"{k['model']}: not the {4 * L} Conv1D projections of GPT-2")
            model, fp8_label = fp8_training.to_float8(torch, model, 4 * L, skip=("lm_head",))
    model = model.train() if sharded else model.to(dev).train()
    if k["ckpt"]:
        model.gradient_checkpointing_enable()
    # None: fp32 model; fp8: bf16 autocast around the FP8 linears (their inputs cast to bf16)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp8": torch.bfloat16}.get(k["precision"])
    if sharded:
        model = llama_sharded.shard(torch, model, mode, dt, dev)
    elif mode:
        model = parallel.wrap(torch, model, mode, dt, dev.index)
    if mode:
        torch.manual_seed(1000 + siblings.DIST.rank)  # the same weights, each rank its own batches
    torch.backends.cuda.matmul.allow_tf32 = k["precision"] == "tf32"  # reset after each case
    fused = k["adamw"] == "fused"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused, foreach=None if fused else False)
    scaler = (parallel.grad_scaler(torch, mode, dt == torch.float16) if mode
              else torch.amp.GradScaler("cuda", enabled=dt == torch.float16))
    batches = [train_batch(torch, k["model"], b, s, V, dev) for _ in range(k["accum"])]

    def runner(m):  # m: the model, or its torch.compile
        def step():
            for ids, labels in batches:
                with torch.autocast("cuda", dtype=dt or torch.bfloat16, enabled=dt is not None):
                    loss = m(input_ids=ids, labels=labels).loss / len(batches)
                scaler.scale(loss).backward()
            scaler.unscale_(opt)
            if mode:
                parallel.clip(torch, model, mode, 1.0)
            else:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
        return step
    if k.get("backend") not in COMPILED:
        return runner(model)
    run, label = compiled(torch, model, runner)
    run.case_label = "; ".join(x for x in (fp8_label, label) if x)
    return run
