"""The HTML report's summary, the marks on noisy / throttled / invalid values, the tables left
out and the cases not run, the seeds' one-GPU training table (issue 32), on committed results
under reports/results/ (read-only)."""

from reports_helpers import ROOT, run_cli  # first: puts the repository root on sys.path
import json
import os
import re

import pytest

from reports import htmlreport, loader, table
from reports.render import to_markdown, to_text

H100 = os.path.join(ROOT, "reports", "results", "h100")
SUITE = os.path.join(H100, "protocol", "default_suite.json")        # 99 cases, 10 noisy, 50 throttled
SMOKE = os.path.join(H100, "default_suite_smoke.json")              # one GPU: 92 cases n/a
HEAD_XF = os.path.join(H100, "protocol", "headline_xfbench_1.json")
HEAD_TORCH = os.path.join(H100, "protocol", "headline_torch.json")
TRAIN_XF = os.path.join(H100, "train_step", "xf_headline.json")
TRAIN_TORCH = os.path.join(H100, "train_step", "torch_headline.json")


@pytest.fixture(scope="module")
def suite():
    return loader.load(SUITE, backend_map={})


def _page(runs, peer=None, peer_tables=None, plots=False):
    if plots:
        pytest.importorskip("matplotlib")
    return htmlreport.build(runs, image="png", peer=peer, peer_tables=peer_tables, plots=plots)


@pytest.fixture(scope="module")
def suite_page(suite):
    return _page([suite], plots=True)


def _text(fragment):
    return re.sub(r"<[^>]+>", "", fragment)


def test_summary_first_then_contents_then_families(suite_page):
    doc = suite_page
    order = ['<h1>', '<h2>Summary</h2>', '<p class="setup"><b>NVIDIA H100 80GB HBM3</b>',
             "steady-state protocol", 'id="headline"', "<b>Problems:</b>",
             '<nav id="contents">', '<h2 id="fam-BertLayer">', '<h2 id="fam-Vector">',
             '<h2 id="problems">', '<h2 id="context">']
    at = [doc.index(s) for s in order]
    assert at == sorted(at), [s for s, a in zip(order, at)]
    # the GPU and the protocol in one line
    setup = _text(re.search(r'<p class="setup"><b>NVIDIA.*?</p>', doc).group(0))
    assert ("NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, driver 580.159.04, CUDA 13.0) · steady-state "
            "protocol (≥ 0.5 s per repetition, ci ≤ 0.5%, time-out 10 s") in setup
    assert "99 cases, 1 repetition each" in setup
    # the device context, once the first thing on the page, is at the end
    assert doc.index("peak_TFLOPS_bf16") > doc.index('<h2 id="problems">')


def test_headline_table_one_row_set_per_family(suite):
    t = htmlreport.headline_table([suite])
    assert t.headers == ["family", "case", "metric", "value", "% of peak"]
    fams = [r[0] for r in t.rows]
    assert list(dict.fromkeys(fams)) == ["BertLayer", "GPT2Block", "Matmul", "Memcpy", "Vector"]
    rows = {(r[0], r[1]): r[2:] for r in t.rows}
    # the seeds' headline shapes: fused layers, fwd and fwd+bwd, at the most tokens
    assert rows[("BertLayer", "fused/fp16/fwdbwd/seq:512/batch:64")] == ["TFLOPS", "423.6†", "42.8%"]
    assert rows[("GPT2Block", "fused/fp16/fwdbwd/seq:1024/batch:64")][:2] == ["TFLOPS", "455.4†"]
    assert rows[("Matmul", "bf16/NN/m:16384/n:16384/k:16384")] == ["TFLOPS", "702.2†", "71.0%"]
    # Vector at its largest size (in HBM), never an L2-resident value
    assert rows[("Vector", "scale/fp32/n:1073741824")] == ["GB/s", "3065", "91.4%"]
    assert ("NCCL", "allreduce/fp32/gpus:1/bytes:268435456") not in rows   # 1 rank: no communication


