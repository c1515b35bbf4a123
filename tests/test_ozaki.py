"""The Ozaki schemes' twin (smtmodel/schemes/ozaki.py).

Independent computations used as expected values: exact products and sums with Python
``Fraction``/int arithmetic; ozIMMU's slicing restated with Python big integers (the 128-bit
register of ``cut_int8_core``); the integer MMA models' own NumPy reading."""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest

from smtmodel.catalog import get_model
from smtmodel.schemes.ozaki import (OZAKI, Ozaki, OzakiError, gemm, int_gemm, overflow_k, ozimmu_beta,
                                    row_scale_field, safe_beta, slice_rows)


def _u64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _slices_bigint(x: float, field: int, slices: int, beta: int) -> list[int]:
    """cut_int8_core with a Python int as the 128-bit register."""
    u = _u64(x)
    e = (u >> 52) & 0x7FF
    mant = (u & ((1 << 52) - 1)) | (1 << 52)
    shift = field - e
    reg = ((mant << 75) >> shift) if shift < 128 else 0
    reg &= (1 << 128) - 1
    sign = 1 if x > 0 else -1
    return [sign * ((reg >> (128 - s * beta)) & ((1 << beta) - 1)) for s in range(1, slices + 1)]


def _inputs(rng, m, k, n, spread):
    A = rng.standard_normal((m, k)) * np.exp2(rng.integers(-spread, spread + 1, (m, k)))
    B = rng.standard_normal((k, n)) * np.exp2(rng.integers(-spread, spread + 1, (k, n)))
    return A, B


def _exact(A, B):
    return [[sum(Fraction(A[i, t]) * Fraction(B[t, j]) for t in range(A.shape[1])) for j in range(B.shape[1])]
            for i in range(A.shape[0])]


def test_beta_rule_and_overflow_k():
    """ozIMMU's get_bits_per_int8: 7 up to k = 2^17, then one bit less per factor 4 (by hand)."""
    assert [ozimmu_beta(k) for k in (1, 2, 1 << 17, (1 << 17) + 1, 1 << 19, (1 << 19) + 1)] == [7, 7, 7, 6, 6, 5]
    assert overflow_k(7) == 133145 and 133144 * 127 ** 2 < 2 ** 31 <= 133145 * 127 ** 2
    assert safe_beta(133145) == 6


def test_slices_match_the_128bit_register():
    rng = np.random.default_rng(0)
    A, _ = _inputs(rng, 6, 40, 1, 30)
    A[0, :3] = [0.0, -0.0, 5e-324]
    A[1, 0] = 1e-300
    for s, beta in ((3, 7), (8, 7), (5, 6), (18, 7)):
        f = row_scale_field(A)
        got = slice_rows(A, f, s, beta)
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                assert list(got[:, i, j]) == _slices_bigint(A[i, j], int(f[i]), s, beta), (s, beta, i, j)
    assert np.all(np.abs(got[0]) <= 63) and np.all(np.abs(got) <= 127)


@pytest.mark.parametrize("mid", ["ampere-s8-s32", "ampere-s8-s32-satfinite", "turing-s8-s32"])
def test_int_gemm_is_the_imma_model(mid):
    """The BLAS-exact int GEMM with wrap/clamp equals the catalog model's own reading, also when
    it overflows (k = 200 000 products of 127·127)."""
    m = get_model(mid)
    rng = np.random.default_rng(1)
    A = rng.integers(-128, 128, (3, 96))
    B = rng.integers(-128, 128, (96, 2))
    A[0], B[:, 0] = 127, 127
    C = int_gemm(A, B, m)
    for i in range(3):
        for j in range(2):
            d = m.evaluate((A[i] & 0xFF)[None].astype(np.uint64), (B[:, j] & 0xFF)[None].astype(np.uint64),
                           np.zeros(1, np.uint64), backend="numpy")[0]
            assert (int(d) ^ 0x80000000) - 0x80000000 == C[i, j]
    big = np.full((1, 200_000), 127)
    want = 200_000 * 127 * 127
    got = int(int_gemm(big, big.T, m)[0, 0])
    assert got == (min(want, 2 ** 31 - 1) if m.saturate else (want + 2 ** 31) % 2 ** 32 - 2 ** 31)


