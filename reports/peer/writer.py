"""What the peer writes: Google Benchmark 1.7.1 JSON entries (one per repetition, then the
aggregates, or an error entry), the run's context (Google Benchmark's keys, the protocol's, torch's
and the GPU's), the file itself, and each case's line on stdout."""

import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys

from .builders.fp8 import NotInstalled
from .flops import counters
from .siblings import nccl

TIME_UNIT = "ms"


def gb_entries(spec, reps, family_index, instance_index, mem_bytes=None):
    """Google Benchmark 1.7.1 entries: one per repetition, then mean/median/stddev/cv aggregates
    (what --benchmark_repetitions=N writes)."""
    scale = 1e3  # seconds -> ms
    base = {"name": spec.gb_name, "family_index": family_index,
            "per_family_instance_index": instance_index, "run_name": spec.gb_name}
    out = []
    for i, r in enumerate(reps):
        e = dict(base, run_type="iteration", repetitions=len(reps), repetition_index=i, threads=1,
                 iterations=r.iterations, real_time=r.seconds * scale, cpu_time=r.seconds * scale,
                 time_unit=TIME_UNIT)
        e.update(counters(spec, r.seconds, mem_bytes))
        e.update(r.extra)
        if r.label:
            e["label"] = r.label
        out.append(e)
    if len(reps) > 1:
        iterations = list(out)
        # counters every repetition has (telemetry may be missing from one)
        keys = ["real_time", "cpu_time"] + [k for k in iterations[0] if k not in base and k not in (
            "run_type", "repetitions", "repetition_index", "threads", "iterations", "real_time",
            "cpu_time", "time_unit", "label") and all(k in e for e in iterations)]
        for agg in ("mean", "median", "stddev", "cv"):
            a = dict(base, name=f"{spec.gb_name}_{agg}", run_type="aggregate",
                     repetitions=len(reps), threads=1, aggregate_name=agg,
                     aggregate_unit="percentage" if agg == "cv" else "time",
                     iterations=len(reps))
            for key in keys:
                vals = [e[key] for e in iterations]
                mean = statistics.fmean(vals)
                sd = statistics.stdev(vals)
                a[key] = {"mean": mean, "median": statistics.median(vals), "stddev": sd,
                          "cv": sd / mean if mean else 0.0}[agg]
            a["time_unit"] = TIME_UNIT
            out.append(a)
    return out


def error_entry(spec, message, family_index, instance_index):
    return {"name": spec.gb_name, "family_index": family_index,
            "per_family_instance_index": instance_index, "run_name": spec.gb_name,
            "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
            "iterations": 0, "real_time": 0.0, "cpu_time": 0.0, "time_unit": TIME_UNIT,
            "error_occurred": True, "error_message": message}


def error_message(e):
    """(the error entry's message, whether the case failed): a case this machine cannot run is
    `unsupported: why`, as xfbench writes it, and no failure (the reports show it as n/a); a
    package the case needs and lacks (torchao for fp8) says so as it is, a failure."""
    first = str(e).splitlines()[0] if str(e) else ""
    if isinstance(e, nccl.Unsupported):
        return f"unsupported: {first}", False
    if isinstance(e, NotInstalled):
        return first, True
    return f"{type(e).__name__}: {first}".strip(), True


def base_context(mode="hot", options=None, window_s=None):
    """Google Benchmark's own context keys, as far as Python can tell them, and the timing protocol
    (the same keys as xfbench's context)."""
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(), "executable": " ".join([sys.executable] + sys.argv),
        "num_cpus": os.cpu_count() or 0, "mhz_per_cpu": 0, "cpu_scaling_enabled": False,
        "caches": [], "load_avg": load, "library_build_type": "release",
        "xfbench_runner": "pytorch", "xfbench_mode": mode, "python_version": platform.python_version(),
        **(protocol_context(options, window_s) if mode == "steady" else {}),
    }


def protocol_context(o, window_s):
    return {"protocol_min_time": f"{o.min_time:g}", "protocol_max_noise_pct": f"{100 * o.max_noise:g}",
            "protocol_timeout": f"{o.timeout:g}", "protocol_min_warmup": f"{o.min_warmup:g}",
            "protocol_capped_warmup": f"{o.capped_warmup:g}",
            "protocol_window_ms": f"{1e3 * window_s:g}"}


def fmt_cudnn(v):
    """torch gives cuDNN 9.1.2 as 90102."""
    if not v:
        return ""
    return f"{v // 10000}.{v % 10000 // 100}.{v % 100}" if v >= 90000 else f"{v // 1000}.{v % 1000 // 100}.{v % 100}"


def torch_context(torch, device):
    ctx = {"torch_version": torch.__version__}
    try:
        import transformers
        ctx["transformers_version"] = transformers.__version__
    except ImportError:
        pass
    p = torch.cuda.get_device_properties(device)
    ctx.update(gpu_name=p.name, gpu_cc=f"{p.major}.{p.minor}", gpu_sm_count=str(p.multi_processor_count),
               gpu_mem_GB=f"{p.total_memory / 1e9:.1f}", cuda_runtime=str(torch.version.cuda or ""),
               cudnn_version=fmt_cudnn(torch.backends.cudnn.version()))
    for attr, key in (("memory_bus_width", "gpu_bus_width"), ("clock_rate", "gpu_max_sm_MHz")):
        v = getattr(p, attr, None)
        if v:
            ctx[key] = str(v // 1000 if attr == "clock_rate" else v)
    try:
        ctx["nccl_version"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception:  # NCCL is optional in torch builds
        pass
    try:  # torch does not expose the driver version; nvidia-smi does where it exists
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader",
                              f"--id={device}"], capture_output=True, text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            ctx["driver_version"] = out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return ctx


def write_json(path, context, entries):
    # Written after every case (to a temp file, then renamed) so a crash leaves a valid file.
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"context": context, "benchmarks": entries}, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def summary_line(spec, reps):
    """The case's line on stdout: median time and rate; steady: the worst ci, cv and drift, median
    power and SM clock over the repetitions, and their labels."""
    med = statistics.median(r.seconds for r in reps)
    name, value = next(iter(counters(spec, med).items()))
    line = f"{spec.gb_name:<60} {med * 1e3:10.4g} ms  {name}={value:.1f}"

    def values(key):
        return [r.extra[key] for r in reps if key in r.extra]
    if values("ci_pct"):
        line += (f"  ci ±{max(values('ci_pct')):.2f}% cv {max(values('cv_pct')):.2f}%"
                 f" drift {max(values('drift_pct')):.2f}%")
    if values("power_W"):
        line += f"  {statistics.median(values('power_W')):.0f} W"
    if values("sm_MHz"):
        line += f"  {statistics.median(values('sm_MHz')):.0f} MHz"
    labels = list(dict.fromkeys(r.label for r in reps if r.label))
    return line + "".join(f"  [{lab}]" for lab in labels)
