from reports_helpers import ROOT, fixture, run_cli  # first: puts the repository root on sys.path
import csv
import os
import json

import pytest

from reports import loader, table
from reports.render import to_markdown


def _md(run_file):
    run = loader.load(fixture(run_file), backend_map={})  # as the table command: names kept
    return "\n".join(to_markdown(t) for t in table.tables_for(run))


def test_layer_pivot_like_the_seeds():
    md = _md("run_a.json")
    assert "### BertLayer fused fp16 — TFLOPS" in md
    assert "|  | batch=64 | batch=128 |" in md
    assert "| fwd seq_len=128 | — | 310.0 |" in md
    assert "| fwd+bwd seq_len=128 | — | 280.0 |" in md
    assert "| fwd+bwd seq_len=512 | 290.0 | — |" in md
    assert "| ffn fwd seq_len=128 | 420.0 |" in md


def test_matmul_vector_memcpy_nccl():
    md = _md("run_a.json")
    assert "| dtype | n=2048 | n=4096 | n=8192 | n=16384 |" in md
    assert "| bf16 | 460.0 | 660.0 | 730.0 | 750.0 |" in md
    assert "| fp32 | 40.0 | 48.0 | 51.0 | 52.0 |" in md
    # the non-square shape is kept in a plain list, not dropped
    assert "| Matmul/bf16/NN/m:8192/n:1024/k:4096 | 115 us | 600.0 |" in md
    assert "| scale/fp32 | 2600 | 3000 |" in md
    assert "| copy/fp16 | — | 2850 |" in md
    assert "| h2d/pinned/ce | 25.0 |" in md
    assert "| allgather/bf16 | 10.0 | 140.0 | 350.0 |" in md


def test_p2p_gpu_matrix():
    t = next(t for t in table.tables_for(loader.load(fixture("run_a.json")))
             if t.title.startswith("P2P uni peer ce"))
    assert t.title == "P2P uni peer ce 256 MiB — GB/s"
    assert t.headers == ["src\\dst", "dst 0", "dst 1", "dst 2", "dst 3"]
    assert t.rows[0] == ["src 0", "—", "45.0", "22.0", "22.0"]
    assert t.rows[2] == ["src 2", "22.0", "45.0", "—", "45.0"]


def test_csv_files_hold_full_precision(tmp_path):
    r = run_cli("-m", "reports", "table", fixture("run_a.json"), "--format", "csv", "--out", str(tmp_path))
    assert r.returncode == 0
    rows = list(csv.reader(open(tmp_path / "matmul_nn_square_m_n_k_tflops.csv")))
    assert rows[0] == ["dtype", "n=2048", "n=4096", "n=8192", "n=16384"]
    bf16 = next(r for r in rows if r[0] == "bf16")
    assert float(bf16[3]) == pytest.approx(730.0, rel=1e-12)
    trains = list(csv.reader(open(tmp_path / "trainstep.csv")))
    assert trains[0][:3] == ["case", "time", "TFLOPS"]
    assert float(trains[1][trains[0].index("samples/s")]) == pytest.approx(420.0)
    assert float(trains[1][trains[0].index("mem_GB")]) == pytest.approx(21.5)


def test_errors_shown_in_cells_and_listed():
    r = run_cli("-m", "reports", "table", fixture("errors.json"))
    assert r.returncode == 0
    assert "| fp8 | — | error | — |" in r.stdout
    assert "| BertLayer/fused/fp16/fwd/seq:512/batch:64 | CUDA error: out of memory (bert_layer.cu:212) |" in r.stdout
    assert len(r.stderr.strip().splitlines()) == 2


