from reports_helpers import fixture, run_cli  # first: puts the repository root on sys.path
import json
import math
import os
import random
import statistics

import pytest

from reports import compare, loader

A, B = fixture("run_a.json"), fixture("run_b.json")


# Reference p-values from scipy.stats.mannwhitneyu (scipy is not a dependency).
@pytest.mark.parametrize("x,y,u,p", [
    ([1, 2, 3], [4, 5, 6], 0.0, 0.1),                                   # exact
    ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], 0.0, 0.007936507936507936),     # exact, 2/252
    ([1, 2, 2, 3, 4], [2, 3, 4, 5, 5, 6], 5.0, 0.07794691458872482),    # ties: normal approx
    ([1.0, 1.1, 0.9, 1.2, 0.8], [0.95, 1.05, 1.0, 1.15, 0.85], 12.5, 1.0),
])
def test_mann_whitney_matches_scipy(x, y, u, p):
    got_u, got_p = compare.mann_whitney(x, y)
    assert got_u == u and got_p == pytest.approx(p, rel=1e-9)


def test_mann_whitney_large_samples():
    r = random.Random(1)
    x = [r.gauss(0, 1) for _ in range(40)]
    y = [r.gauss(0.5, 1) for _ in range(35)]
    assert compare.mann_whitney(x, y) == (511.0, pytest.approx(0.04530104942918718, rel=1e-9))
    # exact branch at 10 vs 12 (scipy method='exact')
    assert compare.mann_whitney(x[:10], y[:12])[1] == pytest.approx(0.09308957296573396, rel=1e-9)


def _changes(res):
    return {(n, lab): (s, p) for (_, n, lab, s, p, _) in res.changes}


def test_compare_changes_significance_and_geomean():
    runs = loader.load_all([A, B])
    res = compare.compare(runs)
    ch = _changes(res)
    s, p = ch[("Matmul/bf16/NN/m:8192/n:8192/k:8192", "run_b")]
    assert s == pytest.approx(1.10) and p == pytest.approx(2 / 252)
    s, p = ch[("Matmul/fp32/NN/m:2048/n:2048/k:2048", "run_b")]
    assert s == pytest.approx(0.995) and p > 0.05          # inside the jitter: not significant
    s, p = ch[("Vector/scale/fp32/n:268435456", "run_b")]
    assert s == pytest.approx(0.90) and p < 0.05
    s, _ = ch[("TrainStep/bert-large/fp16/seq:512/batch:16", "run_b")]
    assert s == pytest.approx(1.0)

    tables = {t.title: t for t in res.tables}
    assert list(tables) == ["Matmul", "Vector", "BertLayer", "Memcpy", "P2P", "NCCL", "TrainStep"]
    mm = tables["Matmul"]
    row = next(r for r in mm.rows if r[0] == "Matmul/bf16/NN/m:8192/n:8192/k:8192")
    assert row[1:3] == ["730.0", "803.0 (1.10×)"]
    assert row[-2:] == ["+10.0%", "0.008 ▲"]
    geo = mm.rows[-1]
    expected = math.exp((math.log(1.10) + math.log(1.05) + math.log(0.995)) / 17)
    assert geo[0] == "geomean" and geo[-2] == f"{(expected - 1) * 100:+.1f}%" == "+0.8%"
    vec = next(r for r in tables["Vector"].rows if r[0] == "Vector/scale/fp32/n:268435456")
    assert vec[1:3] == ["3000", "2700 (0.90×)"] and vec[-2:] == ["-10.0%", "0.008 ▼"]
    # TrainStep is judged by samples/s and shows memory
    assert tables["TrainStep"].headers[1:5] == ["samples/s run_a", "samples/s run_b",
                                                "TFLOPS run_a", "TFLOPS run_b"]
    assert "mem_GB run_a" in tables["TrainStep"].headers


def test_context_mismatch_is_shown():
    res = compare.compare(loader.load_all([A, B]))
    rows = {r[0]: r for r in res.context.rows}
    assert rows["gpu_name"][1:] == ["NVIDIA H100 80GB HBM3", "NVIDIA H200", "≠ differs"]
    assert rows["cuda_runtime"][-1] == ""
    assert rows["date"][-1] == ""          # dates always differ; not flagged
    assert any("differ" in n for n in res.context.notes)


