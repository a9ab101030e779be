"""llm.c as TrainStep's peer (reports/peer_llmc.py) without llm.c: its token file, the parsing of its
step lines, the validation of its loss, the JSON under TrainStep names that `compare` pairs with
xfbench's dropout-0 cases, the build's patch and NVML stub, and a run of a fake train_gpt2cu."""

from reports_helpers import ROOT  # first: puts the repository root on sys.path
import importlib.util
import json
import math
import os
import stat
import sys

import pytest

from reports import compare, loader

SCRIPT = os.path.join(ROOT, "reports", "peer_llmc.py")
_spec = importlib.util.spec_from_file_location("peer_llmc", SCRIPT)
llmc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(llmc)

LINES = """\
+-----------------------+----------------------------------------------------+
| Parameter             | Value                                              |
allocating 1418 MiB for activations
step    1/6 | loss 11.012345 (+nanz)| norm 15.2 (+nanz)| lr 3.00e-04 | 2500.00 ms | 10.0% bf16 MFU | 3277 tok/s
device memory usage: 20480 MiB / 81559 MiB
step    2/6 | loss 10.500000 (+nanz)| norm 9.1 (+nanz)| lr 3.00e-04 | 101.00 ms | 45.0% bf16 MFU | 81109 tok/s
step    3/6 | loss 9.900000 (+1.0z)| norm 8.0 (+1.0z)| lr 3.00e-04 | 99.00 ms | 45.0% bf16 MFU | 81500 tok/s
step    4/6 | loss 9.100000 (+1.0z)| norm 7.0 (+1.0z)| lr 3.00e-04 | 100.00 ms | 45.0% bf16 MFU | 81800 tok/s
step    5/6 | loss 8.700000 (+1.0z)| norm 6.0 (+1.0z)| lr 3.00e-04 | 100.50 ms | 45.0% bf16 MFU | 81900 tok/s
step    6/6 | loss 8.200000 (+1.0z)| norm 5.0 (+1.0z)| lr 3.00e-04 | 250.00 ms | 45.0% bf16 MFU | 81000 tok/s
"""


def test_token_file_is_llmc_format(tmp_path):
    path = tmp_path / "tokens.bin"
    llmc.write_tokens(str(path), 1000, seed=3)
    raw = path.read_bytes()
    assert len(raw) == 256 * 4 + 1000 * 2
    header = [int.from_bytes(raw[4 * i:4 * i + 4], "little") for i in range(3)]
    assert header == [20240520, 1, 1000]
    ids = [int.from_bytes(raw[1024 + 2 * i:1026 + 2 * i], "little") for i in range(1000)]
    assert max(ids) < 50257 and len(set(ids)) > 900  # random, never zeros


def test_steps_are_parsed_and_the_median_skips_the_warmup():
    steps, mem = llmc.parse_output(LINES)
    assert [s for s, _, _ in steps] == [1, 2, 3, 4, 5, 6]
    assert steps[0][1] == pytest.approx(11.012345) and steps[2][2] == pytest.approx(99.0)
    assert mem == 20480 << 20
    assert llmc.step_seconds(steps, warmup=1) == pytest.approx(0.1005)  # median of 101..250
    assert llmc.step_seconds(steps, warmup=0) == pytest.approx(0.10075)


def test_a_loss_that_does_not_fall_or_is_not_finite_is_an_error():
    flat = [(1, 10.8, 100.0), (2, 10.9, 100.0), (3, 10.9, 100.0)]
    with pytest.raises(llmc.Failed, match="did not fall"):
        llmc.step_seconds(flat, warmup=1)
    with pytest.raises(llmc.Failed, match="not finite"):
        llmc.step_seconds([(1, 10.8, 100.0), (2, math.nan, 100.0)], warmup=1)
    with pytest.raises(llmc.Failed, match="fewer than"):
        llmc.step_seconds(flat, warmup=3)


