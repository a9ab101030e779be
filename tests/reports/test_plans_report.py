"""`reports plans`: the GEMM kernels of an XFBENCH_GEMM_PLANS file, and two files' differences."""

import reports_helpers  # noqa: F401  (sys.path)
from reports import plans
from reports_helpers import run_cli

TILE = ("algo=66 tile={} stages=64xAUTO cluster={} splitK={} red=0 swizzle=0 custom=1 ws=0MiB "
        "compute=32F heur={}/9")
BLAS = "algo=cublasGemmEx compute=32F heur=8/9"


def record(key, product, index, kernel, gpu="NVIDIA H100 80GB HBM3", version="130100"):
    return "\t".join([gpu, version, key, product, str(index), "9", kernel])


def write(path, *records):
    path.write_text("# xfbench GEMM searches\n" + "\n".join(records) + "\n")
    return str(path)


FC1 = "bf16 NN m=8192 n=4096 k=1024 out=bf16"
WGRAD = "bf16 TN m=1024 n=4096 k=8192 out=bf16"


def test_one_file_lists_each_product_with_its_kernel(tmp_path):
    a = write(tmp_path / "a.tsv", record("k1", FC1, 2, TILE.format("128x128", "2x1x1", 1, 2)),
              record("k2", WGRAD, 8, BLAS),
              record("k1", FC1, 0, TILE.format("256x128", "1x1x1", 4, 0), gpu="NVIDIA H200"))
    r = run_cli("-m", "reports", "plans", a)
    assert r.returncode == 0, r.stderr
    assert "NVIDIA H100 80GB HBM3, cuBLASLt 130100" in r.stdout
    assert "NVIDIA H200, cuBLASLt 130100" in r.stdout
    lines = r.stdout.splitlines()
    assert any(FC1 in l and "tile 128x128, cluster 2x1x1" in l and "2/9" in l for l in lines)
    assert any(WGRAD in l and "cublasGemmEx" in l and "8/9" in l for l in lines)
    assert any(FC1 in l and "tile 256x128, split-K 4" in l for l in lines), r.stdout
    assert f"{a}: 2 products searched" in r.stdout and f"{a}: 1 products searched" in r.stdout


def test_two_files_show_the_products_that_differ(tmp_path):
    a = write(tmp_path / "a.tsv", record("k1", FC1, 2, TILE.format("128x128", "2x1x1", 1, 2)),
              record("k2", WGRAD, 8, BLAS), record("k3", "only in A", 1, BLAS))
    b = write(tmp_path / "b.tsv", record("k1", FC1, 2, TILE.format("128x128", "2x1x1", 1, 2)),
              record("k2", WGRAD, 3, TILE.format("128x128", "2x1x1", 1, 3)))
    r = run_cli("-m", "reports", "plans", a, b, "--format", "md")
    assert r.returncode == 0, r.stderr
    assert WGRAD in r.stdout and FC1 not in r.stdout.split("Products whose kernels differ")[1], \
        "only the product whose kernel differs is listed"
    assert "cublasGemmEx (8/9)" in r.stdout and "tile 128x128, cluster 2x1x1 (3/9)" in r.stdout
    assert "1 of 2 products in both chose the same kernel; 1 only in A, 0 only in B" in r.stdout


def test_short_kernel_names():
    assert plans.short_kernel(BLAS) == "cublasGemmEx"
    assert plans.short_kernel(TILE.format("#201", "1x2x1", 1, 2)) == "tile #201, cluster 1x2x1"
    assert plans.short_kernel(TILE.format("64x64", "1x1x1", 0, 2)) == "tile 64x64"
    assert plans.short_kernel("fused") == "fused"  # the FFN's choice of GELU products


def test_bad_plans_files_are_one_line_each(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("# header\nGPU\t130100\tkey\tproduct\t1\t9\n")
    empty = tmp_path / "empty.tsv"
    empty.write_text("# nothing searched\n")
    for argv, needle in (([str(bad)], f"{bad}, line 2: not a GEMM plans record"),
                         ([str(empty)], f"{empty}: no GEMM plans records"),
                         ([str(tmp_path / "none.tsv")], "none.tsv: cannot read"),
                         ([str(empty)] * 3, "files 3: one plans file, or two")):
        r = run_cli("-m", "reports", "plans", *argv)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.splitlines()) == 1 and needle in r.stderr, r.stderr
