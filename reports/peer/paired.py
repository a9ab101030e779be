"""--paired: torch and xfbench alternating on each case (torch, xfbench, xfbench, torch, ...; xfbench
as a subprocess per run, its algorithm search included), so that both meet the same GPU state; the
median of the per-pair ratios and their range. The fairest comparison where both sides run the
same kernels and the clocks drift. torch is handed in; `run_xfbench` can be replaced in tests."""

import json
import os
import re
import statistics
import subprocess
import tempfile


def pair_order(p):
    """The sides of pair p in the order they run: each side first in every other pair."""
    return ("torch", "xfbench") if p % 2 == 0 else ("xfbench", "torch")


def run_xfbench(xfbench, name, extra_args):
    """One run of xfbench on case `name` alone: (TFLOPS, label, telemetry) of its result."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        subprocess.run([xfbench, f"--benchmark_filter=^{re.escape(name)}/", f"--benchmark_out={path}",
                        "--benchmark_out_format=json", *extra_args], check=True, capture_output=True)
        with open(path) as f:
            runs = [b for b in json.load(f)["benchmarks"]
                    if "TFLOPS" in b and not b.get("error_occurred")]
    finally:
        os.unlink(path)
    if not runs:
        raise RuntimeError(f"xfbench gave no TFLOPS for {name}")
    r = runs[0]
    return r["TFLOPS"], r.get("label", ""), {k: r[k] for k in ("sm_MHz", "temp_C", "power_W") if k in r}


def summary(name, torch_tflops, xfbench_tflops):
    """The case's line and record: both sides' TFLOPS and the per-pair ratios xfbench / torch."""
    ratios = [x / t for x, t in zip(xfbench_tflops, torch_tflops)]
    line = (f"{name:60s} {statistics.median(torch_tflops):8.1f} "
            f"{statistics.median(xfbench_tflops):8.1f} {statistics.median(ratios):6.3f} "
            f"{min(ratios):6.3f} {max(ratios):6.3f}")
    return line, {"name": name, "torch": torch_tflops, "xfbench": xfbench_tflops, "ratios": ratios}


def run_paired(torch_tflops_of, specs, xfbench, extra_args, pairs, run=run_xfbench, out=print):
    """Every spec `pairs` times each way; torch_tflops_of(spec) times the torch side once.
    Returns the records (summary's) with xfbench's labels and telemetry."""
    out(f"{'case':60s} {'torch':>8s} {'xfbench':>8s} {'ratio':>6s} {'min':>6s} {'max':>6s}")
    results = []
    for spec in specs:
        sides, labels, telemetry = {"torch": [], "xfbench": []}, [], []
        for p in range(pairs):
            for side in pair_order(p):
                if side == "torch":
                    sides["torch"].append(torch_tflops_of(spec))
                else:
                    tflops, label, tel = run(xfbench, spec.name, extra_args)
                    sides["xfbench"].append(tflops)
                    labels.append(label)
                    telemetry.append(tel)
        line, record = summary(spec.name, sides["torch"], sides["xfbench"])
        record.update(xfbench_labels=labels, xfbench_telemetry=telemetry)
        out(line)
        results.append(record)
    at_or_above = sum(statistics.median(r["ratios"]) >= 1 for r in results)
    out(f"{at_or_above} of {len(results)} cases with a median paired ratio >= 1")
    return results
