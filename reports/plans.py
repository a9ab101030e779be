"""`plans`: the GEMM kernels xfbench chose, from the files XFBENCH_GEMM_PLANS wrote.

xfbench times cuBLASLt's candidates for each product once per process and keeps the fastest; with
XFBENCH_GEMM_PLANS=plans.tsv in the environment every choice is written to that file, and a later
run with the same file runs those kernels instead of searching (README). One file: each product
with its kernel and which of how many candidates it was, per GPU and cuBLASLt version. Two files
(two runs that each wrote their own): the products whose kernels differ, and how many agree: near
ties between candidates settle either way from one search to the next, which is why two runs of
one training step can differ by a percent or two.
"""

from . import loader
from .render import Table, to_markdown, to_text

FIELDS = 7  # GPU, cuBLASLt version, plan key, product, index, candidates, kernel


def add_arguments(p):
    p.add_argument("files", nargs="+", help="one plans file, or two to compare")
    p.add_argument("--format", choices=["text", "md"], default="text", help="stdout format")


def read_plans(path):
    """{(gpu, cublaslt, key): (product, 'index/candidates', kernel)}, in the file's order (the index
    counted from 0, as the kernel's label and XFBENCH_GEMM_LOG count it)."""
    lines = loader.read_text(path).splitlines()
    plans = {}
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) != FIELDS or not all(f[i] for i in (0, 2, 3, 6)) or \
                not (f[1].isdigit() and f[4].isdigit() and f[5].isdigit()):
            raise loader.BadInput(f"{path}, line {number}: not a GEMM plans record (GPU, cuBLASLt "
                                  "version, key, product, index, candidates, kernel: tab-separated)")
        plans[(f[0], f[1], f[2])] = (f[3], f"{int(f[4])}/{f[5]}", f[6])
    if not plans:
        raise loader.BadInput(f"{path}: no GEMM plans records")
    return plans


def short_kernel(label):
    """`algo=66 tile=128x128 stages=64xAUTO cluster=2x1x1 splitK=1 ...` -> `tile 128x128, cluster
    2x1x1` (split-K when it splits); `algo=cublasGemmEx ...` -> `cublasGemmEx`; a choice between
    ways of one computation (`fused`, `unfused`: the FFN's GELU products) as it is."""
    parts = dict(p.split("=", 1) for p in label.split() if "=" in p)
    if "algo" not in parts:
        return label
    if parts.get("algo") == "cublasGemmEx":
        return "cublasGemmEx"
    out = [f"tile {parts.get('tile', '?')}"]
    if parts.get("cluster") not in (None, "1x1x1"):
        out.append(f"cluster {parts['cluster']}")
    if parts.get("splitK") not in (None, "1", "0"):
        out.append(f"split-K {parts['splitK']}")
    return ", ".join(out)


def one_file(path, plans, render):
    out = ""
    for gpu, version in dict.fromkeys((g, v) for g, v, _ in plans):
        t = Table(f"{gpu}, cuBLASLt {version}", ["product", "kernel", "candidate"])
        for (g, v, _), (product, which, kernel) in plans.items():
            if (g, v) == (gpu, version):
                t.add([product, short_kernel(kernel), which])
        t.notes.append(f"{path}: {len(t.rows)} products searched")
        out += render(t) + "\n"
    return out


def two_files(paths, a, b, render):
    both = [k for k in a if k in b]
    differ = [k for k in both if a[k][2] != b[k][2]]
    t = Table("Products whose kernels differ", ["product", "A", "B"])
    for k in differ:
        t.add([a[k][0], f"{short_kernel(a[k][2])} ({a[k][1]})",
               f"{short_kernel(b[k][2])} ({b[k][1]})"])
    t.notes.append(f"A: {paths[0]}; B: {paths[1]}")
    t.notes.append(f"{len(both) - len(differ)} of {len(both)} products in both chose the same "
                   f"kernel; {len(a) - len(both)} only in A, {len(b) - len(both)} only in B "
                   "(another GPU, cuBLASLt version or product)")
    return render(t) + "\n"


def main(args):
    loader.require(len(args.files) <= 2, "files", len(args.files), "one plans file, or two")
    render = to_markdown if args.format == "md" else to_text
    plans = [read_plans(p) for p in args.files]
    if len(plans) == 1:
        out = one_file(args.files[0], plans[0], render)
    else:
        out = two_files(args.files, plans[0], plans[1], render)
    loader.write_stdout(out)
    return 0