def test_slower_than_gate():
    res = compare.compare(loader.load_all([A, B]))
    slow = compare.slower_than(res, 5)
    assert [n for _, n, _, _ in slow] == ["Vector/scale/fp32/n:268435456"]
    assert compare.slower_than(res, 15) == []


def test_cli_fail_if_slower_exit_codes():
    r = run_cli("-m", "reports", "compare", A, B, "--fail-if-slower", "5")
    assert r.returncode == 1
    assert "slower: Vector/scale/fp32/n:268435456 in run_b: -10.0% (limit -5%)" in r.stderr
    assert "Matmul/bf16/NN/m:8192/n:8192/k:8192" in r.stdout   # the report is still printed
    r = run_cli("-m", "reports", "compare", A, B, "--fail-if-slower", "15")
    assert r.returncode == 0 and r.stderr == ""


def test_cli_markdown(tmp_path):
    md = tmp_path / "cmp.md"
    r = run_cli("-m", "reports", "compare", A, B, "--format", "md", "--markdown", str(md),
                "--family", "Matmul")
    assert r.returncode == 0
    line = "| Matmul/bf16/NN/m:8192/n:8192/k:8192 | 730.0 | 803.0 (1.10×) | 1.51 ms | 1.37 ms (0.91×) | +10.0% | 0.008 ▲ |"
    assert line in r.stdout
    assert line in md.read_text()
    assert "### Vector" not in r.stdout


def test_torch_peer_matched_by_backend():
    r = run_cli("-m", "reports", "compare", A, fixture("torch_peer.json"), "--family", "BertLayer",
                "--format", "md")
    assert r.returncode == 0
    assert "| BertLayer/fused/fp16/fwd/seq:128/batch:128 | 310.0 | 232.5 (0.75×) |" in r.stdout
    assert "| BertLayer/unfused/fp16/fwdbwd/seq:512/batch:64 | 232.0 | 139.2 (0.60×) |" in r.stdout
    # each runner writes its own version fields: shown, not a different setup
    assert "| xfbench_runner | — | pytorch |  |" in r.stdout
    assert "ratios compare different setups" not in r.stdout
    r = run_cli("-m", "reports", "compare", A, fixture("torch_peer.json"), "--family", "BertLayer",
                "--format", "md", "--match-backend", "none")
    assert "| BertLayer/torch-sdpa/fp16/fwd/seq:128/batch:128 | — | 232.5 |" in r.stdout


def test_bad_files_reported_rest_produced():
    r = run_cli("-m", "reports", "compare", A, fixture("not_xfbench.json"), B,
                fixture("empty.json"), fixture("errors.json"))
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2
    assert any("not_xfbench.json" in e and 'no "benchmarks" list' in e for e in err)
    assert any("empty.json" in e and "empty run" in e for e in err)
    assert sum("errors.json" in e for e in err) == 2
    assert len(err) == 4
    assert "+10.0%" in r.stdout                  # run_b still compared against run_a
    assert "error" in r.stdout                   # the failed cases are shown as such


def test_single_rep_has_no_p_value():
    res = compare.compare(loader.load_all([A, fixture("errors.json")]))
    ch = _changes(res)
    s, p = ch[("Matmul/fp32/NN/m:2048/n:2048/k:2048", "errors")]
    assert s == pytest.approx(1.0) and p is None


def _cv(xs):
    return statistics.stdev(xs) / statistics.fmean(xs)


def test_within_noise_from_the_repetitions_spread():
    res = compare.compare(loader.load_all([A, B]))
    noise = {(n, lab): nz for (_, n, lab, _, _, nz) in res.changes}
    # both runs have 5 repetitions: the noise is the two jitters' cvs combined
    jitter_a = [1.00, 1.01, 0.99, 1.02, 0.98]
    jitter_b = [0.995, 1.015, 1.0, 0.985, 1.005]
    expected = math.hypot(_cv(jitter_a), _cv(jitter_b))            # ~1.9%
    assert noise[("Matmul/fp32/NN/m:2048/n:2048/k:2048", "run_b")] == pytest.approx(expected, rel=1e-9)
    mm = {r[0]: r for r in next(t for t in res.tables if t.title == "Matmul").rows}
    assert mm["Matmul/fp32/NN/m:2048/n:2048/k:2048"][-2] == "within noise (-0.5%)"   # 0.5% < 1.9%
    assert mm["Matmul/fp16/NN/m:8192/n:8192/k:8192"][-2] == "+5.0%"                  # 5% > 1.9%
    assert mm["Matmul/bf16/NN/m:8192/n:8192/k:8192"][-2] == "+10.0%"
    # the gate still judges the change itself
    assert compare.slower_than(res, 0.1)[0][1] == "Matmul/fp32/NN/m:2048/n:2048/k:2048"


