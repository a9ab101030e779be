"""`reports kernels`: ncu's per-kernel times grouped by kind, per iteration of a case's launches."""

import reports_helpers  # noqa: F401  (sys.path)
from reports import kernels
from reports_helpers import run_cli

# One iteration: a product, the attention, a GELU backward written in FP8, a cast; times in ns.
ITERATION = [
    ("nvjet_sm90_tst_176x128_64x5_1x2_h_bz_TNN", 100_000),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7", 50_000),
    ("void detail::cast_transpose_tiles_kernel<xfbench::<unnamed>::BiasGeluBackward<__nv_bfloat16>>"
     "(T1, unsigned char *, int, int, detail::Fp8Store, float *)", 30_000),
    ("xfbench::<unnamed>::cast_transpose_kernel(unsigned char *, unsigned char *, const "
     "__nv_bfloat16 *, int, int, xfbench::<unnamed>::Parts, int, __nv_fp8_interpretation_t, bool, "
     "int)", 20_000),
]


def raw_ncu(path, iterations, extra=0, unit="nsecond"):
    """ncu --csv --page raw as --log-file writes it: a units row under the header; `extra`
    kernels of one more, partial iteration."""
    scale = {"nsecond": 1, "usecond": 1e-3}[unit]
    lines = ['==PROF== Connected to process 123', '"ID","Process ID","Kernel Name","Context",'
             '"Stream","Grid Size","Block Size","gpu__time_duration.sum"',
             '"","","","","","","","%s"' % unit]
    launches = ITERATION * iterations + ITERATION[:extra]
    for i, (name, ns) in enumerate(launches):
        v = ns * scale
        lines.append(f'"{i}","123","{name}","1","7","(2, 66, 1)","(384, 1, 1)","{v:,}"')
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_repeating_case_is_cut_into_whole_iterations(tmp_path):
    f = raw_ncu(tmp_path / "fp8.csv", iterations=4, extra=2)
    names = [n for n, _ in kernels.read_kernels(f)]
    assert len(names) == 18
    assert kernels.find_period(names) == 4
    iterations, groups, listed = kernels.summarise(kernels.read_kernels(f), 4)
    assert iterations == 4  # the partial fifth is left out
    assert groups == {"products (GEMM)": 100.0, "attention": 50.0, "activations": 30.0,
                      "FP8 casts, transposes, scales": 20.0}
    assert [x[0] for x in listed] == [ITERATION[0][0], ITERATION[1][0],
                                      "cast_transpose_tiles_kernel<BiasGeluBackward>",
                                      "cast_transpose_kernel"]


def test_units_row_and_thousands_separators_are_read(tmp_path):
    ns = kernels.read_kernels(raw_ncu(tmp_path / "a.csv", 1))
    us = kernels.read_kernels(raw_ncu(tmp_path / "b.csv", 1, unit="usecond"))
    assert [t for _, t in ns] == [100.0, 50.0, 30.0, 20.0]
    assert [round(t, 6) for _, t in us] == [100.0, 50.0, 30.0, 20.0]


def test_no_repeat_is_no_iteration():
    assert kernels.find_period(["a", "b", "c", "a", "b", "d"]) == 0
    assert kernels.find_period(["a", "b", "a", "b", "a"]) == 2
    assert kernels.find_period(["a"]) == 0


def test_short_names_keep_the_functor_that_tells_instances_apart():
    assert kernels.short_name("void detail::for_each_vector_kernel<xfbench::<unnamed>::BiasGelu"
                              "Forward<__nv_bfloat16>, 0>(T1, unsigned long)") == \
        "for_each_vector_kernel<BiasGeluForward>"
    assert kernels.short_name("xfbench::<unnamed>::transpose_kernel(unsigned char *, int)") == \
        "transpose_kernel"
    assert kernels.short_name("void (anonymous namespace)::foo<float>(float *)") == "foo"
    assert kernels.short_name("nvjet_sm90_tst_128x160") == "nvjet_sm90_tst_128x160"


def test_two_files_side_by_side_with_the_speed_ratio(tmp_path):
    a = raw_ncu(tmp_path / "bf16.csv", iterations=3)
    b = tmp_path / "fp8.csv"
    # The trimmed form under reports/results: half the products' time.
    rows = ["ID,Kernel Name,Grid Size,Block Size,gpu__time_duration.sum (ns)"]
    for it in range(3):
        for i, (name, ns) in enumerate(ITERATION):
            rows.append(f'{it * 4 + i},"{name}",(1),(1),{ns // 2 if i == 0 else ns}')
    b.write_text("\n".join(rows) + "\n")
    r = run_cli("-m", "reports", "kernels", a, str(b), "--top", "2")
    assert r.returncode == 0, r.stderr
    assert "products (GEMM)" in r.stdout and "100.0" in r.stdout and "50.0" in r.stdout
    assert "3 iterations of 4 kernels" in r.stdout
    assert "1.333x A's speed" in r.stdout  # 200 us against 150 us an iteration
    assert "Kernels of B" in r.stdout


def test_totals_without_iterations(tmp_path):
    f = raw_ncu(tmp_path / "x.csv", iterations=2)
    r = run_cli("-m", "reports", "kernels", f, "--period", "0", "--top", "0")
    assert r.returncode == 0, r.stderr
    assert "µs in all" in r.stdout and "all launches" in r.stdout
    assert "400.0" in r.stdout  # the sum of both iterations


def test_bad_inputs_are_one_line_and_exit_2(tmp_path):
    no_table = tmp_path / "log.txt"
    no_table.write_text("==PROF== Disconnected\nsome program output\n")
    for args in ([str(no_table)], [str(tmp_path / "missing.csv")],
                 [raw_ncu(tmp_path / "ok.csv", 2), "--period", "x"]):
        r = run_cli("-m", "reports", "kernels", *args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: "), r.stderr
        assert "Traceback" not in r.stderr


def test_a_file_without_iterations_keeps_its_own_unit_and_no_speed(tmp_path):
    a = raw_ncu(tmp_path / "steps.csv", iterations=3)
    b = tmp_path / "once.csv"
    b.write_text("ID,Kernel Name,Grid Size,Block Size,gpu__time_duration.sum (ns)\n"
                 "0,gemm_a,(1),(1),1000\n1,gemm_b,(1),(1),2000\n2,norm_c,(1),(1),3000\n")
    r = run_cli("-m", "reports", "kernels", a, str(b), "--top", "1")
    assert r.returncode == 0, r.stderr
    assert "µs per iteration" in r.stdout and "µs in all" in r.stdout
    assert "no repeating iteration found" in r.stdout
    assert "A's speed" not in r.stdout  # 200 us an iteration against 6 us in all: no ratio
    assert "Kernels of B (µs in all)" in r.stdout
