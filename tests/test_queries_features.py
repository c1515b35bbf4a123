"""Named feature queries and the suite command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mmaprobe.cli import main
from queries.distinguish import QueryError
from queries.features import FEATURES, feature_pair, hypothesis, run_feature
from smtmodel.catalog import get_model
from smtmodel.vectors import read_vectors

FAST = ["exact-multiplication", "exact-addition-fp16", "rounding-final-result", "rounding-accumulator",
        "subnormal-inputs", "subnormal-outputs", "c-early-vs-late", "rz-vs-truncation", "ftz", "normalisation"]
SLOW = [n for n in FEATURES if n not in FAST]


def test_every_feature_builds_its_pair():
    assert len(FEATURES) >= 20
    for name, f in FEATURES.items():
        _f, a, b, k, cons = feature_pair(name)
        assert a.id != b.id and f.doc, name
        for m in (a, b):
            m.validate()


def test_table4_rows_present():
    rows = [n for n, f in FEATURES.items() if f.table4]
    assert len(rows) == 10


@pytest.mark.parametrize("name", FAST)
def test_fast_features_answer_as_the_seeds_expect(name):
    res = run_feature(name, solver="bitwuzla", timeout=60)
    assert res.status == FEATURES[name].expect, res.reason


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_slow_features_answer_as_the_seeds_expect(name):
    res = run_feature(name, timeout=300)
    assert res.status == FEATURES[name].expect, res.reason


def test_hypothesis_twin_semantics():
    base = get_model("volta-fp16-fp16")
    h = hypothesis(base, "round-products")
    # 1.5 * (1 + 2^-10) - 1.5 * 1: exactly 1.5 * 2^-10; with products rounded to fp16 first, 2^-9
    a = np.array([[0x3E00, 0x3E00]], dtype=np.uint64)
    b = np.array([[0x3C01, 0xBC00]], dtype=np.uint64)
    c = np.array([0], dtype=np.uint64)
    assert int(base.evaluate(a, b, c)[0]) == 0x1600
    assert int(h.evaluate(a, b, c)[0]) == 0x1800
    c = np.array([0], dtype=np.uint64)
    flush = hypothesis(base, "flush-outputs")
    a = np.array([[0x0400]], dtype=np.uint64)            # 2^-14 * 0.5 = 2^-15: subnormal in fp16
    b = np.array([[0x3800]], dtype=np.uint64)
    assert int(base.evaluate(a, b, c)[0]) == 0x0200
    assert int(flush.evaluate(a, b, c)[0]) == 0x0000
    with pytest.raises(QueryError):
        hypothesis(base, "nonsense")


def test_unknown_feature():
    with pytest.raises(QueryError, match="unknown feature"):
        feature_pair("no-such-feature")


def test_cli_features_and_feature(tmp_path, capsys):
    assert main(["features"]) == 0
    assert "carry3" in capsys.readouterr().out
    out = tmp_path / "f.jsonl"
    assert main(["feature", "rounding-final-result", "--solver", "bitwuzla", "-o", str(out)]) == 0
    vf = read_vectors(out)
    assert vf.header["models"] == ["volta-fp16-fp16", "volta-fp16-fp16:rho=RZ-FP16"]
    assert main(["feature", "nope"]) == 2


def test_cli_suite_writes_and_resumes(tmp_path, capsys):
    out = tmp_path / "gen"
    args = ["suite", "--models", "volta-fp16-fp32-carry2", "volta-fp16-fp32-carry3", "volta-fp16-fp32-carry4",
            "--solver", "bitwuzla", "--timeout", "60", "-o", str(out)]
    assert main(args) == 0
    index = json.loads((out / "index.json").read_text())["results"]
    assert len(index) == 3
    st = {k: v["status"] for k, v in index.items()}
    assert st["volta-fp16-fp32-carry3__vs__volta-fp16-fp32-carry4"] == "unsat"
    assert st["volta-fp16-fp32-carry2__vs__volta-fp16-fp32-carry3"] == "sat"
    files = list(out.rglob("*.jsonl"))
    assert len(files) == 2
    for f in files:
        read_vectors(f)
    capsys.readouterr()
    assert main(args) == 0      # a second run keeps the answers already found
    assert "kept from an earlier run" in capsys.readouterr().err