def test_bad_and_empty_files():
    r = run_cli("-m", "reports", "table", fixture("truncated.json"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "not valid JSON" in r.stderr
    r = run_cli("-m", "reports", "table", fixture("empty.json"))   # nothing measured: bad input
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "empty run" in r.stderr


def test_torch_names_kept_by_default():
    md = _md("torch_peer.json")
    assert "### BertLayer torch-sdpa fp16 — TFLOPS" in md
    assert "| fwd seq_len=128 | — | 232.5 |" in md


def test_gpt2_table_like_the_seeds():
    md = _md("gpt2_xfbench.json")
    # gpt2-medium (names without model:), per backend: rows pass and seq, columns batch
    assert "### GPT2Block gpt2-medium fused fp16 — TFLOPS" in md
    fused = md.split("### GPT2Block gpt2-medium fused fp16 — TFLOPS")[1].split("###")[0]
    assert "|  | batch=2 | batch=64 |" in fused
    assert "| fwd seq_len=512 | 112.5 | 225.0 |" in fused
    assert "| fwd+bwd seq_len=512 | 126.0 | 252.0 |" in fused
    assert "| fwd seq_len=1024 | 125.0 | 250.0 |" in fused
    assert "| fwd+bwd seq_len=1024 | 140.0 | 280.0 |" in fused
    assert fused.index("fwd seq_len=512") < fused.index("fwd+bwd seq_len=512") < fused.index(
        "fwd seq_len=1024")
    assert "### GPT2Block gpt2-medium unfused fp16 — TFLOPS" in md
    # another model gets its own table instead of a column in gpt2-medium's
    flash = md.split("### GPT2Block gpt2-medium flash fp16 — TFLOPS")[1].split("###")[0]
    assert "batch=8" not in flash and "| fwd+bwd seq_len=1024 | 154.0 | 308.0 |" in flash
    assert "### GPT2Block gpt2-large flash fp16 — TFLOPS" in md
    assert "| fwd seq_len=1024 | 200.0 |" in md.split("gpt2-large")[1]


def test_custom_sizes_name_no_model():
    # A committed run: the GPT layer of hidden 4096 in bf16 and fp8 (custom sizes, no model:).
    path = os.path.join(ROOT, "reports", "results", "h200", "gpt2_block_fp8",
                        "gpt2_h4096_bf16_fp8_delayed.json")
    run = loader.load(path, backend_map={})
    md = "\n".join(to_markdown(t) for t in table.tables_for(run))
    assert ("### GPT2Block fused fp8 recipe:delayed hidden:4096 heads:32 inner:16384 — TFLOPS"
            in md), md
    assert "gpt2-medium" not in md
    assert "| fwd+bwd seq_len=2048 | 940.0† |" in md


def test_gpt2_table_of_the_peer():
    md = _md("gpt2_torch.json")
    assert "### GPT2Block gpt2-medium torch-sdpa fp16 — TFLOPS" in md
    assert "| fwd+bwd seq_len=1024 | 112.0 | 224.0 |" in md
    r = run_cli("-m", "reports", "compare", fixture("gpt2_torch.json"), fixture("gpt2_xfbench.json"),
                "--format", "md")
    assert r.returncode == 0
    # torch-sdpa lines up with xfbench's fused, torch-eager with unfused
    line = next(x for x in r.stdout.splitlines()
                if x.startswith("| GPT2Block/fused/fp16/fwd/seq:1024/batch:64 |"))
    assert line.startswith("| GPT2Block/fused/fp16/fwd/seq:1024/batch:64 | 200.0 | 250.0 (1.25×) |")
    assert line.endswith("| +25.0% | 0.100 |")
    assert "| GPT2Block/unfused/fp16/fwdbwd/seq:512/batch:2 | 50.4 | 63.0 (1.25×) |" in r.stdout
    assert "9 case(s) only in gpt2_xfbench." in r.stdout   # flash and gpt2-large: no peer


def _train_doc(rows):
    """A minimal TrainStep run: (name suffix, counters) per case, one repetition each."""
    base = "TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused"
    return {"context": {"gpu_name": "NVIDIA H200"}, "benchmarks": [
        dict({"name": base + suffix + "/iterations:1/manual_time", "run_type": "iteration",
              "real_time": 38.0, "time_unit": "ms", "iterations": 1}, **counters)
        for suffix, counters in rows]}


def test_multi_gpu_trainstep_table_from_the_p2p_on_and_off_runs(tmp_path):
    import json
    on = tmp_path / "on.json"
    off = tmp_path / "off.json"
    on.write_text(json.dumps(_train_doc([
        ("", {"samples/s": 1759.0, "TFLOPS": 458.7, "mem_GB": 12.6}),
        ("/dp/gpus:2/p2p:on", {"samples/s": 3340.0, "TFLOPS": 435.5, "mem_GB": 12.6,
                               "scaling": 0.951, "comm_hidden_pct": 58.1}),
        ("/tp:2/gpus:2/p2p:on", {"samples/s": 2356.0, "TFLOPS": 307.1, "mem_GB": 7.67,
                                 "scaling": 0.67, "comm_hidden_pct": 0.0}),
        ("/zero2/gpus:2/p2p:on", {"samples/s": 3418.0, "TFLOPS": 445.6, "mem_GB": 11.26,
                                  "scaling": 0.973, "comm_hidden_pct": 70.3})])))
    off.write_text(json.dumps(_train_doc([
        ("/dp/gpus:2/p2p:off", {"samples/s": 2215.0, "TFLOPS": 288.8, "mem_GB": 13.1,
                                "comm_hidden_pct": 16.7})])))
    r = run_cli("-m", "reports", "table", str(on), str(off))
    assert r.returncode == 0, r.stderr
    title = ("### TrainStep fused bert-large bf16 seq:128 batch:64 accum:1 ckpt:off adamw:fused "
             "(batch per GPU, tp: shared) — multi-GPU")
    assert title in r.stdout
    rows = [x for x in r.stdout.split(title)[1].splitlines() if x.startswith("| ")][1:]
    assert rows == [
        "| 1 GPU | 1759 | 458.7 | 12.6 | — | — |",
        "| dp gpus:2 p2p:on | 3340 | 435.5 | 12.6 | 0.951 | 58.1 |",
        "| zero2 gpus:2 p2p:on | 3418 | 445.6 | 11.3 | 0.973 | 70.3 |",
        "| tp:2 gpus:2 p2p:on | 2356 | 307.1 | 7.67 | 0.67 | 0 |",
        "| dp gpus:2 p2p:off | 2215 | 288.8 | 13.1 | — | 16.7 |"]
    # one file alone: a one-GPU-only configuration stays in the plain list
    r = run_cli("-m", "reports", "table", str(off))
    assert "| dp gpus:2 p2p:off | 2215 |" in r.stdout
    single = tmp_path / "single.json"
    single.write_text(json.dumps(_train_doc([("", {"samples/s": 1759.0})])))
    r = run_cli("-m", "reports", "table", str(single))
    assert "multi-GPU" not in r.stdout
    # ... and in the seeds' one-GPU training table: samples/s, TFLOPS, MFU, memory
    assert "### TrainStep one GPU — samples/s, TFLOPS, MFU, memory" in r.stdout
    assert "| bert-large bf16 seq:128 batch:64 | fused | 1759 | — | — | — |" in r.stdout


def test_unsupported_cases_are_na_not_errors(tmp_path):
    # A case this machine cannot run ("unsupported: why", as xfbench and the peers write it) is
    # "n/a" in its cell and listed apart, without a warning; a real error stays an error.
    def case(name, **fields):
        return {"name": name, "run_name": name, "run_type": "iteration", "iterations": 1,
                "real_time": 700.0, "cpu_time": 700.0, "time_unit": "us", **fields}
    uni = "P2P/uni/{}/sm/src:{}/dst:{}/bytes:268435456/manual_time"
    why = "unsupported: an SM copy between GPUs needs peer access"
    run = {"context": {"host_name": "h"}, "benchmarks": [
        case(uni.format("peer", 0, 1), **{"GB/s": 370.0}),
        case(uni.format("peer", 1, 0), error_occurred=True, error_message="CUDA error: boom"),
        case(uni.format("nopeer", 0, 1), error_occurred=True, error_message=why),
        case(uni.format("nopeer", 1, 0), error_occurred=True, error_message=why)]}
    path = tmp_path / "p2p.json"
    path.write_text(json.dumps(run))
    r = run_cli("-m", "reports", "table", str(path))
    assert r.returncode == 0
    assert "| src 0 | — | 370.0 |" in r.stdout and "| src 1 | error | — |" in r.stdout
    # the nopeer matrix holds no value (all n/a): left out, and said so
    assert "### P2P uni nopeer sm" not in r.stdout
    assert "1 table(s) with no value left out (every case n/a" in r.stdout
    errors, na = r.stdout.split("### Errors")[1].split("### Not run on this machine (n/a)")
    assert "CUDA error: boom" in errors and why not in errors
    # one line per reason, with its count and a first case
    assert f"| {why.split(': ', 1)[1]} | 2 | P2P/uni/nopeer/sm/src:0/dst:1/bytes:268435456 |" in na
    failed = uni.format("peer", 1, 0).replace("/manual_time", "")
    assert r.stderr.strip().splitlines() == [f"{path}: {failed}: CUDA error: boom"]
