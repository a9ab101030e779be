"""The peer's multi-GPU TrainStep (reports/peer_parallel.py through peer_torch.py) without torch:
the names are xfbench's (tests/train_step/test_parallel_plan.cpp lists the same ones) once
torch-sdpa maps to fused, the counters count every GPU's samples, and one process or torchrun's
environment decides what runs."""

from reports_helpers import ROOT, run_cli  # first: puts the repository root on sys.path
import importlib.util
import os
import subprocess
import sys

from reports import loader

SCRIPT = os.path.join(ROOT, "reports", "peer_torch.py")
spec = importlib.util.spec_from_file_location("peer_torch_parallel", SCRIPT)
peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer)


def parallel_specs(gpus):
    return [s for s in peer.default_specs(["TrainStep"], gpus=gpus) if "parallel" in s.kw]


def test_names_are_xfbench_multi_gpu_names():
    assert parallel_specs(0) == []
    mapped = {loader.map_backend(loader.strip_name(s.gb_name), loader.DEFAULT_BACKEND_MAP)
              for s in parallel_specs(2)}
    assert mapped == {
        "TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/dp/gpus:2/p2p:on",
        "TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/zero2/gpus:2/"
        "p2p:on",
        "TrainStep/fused/gpt2-large/bf16/seq:1024/batch:4/accum:1/ckpt:off/adamw:fused/dp/gpus:2/p2p:on",
        "TrainStep/fused/gpt2-large/bf16/seq:1024/batch:4/accum:1/ckpt:off/adamw:fused/zero2/gpus:2/"
        "p2p:on"}
    assert peer.parallel.parallel_name("X", "dp", 8, False) == "X/dp/gpus:8/p2p:off"


def test_p2p_setting_comes_from_the_environment():
    assert peer.parallel.p2p_disabled({"NCCL_P2P_DISABLE": "1"})
    assert not peer.parallel.p2p_disabled({"NCCL_P2P_DISABLE": "0"})
    assert not peer.parallel.p2p_disabled({})
    env = dict(os.environ, NCCL_P2P_DISABLE="1")
    r = subprocess.run([sys.executable, SCRIPT, "--list", "--families", "TrainStep", "--gpus", "2",
                        "--filter", "/dp/"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [
        "TrainStep/torch-sdpa/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/dp/gpus:2/"
        "p2p:off/manual_time",
        "TrainStep/torch-sdpa/gpt2-large/bf16/seq:1024/batch:4/accum:1/ckpt:off/adamw:fused/dp/gpus:2/"
        "p2p:off/manual_time"]


def test_counters_count_all_gpus_samples_and_per_gpu_tflops():
    s = [x for x in parallel_specs(4) if x.kw["model"] == "bert-large"][0]
    c = peer.counters(s, 0.25)
    assert c["samples/s"] == 64 * 4 / 0.25
    assert c["tokens/s"] == 64 * 4 * 128 / 0.25
    assert abs(c["TFLOPS"] - peer.train_flops_per_sample("bert-large", 128) * 64 / 0.25 / 1e12) < 1e-9


def test_one_process_or_torchrun_ranks():
    one = peer.parallel.Dist({})
    assert not one.active and one.root
    assert one.decide(True) is True and one.share(7) == 7 and one.max(3.5) == 3.5
    two = peer.parallel.Dist({"WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1"})
    assert two.active and not two.root and two.local_rank == 1


def test_cli_gpus_option():
    r = run_cli(SCRIPT, "--list", "--families", "TrainStep", "--gpus", "2", "--filter", "zero2")
    assert r.returncode == 0 and len(r.stdout.split()) == 2
    assert all("/zero2/gpus:2/" in n for n in r.stdout.split())
    r = run_cli(SCRIPT, "--list", "--families", "TrainStep", "--gpus", "-1")
    assert r.returncode == 2 and "--gpus must be >= 0" in r.stderr