def _steady_run(path, seconds, **counters):
    """A run of one case, one repetition per time in `seconds`, with the protocol's counters
    (cv_pct, ci_pct) on each."""
    seconds = seconds if isinstance(seconds, list) else [seconds]
    entries = [{"name": "Matmul/bf16/NN/m:4096/n:4096/k:4096/manual_time", "run_type": "iteration",
                "repetitions": len(seconds), "repetition_index": i, "iterations": 100,
                "real_time": t * 1e3, "cpu_time": t * 1e3, "time_unit": "ms",
                "TFLOPS": 2 * 4096 ** 3 / t / 1e12,
                **{k: v for k, v in counters.items() if v is not None}}
               for i, t in enumerate(seconds)]
    path.write_text(json.dumps({"context": {}, "benchmarks": entries}))
    return str(path)


@pytest.mark.parametrize("new_seconds,cv_a,cv_b,cell", [
    (0.9905e-3, 0.6, 0.8, "within noise (+1.0%)"),   # +0.96% < sqrt(0.6² + 0.8²) = 1%
    (0.99e-3, 0.6, 0.8, "+1.0%"),                    # +1.01% > 1%
    (1.005e-3, 0.6, 0.8, "within noise (-0.5%)"),
    (0.995e-3, 0.3, None, "+0.5%"),                  # one run without cv_pct: no judgement
])
def test_within_noise_from_cv_pct(tmp_path, new_seconds, cv_a, cv_b, cell):
    # runs before protocol v2: one repetition, cv_pct only
    a = _steady_run(tmp_path / "a.json", 1e-3, cv_pct=cv_a)
    b = _steady_run(tmp_path / "b.json", new_seconds, cv_pct=cv_b)
    res = compare.compare(loader.load_all([a, b]))
    assert res.tables[0].rows[0][-2] == cell


@pytest.mark.parametrize("new_seconds,ci_b,cv_b,cell", [
    # ci_pct / 2 is each run's noise, not the (larger) per-window cv: sqrt(0.6² + 0.8²) = 1%
    (0.9905e-3, 1.6, 1.0, "within noise (+1.0%)"),   # +0.96% < 1%
    (0.99e-3, 1.6, 1.0, "+1.0%"),                    # +1.01% > 1% (with the cvs: 1.4%, within)
    (0.99e-3, None, 0.8, "+1.0%"),                   # a v1 run against a v2 one: its cv_pct
    (0.9905e-3, None, 0.8, "within noise (+1.0%)"),
])
def test_within_noise_from_ci_pct(tmp_path, new_seconds, ci_b, cv_b, cell):
    a = _steady_run(tmp_path / "a.json", 1e-3, cv_pct=1.0, ci_pct=1.2)
    b = _steady_run(tmp_path / "b.json", new_seconds, cv_pct=cv_b, ci_pct=ci_b)
    res = compare.compare(loader.load_all([a, b]))
    assert res.tables[0].rows[0][-2] == cell


def test_each_run_has_its_own_noise(tmp_path):
    # run a: two repetitions (their cv, ~0.707%; their ci_pct is ignored); run b: one, ci_pct 1.414
    a = _steady_run(tmp_path / "a.json", [0.995e-3, 1.005e-3], cv_pct=3.0, ci_pct=3.0)
    b = _steady_run(tmp_path / "b.json", 0.999e-3, cv_pct=3.0, ci_pct=2 * 0.5 ** 0.5)
    res = compare.compare(loader.load_all([a, b]))
    noise = res.changes[0][-1]
    assert noise == pytest.approx(math.hypot(_cv([0.995, 1.005]), 0.5 ** 0.5 / 100), rel=1e-9)