def test_counters_follow_xfbench_trainstep():
    c = llmc.counters("gpt2-medium", 1024, 8, 0.05, mem_bytes=2e10)
    assert c["tokens/s"] == pytest.approx(8 * 1024 / 0.05)
    assert c["samples/s"] == pytest.approx(160.0)
    per = 3 * (24 * (24 * 1024 * 1024 ** 2 + 4 * 1024 ** 2 * 1024) + 2 * 1024 * 1024 * 50257)
    assert c["TFLOPS"] == pytest.approx(per * 8 / 0.05 / 1e12)
    assert c["mem_GB"] == pytest.approx(20.0)


def test_command_runs_llmc_as_the_comparison_needs():
    cmd = llmc.command("./train_gpt2cu", "t.bin", "gpt2-xl", 1024, 2, 60, 2)
    args = dict(zip(cmd[1::2], cmd[2::2]))
    assert args["-e"] == "d48" and args["-b"] == "2" and args["-t"] == "1024"
    assert args["-r"] == "0" and args["-ge"] == "2" and args["-z"] == "0" and args["-x"] == "60"
    assert args["-s"] == "0" and int(args["-v"]) > 60  # no sampling, validation outside the steps


def _fake_llmc(tmp_path, body):
    fake = tmp_path / "train_gpt2cu"
    fake.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return str(fake)


FAKE = """
a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
b, t, x = int(a["-b"]), int(a["-t"]), int(a["-x"])
open(a["-i"], "rb").read(1024)
print("device memory usage: 10240 MiB / 81559 MiB")
for s in range(x):
    ms = 1000.0 if s == 0 else 0.02 * b * t / 8
    print(f"step {s + 1:4d}/{x} | loss {11.0 - s * 0.1:.6f} (+nanz)| norm 1.0 (+nanz)| lr 3.00e-04 | "
          f"{ms:.2f} ms | 40.0% bf16 MFU | 1 tok/s")
"""


def test_run_writes_trainstep_entries_that_compare_pairs_with_xfbench(tmp_path):
    out = tmp_path / "llmc.json"
    rc = llmc.main(["run", "--bin", _fake_llmc(tmp_path, FAKE), "--models", "gpt2,gpt2-medium",
                    "--batches", "8,16", "--steps", "12", "--warmup", "2", "--repetitions", "2",
                    "--commit", "f1e2ace", "--out", str(out)])
    assert rc == 0
    doc = json.loads(out.read_text())
    assert doc["context"]["xfbench_runner"] == "llm.c" and doc["context"]["llmc_commit"] == "f1e2ace"
    names = [e["name"] for e in doc["benchmarks"] if e["run_type"] == "iteration"]
    assert names[0] == ("TrainStep/llm.c/gpt2/bf16/seq:1024/batch:8/accum:1/ckpt:off/adamw:fused/"
                        "dropout:0/manual_time")
    assert len(names) == 4 * 2
    med = next(e for e in doc["benchmarks"] if e.get("aggregate_name") == "median"
               and "gpt2-medium" in e["name"] and "batch:16" in e["name"])
    assert med["real_time"] == pytest.approx(0.02 * 16 * 1024 / 8)          # ms, the warm-up left out
    assert med["tokens/s"] == pytest.approx(16 * 1024 / (0.02 * 16 * 1024 / 8 / 1e3))
    assert med["mem_GB"] == pytest.approx((10240 << 20) / 1e9)
    first = next(e for e in doc["benchmarks"] if e["run_type"] == "iteration")
    assert "loss 11.00 -> 9.90" in first["label"] and "-ge 2 -r 0" in first["label"]
    # Every name reads by the name schema; with llm.c matched to fused it pairs with xfbench's
    # dropout-0 case of the same shape.
    run = loader.load(str(out), backend_map={"llm.c": "fused"})
    key = "TrainStep/fused/gpt2-medium/bf16/seq:1024/batch:8/accum:1/ckpt:off/adamw:fused/dropout:0"
    assert key in run.cases
    assert run.cases[key].axes["dropout"] == "0" and run.cases[key].axes["model"] == "gpt2-medium"
    xf = tmp_path / "xf.json"
    xf.write_text(json.dumps({"context": {"xfbench_runner": "xfbench"}, "benchmarks": [
        {"name": key + "/iterations:1/manual_time", "run_name": key + "/iterations:1/manual_time",
         "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
         "iterations": 1, "real_time": 40.0, "cpu_time": 40.0, "time_unit": "ms",
         "tokens/s": 8 * 1024 / 0.04, "samples/s": 200.0, "TFLOPS": 1.0}]}))
    res = compare.compare([loader.load(str(out), backend_map={"llm.c": "fused"}),
                           loader.load(str(xf))])
    assert key in compare.render(res, "text")


