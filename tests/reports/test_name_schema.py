"""Case names read by reports/name_schema.txt, the spec xfbench's own tests check every listed
name against (tests/harness/test_case_list.cpp): both sides on the same file."""
import os

from reports import loader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_committed_case_name_has_a_shape():
    with open(os.path.join(ROOT, "tests", "harness", "all_cases.txt")) as f:
        names = [line.strip() for line in f if line.strip()]
    assert len(names) > 1000
    bad = [n for n in names if loader.name_axes(n) is None]
    assert not bad, bad[:10]


def test_axes_by_name():
    a = loader.name_axes("TrainStep/fused/gpt2-medium/fp8/recipe:delayed/seq:1024/batch:8/accum:1/"
                         "ckpt:off/adamw:fused/dropout:0")
    assert a == {"backend": "fused", "model": "gpt2-medium", "precision": "fp8",
                 "recipe": "delayed", "seq": "1024", "batch": "8", "accum": "1", "ckpt": "off",
                 "adamw": "fused", "dropout": "0"}
    a = loader.name_axes("TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/"
                         "adamw:fused/tp:2/gpus:2/p2p:on")
    assert a["tp"] == "2" and a["gpus"] == "2" and "parallel" not in a
    a = loader.name_axes("TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/"
                         "adamw:fused/zero2/gpus:2/p2p:off")
    assert a["parallel"] == "zero2"
    assert loader.name_axes("BertLayer/part:ffn/fp16/fwd/seq:128/batch:64")["part"] == "ffn"
    assert loader.name_axes("P2P/latency/peer/ce/src:0/dst:1")["mode"] == "latency"
    assert loader.name_axes("P2P/uni/peer/ce/src:0/dst:1/bytes:8")["mode"] == "uni"
    assert loader.name_axes("Matmul/sweep/bf16/NT/m:256/n:256/k:256")["kind"] == "sweep"
    assert loader.name_axes("Burn/cpu/seconds:60/mem:10") == {"dtype": "cpu", "seconds": "60",
                                                              "mem": "10"}
    assert loader.name_axes("GPT2Block/fused/bf16/fwd/seq:2048/batch:8/hidden:4096/heads:32/"
                            "inner:16384")["inner"] == "16384"


def test_what_no_shape_takes():
    shapes = loader.parse_name_schema("# c\nFam backend [recipe:] seq: [hidden: heads:]\n")
    assert loader.name_axes("Fam/fused/seq:1/hidden:2/heads:3", shapes) == {
        "backend": "fused", "seq": "1", "hidden": "2", "heads": "3"}
    for bad in ("Fam/fused/seq:1/hidden:2", "Fam/seq:1", "Fam/fused/seq:1/x", "Other/fused/seq:1",
                "Fam/fused/recipe:a/recipe:b/seq:1"):
        assert loader.name_axes(bad, shapes) is None, bad


def test_cases_carry_their_axes(tmp_path):
    case = loader.Case("LlamaBlock/fused/fp8/recipe:current/fwdbwd/seq:4096/batch:2",
                       "LlamaBlock/fused/fp8/recipe:current/fwdbwd/seq:4096/batch:2/manual_time")
    assert case.axes["backend"] == "fused" and case.axes["recipe"] == "current"
    assert case.axes["pass"] == "fwdbwd"
    assert loader.Case("Nothing/like/this", "Nothing/like/this").axes == {}