def test_problems_counted_and_linked(suite_page):
    line = re.search(r"<b>Problems:</b>.*?</p>", suite_page).group(0)
    assert _text(line) == "Problems: 0 errors · 0 invalid values · 10 noisy cases ~ · 50 throttled cases †"
    assert '<a href="#noisy">10 noisy cases ~</a>' in line
    assert '<a href="#throttled">50 throttled cases †</a>' in line
    for anchor in ("noisy", "throttled"):
        assert f'id="{anchor}"' in suite_page
    assert "<summary>50 cases: sw_power_cap</summary>" in suite_page
    noisy = suite_page.split('id="noisy"')[1].split("</details>")[0]
    assert "Memcpy/h2d/pageable/ce/bytes:268435456: ci ±5.75% drift 12.01% after 10.0s" in noisy


def test_summary_with_the_pytorch_peer():
    xf = loader.load(HEAD_XF, backend_map={})
    peer = loader.load(HEAD_TORCH)  # torch-sdpa read as fused: matched by name
    t = htmlreport.headline_table([xf], peer)
    assert t.headers[-2:] == ["PyTorch", "× PyTorch"]
    rows = {(r[0], r[1]): r for r in t.rows}
    # README.cmd of that run: fused fwd+bwd s512 b64 427.7 vs sdpa 371.4 (1.15)
    assert rows[("BertLayer", "fused/fp16/fwdbwd/seq:512/batch:64")][3:] == [
        "427.7†", "43.2%", "371.4†", "1.15×"]
    assert rows[("Vector", "scale/fp32/n:268435456")][-2:] == ["3013†", "1.01×"]
    r = run_cli("-m", "reports", "html", HEAD_XF, "--peer", HEAD_TORCH, "-o", os.devnull)
    assert r.returncode == 0, r.stderr


def test_marks_in_text_markdown_and_html(suite, suite_page):
    tables = table.tables_for(suite)
    md = "\n".join(to_markdown(t) for t in tables)
    assert "| h2d/pageable/ce | 6.12~ |" in md                    # noisy
    assert "| bf16 | 636.0† | 681.5† | 684.6† | 702.2† |" in md     # throttled
    assert "~ noisy: the case ran into the protocol's time-out" in md
    assert "† throttled: clocks held down" in md
    text = "\n".join(to_text(t) for t in tables)
    assert re.search(r"h2d/pageable/ce\s+6\.12~", text)
    # HTML: the same cells, coloured; the legend once, in the summary
    assert '<td class="noisy">6.12~</td>' in suite_page
    assert '<td class="throttled">702.2†</td>' in suite_page
    assert suite_page.count("~ noisy: the case ran into") == 1


def test_invalid_is_marked_invalid_in_html(tmp_path):
    run = {"context": {"gpu_name": "NVIDIA H100 80GB HBM3"}, "benchmarks": [
        {"name": "Matmul/bf16/NN/m:1024/n:1024/k:1024/manual_time", "run_type": "iteration",
         "iterations": 1, "real_time": 1.0, "time_unit": "ms", "TFLOPS": float("nan"),
         "label": "throttle: sw_power_cap 100%"}]}
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(run))
    doc = htmlreport.build([loader.load(str(path), quiet=True)], image="png")
    assert '<td class="invalid">invalid</td>' in doc       # not a mark on an invalid value
    assert "invalid†" not in doc and ">—<" not in doc.split('id="headline"')[1].split("</table>")[0]
    assert '<a href="#invalid">1 invalid value</a>' in doc


