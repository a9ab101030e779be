"""The NCCL family of the PyTorch peer (reports/peer_torch.py): xfbench's collectives through
torch.distributed (nccl backend) under torchrun, one process per GPU, on xfbench's names and byte
conventions (plugins/transfer/transfer_math.cpp, nccl-tests' "size" and bus factors):

    NCCL/<op>/<fp32|fp16|bf16>/gpus:N/bytes:B     counters algbw, busbw (GB/s), wrong

    op             torch.distributed call                    bytes B counts        busbw factor
    allreduce      all_reduce (in place)                     the buffer            2(n-1)/n
    allgather      all_gather_into_tensor                    the gathered output   (n-1)/n
    reducescatter  reduce_scatter_tensor                     the scattered input   (n-1)/n
    broadcast      broadcast from rank 0 (in place)          the buffer            1
    reduce         reduce to rank 0 (in place)               the buffer            1
    alltoall       all_to_all_single, equal splits           each rank's input     (n-1)/n
    sendrecv       batch_isend_irecv: to rank+1, from rank-1 the buffer            1

    torchrun --nproc-per-node=8 reports/peer_torch.py --families NCCL --out torch_nccl.json

Element counts are rounded down to whole per-rank chunks as xfbench does; algbw counts what ran.
Before timing, each rank's inputs are small integers (pattern.hpp's input_value, 1..4), the result
of one call is compared with the exact expected value on every rank, and the wrong elements summed
over the ranks make the case an error, never a number. Standard library at import; torch is handed
in (the tests run without it)."""

import collections
import math

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
OPS = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv")
DTYPES = {"fp32": 4, "fp16": 2, "bf16": 2}
DEFAULT_SIZES_TEXT = "8B,1KiB,64KiB,1MiB,16MiB,64MiB,256MiB,1GiB,4GiB"  # xfbench's default_nccl_sizes
DEFAULT_DTYPES = ("fp32",)
_UNITS = {"": 1, "B": 1, "K": KiB, "KB": KiB, "KIB": KiB, "M": MiB, "MB": MiB, "MIB": MiB,
          "G": GiB, "GB": GiB, "GIB": GiB}
_SPLIT = ("allgather", "reducescatter", "alltoall")  # ops that split the elements over the ranks
_INPLACE = ("allreduce", "broadcast", "reduce")      # torch's call has one buffer
CHECK_ELEMENTS = 1 << 24  # expected values built this many at a time (int64 temporaries)
FREE_FRACTION = 0.85      # of a GPU's free memory the buffers may take, as xfbench


class Unsupported(Exception):
    """The case cannot run as asked (xfbench skips it with the same reason)."""


class ValidationError(Exception):
    """The collective's result is wrong."""


# ---- xfbench's arithmetic (transfer_math.cpp, pattern.hpp) ------------------------------------

def parse_size(text, flag="--nccl-sizes"):
    """'8B', '64KiB', '1G', '4096' -> bytes (binary multiples), as xfbench's parse_size."""
    digits = len(text) - len(text.lstrip("0123456789"))
    unit = text[digits:].upper()
    value = int(text[:digits]) if digits else 0
    if not digits or unit not in _UNITS or value == 0 or value * _UNITS[unit] >= 1 << 64:
        raise ValueError(f"{flag}: '{text}' is not a size (examples: 8B, 4KiB, 64MiB, 1GiB, 4096)")
    return value * _UNITS[unit]


def parse_sizes(text, flag="--nccl-sizes"):
    sizes = [parse_size(x.strip(), flag) for x in text.split(",") if x.strip()]
    if not sizes:
        raise ValueError(f"{flag}: no size given")
    return sizes


DEFAULT_SIZES = tuple(parse_sizes(DEFAULT_SIZES_TEXT))


