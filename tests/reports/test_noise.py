"""`reports noise`: the CV of each case over its repetitions, by family, with the short cases apart."""

import json

import reports_helpers  # noqa: F401  (sys.path)
from reports import noise
from reports_helpers import run_cli


def entry(name, rep, us, tflops):
    return {"name": name + "/iterations:1/manual_time", "run_name": name + "/iterations:1/manual_time",
            "run_type": "iteration", "repetitions": 5, "repetition_index": rep, "iterations": 1,
            "real_time": us, "cpu_time": us, "time_unit": "us", "TFLOPS": tflops}


def write_run(tmp_path):
    # A: 1000 us +-0.1% (CV ~0.08%); B: one repetition 3% fast (CV ~1.3%); C: 10 us, noisy but short.
    benches = []
    for i, us in enumerate([1000, 1001, 999, 1000, 1000]):
        benches.append(entry("BertLayer/fused/fp16/fwd/seq:128/batch:128", i, us, 1e3 / us))
    for i, us in enumerate([970, 1000, 1000, 1000, 1000]):
        benches.append(entry("BertLayer/flash/fp16/fwd/seq:128/batch:128", i, us, 1e3 / us))
    for i, us in enumerate([10, 12, 9, 11, 10]):
        benches.append(entry("Vector/scale/fp32/n:1024", i, us, 1.0))
    path = tmp_path / "reps.json"
    path.write_text(json.dumps({"context": {}, "benchmarks": benches}))
    return str(path)


def test_cv_is_the_sample_cv_in_percent():
    assert noise.cv_pct([1.0]) is None
    assert abs(noise.cv_pct([1.0, 2.0, 3.0]) - 50.0) < 1e-12  # sd 1 / mean 2


def test_family_distribution_and_short_cases(tmp_path):
    r = run_cli("-m", "reports", "noise", write_run(tmp_path), "--cases")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    bert = next(line for line in lines if line.startswith("BertLayer"))
    vector = next(line for line in lines if line.startswith("Vector"))
    assert bert.split()[1:3] == ["2", "0.71"] and bert.split()[-2:] == ["1", "0"]
    assert vector.split()[1] == "0" and vector.split()[-1] == "1"
    assert "noise: BertLayer/flash/fp16/fwd/seq:128/batch:128: CV 1.35% >= 1%" in r.stderr
    assert "short" in r.stdout and "Vector/scale/fp32/n:1024" in r.stdout


def test_check_fails_only_on_timed_cases_over_the_limit(tmp_path):
    path = write_run(tmp_path)
    assert run_cli("-m", "reports", "noise", path, "--check").returncode == 1
    assert run_cli("-m", "reports", "noise", path, "--check", "--limit", "2").returncode == 0


def test_no_repetitions_is_one_line_and_exit_1(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"context": {}, "benchmarks": [entry("Matmul/bf16/NN/m:1", 0, 100, 1.0)]}))
    r = run_cli("-m", "reports", "noise", str(path))
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0 and "repetitions" in r.stderr
