"""The plots' choices (issue 32) on committed results under reports/results/ (read-only): the GPU
in every title, one colour per dtype and backend in every chart, at most MAX_LINES lines a panel,
peak lines and the L2-resident sizes, size axes, noisy / throttled marks, xfbench paired with the
PyTorch peer."""

from reports_helpers import ROOT  # first: puts the repository root on sys.path
import os

import pytest

from reports import loader

pytest.importorskip("matplotlib")
from reports import plot  # noqa: E402

H100 = os.path.join(ROOT, "reports", "results", "h100")
GPU = "NVIDIA H100 80GB HBM3"


def _load(*parts, bmap=None):
    return loader.load(os.path.join(ROOT, "reports", "results", *parts),
                       backend_map={} if bmap is None else bmap, quiet=True)


@pytest.fixture(scope="module")
def suite_figures():
    figs = dict(plot.figures([_load("h100", "protocol", "default_suite.json")]))
    yield figs
    for f in figs.values():
        plot.close(f)


def _data_lines(ax):
    """The lines of cases (peak lines are dashed grey, labelled '... peak ...')."""
    return [l for l in ax.get_lines() if l.get_color() != plot.PEAK_COLOR]


def _colors(fig):
    """{line label: colour} over every panel of a figure."""
    out = {}
    for ax in fig.axes:
        for l in _data_lines(ax):
            assert out.setdefault(l.get_label(), l.get_color()) == l.get_color()
    return out


def test_gpu_in_every_title(suite_figures):
    assert set(suite_figures) == {"matmul_tflops", "bandwidth_vector", "bandwidth_memcpy",
                                  "nccl_busbw"}
    for name, fig in suite_figures.items():
        assert fig._suptitle.get_text().endswith(f"— {GPU}"), name


def test_one_colour_per_dtype_in_every_chart(suite_figures):
    matmul = _colors(suite_figures["matmul_tflops"])
    vector = _colors(suite_figures["bandwidth_vector"])
    shared = set(matmul) & set(vector)
    assert shared == {"fp32", "fp16", "bf16"}
    for dtype in shared:
        assert matmul[dtype] == vector[dtype] == plot.COLORS[dtype]
    # another file, other cases drawn first: the same colours (a mapping, not a cycle order)
    sweep = plot.matmul_figure([_load("h100", "matmul_sweep.json")])
    for dtype, c in _colors(sweep).items():
        assert c == plot.COLORS[dtype]
    plot.close(sweep)


def test_at_most_eight_lines_a_panel():
    # three runs of four NN dtypes: twelve lines, split over two panels of at most eight
    runs = [_load("h100", "matmul_xfbench_1.json"), _load("h100", "matmul_torch_1.json"),
            _load("h100", "matmul_xfbench_2.json")]
    fig = plot.matmul_figure(runs)
    counts = {ax.get_title(): len(_data_lines(ax)) for ax in fig.axes if ax.get_visible()}
    assert counts["NN (1/2)"] == 6 and counts["NN (2/2)"] == 6   # a dtype's runs stay together
    assert max(counts.values()) <= plot.MAX_LINES
    plot.close(fig)


def test_vector_hbm_peak_line_and_l2_shading(suite_figures):
    fig = plot.bandwidth_figure([_load("h100", "vector.json")], "Vector")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["scale", "copy", "triad", "read", "write"]
    for ax in panels:
        peak = [l for l in ax.get_lines() if l.get_label().startswith("HBM peak")]
        assert len(peak) == 1 and list(peak[0].get_ydata()) == [3352.3, 3352.3]
        shade = [p for p in ax.patches if p.get_label() == "fits in L2 (50 MiB)"]
        assert len(shade) == 1                      # gpu_l2_MB 52.4 in the context
        assert shade[0].get_x() + shade[0].get_width() == pytest.approx(52.4e6)
        assert ax.get_xscale() == "log"             # 128 KiB ... 12 GiB
        labels = [t.get_text() for t in ax.get_xticklabels()]
        assert "1M" in labels and "1G" in labels
    plot.close(fig)
    # the default suite's figure too
    ax = next(a for a in suite_figures["bandwidth_vector"].axes if a.get_title() == "scale")
    assert any(l.get_label() == "HBM peak 3352 GB/s" for l in ax.get_lines())


