"""Every survey capture committed under hwdata/survey/ is reproduced bit for bit by the catalog
model of its kernel on its GPU (the captures are the expected values: real hardware outputs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from survey import recheck

FOLDERS = sorted(p.parent for p in (Path(__file__).resolve().parents[1] / "hwdata" / "survey").glob("*/journal.jsonl"))


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_catalog_reproduces_survey_capture(folder):
    res = recheck(folder)
    bad = {k: r for k, r in res.items() if r["model"] and r["matches"] != r["total"]}
    assert not bad, bad
