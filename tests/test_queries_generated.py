"""Every expectation in generated_tests/ re-evaluated with the twin (the suite's output is data)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from smtmodel.catalog import get_model
from smtmodel.vectors import read_vectors

ROOT = Path(__file__).resolve().parent.parent / "generated_tests"
PIN = ROOT / "pin"
"""The survey's pin cases (several candidate models per file, and property witnesses): checked
by tests/test_survey_pin.py, not pairs."""
FILES = [p for p in sorted(ROOT.rglob("*.jsonl")) + sorted(ROOT.rglob("*.jsonl.gz")) if PIN not in p.parents]


@functools.cache
def _twin_outputs() -> dict:
    """(file, model id) -> the twin's outputs on that file's cases: each model read once on the
    files it appears in (:meth:`Model.evaluate_batches`; the files hold one or two cases each)."""
    by_model: dict = {}
    for path in FILES:
        vf = read_vectors(path)
        for mid in vf.header["models"]:
            by_model.setdefault(mid, []).append((path, (*vf.arrays(), *(vf.scales() or (None, None)))))
    out = {}
    for mid, files in by_model.items():
        for (path, _batch), d in zip(files, get_model(mid).evaluate_batches([f[1] for f in files])):
            out[(path, mid)] = d
    return out


@pytest.mark.skipif(not FILES, reason="no generated vector files")
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_generated_expectations_match_the_twin(path):
    vf = read_vectors(path)
    models = vf.header["models"]
    assert len(models) == 2
    outs = {}
    for mid in models:
        d = _twin_outputs()[(path, mid)]
        outs[mid] = d
        assert [vf.out_fmt.hex(int(x)) for x in d] == [case["expect"][mid] for case in vf.cases], mid
    # and the two models really differ on every case
    assert all(int(x) != int(y) for x, y in zip(*outs.values()))


def test_index_is_consistent():
    index = ROOT / "index.json"
    if not index.exists():
        pytest.skip("no suite index")
    results = json.loads(index.read_text())["results"]
    for name, e in results.items():
        assert e["status"] in ("sat", "unsat", "unknown", "error", "twin-disagreement"), name
        if e["status"] == "sat":
            assert (ROOT / e["file"]).exists(), name