def parse_list(text, known, flag):
    """A comma-separated list of names from `known`, in the order given."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in known]
    if bad or not items:
        raise ValueError(f"{flag}: unknown {','.join(bad) or '(empty)'}; known: {','.join(known)}")
    return items


def format_size(nbytes):
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if nbytes >= unit and nbytes % unit == 0:
            return f"{nbytes // unit} {name}"
    return f"{nbytes} B"


def nccl_name(op, dtype, gpus, nbytes):
    return f"NCCL/{op}/{dtype}/gpus:{gpus}/bytes:{nbytes}"


def bus_factor(op, n):
    """busbw / algbw, as nccl-tests."""
    if op == "allreduce":
        return 2 * (n - 1) / n
    return (n - 1) / n if op in _SPLIT else 1.0


Shape = collections.namedtuple("Shape", "send_count recv_count chunk bytes")


def collective_shape(op, nbytes, elem_size, n):
    """Elements per rank of a case of `nbytes` (nccl-tests' size: a rank's largest buffer), its
    count argument (`chunk`, the per-peer block for alltoall) and the bytes that ran. All zero
    when there is less than one element per rank."""
    elems = nbytes // elem_size
    chunk = elems // n if op in _SPLIT else elems
    if chunk == 0:
        return Shape(0, 0, 0, 0)
    send = chunk if op == "allgather" else chunk * n if op in _SPLIT else elems
    recv = chunk if op == "reducescatter" else chunk * n if op in _SPLIT else elems
    return Shape(send, recv, chunk, max(send, recv) * elem_size)


def max_exact_ranks(dtype):
    """Most ranks whose summed inputs (1..4 each) stay exact: fp16 2048, bf16 256 integers."""
    return {"fp16": 2048 // 4, "bf16": 256 // 4}.get(dtype, 1 << 20)


def input_value(rank, j):
    """Rank `rank`'s input at element j (pattern.hpp): 1..4. Ints or int64 arrays / tensors (the
    32-bit product is built from 16-bit halves so no int64 overflows)."""
    lo = j & 0xFFFFFFFF
    h = (lo * 0x79B1 + (((lo * 0x9E37) & 0xFFFF) << 16)) & 0xFFFFFFFF  # uint32(j) * 0x9E3779B1
    h = h ^ (j >> 32)
    return 1 + (((h >> 28) + rank) & 3)


def expected_value(op, r, n, chunk, k):
    """What element k of rank r's receive buffer holds after the op (pattern.hpp's
    expected_value); None where the op leaves it undefined (reduce off the root)."""
    def total(j):
        return sum(input_value(q, j) for q in range(n))
    if op == "allreduce":
        return total(k)
    if op == "reduce":
        return total(k) if r == 0 else None
    if op == "reducescatter":
        return total(r * chunk + k)
    if op == "allgather":
        return input_value(k // chunk, k % chunk)
    if op == "alltoall":  # block q of my output is block r of q's input
        return input_value(k // chunk, r * chunk + k % chunk)
    if op == "broadcast":
        return input_value(0, k)
    return input_value((r + n - 1) % n, k)  # sendrecv: from the previous rank of the ring


def case_kw(op, dtype, gpus, nbytes):
    return {"op": op, "dtype": dtype, "gpus": gpus, "bytes": nbytes}


def cases(ops, dtypes, sizes, gpus):
    """(name, kw) of every case, in xfbench's order: op, dtype, size."""
    return [(nccl_name(op, t, gpus, b), case_kw(op, t, gpus, b))
            for op in ops for t in dtypes for b in sizes]


def counters(kw, seconds):
    shape = collective_shape(kw["op"], kw["bytes"], DTYPES[kw["dtype"]], kw["gpus"])
    algbw = shape.bytes / seconds / 1e9
    return {"busbw": algbw * bus_factor(kw["op"], kw["gpus"]), "algbw": algbw, "wrong": 0.0}


def plan(kw):
    """The shape of a case that can run, or Unsupported with xfbench's reason."""
    op, dtype, n, nbytes = kw["op"], kw["dtype"], kw["gpus"], kw["bytes"]
    if n > max_exact_ranks(dtype):
        raise Unsupported(f"{n} ranks: sums of the test inputs would not be exact in {dtype}")
    shape = collective_shape(op, nbytes, DTYPES[dtype], n)
    if shape.chunk == 0:
        raise Unsupported(f"{format_size(nbytes)} is less than one {dtype} element per rank for "
                          f"{n} ranks")
    return shape


