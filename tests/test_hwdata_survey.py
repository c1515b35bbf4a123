"""Every survey capture committed under hwdata/survey/ is reproduced bit for bit by the catalog
model of its kernel on its GPU, read at the instruction's K (the captures are the expected
values: real hardware outputs); a NaN encoding the catalog does not reproduce would be named in
:data:`NAN_ENCODING` (reproduced up to the NaN's payload and sign, stated as open in the docs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from survey import recheck

FOLDERS = sorted(p.parent for p in (Path(__file__).resolve().parents[1] / "hwdata" / "survey").glob("*/journal.jsonl"))

NAN_ENCODING: dict = {}


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_catalog_reproduces_survey_capture(folder):
    res = recheck(folder)
    assert res
    for kernel, r in res.items():
        if not r["model"]:
            continue
        if (folder.name, kernel) in NAN_ENCODING:
            assert r["matches_nan_blind"] == r["total"] and r["matches"] < r["total"], (kernel, r)
        else:
            assert r["matches"] == r["total"], (kernel, r)


def test_dmma_nan_precedence_probes_reproduced():
    """The H100's answers to the 219 NaN-precedence probes (hwdata/survey/h100-sxm/probes, run through
    mma.sync m8n8k4 f64) are reproduced bit for bit by hopper-fp64-fp64, and none by the canonical
    NaN reading."""
    from smtmodel.catalog import get_model
    from smtmodel.vectors import read_vectors
    vf = read_vectors(Path(__file__).resolve().parents[1] / "hwdata" / "survey" / "h100-sxm" / "probes"
                      / "fp64_nan.obs.jsonl")
    a, b, c = vf.arrays()
    seen = [int(next(iter(case["observed"].values())), 16) for case in vf.cases]
    for backend in ("numpy", "native"):
        assert [int(x) for x in get_model("hopper-fp64-fp64").evaluate(a, b, c, backend=backend)] == seen
    canonical = get_model("hopper-fp64-fp64:specials=ieee").evaluate(a, b, c)
    assert sum(int(x) == y for x, y in zip(canonical, seen)) == 0


def test_nan_propagation_is_refused_outside_an_fma_chain():
    """specials=propagate is the FMA chain's rule: a block unit with it is refused where it is made."""
    from smtmodel.catalog import get_model
    from smtmodel.model import ModelError
    with pytest.raises(ModelError, match="specials=propagate"):
        get_model("hopper-fp16-fp32:specials=propagate")