def test_empty_tables_hidden_and_not_run_grouped():
    smoke = loader.load(SMOKE, backend_map={})
    hidden = []
    tables = table.tables_for(smoke, hidden)
    assert len(hidden) == 36 and all(t.title.startswith("P2P ") for t in hidden)
    assert not any(t.title.startswith("P2P ") and t.empty() for t in tables)
    not_run = next(t for t in tables if t.title == "Not run on this machine (n/a)")
    assert [r[:2] for r in not_run.rows] == [
        ["an SM copy needs host memory the GPU can address in place; this GPU reaches pageable "
         "memory only by migrating pages (no ATS): use pinned/sm or pageable/ce", "20"],
        ["P2P needs two GPUs; 1 visible", "72"]]
    doc = _page([smoke])
    assert "<h3>P2P uni peer ce 1 MiB — GB/s</h3>" not in doc
    assert "<summary>72 cases: P2P needs two GPUs; 1 visible</summary>" in doc
    assert "<summary>36 tables left out: no value in them (every case n/a)</summary>" in doc
    assert '<a href="#not-run">92 cases not run (n/a)</a>' in doc
    # wide tables scroll inside the page
    assert doc.count('<div class="scroll"><table>') == doc.count("<table>")
    assert ".scroll{overflow-x:auto" in doc


def test_table_command_leaves_empty_tables_out():
    r = run_cli("-m", "reports", "table", SMOKE)
    assert r.returncode == 0, r.stderr
    assert "### P2P uni" not in r.stdout
    assert "36 table(s) with no value left out (every case n/a" in r.stdout
    assert "| P2P needs two GPUs; 1 visible | 72 | P2P/uni/peer/ce/src:0/dst:1/bytes:1048576 |" in r.stdout


def test_one_gpu_training_table_with_pytorch_beside():
    r = run_cli("-m", "reports", "table", TRAIN_XF, TRAIN_TORCH)
    assert r.returncode == 0, r.stderr
    assert "### TrainStep one GPU — samples/s, TFLOPS, MFU, memory (PyTorch beside)" in r.stdout
    assert ("| configuration | backend | samples/s | TFLOPS | MFU % | mem GB | PyTorch samples/s | "
            "PyTorch TFLOPS | PyTorch MFU % | PyTorch mem GB | × PyTorch |") in r.stdout
    # the peer writes no MFU: its TFLOPS over the H100's bf16 peak (989.4), 162.3 -> 16.4%
    assert ("| bert-large bf16 seq:128 batch:64 | fused | 1628† | 424.6† | 42.9† | 12.6† | 622.5~ "
            "| 162.3~ | 16.4~ | 15.9~ | 2.62× |") in r.stdout
    assert "| gpt2-medium bf16 seq:1024 batch:8 | fused | 163.4† |" in r.stdout
    assert "pct_peak" not in r.stdout   # MFU once, not twice
    # the HTML report: the same table, the peer given with --peer
    xf = loader.load(TRAIN_XF, backend_map={})
    doc = _page([xf], peer=loader.load(TRAIN_TORCH),
                peer_tables=loader.load(TRAIN_TORCH, backend_map={}))
    assert "TrainStep one GPU — samples/s, TFLOPS, MFU, memory (PyTorch beside)</h3>" in doc
    assert '<td class="noisy">622.5~</td>' in doc and "<td>2.62×</td>" in doc


def test_help_texts_are_complete():
    from reports import __main__ as cli
    for cmd, (mod, _) in cli.COMMANDS.items():
        r = run_cli("-m", "reports", cmd, "--help")
        assert r.returncode == 0
        # the module's docstring whole (its first line alone stopped mid-sentence)
        about = r.stdout.split("\n\n", 1)[1].split("\npositional arguments:")[0]
        assert " ".join(about.split()) == " ".join(mod.__doc__.split()), cmd
        assert about.rstrip().endswith("."), (cmd, about)
    r = run_cli("-m", "reports", "compare", "--help")
    assert "geometric means." in r.stdout and "--wide" in r.stdout
    r = run_cli("-m", "reports", "html", "--help")
    assert "--peer FILE" in r.stdout and "a comparison of several runs" in r.stdout.replace("\n", " ")
