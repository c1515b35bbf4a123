"""Every expectation in generated_tests/ re-evaluated with the twin (the suite's output is data)."""

from __future__ import annotations

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


@pytest.mark.skipif(not FILES, reason="no generated vector files")
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_generated_expectations_match_the_twin(path):
    vf = read_vectors(path)
    a, b, c = vf.arrays()
    sc = vf.scales()
    models = vf.header["models"]
    assert len(models) == 2
    outs = {}
    for mid in models:
        d = get_model(mid).evaluate(a, b, c, *(sc or (None, None)))
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