def label(kw, shape):
    text = f"{kw['gpus']} ranks (torchrun, one GPU per process)"
    return text + (f"; ran {format_size(shape.bytes)}" if shape.bytes != kw["bytes"] else "")


# ---- torch: buffers, the check, the call to time ---------------------------------------------

def _each_slice(count):
    for lo in range(0, count, CHECK_ELEMENTS):
        yield lo, min(count, lo + CHECK_ELEMENTS)


def fill_inputs(torch, buf, rank):
    for lo, hi in _each_slice(buf.numel()):
        j = torch.arange(lo, hi, dtype=torch.int64, device=buf.device)
        buf[lo:hi] = input_value(rank, j).to(buf.dtype)


def count_wrong(torch, op, recv, r, n, chunk):
    """Elements of this rank's result that differ from the expected value (NaN counts)."""
    wrong = 0
    for lo, hi in _each_slice(recv.numel()):
        k = torch.arange(lo, hi, dtype=torch.int64, device=recv.device)
        want = expected_value(op, r, n, chunk, k)
        if want is None:
            return 0
        wrong += int((recv[lo:hi].double() != want.double()).sum().item())
    return wrong


def _over_ranks(torch, value, dev, op="SUM"):
    """The sum (or max) of `value` over all ranks, on every rank."""
    t = torch.tensor([float(value)], dtype=torch.float64, device=dev)
    torch.distributed.all_reduce(t, op=getattr(torch.distributed.ReduceOp, op))
    return t.item()


def _call(torch, op, send, recv, r, n):
    """The op as a function of no arguments, on the current stream's terms (sync calls)."""
    d = torch.distributed
    if op == "allreduce":
        return lambda: d.all_reduce(send)
    if op == "allgather":
        return lambda: d.all_gather_into_tensor(recv, send)
    if op == "reducescatter":
        return lambda: d.reduce_scatter_tensor(recv, send)
    if op == "broadcast":
        return lambda: d.broadcast(send, 0)
    if op == "reduce":
        return lambda: d.reduce(send, 0)
    if op == "alltoall":
        return lambda: d.all_to_all_single(recv, send)
    pair = [d.P2POp(d.isend, send, (r + 1) % n), d.P2POp(d.irecv, recv, (r + n - 1) % n)]

    def sendrecv():
        for work in d.batch_isend_irecv(pair):
            work.wait()  # the current stream waits for it, as the collectives' sync calls
    return sendrecv


def build(torch, kw, dev, rank):
    """Buffers of this rank, the result of one call checked on every rank, then the call to time
    (a function of no arguments; its `case_label` goes into the JSON label). Every rank raises
    the same exception or none, so all of them go on to the same next case."""
    shape = plan(kw)
    op, n = kw["op"], kw["gpus"]
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[kw["dtype"]]
    counts = [shape.send_count] + ([] if op in _INPLACE else [shape.recv_count])
    need = sum(counts) * DTYPES[kw["dtype"]]
    if _over_ranks(torch, need > FREE_FRACTION * torch.cuda.mem_get_info(dev)[0], dev, "MAX"):
        raise Unsupported(f"buffers of {format_size(need)} do not fit in a GPU's free memory")
    send = torch.empty(shape.send_count, dtype=dtype, device=dev)
    recv = send if op in _INPLACE else torch.full((shape.recv_count,), math.nan, dtype=dtype,
                                                  device=dev)  # poison: a missed write is wrong
    fill_inputs(torch, send, rank)
    fn = _call(torch, op, send, recv, rank, n)
    fn()
    torch.cuda.synchronize(dev)
    wrong = int(_over_ranks(torch, count_wrong(torch, op, recv, rank, n, shape.chunk), dev))
    if wrong:
        raise ValidationError(f"{wrong} wrong elements (of {shape.recv_count} per rank)")
    if op in ("allreduce", "reduce"):
        send.zero_()  # in place, the timed calls sum their own results: zeros keep them finite
    fn.case_label = label(kw, shape)
    return fn
