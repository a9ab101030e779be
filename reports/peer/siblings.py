"""The reports/ files the peer shares, loaded by path (on a GPU machine the peer runs without the
reports package on sys.path): the steady-state rule (steady_state.py), the NVML sampler (nvml.py),
the multi-GPU TrainStep (peer_parallel.py), the NCCL family (peer_nccl.py) and case names by their
schema (names.py); and DIST, this process's torchrun ranks (or one process).

DIST is looked up here when used (siblings.DIST), so the tests can put a fake in its place."""

import importlib.util
import os

REPORTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sibling(name):
    """reports/<name>.py, loaded by path."""
    path = os.path.join(REPORTS, name + ".py")
    spec = importlib.util.spec_from_file_location(f"xfbench_peer_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


steady_state = sibling("steady_state")
nvml = sibling("nvml")
parallel = sibling("peer_parallel")
nccl = sibling("peer_nccl")
names = sibling("names")  # case names by name_schema.txt
DIST = parallel.Dist()  # torchrun's ranks, or one process
