"""Multi-GPU Llama TrainStep, zero2 and zero3 (peer_parallel.py): the causal LM is built on the meta
device (shapes, no memory), sharded, and only then given memory on this rank's GPU and initialised,
so that no GPU ever holds the whole fp32 model (llama-3.1-8b: 32 GB of weights, 128 GB with its
gradients and AdamW state). Every rank initialises from the same seed in the same order, so the
shards are those of one model. Standard library at import; torch is handed in."""

from ..siblings import parallel

INIT_SEED = 0  # every rank's, before the first initialisation: one model, sharded


def own_tensors(module):
    """The module's own parameters and buffers (not its children's)."""
    return list(module.parameters(recurse=False)) + list(module.buffers(recurse=False))


def reset_rotary(torch, rotary):
    """A rotary embedding's inv_freq (and original_inv_freq) from its config: to_empty left the
    buffers uninitialised and HF's init does not redo them in every transformers. A new module of
    its class computes them (on the CPU, no device context), copied into the GPU's buffers;
    transformers 4.x keeps original_inv_freq as an attribute, not a buffer."""
    fresh = type(rotary)(config=rotary.config)
    with torch.no_grad():
        for name, buf in fresh.named_buffers(recurse=False):
            getattr(rotary, name).copy_(buf)
    if "original_inv_freq" not in rotary._buffers and hasattr(fresh, "original_inv_freq"):
        rotary.original_inv_freq = rotary.inv_freq
    rotary.attention_scaling = fresh.attention_scaling


def initialise(torch, model, modules):
    """HF's initialisation of each module's own tensors (the model's `_init_weights`: normal(0,
    initializer_range) for the linear layers and the embedding; called per module, not
    init_weights(), which skips modules it marked initialised at construction), then what it may
    not do in this transformers: RMSNorm weights 1, the rotary buffers (reset_rotary). Sharded
    (DTensor) parameters draw the numbers of the whole tensor at their offsets."""
    with torch.no_grad():
        for m in modules:
            model._init_weights(m)
            name = type(m).__name__
            if name.endswith("RMSNorm"):
                m.weight.fill_(1.0)
            elif name.endswith("RotaryEmbedding"):
                reset_rotary(torch, m)


def shard(torch, model, mode, dtype, dev):
    """`model`, an HF LlamaForCausalLM on the meta device, as `mode` on this rank's GPU,
    initialised. zero3: fully_shard on each LlamaDecoderLayer then the root (peer_parallel.wrap),
    then to_empty gives the shards memory on the GPU and every module is initialised in place.
    zero2: FullyShardedDataParallel materialises unit by unit through param_init_fn (to_empty of a
    module's own tensors, then its initialisation; each unit whole on the GPU only while FSDP
    shards it), rotary buffers kept fp32. A tied head (3.2-1b, 3.2-3b) is tied again where to_empty
    gave the embedding a new Parameter (FSDP1's plain tensors; FSDP2's DTensors keep theirs)."""
    embed = model.model.embed_tokens
    tied = model.lm_head.weight is embed.weight
    torch.manual_seed(INIT_SEED)
    if mode == "zero3":
        model = parallel.wrap(torch, model, mode, dtype, dev.index)
        model.to_empty(device=dev)
        initialise(torch, model, list(model.modules()))
    elif mode == "zero2":
        lm = model

        def materialise(module):  # FSDP1 calls it on each module of a unit, the unit's root first
            if any(t.is_meta for t in own_tensors(module)):
                module.to_empty(device=dev, recurse=False)
                initialise(torch, lm, [module])
            if tied and not embed.weight.is_meta and lm.lm_head.weight is not embed.weight:
                lm.lm_head.weight = embed.weight
        model = parallel.wrap(torch, model, mode, dtype, dev.index, param_init_fn=materialise,
                              cast_buffers=False)
    else:
        raise ValueError(f"{mode}: the meta-device Llama runs zero2 and zero3 only")
    if mode == "zero3" and (model.lm_head.weight is embed.weight) != tied:
        raise RuntimeError(f"zero3: lm_head {'un' if tied else ''}tied from embed_tokens by sharding")
    return model
