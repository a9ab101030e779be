from reports_helpers import fixture  # first: puts the repository root on sys.path
import json

import pytest

from reports import loader

GB = 1e9


def test_parse_and_strip_names():
    assert loader.strip_name("Matmul/bf16/NN/m:8192/n:8192/k:8192/manual_time") == \
        "Matmul/bf16/NN/m:8192/n:8192/k:8192"
    assert loader.strip_name("Vector/scale/fp32/n:1/repeats:5/manual_time") == "Vector/scale/fp32/n:1"
    fam, variants, params = loader.parse_name("BertLayer/part:ffn/fp16/fwd/seq:128/batch:64")
    assert (fam, variants) == ("BertLayer", ["fp16", "fwd"])
    assert params == {"part": "ffn", "seq": "128", "batch": "64"}


def test_medians_of_repetitions_and_units():
    run = loader.load(fixture("run_a.json"))
    assert run.ok and not run.problems
    assert len(run.cases) == 63
    c = run.cases["Matmul/bf16/NN/m:8192/n:8192/k:8192"]
    assert c.n_reps == 5 and set(c.aggs) == {"mean", "median", "stddev", "cv"}
    assert c.value("TFLOPS") == pytest.approx(730.0)
    assert c.value("time") == pytest.approx(2 * 8192 ** 3 / 730e12)   # ms in the file -> s
    v = run.cases["Vector/scale/fp32/n:268435456"]
    assert v.value("GB/s") == pytest.approx(3000.0)
    assert v.value("time") == pytest.approx(2 * 4 * 2 ** 28 / (3000 * GB))  # us in the file -> s
    assert len(v.samples("time")) == 5


def test_aggregates_only_file_uses_median(tmp_path):
    doc = json.load(open(fixture("run_a.json")))
    doc["benchmarks"] = [e for e in doc["benchmarks"] if e["run_type"] == "aggregate"]
    p = tmp_path / "agg.json"
    p.write_text(json.dumps(doc))
    run = loader.load(str(p))
    c = run.cases["Matmul/bf16/NN/m:8192/n:8192/k:8192"]
    assert c.n_reps == 0
    assert c.value("TFLOPS") == pytest.approx(730.0)


def test_error_cases_one_line_each(capsys):
    run = loader.load(fixture("errors.json"))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2
    assert "Matmul/fp8/NN/m:4096/n:4096/k:4096: validation failed: max rel err 0.31 > 0.05" in err[0]
    assert run.ok  # failed cases are normal results, not a bad file
    assert run.cases["Matmul/fp8/NN/m:4096/n:4096/k:4096"].error.startswith("validation failed")
    assert run.cases["Matmul/fp32/NN/m:2048/n:2048/k:2048"].value("TFLOPS") == pytest.approx(40.0)


@pytest.mark.parametrize("name,kind,words", [
    ("not_xfbench.json", "bad-file", 'no "benchmarks" list'),
    ("truncated.json", "bad-file", "not valid JSON"),
    ("does_not_exist.json", "bad-file", "cannot read"),
    ("empty.json", "empty", "empty run"),
])
def test_bad_input_is_one_line(capsys, name, kind, words):
    run = loader.load(fixture(name))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and name in err[0]
    assert [k for k, _ in run.problems] == [kind]
    assert not run.cases


def test_backend_mapping():
    run = loader.load(fixture("torch_peer.json"))  # default map: torch-sdpa=fused, torch-eager=unfused
    assert "BertLayer/fused/fp16/fwd/seq:128/batch:128" in run.cases
    assert run.cases["BertLayer/fused/fp16/fwd/seq:128/batch:128"].raw_name == \
        "BertLayer/torch-sdpa/fp16/fwd/seq:128/batch:128"
    run = loader.load(fixture("torch_peer.json"), backend_map={})
    assert "BertLayer/torch-eager/fp16/fwd/seq:128/batch:128" in run.cases
    assert loader.parse_backend_map("none") == {}
    assert loader.parse_backend_map("a=b, c=d") == {"a": "b", "c": "d"}
    with pytest.raises(ValueError):
        loader.parse_backend_map("nonsense")


def test_formatting():
    assert loader.fmt_time(1.5e-3) == "1.5 ms"
    assert loader.fmt_time(2.5e-6) == "2.5 us"
    assert loader.fmt_bytes(268435456) == "256 MiB"
    assert loader.fmt_num(730.0) == "730.0" and loader.fmt_num(3000.0) == "3000"


def test_backend_map_renames_name_parts_within_their_key():
    """KEY:A=KEY:B renames a whole name part (torchao's FP8 step, recipe current, paired with
    xfbench's delayed one); a part only matches whole, and a rename across keys is refused."""
    m = loader.parse_backend_map("torchao-compile=fused,recipe:current=recipe:delayed")
    assert loader.map_backend(
        "TrainStep/torchao-compile/gpt2-xl/fp8/recipe:current/seq:1024/batch:8", m) == \
        "TrainStep/fused/gpt2-xl/fp8/recipe:delayed/seq:1024/batch:8"
    assert loader.map_backend("LlamaBlock/fused/fp8/recipe:currently/fwd", m) == \
        "LlamaBlock/fused/fp8/recipe:currently/fwd"
    assert loader.map_backend("Matmul/recipe:current/x", m) == "Matmul/recipe:current/x", \
        "the second part is the backend, never a key:value part"
    for bad in ("recipe:current=delayed", "recipe:current=mode:delayed", "fused=recipe:delayed"):
        with pytest.raises(ValueError, match="another key"):
            loader.parse_backend_map(bad)
