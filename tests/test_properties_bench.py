"""bench/properties.py's resume and escalation: which cells a run checks again.

The journal is written here by hand (the rows' answers are made up for the test), and the cells
checked are read back from the journal the run appends to. The checks themselves are cheap ones
(``permutation`` of a T-FDPA block reduces to false by rewriting in milliseconds; the twin search
refutes ``permutation-blocks`` of an FMA chain).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_properties", ROOT / "bench" / "properties.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(autouse=True)
def _no_proof_cache(monkeypatch):
    monkeypatch.setenv("MMAPROBE_PROOF_CACHE", "0")


def _row(model, prop, status, timeout):
    return {"model": model, "property": prop, "timeout": timeout, "twin_seconds": 1.0, "status": status,
            "k": 4, "solver": "" if status == "unknown" else "twin", "reason": "", "cached": "", "seconds": timeout, "cpu": timeout, "notes": []}


def _run(bench, tmp_path, rows, argv):
    j = tmp_path / "j.jsonl"
    j.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert bench.main(["--journal", str(j), "--resume"] + argv) == 0
    return [json.loads(x) for x in j.read_text().splitlines()[len(rows):]]


def test_escalation_checks_only_the_open_cells_at_the_longer_timeout(bench, tmp_path):
    """--rerun unknown with a longer --timeout: the unknown cell (recorded at 6 s) is checked
    again at 9 s, and the cell with no row at all; the refuted ones, recorded at 6 s, are not."""
    rows = [_row("volta-fp16-fp32", "permutation", "unknown", 6.0),
            _row("volta-fp16-fp32", "permutation-blocks", "refuted", 6.0),
            _row("cdna2-fp16-fp32-fmachain", "permutation-blocks", "refuted", 6.0)]
    new = _run(bench, tmp_path, rows, ["--props", "permutation,permutation-blocks", "--models",
                                       "volta-fp16-fp32,cdna2-fp16-fp32-fmachain", "--rerun", "unknown",
                                       "--timeout", "9"])
    got = {(r["model"], r["property"]): r for r in new}
    assert set(got) == {("volta-fp16-fp32", "permutation"), ("cdna2-fp16-fp32-fmachain", "permutation")}
    assert got[("volta-fp16-fp32", "permutation")]["status"] == "proved"
    assert got[("volta-fp16-fp32", "permutation")]["solver"] == "rewriting"
    assert all(r["timeout"] == 9.0 for r in new)


def test_resume_without_rerun_keeps_rows_of_its_own_timeout_only(bench, tmp_path):
    """--resume alone at another timeout does not take the 6 s answers as its own: every cell is
    checked at the new timeout (a run at one timeout is complete on its own)."""
    rows = [_row("cdna2-fp16-fp32-fmachain", "permutation-blocks", "unknown", 6.0)]
    new = _run(bench, tmp_path, rows, ["--props", "permutation-blocks", "--models", "cdna2-fp16-fp32-fmachain",
                                       "--timeout", "3"])
    assert [(r["property"], r["status"], r["timeout"]) for r in new] == [("permutation-blocks", "refuted", 3.0)]


def test_max_k_and_limit_select_cells(bench, tmp_path):
    """--max-k leaves out the cells whose k is above it (volta's K = 4 > 2); --limit stops after N
    checks; --order shared takes the parameter set of most models first (turing-fp16-fp32 is
    shared with ampere and ada, volta-fp16-fp32 is alone)."""
    rows = [_row(m, "permutation", "unknown", 6.0) for m in ("volta-fp16-fp32", "turing-fp16-fp32")]
    args = ["--props", "permutation", "--models", "volta-fp16-fp32,turing-fp16-fp32,ampere-fp16-fp32",
            "--rerun", "unknown", "--timeout", "9"]
    assert _run(bench, tmp_path, rows, args + ["--max-k", "2"]) == []
    new = _run(bench, tmp_path, rows, args + ["--order", "shared", "--limit", "1"])
    assert [r["model"] for r in new] == ["turing-fp16-fp32"]


def test_an_open_cell_names_every_budget_it_was_tried_at(tmp_path):
    """The table's unknown cell lists the budgets of every check of that cell in the journal (the
    last answer is the cell's), so a cell left open says what was tried."""
    from queries.properties.catalog import cell, read_journal
    rows = [_row("volta-fp16-fp32", "scaling", "unknown", 6.0), _row("volta-fp16-fp32", "scaling", "unknown", 120.0),
            _row("volta-fp16-fp32", "permutation", "proved", 6.0)]
    rows.append(_row("volta-fp16-fp32", "scaling", "unknown", 25.0) | {"twin_seconds": 20.0})
    j = tmp_path / "j.jsonl"
    j.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = read_journal(j)
    assert cell(got[("volta-fp16-fp32", "scaling")]) == "unknown (25.0 s; tried at 6 s, 120 s, 25 s (twin 20 s))"
    assert cell(got[("volta-fp16-fp32", "permutation")]).startswith("**proved**")
    assert cell(read_journal(j, timeout=6.0)[("volta-fp16-fp32", "scaling")]) == "unknown (6.0 s)"


def test_a_refutation_of_the_restricted_question_says_so():
    """A cell refuted on the restricted question (the solver's label names the zero products)
    reads "on 2 products"; a twin refutation reads as before."""
    from queries.properties.catalog import cell
    row = _row("volta-fp16-fp32", "monotonicity", "refuted", 30.0)
    assert cell(row | {"solver": "z3 (portfolio, products 2..3 zero)", "seconds": 7.71}) == \
        "refuted (z3 on 2 products, 7.7 s)"
    assert cell(row | {"solver": "twin", "seconds": 0.4}) == "refuted (twin, 0.4 s)"
