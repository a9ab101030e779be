from reports_helpers import fixture, run_cli  # first: puts the repository root on sys.path
import base64
import re

import pytest

from reports import loader

pytest.importorskip("matplotlib")
from reports import htmlreport, plot  # noqa: E402


def test_matmul_lines_hold_the_medians():
    run = loader.load(fixture("run_a.json"))
    fig = plot.matmul_figure([run])
    lines = {l.get_label(): l for l in fig.axes[0].get_lines()}
    assert set(lines) == {"fp32", "tf32", "fp16", "bf16"}
    assert list(lines["bf16"].get_xdata()) == [2048, 4096, 8192, 16384]
    assert list(lines["bf16"].get_ydata()) == pytest.approx([460, 660, 730, 750])
    plot.close(fig)


def test_trainstep_three_panels():
    run = loader.load(fixture("run_a.json"))
    fig = plot.trainstep_figure([run])
    assert [ax.get_title() for ax in fig.axes] == ["samples/s", "TFLOPS per GPU", "memory (GB)"]
    widths = [p.get_width() for p in fig.axes[0].patches]
    assert widths == pytest.approx([420, 330, 95])
    assert [p.get_width() for p in fig.axes[2].patches] == pytest.approx([21.5, 9.8, 30.2])
    plot.close(fig)


def test_bandwidth_plots_and_files(tmp_path):
    r = run_cli("-m", "reports", "plot", fixture("run_a.json"), fixture("run_b.json"),
                "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    for name in ("matmul_tflops", "trainstep", "bandwidth_vector", "bandwidth_memcpy", "nccl_busbw"):
        assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (tmp_path / f"{name}.svg").read_text()
    run = loader.load(fixture("run_a.json"))
    fig = plot.bandwidth_figure([run], "Vector")  # a panel per op, a line per dtype
    ax = next(a for a in fig.axes if a.get_title() == "scale")
    scale = next(l for l in ax.get_lines() if l.get_label() == "fp32")
    assert list(scale.get_ydata()) == pytest.approx([2600, 3000])
    assert list(scale.get_xdata()) == [2 ** 24 * 4 * 2, 2 ** 28 * 4 * 2]  # bytes read + written
    plot.close(fig)


def test_plot_with_only_a_bad_file(tmp_path):
    r = run_cli("-m", "reports", "plot", fixture("not_xfbench.json"), "--out", str(tmp_path))
    assert r.returncode == 2
    assert 'no "benchmarks" list' in r.stderr


def _self_contained(doc):
    assert "<script" not in doc
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', doc)
    assert "@import" not in doc


def test_html_single_run(tmp_path):
    out = tmp_path / "r.html"
    r = run_cli("-m", "reports", "html", fixture("run_a.json"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    doc = out.read_text()
    _self_contained(doc)
    assert "NVIDIA H100 80GB HBM3" in doc and "peak_TFLOPS_bf16" in doc
    assert "<td>fwd seq_len=128</td><td>—</td><td>310.0</td>" in doc
    imgs = re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', doc)
    assert len(imgs) == 5
    assert base64.b64decode(imgs[0]).lstrip().startswith(b"<?xml")


def test_html_comparison_with_problems(tmp_path):
    out = tmp_path / "c.html"
    r = run_cli("-m", "reports", "html", fixture("run_a.json"), fixture("run_b.json"),
                fixture("errors.json"), fixture("truncated.json"), "-o", str(out), "--image", "png")
    assert r.returncode == 2           # the truncated file; the report is still written
    doc = out.read_text()
    _self_contained(doc)
    assert "<td>+10.0%</td>" in doc and 'class="fast"' in doc and 'class="slow"' in doc
    assert "NVIDIA H200" in doc and "≠ differs" in doc
    assert "truncated.json: not valid JSON" in doc
    assert "validation failed" in doc
    assert doc.count("data:image/png;base64,") == 5


def test_html_without_matplotlib(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def fake(name, *a, **k):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    doc = htmlreport.build([loader.load(fixture("run_a.json"))])
    assert "Plots left out: matplotlib is not installed." in doc
    assert "<td>bf16</td><td>460.0</td>" in doc