def test_small_integers_exact():
    """Integer inputs below 2^7: three slices already hold them; every scheme is exact."""
    rng = np.random.default_rng(2)
    A = rng.integers(-100, 100, (8, 64)).astype(float)
    B = rng.integers(-100, 100, (64, 8)).astype(float)
    for name in ("ozaki1-s3", "ozaki1-s8", "ozaki2-n8"):
        assert np.array_equal(gemm(OZAKI[name], A, B), A @ B)


def test_ozaki1_against_correct_rounding():
    """Moderate spread (exponents within ±4 per element, K = 64, seed 3; measured: see the
    asserts). With 10 or more slices the truncation is far below an ulp, yet ozIMMU's result is
    *not* the correctly rounded product: it adds the s(s+1)/2 slice products into an fp64
    accumulator one rounding at a time, which costs up to 4 ulps of the result here (most under
    cancellation) and leaves only about a third of the entries correctly rounded -- with 10, 12 or
    18 slices alike. Summing the same slice products exactly and rounding once (the -exactsum
    variant) is correctly rounded everywhere from 12 slices on: the accumulation, not the slicing,
    is the cause. With 8 slices the truncation itself shows (elements up to 2^8 below their row's
    largest lose those bits). Ozaki II (exact CRT, one rounding) with 20 moduli is correctly
    rounded everywhere."""
    rng = np.random.default_rng(3)
    A, B = _inputs(rng, 12, 64, 12, 4)
    rn = np.array([[float(v) for v in row] for row in _exact(A, B)])

    def ulps(D):
        return np.abs(D - rn) / np.spacing(np.abs(rn))
    for name in ("ozaki1-s10", "ozaki1-s12", "ozaki1-s18"):
        D = gemm(OZAKI[name], A, B)
        assert ulps(D).max() <= 4, (name, ulps(D).max())
        assert 0.25 < np.mean(D == rn) < 0.5, (name, np.mean(D == rn))
    assert ulps(gemm(OZAKI["ozaki1-s8"], A, B)).max() > 1000
    for name in ("ozaki1-s12-exactsum", "ozaki1-s18-exactsum", "ozaki2-n20"):
        assert np.array_equal(gemm(OZAKI[name], A, B), rn), name


def test_error_shrinks_with_slices():
    rng = np.random.default_rng(4)
    A, B = _inputs(rng, 6, 32, 6, 3)
    ex = np.array([[float(v) for v in row] for row in _exact(A, B)])
    errs = [np.max(np.abs(gemm(OZAKI[f"ozaki1-s{s}"], A, B) - ex)) for s in range(3, 8)]
    assert all(b < a / 16 for a, b in zip(errs, errs[1:])), errs


def test_alpha_beta_epilogue():
    rng = np.random.default_rng(5)
    A, B = _inputs(rng, 4, 16, 4, 2)
    C = rng.standard_normal((4, 4))
    s = OZAKI["ozaki1-s10"]
    x = gemm(s, A, B)
    assert np.array_equal(gemm(s, A, B, C, alpha=2.0, beta=0.0), 2.0 * x)
    d = gemm(s, A, B, C, alpha=1.5, beta=-0.75)
    want = [[float(Fraction(1.5) * Fraction(x[i, j]) + Fraction(-0.75 * C[i, j])) for j in range(4)] for i in range(4)]
    assert np.array_equal(d, np.array(want))          # fma(alpha, x, fl(beta C)): one rounding


def test_refusals():
    A = np.ones((2, 4))
    with pytest.raises(OzakiError, match="inf or NaN"):
        gemm(OZAKI["ozaki1-s8"], np.array([[1.0, np.inf]]), np.ones((2, 1)))
    with pytest.raises(OzakiError, match="inf or NaN"):
        gemm(OZAKI["ozaki2-n14"], A, np.array([[np.nan]] * 4))
    bad = OZAKI["ozaki1-s8-beta7"]
    bad.check(133144)
    with pytest.raises(OzakiError, match="too large for k=133145.*133145"):
        bad.check(133145)
    OZAKI["ozaki1-s8"].check(1 << 20)              # the library's rule adapts β
    with pytest.raises(OzakiError, match="2\\^17"):
        OZAKI["ozaki2-n14"].check((1 << 17) + 1)
    with pytest.raises(OzakiError, match="shapes"):
        gemm(OZAKI["ozaki1-s8"], A, np.ones((3, 2)))
    with pytest.raises(OzakiError, match="coprime"):
        Ozaki("x", "II", "", "", moduli=(256, 254)).check(16)