def test_within_noise_from_aggregates_only(tmp_path):
    # --benchmark_report_aggregates_only: the spread comes from the `cv` aggregate
    paths = []
    for src in (A, B):
        doc = json.load(open(src))
        doc["benchmarks"] = [e for e in doc["benchmarks"] if e["run_type"] == "aggregate"]
        paths.append(tmp_path / os.path.basename(src))
        paths[-1].write_text(json.dumps(doc))
    res = compare.compare(loader.load_all([str(p) for p in paths]))
    noise = {n: nz for (_, n, _, _, _, nz) in res.changes}
    expected = math.hypot(_cv([1.00, 1.01, 0.99, 1.02, 0.98]), _cv([0.995, 1.015, 1.0, 0.985, 1.005]))
    assert noise["Matmul/fp32/NN/m:2048/n:2048/k:2048"] == pytest.approx(expected, rel=1e-6)


# ---- issue 32: 120 columns, --wide, and warnings only for a different setup ------------------

H100 = os.path.join(os.path.dirname(A), "..", "..", "..", "reports", "results", "h100")
PAIRS = [("protocol/headline_torch.json", "protocol/headline_xfbench_1.json"),
         ("train_step/torch_headline.json", "train_step/xf_headline.json"),
         ("train_step/torch_knobs.json", "train_step/xf_knobs.json"),
         ("gpt2_block/gpt2_seeds_torch.json", "gpt2_block/gpt2_seeds.json")]


@pytest.mark.parametrize("base,new", PAIRS)
def test_text_fits_120_columns_and_wide_keeps_the_old_layout(base, new):
    files = [os.path.join(H100, base), os.path.join(H100, new)]
    r = run_cli("-m", "reports", "compare", *files)
    assert r.returncode == 0, r.stderr
    assert max(len(line) for line in r.stdout.splitlines()) <= 120
    assert "ratios compare different setups" not in r.stdout   # xfbench vs its PyTorch peer
    wide = run_cli("-m", "reports", "compare", *files, "--wide")
    assert wide.returncode == 0
    assert max(len(line) for line in wide.stdout.splitlines()) > 120
    assert " time " in wide.stdout   # every metric, time included


def test_narrow_layout_of_the_training_step():
    files = [os.path.join(H100, p) for p in PAIRS[1]]
    out = run_cli("-m", "reports", "compare", *files).stdout
    table = out.split("\nTrainStep")[1]
    head = table.splitlines()
    # what every case shares is said once, in the title; headers on two lines
    assert head[0] == " — every case: fused/bf16/accum:1/ckpt:off/adamw:fused"
    assert head[1].split() == ["samples/s", "samples/s", "mem_GB", "mem_GB", "change", "p"]
    assert head[2].split() == ["case", "torch_headline", "xf_headline", "torch_headline",
                               "xf_headline", "xf_headline", "xf_headline"]
    row = next(line for line in head if line.startswith("bert-large/seq:128/batch:64"))
    assert row.split() == ["bert-large/seq:128/batch:64", "622.5~", "1628†", "(2.62×)", "15.9~",
                           "12.6†", "(0.79×)", "+161.6%", "0.100"]
    assert "~ noisy:" in table and "† throttled:" in table      # the marks' legend
    # Markdown (and --markdown) keep every column and whole names
    md = run_cli("-m", "reports", "compare", *files, "--format", "md").stdout
    assert "| TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused | 622.5~ | 1628† (2.62×) |" in md


def test_context_warns_only_on_gpu_driver_protocol():
    # a different GPU: flagged, and the warning names it
    res = compare.compare(loader.load_all([A, B]))
    rows = {r[0]: r for r in res.context.rows}
    assert rows["gpu_name"][-1] == "≠ differs"
    assert res.context.notes == ["note: gpu_name, driver_version differ (≠); ratios compare "
                                 "different setups."]
    # the peer's own fields (torch_version) or a field one runner lacks: no difference
    res = compare.compare(loader.load_all([os.path.join(H100, p) for p in PAIRS[0]]))
    rows = {r[0]: r for r in res.context.rows}
    assert rows["torch_version"][-1] == "" and rows["cublas_version"][-1] == ""
    assert res.context.notes == []
