"""Solver queries over schemes (queries/schemes/witness.py): seed 002 Property 5 witnesses, the twin
re-check of every solver answer, worst-case bisection, the CLI.

Expected values: the witness property itself is re-checked with exact Python Fractions on the
twin's outputs (independent of the core's fixed-point error terms); Table 5's exact value is
recomputed with Fractions in test_schemes_core.py.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

import queries.schemes as qs
from queries.schemes import InputRange, TwinDisagreement, witness, worst


def _check_witness(res):
    assert res.status == "sat"
    x, y = res.evaluations
    assert abs(Fraction(x["error"])) > abs(Fraction(y["error"]))
    # inputs respect the seed 002 range: exponents in [-15, 14] or zero
    for n, h in res.inputs.items():
        v = abs(qs.f32(int(h, 16)))
        assert v == 0 or Fraction(2) ** -15 <= v < Fraction(2) ** 15, (n, h)


def test_property5_seed002_twin_first():
    """Seed 002 Property 5 under its encoding (RTZ conversions, Volta accumulator of seed 002):
    O-Y worse than Markidis on some input -- twin search, confirmed by z3 with the inputs fixed."""
    res = witness("oy-seed002", "markidis-seed002", 4, twin_first=True)
    _check_witness(res)


@pytest.mark.parametrize("mid", ["volta-fp16-fp32", "ampere-fp16-fp32", "hopper-fp16-fp32"])
def test_property5_library_twin_first(mid):
    """The same question for the library-faithful O-Y (tcec) vs Markidis on the catalog models."""
    res = witness("oy-fp16", "markidis", 4, mid, mid, twin_first=True)
    _check_witness(res)


def test_solver_answer_rechecked(monkeypatch):
    """A solver 'witness' the twin does not confirm raises TwinDisagreement (loudly)."""
    from smtmodel.solve import ENGINES, Sat

    def fake_check(self, terms, variables, timeout):
        return Sat({n: 0 for n in variables})     # all zeros: both errors are 0
    for eng in ENGINES.values():
        monkeypatch.setattr(eng, "check", fake_check)
    with pytest.raises(TwinDisagreement):
        witness("oy-fp16", "markidis", 4, "volta-fp16-fp32", "volta-fp16-fp32")


def test_twin_search_respects_range():
    vals = qs.random_inputs(4, InputRange(mant_bits=10, nonneg=True), 500, seed=1)
    for n, arr in vals.items():
        for bits in arr[:50]:
            bits = int(bits)
            assert bits & 0x1FFF == 0 and bits >> 31 == 0
            v = qs.f32(bits)
            assert v == 0 or Fraction(2) ** -15 <= v < Fraction(2) ** 15


@pytest.mark.slow
def test_property5_seed002_pure_solver():
    """Pure solver query (no twin help) under seed 002's encoding and range; seed 002 reports cvc5
    finding one in under 5 minutes (Bitwuzla here: ~30 s)."""
    res = witness("oy-seed002", "markidis-seed002", 4, solver="bitwuzla", timeout=300,
                  stages=(InputRange(mant_bits=10),))
    _check_witness(res)


@pytest.mark.slow
@pytest.mark.parametrize("mid", ["volta-fp16-fp32", "ampere-fp16-fp32", "hopper-fp16-fp32"])
def test_property5_library_pure_solver(mid):
    res = witness("oy-fp16", "markidis", 4, mid, mid, solver="bitwuzla", timeout=300,
                  stages=(InputRange(mant_bits=10),))
    _check_witness(res)


@pytest.mark.slow
def test_worst_fp16_baseline():
    """Bisection brackets the worst error: the witness measures >= lower, and lower < upper."""
    r = worst("fp16", 4, "volta-fp16-fp32", InputRange(), timeout=120, metric="ulp", steps=3, budget=400)
    assert r.witness is not None and r.lower > 0
    if r.upper is not None:
        assert r.lower < r.upper


def test_cli_scheme_smoke(capsys, tmp_path):
    from mmaprobe.cli import main
    assert main(["scheme", "list"]) == 0
    assert "oy-fp16" in capsys.readouterr().out
    assert main(["scheme", "table5", "-o", str(tmp_path / "t5.json")]) == 0
    out = capsys.readouterr().out
    assert "0x38824a52" in out
    assert main(["scheme", "stats", "oy-fp16", "--model", "volta-fp16-fp32", "--k", "16", "--m", "4", "--n", "4"]) == 0
    assert "mean ulp" in capsys.readouterr().out
    assert main(["scheme", "compare", "oy-fp16", "markidis", "--model", "volta-fp16-fp32",
                 "-o", str(tmp_path / "w.json")]) == 0
    assert "WITNESS" in capsys.readouterr().out
    assert main(["scheme", "compare", "oy-fp16", "markidis", "--model", "turing-fp16-fp16"]) == 2
