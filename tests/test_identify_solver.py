"""identify's solver stage (queries.identify.loop): a class that neither the probes nor the twin
search split is asked of the solver (queries.distinguish, within --solver-budget), its inputs are
launched, pairs it proves alike end "proved alike", a machine without a solver skips the stage and
says so, and a capture that cannot answer what would split a class ends "narrowed" with each pair
shown alike on every captured answer and given its deciding input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import queries.identify.split as split
from mmaprobe.cli import main
from queries.identify import Cases, Settings, TwinDevice, identify
from queries.identify.report import entry
from smtmodel.catalog import get_model
from smtmodel.catalog.spaces import build_space
from smtmodel.vectors import read_vectors

# Hopper's fp16 -> fp32 T-FDPA (L = 16, F = 25, RZ) with the carry-out bits varied: carry 2, 3, 4
# and unbounded differ only where >= 4 aligned products of the largest magnitude overflow, which a
# small random pool rarely builds.
CARRY = {"families": [{"family": "t-fdpa", "params": {
    "L": [16], "F": [25], "rho": ["RZ-FP32"], "carry": [2, 3, 4, None], "normalize": [False], "zero_align": [-133],
    "flush_inputs": [None], "c_entry": ["align"], "specials": ["nvidia"]}}]}


def _no_twin_pool(space, reps, k, seed, batches=10):
    return Cases.empty(k)


def _weak(**kw) -> Settings:
    """A pool of 64 random probes and no structured kinds: with the twin pool stubbed out it stands
    for a class that the probes and the twin search cannot split."""
    kw.setdefault("verify", 1000)
    return Settings(k=16, pool_structured=0, pool_random=64, solver_timeout=20, **kw)


def test_solver_splits_what_the_twin_search_cannot(monkeypatch):
    """The hidden unit is off the catalog (Hopper with 3 carry bits; the catalog has none with 3).
    The first launch leaves the 4 carry readings whole and the twin pool is empty; the solver stage
    finds an input per pair, launched as the second launch; the unit ends identified within the 6
    launches, as the hidden point."""
    monkeypatch.setattr(split, "twin_pool", _no_twin_pool)
    hidden = "hopper-fp16-fp32:carry=3"
    space = build_space("fp16", "fp32", CARRY)
    out = identify(space, TwinDevice(hidden), _weak())
    assert [r[0] for r in out.rounds] == ["stream", "solver"], out.rounds
    assert out.status == "identified" and len(out.live) == 1 and out.launches <= 6
    assert "carry=3" in out.spec(out.winner)
    assert {r["status"] for r in out.solver_log} == {"sat"}
    # the point named computes as the hidden twin (an independent evaluation on fresh random cases)
    g = np.random.default_rng(1)
    a, b = (g.integers(0, 1 << 16, (500, 16), dtype=np.uint64) & np.uint64(0x7bff) for _ in range(2))
    c = g.integers(0, 1 << 31, 500, dtype=np.uint64)
    assert (get_model(out.spec(out.winner)).evaluate(a, b, c) == get_model(hidden).evaluate(a, b, c)).all()


def test_pair_proved_alike_ends_proved_alike(monkeypatch):
    """Carry 5 and unbounded compute alike at k = 16 (16 products of at most 2^32 cannot fill 5
    carry bits above the 2^F alignment window); with identify's own traced-terms grouping turned
    off, the pair reaches the solver stage, and queries.distinguish (what `mmaprobe equivalent`
    runs) answers unsat: the run ends identified, "proved alike", with no launch spent on the
    pair."""
    real = split.Behaviours.__init__

    def untraced(self, space, k, cap=split.TRACE_CAP):
        real(self, space, k, cap=0)
    monkeypatch.setattr(split.Behaviours, "__init__", untraced)
    sp = json.loads(json.dumps(CARRY))
    sp["families"][0]["params"]["carry"] = [5, None]
    space = build_space("fp16", "fp32", sp)
    out = identify(space, TwinDevice("hopper-fp16-fp32"), _weak(verify=500))
    assert out.status == "identified" and len(out.live) == 2, (out.status, out.ending)
    assert out.ending == "proved alike" and len(out.behaviours) == 1
    assert [r["status"] for r in out.solver_log] == ["unsat"]
    assert out.launches == 1                       # the design launch only
    obj = entry(out, "x", "twin", _weak())
    assert obj["ending"] == "proved alike"


def test_no_solver_skips_the_stage_and_says_so(monkeypatch, tmp_path, capsys):
    """A machine without z3, cvc5 or bitwuzla (the GPU machine): the stage is skipped, the run ends
    narrowed and names why; nothing is asked."""
    import queries.identify.loop as loop
    monkeypatch.setattr(split, "twin_pool", _no_twin_pool)
    monkeypatch.setattr(loop._solve, "available_solvers", lambda: ())
    space = build_space("fp16", "fp32", CARRY)
    out = identify(space, TwinDevice("hopper-fp16-fp32:carry=3"), _weak())
    assert out.status == "narrowed" and out.ending == "no solver" and not out.solver_log
    assert "no SMT solver" in out.class_status


def test_launches_spent_ends_narrowed_with_the_deciding_inputs(monkeypatch):
    """The solver finds the inputs but --max-launches 1 is spent on the design: narrowed, "launches
    spent", each pair with the input that would decide it (both points' outputs differ on it)."""
    monkeypatch.setattr(split, "twin_pool", _no_twin_pool)
    space = build_space("fp16", "fp32", CARRY)
    out = identify(space, TwinDevice("hopper-fp16-fp32:carry=3"), _weak(max_launches=1))
    assert out.status == "narrowed" and out.ending == "launches" and out.launches == 1
    assert out.pairs and all(p["status"] == "deciding input" for p in out.pairs)
    for p in out.pairs:
        e = p["case"]["expect"]
        assert e[p["a"]] != e[p["b"]] and p["same"] == p["answers"] == 64


