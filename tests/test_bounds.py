"""Seed 000 Table 9's error bound (queries/bounds.py).

Expected values: the bound itself is seed 000 §6.1 / Table 9 ((L+1) 2^(e_max-F) for the fused
summation, 0.5 ulp for RNE and 1 ulp for RZ outputs). Refutation witnesses are re-checked with
exact Fractions and an independent e_max computation (bounds.recheck).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from queries.bounds import lemma_table, prove_bound, prove_lemmas, tfdpa_models


@pytest.mark.parametrize("mid", ["volta-fp16-fp32", "volta-fp16-fp16", "hopper-fp8e4m3-fp32", "ampere-tf32-fp32"])
def test_table9_lemmas(mid, proof_log):
    res = prove_lemmas(mid, "z3", 120)
    for r in res:
        proof_log.record(f"table9 {mid} {r.name}", r.solver, r.status, r.seconds)
    assert all(r.status == "unsat" for r in res if not r.name.startswith("A0")), res


@pytest.mark.parametrize("mid,lossless_c", [("volta-fp16-fp32", True), ("hopper-fp8e4m3-fp32", False)])
def test_table9_tight_constant(mid, lossless_c):
    """Lemma A0 (the summand that sets e_max loses nothing) lowers alpha from L+1 to L. It holds
    for products whose fraction bits fit F (fp16: 20 <= 23) and for an fp32 c when F >= 23
    (Volta F = 23); with F = 13 (Hopper FP8) an fp32 c at e_max loses its low 10 bits (seed 000
    §6.2.2), so A0:c is SAT there. Expected statuses derived from those bit counts."""
    res = {r.name: r.status for r in prove_lemmas(mid, "z3", 120)}
    assert res["A0:product"] == "unsat"
    assert res["A0:c"] == ("unsat" if lossless_c else "sat")


def test_table9_no_wrap_fails_for_narrow_carry():
    """hopper-fp16-fp32-carry4: 17 summands need 5 carry bits (seed 001 §IV-A5); the static
    no-wrap lemma fails, so the lemma proof does not claim the bound."""
    res = prove_lemmas("hopper-fp16-fp32-carry4", "z3", 60)
    assert res[0].status == "sat"


def test_refutation_is_rechecked(proof_log):
    """alpha = beta = 0 (an exact-result claim) is refuted with a witness; bounds.recheck
    confirms it with Fractions (raising TwinDisagreement otherwise)."""
    r = prove_bound("volta-fp16-fp32", alpha=Fraction(0), beta=Fraction(0), timeout=120)
    proof_log.record("table9 volta alpha=0 beta=0 (refute)", r.solver, r.status, r.seconds)
    assert r.status == "refuted" and r.measured["abs_error"] > 0


@pytest.mark.slow
def test_table9_all_models(proof_log):
    rows = lemma_table(tfdpa_models(), "z3", 120)
    for row in rows:
        proof_log.record(f"table9 {row['model']}", "z3", "proved" if row["proved"] else "not", row["seconds"])
    unproved = {r["model"] for r in rows if not r["proved"]}
    # narrow carry rivals wrap (seeds 001/002), bf16 FTZ rivals flush subnormal inputs: refuted
    assert unproved <= {"hopper-fp16-fp32-carry4", "volta-fp16-fp32-carry2", "ampere-fp16-fp32-carry3",
                        "ampere-bf16-fp32-ftz", "hopper-bf16-fp32-ftz"}, unproved
    for r in rows:
        if not r["proved"]:
            assert "refuted" in r and r["refuted"]["measured"]["abs_error"] > r["refuted"]["measured"]["bound"]


@pytest.mark.parametrize("mid", ["hopper-fp16-fp32-carry4", "ampere-bf16-fp32-ftz"])
def test_rivals_refuted_by_twin(mid):
    """Seed 001 §IV-A5: 17 summands need 5 carry bits, so 4 wrap; bf16 FTZ loses a subnormal
    input entirely. Witnesses re-checked with Fractions inside twin_refute."""
    from queries.bounds import twin_refute
    r = twin_refute(mid)
    assert r is not None and r["measured"]["abs_error"] > r["measured"]["bound"]