def test_a_failing_case_is_an_error_entry_and_the_others_run(tmp_path):
    nan = FAKE.replace("{11.0 - s * 0.1:.6f}", "{'nan' if b == 8 else 11.0 - s * 0.1}")
    out = tmp_path / "llmc.json"
    rc = llmc.main(["run", "--bin", _fake_llmc(tmp_path, nan), "--batches", "8,16", "--steps", "5",
                    "--warmup", "1", "--repetitions", "1", "--out", str(out)])
    assert rc == 1
    doc = json.loads(out.read_text())
    errors = [e for e in doc["benchmarks"] if e.get("error_occurred")]
    assert len(errors) == 1 and "batch:8/" in errors[0]["name"]
    assert errors[0]["error_message"].startswith("validation failed: a loss is not finite")
    assert any("batch:16/" in e["name"] and not e.get("error_occurred") for e in doc["benchmarks"])


def test_bad_arguments_and_a_missing_binary_exit_2(tmp_path, capsys):
    assert llmc.main(["run", "--bin", str(tmp_path / "none"), "--out", str(tmp_path / "o.json")]) == 2
    assert "no llm.c binary" in capsys.readouterr().err
    for bad in (["--models", "gpt3"], ["--batches", "0"], ["--steps", "5", "--warmup", "5"]):
        with pytest.raises(SystemExit) as e:
            llmc.main(["run", "--bin", "x", "--out", "o.json"] + bad)
        assert e.value.code == 2
    assert llmc.main(["build", "--src", str(tmp_path)]) == 2  # not llm.c's source


CUDA_UTILS = """int cudaMallocConditionallyManaged(void** out, size_t bytes, const char *file, int line) {
    cudaError_t err = cudaMalloc(out, bytes);
    if(err == cudaErrorMemoryAllocation) {
        cudaGetLastError(); // reset the error before the next API call
        cudaCheck_(cudaMallocManaged(out, bytes), file, line);
        cudaCheck_(cudaMemAdvise(*out, bytes, cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId), file, line);
        return 1;
    } else {
"""


def test_build_drops_the_managed_fallback_and_stubs_nvml(tmp_path, monkeypatch):
    src = tmp_path / "llm.c"
    (src / "llmc").mkdir(parents=True)
    (src / "train_gpt2.cu").write_text("int main() {}\n")
    (src / "llmc" / "cuda_utils.cuh").write_text(CUDA_UTILS)
    (src / "llmc" / "mfu.h").write_text("nvmlInit(); nvmlDeviceGetHandleByIndex_v2(0, &d);\n"
                                        "nvmlReturn_t r = nvmlDeviceGetPowerUsage(d, &p);\n")
    calls = []
    monkeypatch.setattr(llmc.subprocess, "run", lambda cmd, **k: calls.append((cmd, k)) or
                        type("P", (), {"returncode": 0, "stdout": ""})())
    monkeypatch.setattr(llmc, "find_cudnn_frontend", lambda: "/fe/include")
    assert llmc.main(["build", "--src", str(src)]) == 0
    text = (src / "llmc" / "cuda_utils.cuh").read_text()
    assert "cudaMemAdvise" not in text and "cudaMallocManaged" not in text
    assert "cudaCheck_(err, file, line)" in text
    assert os.path.realpath(src / "cudnn-frontend" / "include") == os.path.realpath("/fe/include")
    make = next(c for c, _ in calls if c[0] == "make")
    assert "USE_CUDNN=1" in make and "CUDNN_FRONTEND_PATH=/fe/include" in make
    assert "NO_MULTI_GPU=1" in make and "GPU_COMPUTE_CAPABILITY=90" in make
    assert llmc.nvml_functions(str(src)) == ["nvmlDeviceGetHandleByIndex_v2",
                                             "nvmlDeviceGetPowerUsage", "nvmlInit"]
