"""Multi-GPU TrainStep for the PyTorch peer (reports/peer_torch.py): xfbench's `dp`, `zero2` and
(Llama only) `zero3` cases as torchrun runs them, one process per GPU, on the same names:

    dp     DistributedDataParallel (bucket_cap_mb 25, gradients all-reduced during the backward)
    zero2  FullyShardedDataParallel, ShardingStrategy.SHARD_GRAD_OP (gradients and optimizer
           state sharded, parameters gathered for the step: ZeRO-2), one unit per transformer
           layer, bf16/fp16 parameters and reductions (MixedPrecision), FSDP's own clipping
    zero3  FSDP2's fully_shard on each transformer layer, then the root: fp32 parameters held
           sharded (DTensor), gathered in bf16 per layer for the forward and again for the
           backward, gradients reduce-scattered in fp32 (MixedPrecisionPolicy); AdamW and
           clip_grad_norm_ on the shards (ZeRO-3)

    torchrun --nproc-per-node=2 reports/peer_torch.py --families TrainStep --gpus 2 --out torch.json
    torchrun --nproc-per-node=4 reports/peer_torch.py --families TrainStep --train-models llama-3.1-8b \\
        --gpus 4 --out torch_8b.json

`p2p:off` is NCCL_P2P_DISABLE=1 in the environment, as for xfbench (NCCL reads it once per
process). Rank 0 writes the JSON; every rank follows its timing decisions (Dist). Standard library
at import; torch is handed in."""

import functools
import os

PARALLEL_MODES = ("dp", "zero2")
# the Llama causal LMs' (--train-models): zero3 too; the catalog drops dp where a replica does not
# fit one GPU (catalog.LLAMA_NO_DP)
LLAMA_PARALLEL_MODES = ("dp", "zero2", "zero3")
# xfbench's multi-GPU default suite: (model, seq, per-GPU batch)
PARALLEL_HEADLINES = [("bert-large", 128, 64), ("gpt2-large", 1024, 4)]
BUCKET_MB = 25


def p2p_disabled(environ=os.environ):
    return environ.get("NCCL_P2P_DISABLE") == "1"


def parallel_name(base, mode, gpus, p2p):
    """xfbench's multi-GPU name: the one-GPU name, then parallelism, GPUs and the p2p setting."""
    return f"{base}/{mode}/gpus:{gpus}/p2p:{'on' if p2p else 'off'}"


class Dist:
    """torch.distributed under torchrun (WORLD_SIZE, RANK, LOCAL_RANK), or one process. Every
    decision that sets how many steps run (launches per window, when to stop) is rank 0's, so all
    ranks issue the same collectives."""

    def __init__(self, environ=os.environ):
        self.world = int(environ.get("WORLD_SIZE", "1"))
        self.rank = int(environ.get("RANK", "0"))
        self.local_rank = int(environ.get("LOCAL_RANK", "0"))
        self.torch = None

    @property
    def active(self):
        return self.world > 1

    @property
    def root(self):
        return self.rank == 0

    def start(self, torch):
        if not self.active:
            return
        torch.cuda.set_device(self.local_rank)
        torch.distributed.init_process_group("nccl", device_id=torch.device("cuda", self.local_rank))
        self.torch = torch

    def stop(self):
        if self.torch is not None:
            self.torch.distributed.destroy_process_group()
            self.torch = None

    def _broadcast(self, value, dtype):
        t = self.torch.tensor([value], device="cuda", dtype=dtype)
        self.torch.distributed.broadcast(t, 0)
        return t.item()

    def decide(self, flag):
        """Rank 0's flag on every rank."""
        return bool(self._broadcast(int(flag), self.torch.int64)) if self.torch else flag

    def share(self, count):
        """Rank 0's count on every rank."""
        return int(self._broadcast(int(count), self.torch.int64)) if self.torch else count

    def decide_later(self, flag):
        """decide() in two steps: the broadcast and its copy to the host are queued now, behind
        the GPU work queued before them, and the function returned waits for them alone (an
        event, not the stream), so the host can queue more work first and the GPU never idles
        while the decision travels."""
        if self.torch is None:
            return lambda: flag
        torch = self.torch
        t = torch.full((1,), int(flag), dtype=torch.int64, device="cuda")  # no host copy, no wait
        torch.distributed.broadcast(t, 0)
        host = torch.empty(1, dtype=torch.int64, pin_memory=True)
        host.copy_(t, non_blocking=True)
        arrived = torch.cuda.Event()
        arrived.record()

        def read():
            arrived.synchronize()
            return bool(host.item())
        return read

    def max(self, value):
        if self.torch is None:
            return value
        t = self.torch.tensor([float(value)], device="cuda", dtype=self.torch.float64)
        self.torch.distributed.all_reduce(t, op=self.torch.distributed.ReduceOp.MAX)
        return t.item()


def layer_class(model):
    """The transformer layer class of an HF BERT / GPT-2 / Llama model (FSDP's wrapping unit:
    BertLayer, GPT2Block, LlamaDecoderLayer)."""
    if hasattr(model, "bert"):
        layers = model.bert.encoder.layer
    elif hasattr(model, "transformer"):
        layers = model.transformer.h
    else:
        layers = model.model.layers
    return type(layers[0])


def wrap(torch, model, mode, dtype, local_rank, param_init_fn=None, cast_buffers=True):
    """The model for `mode` on this rank's GPU; dtype None: fp32 (tf32) parameters. zero2 on a
    model built on the meta device: FSDP calls param_init_fn on each module of a unit as it wraps
    it, so only that unit is ever whole on the GPU. cast_buffers False: buffers stay as they are
    (Llama's rotary inv_freq in fp32, not rounded to bf16)."""
    if mode == "dp":
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank],
                                                         bucket_cap_mb=BUCKET_MB)
    if mode == "zero3":
        return fully_shard(torch, model, dtype)
    from torch.distributed.fsdp import FullyShardedDataParallel, MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
    mixed = MixedPrecision(param_dtype=dtype, reduce_dtype=dtype,
                           buffer_dtype=dtype if cast_buffers else None) if dtype else None
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={layer_class(model)})
    return FullyShardedDataParallel(model, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,
                                    mixed_precision=mixed, auto_wrap_policy=policy,
                                    device_id=local_rank, use_orig_params=True,
                                    param_init_fn=param_init_fn)


def fully_shard(torch, model, dtype):
    """zero3: FSDP2's fully_shard on every transformer layer, then on the root (the embedding,
    the final norm, the LM head: one group), bottom-up as FSDP2 asks; parameters held in their own
    dtype (fp32) as shards, gathered in `dtype` for the compute, gradients reduced in fp32. In
    place; the model, its class now FSDP's. On the meta device it stays there (to_empty after)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy
    from torch.distributed.fsdp import fully_shard as shard
    policy = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
    unit = layer_class(model)
    for layer in [m for m in model.modules() if isinstance(m, unit)]:
        shard(layer, mp_policy=policy)
    return shard(model, mp_policy=policy)


def clip(torch, model, mode, max_norm=1.0):
    """Clipping by the global norm (FSDP's over the shards; zero3: torch's, whose norm of DTensor
    gradients is the global one)."""
    if mode == "zero2":
        return model.clip_grad_norm_(max_norm)
    return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)


def grad_scaler(torch, mode, enabled):
    if mode == "zero2":
        from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
        return ShardedGradScaler("cuda", enabled=enabled)
    return torch.amp.GradScaler("cuda", enabled=enabled)
