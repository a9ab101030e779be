"""The NCCL family: xfbench's collectives through torch.distributed, built and checked by
peer_nccl.py on this torchrun rank."""

from .. import siblings
from ..siblings import nccl


def build_nccl(torch, spec, dev):
    return nccl.build(torch, spec.kw, dev, siblings.DIST.rank)