def test_l2_size_by_gpu_when_the_context_has_none():
    run = _load("h100", "vector.json")
    run.context = {k: v for k, v in run.context.items() if k != "gpu_l2_MB"}
    assert plot.l2_bytes([run]) == 50 * 2 ** 20
    run.context["gpu_name"] = "Some GPU"
    assert plot.l2_bytes([run]) is None


def test_pcie_and_nvlink_peaks():
    fig = plot.bandwidth_figure([_load("h100", "transfer_memcpy.json")], "Memcpy")
    peaks = {ax.get_title(): [l.get_label() for l in ax.get_lines() if "peak" in l.get_label()]
             for ax in fig.axes if ax.get_visible()}
    assert peaks == {"h2d": ["PCIe peak 63.0 GB/s"], "d2h": ["PCIe peak 63.0 GB/s"],
                     "d2d": ["HBM peak 3352 GB/s"]}   # d2d's GB/s counts read + write
    plot.close(fig)
    fig = plot.bandwidth_figure([_load("h200x4", "nccl.json")], "NCCL")
    assert fig._suptitle.get_text() == "NCCL bus bandwidth — NVIDIA H200"
    lines = [l.get_label() for ax in fig.axes for l in ax.get_lines()]
    assert "NVLink (18 links) 450.0 GB/s" in lines
    plot.close(fig)


def test_sizes_readable_and_linear_when_narrow(suite_figures):
    assert [plot.size_label(x) for x in (512, 4096, 1 << 20, 3 << 29, 1 << 30)] == [
        "512", "4K", "1M", "1.5G", "1G"]
    ax = suite_figures["matmul_tflops"].axes[0]      # 2048 ... 16384: less than a decade
    assert ax.get_xscale() == "linear"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2048", "4096", "8192", "16384"]


def test_noisy_and_throttled_points_marked(suite_figures):
    memcpy = [t.get_text() for ax in suite_figures["bandwidth_memcpy"].axes for t in ax.texts]
    assert memcpy.count("~") == 3                    # the three noisy PCIe copies
    matmul = [t.get_text() for ax in suite_figures["matmul_tflops"].axes for t in ax.texts]
    assert "†" in matmul
    note = [t.get_text() for t in suite_figures["matmul_tflops"].texts]
    assert any(n.startswith("~ noisy") and "† throttled" in n for n in note)


def test_trainstep_pairs_xfbench_with_the_peer_by_default():
    # as `plot` reads them by default (--match-backend none): torch-sdpa beside fused
    runs = [_load("h100", "train_step", "xf_headline.json"),
            _load("h100", "train_step", "torch_headline.json")]
    fig = plot.trainstep_figure(runs)
    assert fig._suptitle.get_text() == f"Training step (bf16/accum:1/ckpt:off/adamw:fused) — {GPU}"
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "bert-large/seq:128/batch:64", "bert-large/seq:512/batch:16", "gpt2-medium/seq:1024/batch:8"]
    bars = ax.patches
    assert [b.get_facecolor() for b in bars[:2]] != [bars[0].get_facecolor()] * 2
    colours = [plot.COLORS["fused"], plot.COLORS["torch-sdpa"]] * 3
    import matplotlib.colors as mc
    assert [mc.to_hex(b.get_facecolor()) for b in bars] == colours
    ys = [b.get_y() for b in bars]
    assert [round(b - a, 6) for a, b in zip(ys[::2], ys[1::2])] == [1.0] * 3   # side by side
    assert [round(b.get_width(), 1) for b in bars] == [1628.4, 622.5, 372.0, 148.0, 163.4, 55.3]
    texts = [t.get_text() for t in ax.texts]
    assert texts[:2] == [" 1628†", " 622.5~"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["xf_headline", "torch_headline"]
    plot.close(fig)
