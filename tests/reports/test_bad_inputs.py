"""Bad inputs to `python3 -m reports` and the peer runner's CLI (issue 31): each ends with exactly
one line on stderr that names the input, its exit code (0 fine, 1 a gate failed, 2 bad input), no
Python traceback. Then an interrupted run, a run cut off mid-write, and invalid values (NaN, ...).

The commands of the table run in parallel, once per module; each row is its own test."""

from reports_helpers import ROOT, fixture, run_cli  # first: puts the repository root on sys.path
import concurrent.futures
import csv
import json
import os

import pytest

from reports import loader

A, B = fixture("run_a.json"), fixture("run_b.json")
PEER = os.path.join(ROOT, "reports", "peer_torch.py")
MATMUL = "Matmul/bf16/NN/m:1024/n:1024/k:1024"
VECTOR = "Vector/scale/fp32/n:1024"


def entry(name, rep=0, **fields):
    """One repetition (1 ms) of a case as Google Benchmark writes it; fields: its counters."""
    e = {"name": name + "/manual_time", "run_name": name + "/manual_time", "run_type": "iteration",
         "repetitions": 3, "repetition_index": rep, "iterations": 10, "real_time": 1.0,
         "cpu_time": 1.0, "time_unit": "ms"}
    e.update(fields)
    return e


def run(*entries, **top):
    return json.dumps({"context": {"host_name": "h"}, "benchmarks": list(entries), **top})


def good(**fields):
    """The baseline: two cases of three repetitions; `fields` change the Matmul's second one."""
    return run(*[entry(MATMUL, i, **{"TFLOPS": 2.1, **(fields if i == 1 else {})}) for i in range(3)],
               *[entry(VECTOR, i, **{"GB/s": 8.2}) for i in range(3)])