H100 = Path(__file__).resolve().parent.parent / "hwdata" / "survey" / "h100-sxm"


@pytest.mark.slow
def test_h100_tf32_capture_ends_identified_or_undecidable(tmp_path, capsys):
    """The committed H100 survey's mma_m16n8k8_tf32_f32 captures (exported as the survey does) on a
    file device: the run ends identified, or narrowed because the capture cannot answer what would
    split the rest; then each pair left gives both points the same output on every captured answer
    (counted here again from the file, by the twin) and has a deciding input on which they differ."""
    survey = pytest.importorskip("survey")
    cap = tmp_path / "tf32.jsonl"
    survey.export(str(H100), "mma_m16n8k8_tf32_f32", str(cap))
    o = tmp_path / "id.json"
    rc = main(["identify", "--device", f"file:{cap}", "--solver-budget", "0", "--verify", "0", "-o", str(o),
               "--journal", str(tmp_path / "j.jsonl"), "--quiet"])
    text = capsys.readouterr().out
    assert rc == 0, text
    obj = json.loads(o.read_text())
    if obj["status"] == "identified":
        return
    assert obj["ending"] == "captured" and "undecidable by the captured data" in text
    vf = read_vectors(cap)
    a, b, c = vf.arrays()
    for p in obj["pairs"]:
        da, db = get_model(p["a"]).evaluate(a, b, c), get_model(p["b"]).evaluate(a, b, c)
        assert (da == db).all() and p["same"] == len(vf.cases)
        if "case" not in p:           # e.g. TF32's low container bits: no captured input has them set
            assert p["status"] in ("no deciding input", "proved alike")
            continue
        e = p["case"]["expect"]
        assert e[p["a"]] != e[p["b"]]
    deciding = read_vectors(o.with_suffix(".deciding.jsonl"))
    assert len(deciding.cases) == sum(1 for p in obj["pairs"] if p.get("case"))
