"""The peer's NCCL family (reports/peer_nccl.py through peer_torch.py) without torch or a GPU:
names, byte counts, bus factors and size syntax as xfbench's (the numbers of
tests/transfer/test_transfer_math.cpp and xfbench's own case list), the inputs and expected results
of pattern.hpp, the check and the calls on a simulated torch of N ranks (numpy, one thread per
rank), rank 0's stop decisions under torchrun, and the CLIs."""

from reports_helpers import ROOT, run_cli  # first: puts the repository root on sys.path
import importlib.util
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import threading
import types

import numpy as np
import pytest

from reports import loader
from peer_torch_helpers import FakeGpu, FakeTorch  # a GPU clock advanced by each launch

SCRIPT = os.path.join(ROOT, "reports", "peer_torch.py")
WRAPPER = os.path.join(ROOT, "plugins", "transfer", "torch_allreduce.py")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


peer = load(SCRIPT, "peer_torch_nccl")
nccl = peer.nccl
wrapper = load(WRAPPER, "torch_allreduce")
G = 1 << 30

# `xfbench --benchmark_list_tests --benchmark_filter='^NCCL/' --xfbench_gpus=0,...,7
#  --xfbench_nccl_sizes=8B,4GiB --xfbench_nccl_dtypes=fp32,bf16`, /iterations:1/manual_time cut
XFBENCH_8_GPUS = [f"NCCL/{op}/{t}/gpus:8/bytes:{b}"
                  for op in ("allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                             "alltoall", "sendrecv")
                  for t in ("fp32", "bf16") for b in (8, 4294967296)]
# xfbench's default NCCL sizes, as it lists them
XFBENCH_DEFAULT_SIZES = [8, 1024, 65536, 1048576, 16777216, 67108864, 268435456, 1073741824,
                         4294967296]


def test_names_are_xfbench_names_for_every_op():
    specs = peer.default_specs(["NCCL"], gpus=8, nccl_dtypes=["fp32", "bf16"],
                               nccl_sizes=[8, 4 << 30])
    assert [s.name for s in specs] == XFBENCH_8_GPUS
    assert all(loader.strip_name(s.gb_name) == s.name for s in specs)
    assert list(nccl.DEFAULT_SIZES) == XFBENCH_DEFAULT_SIZES
    assert [s.kw["bytes"] for s in peer.default_specs(["NCCL"], gpus=2, nccl_ops=["reduce"])] == \
        XFBENCH_DEFAULT_SIZES
    assert peer.default_specs(["NCCL"]) == []  # no ranks, no cases (outside torchrun)
    assert nccl.nccl_name("allreduce", "bf16", 2, 1024) == "NCCL/allreduce/bf16/gpus:2/bytes:1024"


def test_bus_factors_as_nccl_tests():
    cases = [("allreduce", 2, 1.0), ("allreduce", 8, 1.75), ("allreduce", 1, 0.0),
             ("allgather", 8, 0.875), ("reducescatter", 4, 0.75), ("alltoall", 2, 0.5),
             ("broadcast", 8, 1.0), ("reduce", 8, 1.0), ("sendrecv", 8, 1.0)]
    for op, n, factor in cases:
        assert nccl.bus_factor(op, n) == factor, (op, n)


def test_shapes_and_bytes_counted_as_xfbench():
    s = nccl.collective_shape("allreduce", G, 4, 4)
    assert (s.send_count, s.recv_count, s.bytes) == (G // 4, G // 4, G)
    s = nccl.collective_shape("allgather", G, 4, 4)  # size = the gathered buffer
    assert (s.send_count, s.recv_count, s.chunk) == (G // 16, G // 4, G // 16)
    s = nccl.collective_shape("reducescatter", G, 2, 4)  # size = the scattered input
    assert (s.send_count, s.recv_count) == (G // 2, G // 8)
    s = nccl.collective_shape("alltoall", 4096, 4, 3)  # rounded to whole chunks
    assert (s.chunk, s.send_count, s.bytes) == (341, 1023, 4092)
    assert nccl.collective_shape("allgather", 8, 4, 3).chunk == 0  # under one element per rank
    assert nccl.collective_shape("allreduce", 8, 4, 3).chunk == 2
    assert nccl.collective_shape("broadcast", 8, 2, 1).bytes == 8
    for op in ("broadcast", "reduce", "sendrecv"):  # one buffer of all the elements, as allreduce
        assert nccl.collective_shape(op, 4096, 2, 3) == (2048, 2048, 2048, 4096)


def test_counters_count_what_ran():
    spec = peer.default_specs(["NCCL"], gpus=3, nccl_ops=["alltoall"], nccl_sizes=[4096])[0]
    c = peer.counters(spec, 1e-6)
    assert c["algbw"] == pytest.approx(4092 / 1e-6 / 1e9)
    assert c["busbw"] == pytest.approx(c["algbw"] * 2 / 3)
    assert c["wrong"] == 0.0 and "TFLOPS" not in c and "mem_GB" not in c
    ar = peer.default_specs(["NCCL"], gpus=8, nccl_ops=["allreduce"], nccl_sizes=[G])[0]
    assert peer.counters(ar, 0.01)["busbw"] == pytest.approx(G / 0.01 / 1e9 * 1.75)
    assert nccl.label(spec.kw, nccl.plan(spec.kw)) == \
        "3 ranks (torchrun, one GPU per process); ran 4092 B"
    assert nccl.label(ar.kw, nccl.plan(ar.kw)) == "8 ranks (torchrun, one GPU per process)"


def test_sizes_parse_as_xfbench():
    good = {"8": 8, "8B": 8, "4KiB": 4096, "4k": 4096, "64MiB": 64 << 20, "1G": G, "4GiB": 4 * G,
            "2MB": 2 << 20}
    for text, nbytes in good.items():
        assert nccl.parse_size(text) == nbytes, text
    for bad in ("", "0", "-1", "1.5M", "KiB", "4XB", "4 KiB", "99999999999999999999",
                "17179869184GiB"):
        with pytest.raises(ValueError, match="is not a size"):
            nccl.parse_size(bad)
    assert nccl.parse_size("16777215GiB") == 16777215 * G
    assert nccl.parse_sizes("8B, 64KiB,1GiB") == [8, 65536, G]
    with pytest.raises(ValueError, match="^--nccl-sizes: 'junk' is not a size"):
        nccl.parse_sizes("8B,junk")
    assert [nccl.format_size(b) for b in (8, 1536, 4096, 4 * G)] == ["8 B", "1536 B", "4 KiB", "4 GiB"]


def test_unsupported_cases_say_why_as_xfbench():
    with pytest.raises(nccl.Unsupported, match="^8 B is less than one fp32 element per rank for 4 ranks$"):
        nccl.plan(nccl.case_kw("allgather", "fp32", 4, 8))
    assert nccl.plan(nccl.case_kw("allreduce", "fp32", 4, 8)).chunk == 2
    assert nccl.max_exact_ranks("bf16") == 64 and nccl.max_exact_ranks("fp16") == 512
    with pytest.raises(nccl.Unsupported,
                       match="^65 ranks: sums of the test inputs would not be exact in bf16$"):
        nccl.plan(nccl.case_kw("allreduce", "bf16", 65, G))


# ---- pattern.hpp's inputs and expected results ------------------------------------------------

# input_value(r, j) of plugins/transfer/pattern.hpp, printed by a C++ program that includes it
INPUT_J = [0, 1, 2, 3, 7, 100, 4095, 65535, 1 << 20, (1 << 31) + 5, (1 << 32) + 3, (1 << 33) + 12345]
INPUT_TABLE = {0: [1, 2, 4, 2, 2, 1, 2, 2, 2, 2, 2, 3], 1: [2, 3, 1, 3, 3, 2, 3, 3, 3, 3, 3, 4],
               2: [3, 4, 2, 4, 4, 3, 4, 4, 4, 4, 4, 1], 3: [4, 1, 3, 1, 1, 4, 1, 1, 1, 1, 1, 2]}


def test_inputs_are_pattern_hpp_values_for_ints_and_arrays():
    for r, row in INPUT_TABLE.items():
        assert [nccl.input_value(r, j) for j in INPUT_J] == row
        assert nccl.input_value(r, np.array(INPUT_J, dtype=np.int64)).tolist() == row
    assert nccl.input_value(np.array([0, 1, 2, 3]), 2).tolist() == [4, 1, 2, 3]
    v = nccl.input_value(5, np.arange(1 << 16, dtype=np.int64))
    assert set(np.unique(v).tolist()) == {1, 2, 3, 4}


CXX = shutil.which("c++") or shutil.which("g++")


@pytest.mark.skipif(CXX is None, reason="no C++ compiler to build pattern.hpp's input_value")
def test_inputs_equal_the_compiled_header(tmp_path):
    src = tmp_path / "inputs.cpp"
    js = ", ".join(f"{j}ull" for j in INPUT_J + [123456789, (1 << 32) - 1])
    src.write_text('#include <cstdio>\n#include "pattern.hpp"\nint main() {\n'
                   f'  const unsigned long long js[] = {{{js}}};\n'
                   '  for (int r = 0; r < 6; ++r)\n    for (auto j : js)\n'
                   '      std::printf("%d ", xfbench::transfer::input_value(r, j));\n}\n')
    exe = tmp_path / "inputs"
    subprocess.run([CXX, "-std=c++17", "-I", os.path.join(ROOT, "plugins", "transfer"), str(src),
                    "-o", str(exe)], check=True, capture_output=True, timeout=120)
    got = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True,
                                          check=True).stdout.split()]
    js = INPUT_J + [123456789, (1 << 32) - 1]
    assert got == [nccl.input_value(r, j) for r in range(6) for j in js]


def simulate(op, send, n, chunk):
    """Each rank's receive buffer after `op`, straight from the collective's definition."""
    total = lambda j: sum(send[q][j] for q in range(n))  # noqa: E731
    recv = []
    for r in range(n):
        if op == "allreduce":
            recv.append([total(k) for k in range(len(send[r]))])
        elif op == "reduce":
            recv.append([total(k) for k in range(len(send[r]))] if r == 0 else None)
        elif op == "allgather":
            recv.append([x for q in range(n) for x in send[q]])
        elif op == "reducescatter":
            recv.append([total(r * chunk + k) for k in range(chunk)])
        elif op == "alltoall":  # block q of my output is block r of q's input
            recv.append([x for q in range(n) for x in send[q][r * chunk:(r + 1) * chunk]])
        elif op == "broadcast":
            recv.append(list(send[0]))
        else:  # sendrecv: from the previous rank in the ring
            recv.append(list(send[(r + n - 1) % n]))
    return recv


def test_expected_values_match_simulated_collectives():
    for n in (1, 2, 3, 5):
        for op in nccl.OPS:
            s = nccl.collective_shape(op, 7 * n * 4, 4, n)
            assert s.chunk == (7 if op in ("allgather", "reducescatter", "alltoall") else 7 * n)
            send = [[nccl.input_value(r, j) for j in range(s.send_count)] for r in range(n)]
            for r, want in enumerate(simulate(op, send, n, s.chunk)):
                k = np.arange(s.recv_count, dtype=np.int64)
                got = nccl.expected_value(op, r, n, s.chunk, k)
                assert (got is None) == (want is None), (op, n, r)
                if want is not None:
                    assert got.tolist() == want, (op, n, r)
                    assert [nccl.expected_value(op, r, n, s.chunk, j) for j in range(len(want))] == want


# ---- the torch code on a simulated torch of N ranks ------------------------------------------

class Tensor(np.ndarray):
    """A CPU stand-in for the torch.Tensor methods peer_nccl.py calls."""
    device = "cuda"

    def numel(self):
        return self.size

    def double(self):
        return self.astype(np.float64)

    def to(self, dtype):
        return self.astype(dtype)

    def zero_(self):
        self[...] = 0
        return self


def _t(a):
    return np.asarray(a).view(Tensor)


class SimulatedRanks:
    """torch and torch.distributed for `n` ranks as threads of this process. Each collective
    deposits every rank's buffers, waits for all, then computes its own result from them.
    `corrupt(op, rank, out)` may spoil a result (a broken network)."""

    def __init__(self, n, free_bytes=1 << 40, corrupt=None):
        self.n, self.free, self.corrupt = n, free_bytes, corrupt
        self.barrier = threading.Barrier(n, timeout=20)  # a rank that fails alone breaks it
        self.slots = [None] * n
        self.local = threading.local()
        self.calls = [[] for _ in range(n)]
        self.torch = self._torch()

    @property
    def rank(self):
        return self.local.rank

    def _exchange(self, mine):
        self.slots[self.rank] = mine
        self.barrier.wait()
        everyone = list(self.slots)
        self.barrier.wait()  # nobody deposits the next call's buffers before all have read these
        return everyone

    def _finish(self, op, out):
        if self.corrupt:
            self.corrupt(op, self.rank, out)
        self.calls[self.rank].append(op)

    def all_reduce(self, t, op=None):
        every = self._exchange(np.array(t))
        t[...] = np.max(every, axis=0) if op == "MAX" else np.sum(every, axis=0)
        self._finish("allreduce", t)

    def all_gather_into_tensor(self, out, inp):
        out[...] = np.concatenate(self._exchange(np.array(inp)))
        self._finish("allgather", out)

    def reduce_scatter_tensor(self, out, inp):
        c = out.size
        out[...] = np.sum([x[self.rank * c:(self.rank + 1) * c] for x in self._exchange(np.array(inp))],
                          axis=0)
        self._finish("reducescatter", out)

    def broadcast(self, t, src):
        t[...] = self._exchange(np.array(t))[src]
        self._finish("broadcast", t)

    def reduce(self, t, dst):
        every = self._exchange(np.array(t))
        if self.rank == dst:
            t[...] = np.sum(every, axis=0)
        self._finish("reduce", t)

    def all_to_all_single(self, out, inp):
        c = inp.size // self.n
        out[...] = np.concatenate([x[self.rank * c:(self.rank + 1) * c]
                                   for x in self._exchange(np.array(inp))])
        self._finish("alltoall", out)

    def batch_isend_irecv(self, ops):
        sends = {p.peer: np.array(p.tensor) for p in ops if p.op == "isend"}
        every = self._exchange(sends)
        for p in ops:
            if p.op == "irecv":
                p.tensor[...] = every[p.peer][self.rank]
                self._finish("sendrecv", p.tensor)
        return [types.SimpleNamespace(wait=lambda: None)]

    def _torch(self):
        d = types.SimpleNamespace(
            all_reduce=self.all_reduce, all_gather_into_tensor=self.all_gather_into_tensor,
            reduce_scatter_tensor=self.reduce_scatter_tensor, broadcast=self.broadcast,
            reduce=self.reduce, all_to_all_single=self.all_to_all_single,
            batch_isend_irecv=self.batch_isend_irecv, isend="isend", irecv="irecv",
            P2POp=lambda op, tensor, peer: types.SimpleNamespace(op=op, tensor=tensor, peer=peer),
            ReduceOp=types.SimpleNamespace(SUM="SUM", MAX="MAX"))
        cuda = types.SimpleNamespace(mem_get_info=lambda dev: (self.free, self.free),
                                     synchronize=lambda dev=None: None)
        return types.SimpleNamespace(
            float32=np.float32, float16=np.float16, bfloat16=np.float32, int64=np.int64,
            float64=np.float64, distributed=d, cuda=cuda,
            empty=lambda n, dtype, device: _t(np.empty(n, dtype)),
            full=lambda shape, value, dtype, device: _t(np.full(shape, value, dtype)),
            arange=lambda lo, hi, dtype, device: _t(np.arange(lo, hi, dtype=dtype)),
            tensor=lambda values, dtype, device: _t(np.array(values, dtype)))

    def run(self, fn):
        """fn(rank) on every rank at once; each rank's return value or exception."""
        out = [None] * self.n

        def one(r):
            self.local.rank = r
            try:
                out[r] = fn(r)
            except Exception as e:  # noqa: BLE001 -- compared by the test
                out[r] = e
        threads = [threading.Thread(target=one, args=(r,)) for r in range(self.n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        return out


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("op", nccl.OPS)
def test_build_checks_the_result_on_every_rank_then_times_the_call(op, n):
    ranks = SimulatedRanks(n)
    kw = nccl.case_kw(op, "fp16", n, 6 * 1024 + 2)   # 3073 elements: chunks round down
    fns = ranks.run(lambda r: nccl.build(ranks.torch, kw, "cuda", r))
    assert all(callable(f) for f in fns), fns
    assert fns[0].case_label.startswith(f"{n} ranks (torchrun")
    # the memory agreed on, one call checked (the wrong elements summed), then the timed call
    assert ranks.calls[0] == ["allreduce", op, "allreduce"]
    ranks.run(lambda r: fns[r]())
    assert all(c == ["allreduce", op, "allreduce", op] for c in ranks.calls)


@pytest.mark.parametrize("op", nccl.OPS)
def test_a_wrong_element_on_one_rank_fails_the_case_on_all(op):
    def spoil(name, rank, out):  # reduce's result exists on the root only
        if name == op and out.size > 1 and rank == (0 if op == "reduce" else 1):
            out[5] += 1
    ranks = SimulatedRanks(3, corrupt=spoil)
    kw = nccl.case_kw(op, "fp32", 3, 3 * 4 * 10)
    errors = ranks.run(lambda r: nccl.build(ranks.torch, kw, "cuda", r))
    recv = nccl.plan(kw).recv_count
    assert [str(e) for e in errors] == [f"1 wrong elements (of {recv} per rank)"] * 3
    assert all(isinstance(e, nccl.ValidationError) for e in errors)


def test_a_missing_result_is_caught_by_the_poison():
    def drop(name, rank, out):
        if name == "allgather" and rank == 2:
            out[-1] = math.nan  # as if the last block never arrived: the poison stays
    ranks = SimulatedRanks(3, corrupt=drop)
    errors = ranks.run(lambda r: nccl.build(ranks.torch, nccl.case_kw("allgather", "bf16", 3, 96),
                                            "cuda", r))
    assert all(isinstance(e, nccl.ValidationError) and str(e).startswith("1 wrong") for e in errors)


def test_buffers_too_large_for_one_gpu_skip_the_case_on_all_ranks():
    ranks = SimulatedRanks(2, free_bytes=1000)
    errors = ranks.run(lambda r: nccl.build(ranks.torch, nccl.case_kw("alltoall", "fp32", 2, 1024),
                                            "cuda", r))
    assert [str(e) for e in errors] == ["buffers of 2 KiB do not fit in a GPU's free memory"] * 2
    ranks = SimulatedRanks(2, free_bytes=1000)  # in place: one buffer of 1 KiB fits
    assert all(callable(f) for f in ranks.run(
        lambda r: nccl.build(ranks.torch, nccl.case_kw("allreduce", "fp32", 2, 512), "cuda", r)))


# ---- timing under torchrun: rank 0 decides, the GPU is never left idle ------------------------

class FakeDist:
    """An active Dist: rank 0 passes its own flags on; another rank gets `root_stops_at`'s."""

    def __init__(self, gpu, root_stops_at=None):
        self.gpu, self.root_stops_at, self.decisions = gpu, root_stops_at, 0
        self.active, self.root = True, root_stops_at is None

    def share(self, count):
        return count

    def decide_later(self, flag):
        self.decisions += 1
        self.gpu.log.append("decide")
        value = flag if self.root else self.decisions >= self.root_stops_at

        def read():
            self.gpu.log.append("read")
            return value
        return read


def measure(gpu, dist, monkeypatch):
    monkeypatch.setattr(peer.siblings, "DIST", dist)
    monkeypatch.setattr(peer.measure, "time", types.SimpleNamespace(perf_counter=lambda: gpu.host))
    return peer.measure_steady(FakeTorch(gpu), gpu.fn, peer.steady_state.Options(), 0.01, None,
                               lambda t: {"busbw": 1.0 / t})


def test_rank_0_stops_where_one_process_does_with_two_windows_queued(monkeypatch):
    # As test_peer_steady.py's steady test: 2^-10 s launches, batch 10, the rule stops after
    # window 73 (52 measured). Rank 0's decision is read one window later: 75 windows queued.
    gpu = FakeGpu(2.0 ** -10)
    rep = measure(gpu, FakeDist(gpu), monkeypatch)
    assert rep.seconds == 2.0 ** -10 and rep.iterations == 52 * 10 and rep.extra["windows"] == 52
    assert gpu.calls == 4 + 75 * 10
    log = gpu.log[3:]  # after the sizing launch's two records and its wait
    reads = [i for i, e in enumerate(log) if e == "read"]
    assert len(reads) == 73 and log.count("decide") == 73
    for j, pos in enumerate(reads, start=1):  # decision j read: j windows waited, j + 2 queued
        assert log[:pos].count("wait") == j and log[:pos].count("record") == 2 * (j + 2)


def test_other_ranks_follow_rank_0_and_issue_the_same_launches(monkeypatch):
    gpu = FakeGpu(2.0 ** -10)
    assert measure(gpu, FakeDist(gpu, root_stops_at=10), monkeypatch) is None  # rank 0 reports
    assert gpu.calls == 4 + 12 * 10  # windows 1..10, then the two queued while it was decided


def test_hot_mode_ranks_warm_up_as_long_as_rank_0(monkeypatch):
    gpu = FakeGpu(2.0 ** -10)
    root_says = iter([True] * 5 + [False])  # rank 0 warmed up 5 calls; this rank would stop at 3
    monkeypatch.setattr(peer.siblings, "DIST", types.SimpleNamespace(decide=lambda flag: next(root_says),
                                                                     share=lambda count: 7))
    clock = itertools.count(0, 0.25)
    monkeypatch.setattr(peer.measure, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    reps = peer.measure_hot(FakeTorch(gpu), gpu.fn, 2, 0.1, 0.2)
    assert gpu.calls == 5 + 1 + 2 * 7 and [r.iterations for r in reps] == [7, 7]


# ---- the CLIs without torch -------------------------------------------------------------------

def test_list_without_torch_and_torchrun_ranks():
    r = run_cli(SCRIPT, "--list", "--families", "NCCL", "--gpus", "4", "--nccl-sizes", "8B,1GiB",
                "--nccl-ops", "allgather,sendrecv", "--nccl-dtypes", "fp16")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [f"NCCL/{op}/fp16/gpus:4/bytes:{b}/manual_time"
                                for op in ("allgather", "sendrecv") for b in (8, G)]
    env = dict(os.environ, WORLD_SIZE="2", RANK="1", LOCAL_RANK="1", PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, SCRIPT, "--list", "--families", "NCCL,TrainStep",
                        "--nccl-ops", "allreduce", "--nccl-sizes", "1MiB", "--filter", "NCCL|/dp/"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert [n for n in r.stdout.split() if n.startswith("NCCL")] == \
        ["NCCL/allreduce/fp32/gpus:2/bytes:1048576/manual_time"]
    assert len(r.stdout.split()) == 3  # and the two dp TrainStep cases of the same ranks


def test_cli_errors_are_one_line():
    for args, message in ((["--nccl-sizes", "1.5M"], "--nccl-sizes: '1.5M' is not a size"),
                          (["--nccl-ops", "allreduce,bcast"], "--nccl-ops: unknown bcast; known: "),
                          (["--nccl-dtypes", "fp8"], "--nccl-dtypes: unknown fp8; known: fp32,fp16,bf16")):
        r = run_cli(SCRIPT, "--list", "--families", "NCCL", "--gpus", "2", *args)
        assert r.returncode == 2 and message in r.stderr, (args, r.stderr)
    for args in (["--gpus", "2"], []):  # outside torchrun: says how to run them, runs nothing
        r = run_cli(SCRIPT, "--families", "NCCL", *args)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
        assert "NCCL cases run under torchrun, one process per GPU: torchrun --nproc-per-node=N" in r.stderr


def test_json_entries_load_and_tabulate(tmp_path):
    specs = peer.default_specs(["NCCL"], gpus=2, nccl_ops=["allreduce", "allgather"],
                               nccl_sizes=[1 << 20, G])
    entries = []
    for i, spec in enumerate(specs):
        reps = [peer.Rep(t, 100, {"ci_pct": 0.1}, "2 ranks (torchrun, one GPU per process)")
                for t in (1e-3 * (i + 1), 1.1e-3 * (i + 1), 0.9e-3 * (i + 1))]
        entries += peer.gb_entries(spec, reps, 0, i)
    out = tmp_path / "torch_nccl.json"
    peer.write_json(str(out), peer.base_context("steady", peer.steady_state.Options(), 0.01), entries)
    assert all("mem_GB" not in e for e in json.loads(out.read_text())["benchmarks"])
    run = loader.load(str(out))
    case = run.cases["NCCL/allgather/fp32/gpus:2/bytes:1073741824"]
    assert case.value("busbw") == pytest.approx(G / 4e-3 / 1e9 / 2)  # median 4 ms, factor 1/2
    r = run_cli("-m", "reports", "table", str(out))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "### NCCL gpus=2 — busbw GB/s" in lines
    ar = G / 2e-3 / 1e9  # allreduce 1 GiB: median 2 ms, factor 1 on two ranks
    assert f"| allreduce/fp32 | {loader.fmt_num(1048576 / 1e-3 / 1e9)} | {loader.fmt_num(ar)} |" in lines


# ---- plugins/transfer/torch_allreduce.py: the old command line over the family -----------------

def test_wrapper_runs_the_family_under_torchrun():
    cmd = wrapper.torchrun_command(4, "1MiB,1GiB", 3, "out.json", python="py")
    assert cmd == ["py", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=4", SCRIPT,
                   "--families", "NCCL", "--nccl-ops", "allreduce", "--nccl-sizes", "1MiB,1GiB",
                   "--repetitions", "3", "--out", "out.json"]
    r = run_cli(WRAPPER, "--sizes", "1MiB,junk")
    assert r.returncode == 2 and "--sizes: 'junk' is not a size" in r.stderr
    code = ("import runpy, sys; sys.modules['torch'] = None; "
            f"sys.argv = ['torch_allreduce.py']; runpy.run_path({WRAPPER!r}, run_name='__main__')")
    r = run_cli("-c", code)
    assert r.returncode == 2 and r.stderr.strip().startswith("torch is not installed: ")
