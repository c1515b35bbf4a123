"""Seed 000 Table 9's error bound (queries/bounds.py).

Expected values: the bound itself is seed 000 §6.1 / Table 9 ((L+1) 2^(e_max-F) for the fused
summation, 0.5 ulp for RNE and 1 ulp for RZ outputs). Refutation witnesses are re-checked with
exact Fractions and an independent e_max computation (bounds.recheck).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from queries.bounds import lemma_table, prove_bound, prove_lemmas
from smtmodel.formats import get_format


# volta-fp16-fp16 and ampere-tf32-fp32 repeat the same lemmas on other formats (10-14 s each
# without the proof cache): -m slow.
@pytest.mark.parametrize("mid", ["volta-fp16-fp32", pytest.param("volta-fp16-fp16", marks=pytest.mark.slow),
                                 "hopper-fp8e4m3-fp32", pytest.param("ampere-tf32-fp32", marks=pytest.mark.slow)])
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
    r = prove_bound("volta-fp16-fp32", "bitwuzla", alpha=Fraction(0), beta=Fraction(0), timeout=120)   # z3: 43 s
    proof_log.record("table9 volta alpha=0 beta=0 (refute)", r.solver, r.status, r.seconds)
    assert r.status == "refuted" and r.measured["abs_error"] > 0


@pytest.mark.slow
def test_table9_all_models(proof_log):
    from queries.bounds import table9_models
    rows = lemma_table(table9_models(), "bitwuzla", 120)
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


@pytest.mark.parametrize("mid,alpha", [("blackwell-fp8e4m3-fp32-mx", 32),
                                       pytest.param("blackwell-fp4e2m1-fp32-mxgst", 4, marks=pytest.mark.slow),
                                       ("hopper-fp8e4m3-fp16-mmasync", 16)])   # GST-FDPA's lemmas (20-40 s): -m slow
def test_table9_scaled_and_fp8_paths(mid, alpha, proof_log):
    """Table 9's "T-FDPA, others" row for ST-FDPA (Algorithm 8), GST-FDPA (Algorithm 9: L/G = 4
    groups + c are the summands, so alpha = 4 once lemma A0 holds) and the FP8 mma.sync path
    (two fp16 T-FDPA halves of L = 16, then c added with RNE: lemmas V and D)."""
    from queries.bounds import lemma_table
    from smtmodel.catalog import get_model
    (row,) = lemma_table([get_model(mid)], "bitwuzla", 120)
    for x in row["lemmas"]:
        proof_log.record(f"table9 {mid} {x['name']}", x["solver"], x["status"], x["seconds"])
    assert row["proved"] and row["alpha_proved"] == alpha, row


@pytest.mark.slow          # the lemma table proves this bound (test_table9_scaled_and_fp8_paths); this is the twin's check
def test_fp8_mmasync_composed_bound_on_random_inputs():
    """The composition behind the FP8 mma.sync bound, checked by the twin in exact arithmetic: the
    model is half_model twice then c added with RNE (bit for bit), and |d - exact| stays within
    17 (2^(e1-F) + 2^(e2-F)) + ulp(d1) + ulp(d2) + 1/2 ulp(d) (e1, e2 recomputed from the bits)."""
    import numpy as np
    from queries.bounds import half_model
    from queries.bounds import ulp_of as _ulp
    from queries.bounds import value_of as _value
    from smtmodel.catalog import get_model

    m = get_model("hopper-fp8e4m3-fp32-mmasync")
    h = half_model(m)
    g = np.random.default_rng(3)
    n = 400
    a = g.integers(0, 256, (n, 32)).astype(np.uint64)
    b = g.integers(0, 256, (n, 32)).astype(np.uint64)
    a[(a & 0x7F) == 0x7F] = 0x3F          # no NaN inputs
    b[(b & 0x7F) == 0x7F] = 0x3F
    c = (g.integers(0, 2, n) << 31 | g.integers(110, 150, n) << 23 | g.integers(0, 1 << 23, n)).astype(np.uint64)
    d = m.evaluate(a, b, c)
    from smtmodel.formats import numpy_to_bits, bits_to_numpy
    a16 = numpy_to_bits(bits_to_numpy(a, "fp8e4m3").astype(np.float32), "fp16")
    b16 = numpy_to_bits(bits_to_numpy(b, "fp8e4m3").astype(np.float32), "fp16")
    h1 = [k for k in range(32) if k % 4 in (0, 1)]
    h2 = [k for k in range(32) if k % 4 in (2, 3)]
    d1 = h.evaluate(a16[:, h1], b16[:, h1], np.zeros(n, np.uint64))
    d2 = h.evaluate(a16[:, h2], b16[:, h2], d1)
    ref = (bits_to_numpy(d2, "fp32") + bits_to_numpy(c, "fp32")).astype(np.float32)
    assert np.array_equal(np.asarray(d, np.uint32), ref.view(np.uint32))

    ex = lambda bits, fmt: exp_of(_value(int(bits), fmt), fmt)

    for i in range(n):
        P = [_value(int(a[i, k]), "fp8e4m3") * _value(int(b[i, k]), "fp8e4m3") for k in range(32)]
        exact = sum(P, _value(int(c[i]), "fp32"))
        e1 = max([ex(a[i, k], "fp8e4m3") + ex(b[i, k], "fp8e4m3") for k in h1] + [-126])
        e2 = max([ex(a[i, k], "fp8e4m3") + ex(b[i, k], "fp8e4m3") for k in h2] + [ex(d1[i], "fp32")])
        v1, v2, vd = (_value(int(x), "fp32") for x in (d1[i], d2[i], d[i]))
        bound = (17 * (Fraction(2) ** (e1 - m.F) + Fraction(2) ** (e2 - m.F)) + _ulp(v1, 24, -126)
                 + _ulp(v2, 24, -126) + _ulp(vd, 24, -126) / 2)
        assert abs(vd - exact) <= bound, (i, float(abs(vd - exact)), float(bound))


@pytest.mark.slow          # minutes of solver time: the T-FDPA lemma tables run in the default suite
@pytest.mark.parametrize("mid", ["cdna3-fp16-fp32", "cdna3-fp8e4m3fnuz-fp32"])
def test_tr_fdpa_bound_lemmas_and_twin(mid, proof_log):
    """TR-/GTR-FDPA (seed 000 Algorithms 10, 11): the lemmas prove alpha = L (E = max(e_max, Exp(c)),
    tr_alpha's case split); the twin then checks |d - exact| <= L 2^(E-F) + 1/2 ulp(d) on random
    inputs in exact arithmetic (E recomputed from the bits), and that errors of several units
    2^(E-F) do occur there, so the check has teeth."""
    import numpy as np
    from queries.bounds import ulp_of as _ulp
    from queries.bounds import value_of as _value
    from smtmodel.catalog import get_model
    from smtmodel.sampling import special_heavy as _draw

    m = get_model(mid)
    (row,) = lemma_table([m], "bitwuzla", 120)
    for x in row["lemmas"]:
        proof_log.record(f"table9 {mid} {x['name']}", x["solver"], x["status"], x["seconds"])
    assert row["proved"] and row["alpha_proved"] == m.L, row
    fi = get_format(m.in_fmt)
    g = np.random.default_rng(11)
    n = 3000
    a = np.stack([_draw(fi, n, g) for _ in range(m.L)], 1)
    b = np.stack([_draw(fi, n, g) for _ in range(m.L)], 1)
    same = g.random(n) < 0.5           # half the cases: one sign, all-ones significands (carries, losses)
    ones = ((fi.bias << fi.mbits) | ((1 << fi.mbits) - 1)) << fi.shift
    a[same] = ones
    b[same] = (((fi.bias - 3) << fi.mbits) | ((1 << fi.mbits) - 1)) << fi.shift
    b[same, 0] = ones
    c = np.where(g.random(n) < 0.3, 0, (g.integers(100, 140, n) << 23) | g.integers(0, 1 << 23, n)).astype(np.uint64)

    ex = exp_of

    nan = np.zeros(n, bool)
    for arr in (a, b):
        for k in range(m.L):
            nan |= np.array([_is_nan(int(x), fi) for x in arr[:, k]])
    d = m.evaluate(a, b, c)
    worst = 0.0
    for i in np.nonzero(~nan)[0]:
        A = [_value(int(x), fi) for x in a[i]]
        Bv = [_value(int(y), fi) for y in b[i]]
        cv = _value(int(c[i]), "fp32")
        dv_bits = int(d[i])
        if (dv_bits >> 23) & 0xFF == 0xFF:
            continue                                   # overflow: excluded from the bound
        exact = sum((x * y for x, y in zip(A, Bv)), cv)
        E = max([ex(x, m.in_fmt) + ex(y, m.in_fmt) for x, y in zip(A, Bv)] + ([ex(cv, "fp32")] if cv else []))
        dv = _value(dv_bits, "fp32")
        unit = Fraction(2) ** (E - m.F)
        slack = abs(dv - exact) - _ulp(dv, 24, -126) / 2
        assert slack <= m.L * unit, (i, float(slack / unit))
        worst = max(worst, float(slack / unit))
    print(f"{mid}: largest (|err| - ulp/2) / 2^(E-F) = {worst:.3f}")
    assert worst > 1, worst


def exp_of(v: Fraction, fmt) -> int:
    """Exp of a value of ``fmt`` with seed 000's zero rule (a zero has exponent -126)."""
    from queries.bounds import floor_log2
    return -126 if v == 0 else max(floor_log2(v), get_format(fmt).emin)


def _is_nan(bits, fmt):
    f = get_format(fmt)
    if f.policy == "fnuz":
        return bits == 1 << (f.width - 1)
    top = (1 << f.ebits) - 1
    return ((bits >> f.mbits) & top) == top


def test_group_exact_split_lemmas_nvfp4(proof_log):
    """Lemma G for NVFP4 (16 E2M1 products, UE4M3 scales) as G1 (the exact sum) and G2 (the scale
    step): both unsat, so the monolithic query (about 60 s of Bitwuzla) is not asked. The
    composition is integer arithmetic: term = (-1)^s mag sa.sig sb.sig 2^-(f0+fa+fb) (G2) and
    (-1)^s mag 2^-f0 = sum a_k b_k (G1) give seed 000 Algorithm 9's exact group value."""
    from queries.bounds.lemmas import prove_group_exact
    from smtmodel.catalog import get_model

    res = prove_group_exact(get_model("blackwell-fp4e2m1-fp32-nvfp4"), "bitwuzla", 60)
    for r in res:
        proof_log.record(f"table9 nvfp4 {r.name}", r.solver, r.status, r.seconds)
    assert [(r.name, r.status) for r in res] == [("G1:group sum exact", "unsat"), ("G2:group scales exact", "unsat")]


def test_group_scales_lemma_catches_a_narrow_product(monkeypatch):
    """G2 can fail: a scale step whose significand is 2 bits too narrow for mag * sa.sig * sb.sig
    (4-bit UE4M3 significands) wraps, and the solver finds the magnitude and scales that show it."""
    import smtmodel.ops.fdpa as fdpa
    from queries.bounds.lemmas import _run, lemma_group_scales
    from smtmodel.catalog import get_model

    real = fdpa.scale_group

    def narrow(sgn, mag, f0, s_a, s_b):
        v = real(sgn, mag, f0, s_a, s_b)
        w = v.sig.w - 2
        return fdpa.FPValue(v.sign, v.exp, v.sig.extract(w - 1, 0).uresize(v.sig.w), v.frac, v.nan, v.inf,
                            v.zero, v.exp_lo, v.exp_hi)

    monkeypatch.setattr(fdpa, "scale_group", narrow)
    r = _run("bitwuzla", 60, "G2", lemma_group_scales, get_model("blackwell-fp4e2m1-fp32-nvfp4"))
    assert r.status == "sat"


@pytest.mark.slow          # two lemma tables (20-40 s of solver time)
def test_shared_lemma_proved_once_per_process():
    """hopper-fp16-fp32 and hopper-bf16-fp32 have the same accumulator (34 bits), F = 25, RZ-FP32
    and fp32 output: over the wide e_max range their lemma B is the same formula, proved once
    (the second row names the first). Independent of the proof cache."""
    from queries.bounds.lemmas import _PROVED
    from smtmodel.catalog import get_model

    _PROVED.clear()
    rows = lemma_table([get_model("hopper-fp16-fp32"), get_model("hopper-bf16-fp32")], "bitwuzla", 120)
    b = [next(x for x in r["lemmas"] if x["name"] == "B:round") for r in rows]
    assert [x["status"] for x in b] == ["unsat", "unsat"] and rows[0]["proved"] and rows[1]["proved"]
    assert "hopper-fp16-fp32's" not in b[0]["solver"] and "the same formula as hopper-fp16-fp32's" in b[1]["solver"]


def test_wide_range_lemma_falls_back_to_the_models_range():
    """_run_wide: a lemma that is sat only outside the model's own e_max range (e_max below its
    lowest value) is sat over the wide range and unsat over the model's: the model's answers."""
    from queries.bounds.lemmas import _run_wide, e_range, wide_range
    from smtmodel.catalog import get_model
    from smtmodel.fp.value import EXP_W

    m = get_model("volta-fp16-fp32")
    assert wide_range(m)[0] < e_range(m)[0]

    def build(B, mm, er):
        emax = B.var("emax", EXP_W)
        return [emax.sge(er[0]), emax.sle(er[1]), emax.slt(e_range(mm)[0])], {"emax": emax}

    assert _run_wide("bitwuzla", 30, "below", build, m).status == "unsat"