FILES = {
    "base.json": good(),
    "empty.json": run(),
    "zero.json": "",
    "blank.json": " \n\t\n",
    "failed.json": run(*[entry(n, error_occurred=True, error_message="CUDA error: boom")
                         for n in (MATMUL, VECTOR)]),
    "other.json": run(entry("Matmul/fp32/NN/m:512/n:512/k:512")),
    "nan.json": good(TFLOPS=float("nan")),
    "inf.json": good(TFLOPS=float("inf")),
    "neg.json": good(real_time=-1.0),
    "huge.json": good().replace('"TFLOPS": 2.1}', '"TFLOPS": 1e999}', 1),
    "string_time.json": good(real_time="fast"),
    "parsec.json": good(time_unit="parsec"),
    "list_unit.json": good(time_unit=["ms"]),
    "text.txt": "GPU results: 700 TFLOPS\n",
    "binary.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",
    "list.json": "[1, 2]",
    "null.json": "null",
    "dict_benchmarks.json": '{"benchmarks": {"name": "x"}}',
    "no_names.json": run({"real_time": 1.0}, 7),
    "one_no_name.json": run(entry(MATMUL), {"real_time": 1.0}),
    "deep.json": "[" * 100000,
    "cut_other.json": '{"results": [{"name": "x", "time": 1.0}, {"name": "y", "ti',
    "cut_first.json": '{"context": {"host_name": "h"}, "benchmarks": [{"name": "Matmul/bf16", "real',
    "plain_file": "not a folder\n",
}


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_inputs")
    for name, content in FILES.items():
        (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    (d / "folder").mkdir()
    os.symlink(d / "nowhere.json", d / "dangling.json")
    return d


def R(*args):
    return ["-m", "reports", *args]


def P(*args):
    return [PEER, *args]


GATE = ("--fail-if-slower", "5")
FULL = "/dev/full"  # a full disk
# (id, exit code, argv for python3 ({d}: the fixture folder, {A}/{B}: the test fixtures),
#  text the one stderr line must hold)
CASES = [
    # issue 31's rows: the compare gate
    ("gate new run empty", 2, R("compare", "{d}/base.json", "{d}/empty.json", *GATE), "{d}/empty.json: empty run"),
    ("gate new file 0 bytes", 2, R("compare", "{d}/base.json", "{d}/zero.json", *GATE), "{d}/zero.json: empty file"),
    ("gate every case failed", 1, R("compare", "{d}/base.json", "{d}/failed.json", *GATE),
     "FAIL: {d}/failed.json: 2 case(s) failed (" + MATMUL + ": CUDA error: boom"),
    ("gate no case shared", 1, R("compare", "{d}/base.json", "{d}/other.json", *GATE),
     "FAIL: {d}/other.json: 2 of 2 baseline case(s) missing (" + MATMUL),
    ("gate NaN", 2, R("compare", "{d}/base.json", "{d}/nan.json", *GATE), "{d}/nan.json: " + MATMUL + ": invalid value: TFLOPS = nan"),
    ("gate inf", 2, R("compare", "{d}/base.json", "{d}/inf.json", *GATE), "TFLOPS = inf"),
    ("gate negative", 2, R("compare", "{d}/base.json", "{d}/neg.json", *GATE), "{d}/neg.json: " + MATMUL + ": invalid value: real_time = -1.0"),
    # issue 31's rows: options
    ("compare --filter (", 2, R("compare", "{A}", "{B}", "--filter", "("), "--filter (: not a regular expression"),
    ("compare --markdown unwritable", 2, R("compare", "{A}", "{B}", "--markdown", "{d}/plain_file/cmp.md"), "--markdown {d}/plain_file/cmp.md: its folder"),
    ("table --out unwritable", 2, R("table", "{A}", "--out", "{d}/plain_file/t.md"), "--out {d}/plain_file/t.md: its folder"),
    ("html -o a folder", 2, R("html", "{A}", "-o", "{d}/folder"), "-o {d}/folder: is a folder"),
    ("plot --formats jpg", 2, R("plot", "{A}", "--out", "{d}/plots", "--formats", "jpg"), "--formats jpg: unknown format jpg"),
    ("compare --alpha 5", 2, R("compare", "{A}", "{B}", "--alpha", "5"), "--alpha 5: must be between 0 and 1"),
    ("compare --labels count", 2, R("compare", "{A}", "{B}", "--labels", "a"), "--labels a: 1 label(s) for 2 file(s)"),
    ("compare --family Nope", 2, R("compare", "{A}", "{B}", "--family", "Nope"), "--family Nope: no family"),
    ("compare --metrics nope", 2, R("compare", "{A}", "{B}", "--metrics", "TFLOPS,nope"), "--metrics nope: no metric"),
    # issue 31's rows: an empty run, one rule for every command
    ("table empty run", 2, R("table", "{d}/empty.json"), "{d}/empty.json: empty run"),
    ("compare empty baseline", 2, R("compare", "{d}/empty.json", "{d}/base.json"), "{d}/empty.json: empty run"),
    ("html empty run", 2, R("html", "{d}/empty.json", "-o", "{d}/empty.html"), "{d}/empty.json: empty run"),
    ("plot empty run", 2, R("plot", "{d}/empty.json", "--out", "{d}/plots"), "{d}/empty.json: empty run"),
    ("noise empty run", 2, R("noise", "{d}/empty.json"), "{d}/empty.json: empty run"),
    # input files
    ("missing file", 2, R("table", "{d}/no_such.json"), "{d}/no_such.json: cannot read: No such file"),
    ("a folder as input", 2, R("table", "{d}/folder"), "{d}/folder: cannot read: Is a directory"),
    ("dangling symlink", 2, R("compare", "{d}/base.json", "{d}/dangling.json"), "{d}/dangling.json: cannot read"),
    ("/dev/null", 2, R("table", "/dev/null"), "/dev/null: empty file"),
    ("whitespace only", 2, R("noise", "{d}/blank.json"), "{d}/blank.json: empty file"),
    ("not JSON", 2, R("table", "{d}/text.txt"), "{d}/text.txt: not valid JSON"),
    ("binary file", 2, R("table", "{d}/binary.png"), "{d}/binary.png: not a text file"),
    ("JSON list", 2, R("table", "{d}/list.json"), '{d}/list.json: not xfbench/Google Benchmark JSON'),
    ("JSON null", 2, R("compare", "{d}/base.json", "{d}/null.json"), '{d}/null.json: not xfbench'),
    ("benchmarks not a list", 2, R("html", "{d}/dict_benchmarks.json", "-o", "{d}/x.html"), '{d}/dict_benchmarks.json: not xfbench'),
    ("no entry has a name", 2, R("table", "{d}/no_names.json"), "{d}/no_names.json: empty run (no benchmark results; 2 entries without a name)"),
    ("an entry without a name", 2, R("table", "{d}/one_no_name.json"), "{d}/one_no_name.json: skipped 1 benchmark entry without a name"),
    ("nested too deeply", 2, R("table", "{d}/deep.json"), "{d}/deep.json: not valid JSON (nested too deeply)"),
    ("cut off, not xfbench", 2, R("table", "{d}/cut_other.json"), "{d}/cut_other.json: not valid JSON"),
    ("cut off before any case", 2, R("table", "{d}/cut_first.json"), "{d}/cut_first.json: empty run (interrupted: file ends early"),
    ("time not a number", 2, R("table", "{d}/string_time.json"), "real_time = 'fast'"),
    ("unknown time unit", 2, R("noise", "{d}/parsec.json"), "time_unit = 'parsec'"),
    ("time unit not a string", 2, R("table", "{d}/list_unit.json"), "time_unit = ['ms']"),
    ("number beyond float", 2, R("table", "{d}/huge.json"), "TFLOPS = inf"),
    ("NaN in table", 2, R("table", "{d}/nan.json"), "TFLOPS = nan"),
    ("NaN in plot", 2, R("plot", "{d}/nan.json", "--out", "{d}/plots"), "TFLOPS = nan"),
    # options of compare
    ("compare --match-backend x", 2, R("compare", "{A}", "{B}", "--match-backend", "x"), "--match-backend x: 'x' is not FROM=TO"),
    ("compare --match-backend =fused", 2, R("compare", "{A}", "{B}", "--match-backend", "=fused"), "--match-backend =fused"),
    ("compare --match-backend across keys", 2, R("compare", "{A}", "{B}", "--match-backend", "recipe:current=fused"), "renames a name part into another key"),
    ("compare --format xml", 2, R("compare", "{A}", "{B}", "--format", "xml"), "--format: invalid choice: 'xml'"),
    ("compare --fail-if-slower -5", 2, R("compare", "{A}", "{B}", "--fail-if-slower", "-5"), "--fail-if-slower -5: must be a percentage"),
    ("compare --fail-if-slower nan", 2, R("compare", "{A}", "{B}", "--fail-if-slower", "nan"), "--fail-if-slower nan"),
    ("compare --fail-if-slower 100", 2, R("compare", "{A}", "{B}", "--fail-if-slower", "100"), "--fail-if-slower 100"),
    ("compare --fail-if-slower abc", 2, R("compare", "{A}", "{B}", "--fail-if-slower", "abc"), "--fail-if-slower: invalid float value: 'abc'"),
    ("compare gate with one file", 2, R("compare", "{A}", *GATE), "--fail-if-slower 5: needs a baseline"),
    ("compare --alpha 0", 2, R("compare", "{A}", "{B}", "--alpha", "0"), "--alpha 0"),
    ("compare --alpha nan", 2, R("compare", "{A}", "{B}", "--alpha", "nan"), "--alpha nan"),
    ("compare --labels empty item", 2, R("compare", "{A}", "{B}", "--labels", "a,"), "--labels 'a,': an empty item"),
    ("compare --family empty", 2, R("compare", "{A}", "{B}", "--family", ""), "--family '': an empty item"),
    ("compare --filter matches nothing", 2, R("compare", "{A}", "{B}", "--filter", "NoSuchCase"), "--filter NoSuchCase: matches no case"),
    ("compare --markdown a folder", 2, R("compare", "{A}", "{B}", "--markdown", "{d}/folder"), "--markdown {d}/folder: is a folder"),
    ("compare --markdown full disk", 2, R("compare", "{A}", "{B}", "--markdown", FULL), "--markdown /dev/full: cannot write (No space left"),
    ("compare without files", 2, R("compare"), "the following arguments are required: files"),
    # options of table, plot, html, noise
    ("table --format xml", 2, R("table", "{A}", "--format", "xml"), "--format: invalid choice: 'xml'"),
    ("table --match-backend x", 2, R("table", "{A}", "--match-backend", "x"), "--match-backend x"),
    ("table csv --out a file", 2, R("table", "{A}", "--format", "csv", "--out", "{d}/plain_file"), "--out {d}/plain_file: not a folder"),
    ("table --out a folder", 2, R("table", "{A}", "--out", "{d}/folder"), "--out {d}/folder: is a folder"),
    ("table --out full disk", 2, R("table", "{A}", "--out", FULL), "--out /dev/full: cannot write (No space left"),
    ("table stdout full disk", 2, R("table", "{A}"), "stdout: cannot write (No space left"),
    ("plot --formats empty", 2, R("plot", "{A}", "--formats", "png,"), "--formats 'png,': an empty item"),
    ("plot --labels count", 2, R("plot", "{A}", "--labels", "a,b"), "--labels a,b: 2 label(s) for 1 file(s)"),
    ("plot --out a file", 2, R("plot", "{A}", "--out", "{d}/plain_file"), "--out {d}/plain_file: not a folder"),
    ("plot --match-backend x", 2, R("plot", "{A}", "--match-backend", "x"), "--match-backend x"),
    ("html --alpha 5", 2, R("html", "{A}", "{B}", "-o", "{d}/c.html", "--alpha", "5"), "--alpha 5"),
    ("html --labels count", 2, R("html", "{A}", "-o", "{d}/c.html", "--labels", "a,b"), "--labels a,b"),
    ("html --image jpg", 2, R("html", "{A}", "-o", "{d}/c.html", "--image", "jpg"), "--image: invalid choice: 'jpg'"),
    ("html --match-backend x", 2, R("html", "{A}", "-o", "{d}/c.html", "--match-backend", "x"), "--match-backend x"),
    ("html -o under a file", 2, R("html", "{A}", "-o", "{d}/plain_file/r.html"), "-o {d}/plain_file/r.html: its folder"),
    ("html -o full disk", 2, R("html", "{d}/base.json", "-o", FULL), "-o /dev/full: cannot write (No space left"),
    ("noise --limit -1", 2, R("noise", "{A}", "--limit", "-1"), "--limit -1: must be a percentage above 0"),
    ("noise --limit nan", 2, R("noise", "{A}", "--limit", "nan"), "--limit nan"),
    ("noise --limit abc", 2, R("noise", "{A}", "--limit", "abc"), "--limit: invalid float value: 'abc'"),
    ("noise --min-time-us -1", 2, R("noise", "{A}", "--min-time-us", "-1"), "--min-time-us -1"),
    ("noise --metric nope", 2, R("noise", "{A}", "--metric", "nope"), "--metric nope: no metric"),
    ("noise --format xml", 2, R("noise", "{A}", "--format", "xml"), "--format: invalid choice: 'xml'"),
    ("kernels a JSON run", 2, R("kernels", "{A}"), "{A}: no ncu table"),
    ("kernels missing file", 2, R("kernels", "{d}/missing.csv"), "{d}/missing.csv: cannot read"),
    ("kernels --period x", 2, R("kernels", "{A}", "--period", "x"), "--period x: must be auto, 0 or a kernel count"),
    ("kernels --top -1", 2, R("kernels", "{A}", "--top", "-1"), "--top -1: must be 0 or more"),
    ("plans a JSON run", 2, R("plans", "{A}"), "{A}, line 1: not a GEMM plans record"),
    ("plans missing file", 2, R("plans", "{d}/missing.tsv"), "{d}/missing.tsv: cannot read"),
    # the command line itself
    ("no command", 2, R(), "the following arguments are required"),
    ("unknown command", 2, R("nope"), "invalid choice: 'nope'"),
    ("unknown option", 2, R("table", "{A}", "--nope"), "unrecognized arguments: --nope"),
    # the peer runner's CLI (no torch needed: checked before it is imported)
    ("peer --out a folder", 2, P("--out", "{d}/folder", "--families", "Vector"), "--out {d}/folder: is a folder"),
    ("peer --out under a file", 2, P("--out", "{d}/plain_file/t.json"), "--out {d}/plain_file/t.json: {d}/plain_file is not a folder"),
    ("peer --families Nope", 2, P("--list", "--families", "Nope"), "unknown families Nope"),
    ("peer --repetitions 0", 2, P("--list", "--repetitions", "0"), "--repetitions must be >= 1"),
    ("peer --filter (", 2, P("--list", "--filter", "("), "bad --filter regex"),
]
assert len({c[0] for c in CASES}) == len(CASES)


def _run(argv, stdout_full):
    if not stdout_full:
        return run_cli(*argv)
    env = dict(os.environ, PYTHONPATH=ROOT, MPLBACKEND="Agg")
    import subprocess
    import sys
    with open(FULL, "w") as full:
        r = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    r.stdout = ""
    return r


@pytest.fixture(scope="module")
def results(d):
    subs = {"{d}": str(d), "{A}": A, "{B}": B}

    def expand(s):
        for k, v in subs.items():
            s = s.replace(k, v)
        return s
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {name: pool.submit(_run, [expand(a) for a in argv], "stdout" in name)
                   for name, _, argv, _ in CASES}
        return {name: (f.result(), expand(CASES_BY_NAME[name][3])) for name, f in futures.items()}


CASES_BY_NAME = {c[0]: c for c in CASES}


@pytest.mark.parametrize("name,code", [(c[0], c[1]) for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(results, name, code):
    if "full" in name and not os.path.exists(FULL):
        pytest.skip("no /dev/full here")
    r, needle = results[name]
    lines = r.stderr.splitlines()
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr
    assert len(lines) == 1 and lines[0].strip(), r.stderr
    assert needle in lines[0]
    assert r.returncode == code, r.stderr


def test_enough_bad_inputs():
    assert len(CASES) >= 21 + 30   # issue 31's rows, and at least 30 more


def test_closed_pipe_is_not_an_error():
    # `python3 -m reports table run.json | head -1`: the reader has gone; exit 0, nothing said
    import subprocess
    import sys
    read, write = os.pipe()
    os.close(read)
    r = subprocess.run([sys.executable, "-m", "reports", "table", A], cwd=ROOT, stdout=write,
                       stderr=subprocess.PIPE, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    os.close(write)
    assert (r.returncode, r.stderr) == (0, "")


@pytest.mark.parametrize("exc,code,words", [
    (RuntimeError("boom"), 3, "error: internal error in reports, please report it: RuntimeError: boom ("),
    (KeyboardInterrupt(), 130, None),
])
def test_a_bug_is_one_line_not_a_traceback(monkeypatch, capsys, exc, code, words):
    from reports import __main__ as cli, table

    def broken(run, *rest):
        raise exc
    monkeypatch.setattr(table, "tables_for", broken)
    try:
        rc = cli.main(["table", A])
    except BaseException as e:  # what main let through (pytest would stop at a KeyboardInterrupt)
        rc = e
    assert rc == code
    lines = capsys.readouterr().err.splitlines()
    if words:  # the line says where: this file's raise
        assert len(lines) == 1 and lines[0].startswith(words) and "(test_bad_inputs.py:" in lines[0]
    else:
        assert lines == []


# ---- an interrupted run: the host's "interrupted" key --------------------------------------

def _interrupted(tmp_path):
    doc = json.load(open(B))
    doc["interrupted"] = "SIGTERM after 107 of 122 cases"
    path = tmp_path / "stopped.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_interrupted_run_is_read_and_said(tmp_path):
    path = _interrupted(tmp_path)
    warning = f"{path}: interrupted run: SIGTERM after 107 of 122 cases"
    r = run_cli("-m", "reports", "table", path)
    assert r.returncode == 0 and r.stderr.splitlines() == [warning]
    assert r.stdout.startswith(f"interrupted run: {path}: SIGTERM after 107 of 122 cases\n")
    assert "| bf16 | 460.0 | 660.0 | 803.0 | 750.0 |" in r.stdout
    r = run_cli("-m", "reports", "compare", A, path, "--format", "md")
    assert r.returncode == 0 and r.stderr.splitlines() == [warning]
    assert "| interrupted | — | SIGTERM after 107 of 122 cases |  |" in r.stdout
    assert r.stdout.index("| interrupted |") < r.stdout.index("### Matmul")
    out = tmp_path / "r.html"
    r = run_cli("-m", "reports", "html", path, "-o", str(out))
    assert r.returncode == 0 and r.stderr.splitlines() == [warning]
    doc = out.read_text()
    assert f'<li class="err">{warning}</li>' in doc
    assert '<td>interrupted</td><td class="text">SIGTERM after 107 of 122 cases</td>' in doc


# ---- a run cut off mid-write (SIGKILL): the entries before the cut -------------------------

def test_file_cut_inside_benchmarks_is_recovered(tmp_path):
    text = open(B).read()
    cut = text.index('"name": "Vector/scale/fp32/n:268435456') + 25   # inside its first entry
    path = tmp_path / "killed.json"
    path.write_text(text[:cut])
    run = loader.load(str(path))
    assert run.ok and not run.bad_input
    assert run.interrupted == "file ends early: truncated after 18 cases"
    assert list(run.cases)[-1] == "Vector/scale/fp32/n:16777216"
    assert run.cases["Matmul/bf16/NN/m:8192/n:8192/k:8192"].value("TFLOPS") == pytest.approx(803.0)
    assert run.context["gpu_name"] == "NVIDIA H200"
    r = run_cli("-m", "reports", "table", str(path))
    assert r.returncode == 0
    assert r.stderr.splitlines() == [f"{path}: interrupted run: file ends early: truncated after 18 cases"]
    # the gate fails on the cases the cut lost
    r = run_cli("-m", "reports", "compare", A, str(path), "--family", "Vector", "--fail-if-slower", "50")
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1].startswith(
        f"FAIL: {path}: 7 of 8 baseline case(s) missing (Vector/scale/fp32/n:268435456; ")


def test_cut_between_entries_and_after_the_list(tmp_path):
    entries = [entry(MATMUL, i) for i in range(3)]
    whole = run(*entries)
    between = whole[:whole.index(json.dumps(entries[2]))]          # ends with ", "
    after = whole[:whole.rindex("]") + 1]                           # the final "}" lost
    for text, reps in ((between, 2), (after, 3)):
        path = tmp_path / "cut.json"
        path.write_text(text)
        run_ = loader.load(str(path), quiet=True)
        assert run_.interrupted == "file ends early: truncated after 1 cases"
        assert run_.cases[MATMUL].n_reps == reps


# ---- invalid values are shown as such, never as missing ------------------------------------

def test_nan_is_invalid_not_missing(tmp_path):
    path = tmp_path / "nan.json"
    path.write_text(good(TFLOPS=float("nan")))
    run_ = loader.load(str(path), quiet=True)
    c = run_.cases[MATMUL]
    assert loader.is_invalid(c.value("TFLOPS")) and c.samples("TFLOPS") == []
    assert c.value("time") == pytest.approx(1e-3)                  # the other metric is fine
    assert [k for k, _ in run_.problems] == ["invalid"] and run_.bad_input and run_.ok
    line = f"{path}: {MATMUL}: invalid value: TFLOPS = nan"
    r = run_cli("-m", "reports", "table", str(path))
    assert r.returncode == 2 and r.stderr.splitlines() == [line]
    assert "| bf16 | invalid |" in r.stdout and "| scale/fp32 | 8.20 |" in r.stdout
    r = run_cli("-m", "reports", "table", str(path), "--format", "csv", "--out", str(tmp_path / "csv"))
    rows = list(csv.reader(open(tmp_path / "csv" / "matmul_nn_square_m_n_k_tflops.csv")))
    assert rows[1] == ["bf16", "invalid"]
    base = tmp_path / "base.json"
    base.write_text(good())
    r = run_cli("-m", "reports", "compare", str(base), str(path), "--format", "md")
    assert r.returncode == 2 and r.stderr.splitlines() == [line]
    assert f"| {MATMUL} | 2.10 | invalid | 1 ms | 1 ms (1.00×) | invalid |  |" in r.stdout
    assert r.stdout.count("| geomean |") == 1       # Vector's: no geomean over an invalid value
    out = tmp_path / "c.html"
    r = run_cli("-m", "reports", "html", str(base), str(path), "-o", str(out))
    assert r.returncode == 2
    assert f'<li class="err">{line}</li>' in out.read_text()


def test_cv_of_zero_counters_is_not_invalid(tmp_path):
    # Google Benchmark's cv aggregate of a counter that is 0 in every repetition is NaN
    path = tmp_path / "agg.json"
    path.write_text(run(*[entry(MATMUL, i, wrong=0) for i in range(3)],
                        entry(MATMUL, run_type="aggregate", aggregate_name="cv", wrong=float("nan"))))
    run_ = loader.load(str(path))
    assert not run_.problems and run_.cases[MATMUL].value("wrong") == 0