def test_zero_rows_and_tiny_rows():
    """ozIMMU reads a zero with its hidden bit set and a minus sign: an all-zero row gives -0
    results where the accumulator is negative, and in a row whose largest element is below
    ~2^-996 the zeros count as -2^-1023 (modelled from split.cu, not seen on hardware)."""
    rng = np.random.default_rng(6)
    A = rng.standard_normal((3, 8))
    B = rng.standard_normal((8, 3))
    A[0] = 0.0
    A[1] = 0.0
    A[1, 2] = 1e-300
    D = gemm(OZAKI["ozaki1-s4"], A, B)
    assert np.all(D[0] == 0)
    exact = A[1] @ B
    assert not np.array_equal(D[1], exact)
    assert np.all(np.abs(D[1] - exact) <= 7 * 2.0 ** -1023 * np.abs(B).sum(axis=0))


# ---- proofs (queries/schemes/ozaki.py) ------------------------------------------------------------

def test_overflow_proof_holds_for_ozimmu_rule():
    from queries.schemes.ozaki import prove_no_overflow
    r = prove_no_overflow("ozimmu", k_max=1 << 29, timeout=60)
    assert r.holds and [lm.status for lm in r.lemmas] == ["proved"] * 3, r.lines()


def test_wrong_beta_gives_the_smallest_overflowing_k():
    """β = 7 for every k: the solver's bisection finds k = 133145 (= floor(2^31 / 127^2) + 1, by
    hand) and the IMMA twin confirms the wrap there and not at k - 1."""
    from queries.schemes.ozaki import prove_no_overflow
    r = prove_no_overflow("7", k_max=1 << 20, timeout=60)
    assert not r.holds and r.smallest_k == 133145 == (1 << 31) // 127 ** 2 + 1
    assert "confirms" in r.twin_confirms


@pytest.mark.parametrize("s,beta", [(3, 7), (8, 7), (8, 6)])
def test_slicing_lemma(s, beta):
    from queries.schemes.ozaki import prove_slicing
    assert prove_slicing(s, beta, timeout=60).lemma.status == "proved"


@pytest.mark.parametrize("name", ["ozaki1-s3", "ozaki1-s8", "ozaki1-s12-exactsum"])
def test_error_formula_holds_on_twin(name):
    from queries.schemes.ozaki import check_bound
    r = check_bound(OZAKI[name], 16, n=6)
    assert r["holds"], r
    if name == "ozaki1-s3":                       # truncation-dominated: adversarial inputs nearly reach it
        assert r["ratio"] > 0.9


def test_core_element_equals_the_gemm_twin():
    """One semantics: the core reading of an output (ozaki1_element: core slicing, the IMMA
    model's build, the core's fp64 adder and scalings) equals the BLAS-based GEMM twin bit for
    bit, zero and tiny rows and alpha included."""
    from smtmodel.bv import NUMPY
    from smtmodel.schemes.ozaki import ozaki1_element
    rng = np.random.default_rng(7)
    for name, K in (("ozaki1-s3", 5), ("ozaki1-s8", 3), ("ozaki1-s8-all", 2)):
        A, B = _inputs(rng, 3, K, 3, 20)
        A[0] = 0.0
        A[1] = 0.0
        A[1, 0] = 1e-300
        D = gemm(OZAKI[name], A, B, alpha=1.5)
        ab, bb = A.view(np.uint64), B.T.copy().view(np.uint64)
        for i in range(3):
            for j in range(3):
                a = [NUMPY.input(np.array([ab[i, t]], dtype=np.uint64), 64) for t in range(K)]
                b = [NUMPY.input(np.array([bb[j, t]], dtype=np.uint64), 64) for t in range(K)]
                d = ozaki1_element(OZAKI[name], a, b, alpha_bits=int(np.float64(1.5).view(np.uint64)))
                assert int(np.asarray(d.v).reshape(-1)[0]) == int(D[i, j].view(np.uint64)), (name, i, j)


def test_worst_witness_confirmed_by_solver():
    """s = 3: the twin search reaches the formula's γ to within 2e-7 (all-ones significands at the
    row's top exponent: the bound is tight), and Bitwuzla, reading the core element with the
    inputs fixed, returns the twin's bits."""
    from queries.schemes.ozaki import worst_witness
    w = worst_witness(OZAKI["ozaki1-s3"], 4, n=32)
    assert 0.9999 < w.ratio_of_gamma <= 1.0
    assert w.solver.status == "proved"
