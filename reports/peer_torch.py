#!/usr/bin/env python3
"""PyTorch peer runner: xfbench's cases through PyTorch / HF transformers, written as Google
Benchmark JSON with the same case names and counters, so `python3 -m reports compare` lines the
two up ("how much faster than the PyTorch the seeds measured?").

Standalone on purpose: standard library + torch (+ transformers for the layer families), no
import from the `reports` package, so it can be copied to a GPU machine and run as
    python3 reports/peer_torch.py --out torch.json
and the multi-GPU families (TrainStep dp/zero2, zero3 for Llama; NCCL) under torchrun, one
process per GPU:
    torchrun --nproc-per-node=8 reports/peer_torch.py --families NCCL --out torch_nccl.json
    torchrun --nproc-per-node=4 reports/peer_torch.py --families TrainStep --train-models llama-3.1-8b \\
        --gpus 4 --out torch_8b.json
Timing follows DESIGN.md with xfbench's own protocol: by default the steady state (windows of
back-to-back launches between CUDA events until a minimum time and a noise target are reached,
reports/steady_state.py, protocol version 4, with NVML power and clocks over the measured windows
from a 10 ms sampler, reports/nvml.py); `--mode hot` is a short burst after a fixed warm-up (and
the idle pause xfbench's hot mode takes before large products). Several repetitions, random
inputs. A case that fails becomes an entry with `error_occurred`, like xfbench's SkipWithError, and
the run goes on. Matmul's own case names (sweeps, model GEMMs) come from a list:
    xfbench --benchmark_list_tests --benchmark_filter=Matmul/ > names.txt
    python3 reports/peer_torch.py --names names.txt --mode hot --out torch.json
and `--paired XFBENCH` runs torch and xfbench alternately on each case (the median of the
per-pair ratios: the fairest comparison when both sides run the same kernels and clocks drift).

This file is the command line only: the peer is the package reports/peer/ (its __init__.py says
which module holds what), loaded from here by path with the sibling files it uses (steady_state,
nvml, peer_parallel, peer_nccl, names with name_schema.txt), so copy reports/.

Exit codes: 0 all cases ran, 1 some cases failed, 2 torch/CUDA missing or bad arguments.
"""

import importlib.util
import os
import sys

PACKAGE = "xfbench_peer"  # reports/peer/'s name in sys.modules, however this file was started


def _forget():
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def _load_package():
    """reports/peer/ as the package PACKAGE, by path: run as a script (or under torchrun) this
    file has no package around it, and the folder it was copied to may have any name. Loaded once
    per process; a package of that name from another folder is replaced."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peer")
    loaded = sys.modules.get(PACKAGE)
    if loaded is not None and list(getattr(loaded, "__path__", ())) == [folder]:
        return loaded
    _forget()
    spec = importlib.util.spec_from_file_location(PACKAGE, os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package  # before it runs: its modules import each other relatively
    try:
        spec.loader.exec_module(package)
    except BaseException:
        _forget()
        raise
    return package


peer = _load_package()
# The package's names here too (its API and its modules: peer.catalog, peer.measure, ...), as when
# all of it was this file: code that loads this file by path, the tests among it, finds them here.
globals().update({k: v for k, v in vars(peer).items() if not k.startswith("_")})
main = peer.main


if __name__ == "__main__":
    # Run as a script, Python puts reports/ first on sys.path; its modules (plot, table, loader...)
    # must not shadow anything torch or transformers import.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    sys.exit(main())
