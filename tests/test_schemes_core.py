"""Schemes in the semantic core (smtmodel/schemes): twin against independent NumPy
re-implementations of the published algorithms, the narrow adder against fp_add and NumPy, and
seed 002 Table 5's inputs.

Expected values come from: NumPy float32/float16 arithmetic (IEEE RNE, independent of the core)
re-implementing the algorithms as Markidis et al. 2018 and the tcec library (wmmae/wmma_extension)
state them, with only the tensor-core calls delegated to the catalog model; Python Fractions for
exact values.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from conftest import draw_bits
from smtmodel.bv import NUMPY
from smtmodel.catalog import get_model
from smtmodel.fp import decode, fp_add, ieee_sum
from smtmodel.schemes import get_scheme, scheme_from_dict


def _u32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)


def _f32(bits) -> np.ndarray:
    return np.asarray(bits, np.uint64).astype(np.uint32).view(np.float32)


def _f16bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float16).view(np.uint16).astype(np.uint64)


def _data(n, k, seed, wide=False):
    g = np.random.default_rng(seed)
    if wide:
        def draw(shape):
            return (g.uniform(1, 2, shape) * 2.0 ** g.integers(-15, 15, shape) * g.choice([-1, 1], shape)).astype(np.float32)
        return draw((n, k)), draw((n, k)), draw((n,))
    return (g.uniform(-1, 1, (n, k)).astype(np.float32), g.uniform(-1, 1, (n, k)).astype(np.float32),
            g.uniform(-1, 1, n).astype(np.float32))


# ---- the narrow adder ---------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["fp32", "fp16"])
@pytest.mark.parametrize("rm", ["RNE", "RZ", "RU", "RD", "RNA"])
def test_narrow_adder_equals_exact_window_sum(fmt, rm):
    """fp_add (narrow window + sticky) against the exact-window two-term ieee_sum, on special-heavy
    patterns and near-cancelling pairs: the two algorithms are independent."""
    g = np.random.default_rng(7)
    w = 32 if fmt == "fp32" else 16
    x = draw_bits(fmt, 30000, g)
    for y in (draw_bits(fmt, 30000, g), g.permutation(x) ^ np.uint64(1 << (w - 1)), x ^ np.uint64(1 << (w - 1)) ^ np.uint64(1)):
        X, Y = NUMPY.input(x, w), NUMPY.input(y, w)
        exact = ieee_sum([decode(X, fmt), decode(Y, fmt)], fmt, rm)
        assert np.array_equal(np.asarray(exact.v), np.asarray(fp_add(X, Y, fmt, rm).v))


def test_fp_add_equals_numpy_float32():
    """RNE fp32 addition agrees with NumPy's float32 + (IEEE hardware), NaN payloads aside."""
    g = np.random.default_rng(3)
    x, y = draw_bits("fp32", 50000, g), draw_bits("fp32", 50000, g)
    got = np.asarray(fp_add(NUMPY.input(x, 32), NUMPY.input(y, 32), "fp32", "RNE").v)
    with np.errstate(all="ignore"):
        ref = _u32(_f32(x) + _f32(y))
    nan = np.isnan(_f32(ref))
    assert np.array_equal(got[~nan], ref[~nan])
    assert np.all(np.isnan(_f32(got[nan])))


# ---- schemes against independent NumPy re-implementations ----------------------------------------------

def _tc(model, a16, b16, c32):
    """One tensor-core call of the catalog model (the only piece delegated to the core)."""
    return model.evaluate(a16, b16, c32)


def _tcec_passes(m, bits, ah, bh, al, bl, c, blk):
    """tcec's two passes in NumPy: per k-block, hi*hi from 0 on the tensor core added RN into an
    fp32 register starting at c; lo*hi then hi*lo accumulated inside across K. Returns the
    register (float32) and the lo accumulator (fp32 bits); ``bits`` packs the pieces."""
    n, k = ah.shape
    reg, lo, zero = c.copy(), np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    for s in range(0, k, blk):
        sl = slice(s, s + blk)
        reg = (reg + _f32(_tc(m, bits(ah[:, sl]), bits(bh[:, sl]), zero))).astype(np.float32)
        lo = _tc(m, bits(al[:, sl]), bits(bh[:, sl]), lo)
        lo = _tc(m, bits(ah[:, sl]), bits(bl[:, sl]), lo)
    return reg, lo


@pytest.mark.parametrize("mid", ["volta-fp16-fp32", "turing-fp16-fp32", "ampere-fp16-fp32", "hopper-fp16-fp32"])
@pytest.mark.parametrize("wide", [False, True])
def test_oy_fp16_matches_tcec_reference(mid, wide):
    """tcec: a_hi = RN16(a), a_lo = RN16(fl32(a - a_hi) * 2^11); hi: per k-block of 16 (8 on sm_75)
    from 0, added RN to a register starting at c; lo: a_lo*b_hi then a_hi*b_lo inside across K;
    d = fl32(hi + fl32(lo / 2^11))."""
    m = get_model(mid)
    n, k = 64, 32
    a, b, c = _data(n, k, 11, wide)
    ah, bh = a.astype(np.float16), b.astype(np.float16)
    al = ((a - ah.astype(np.float32)) * np.float32(2048)).astype(np.float16)
    bl = ((b - bh.astype(np.float32)) * np.float32(2048)).astype(np.float16)
    blk = 8 if m.arch == "turing" else 16
    reg, lo = _tcec_passes(m, _f16bits, ah, bh, al, bl, c, blk)
    ref = (reg + (_f32(lo) / np.float32(2048)).astype(np.float32)).astype(np.float32)
    got = get_scheme("oy-fp16").evaluate(_u32(a), _u32(b), _u32(c), mid)
    assert np.array_equal(got, _u32(ref))


@pytest.mark.parametrize("mid", ["ampere-tf32-fp32", "hopper-tf32-fp32"])
def test_oy_tf32_matches_reference(mid):
    """O-Y tf32: RNA to tf32 (round half away on the 13 dropped bits), no scaling, blocks of 8."""
    m = get_model(mid)
    n, k = 64, 16
    a, b, c = _data(n, k, 5, True)

    def rna_tf32(x):
        u = x.view(np.uint32).astype(np.uint64)
        r = ((u + np.uint64(0x1000)) & np.uint64(0xFFFFE000)).astype(np.uint32)   # finite inputs only
        return r.view(np.float32)
    ah, bh = rna_tf32(a), rna_tf32(b)
    al, bl = rna_tf32((a - ah).astype(np.float32)), rna_tf32((b - bh).astype(np.float32))
    reg, lo = _tcec_passes(m, _u32, ah, bh, al, bl, c, 8)
    ref = (reg + _f32(lo)).astype(np.float32)
    got = get_scheme("oy-tf32").evaluate(_u32(a), _u32(b), _u32(c), mid)
    assert np.array_equal(got, _u32(ref))


@pytest.mark.parametrize("mid", ["volta-fp16-fp32", "hopper-fp16-fp32"])
def test_markidis_matches_reference(mid):
    """Markidis: A16 = RN16(A), dA = RN16(A - A16); one chain over [A16 B16 | dA B16 | A16 dB | dA dB], c first."""
    m = get_model(mid)
    n, k = 64, 8
    a, b, c = _data(n, k, 2, True)
    ah, bh = a.astype(np.float16), b.astype(np.float16)
    al, bl = (a - ah.astype(np.float32)).astype(np.float16), (b - bh.astype(np.float32)).astype(np.float16)
    xs = np.concatenate([ah, al, ah, al], axis=1)
    ys = np.concatenate([bh, bh, bl, bl], axis=1)
    ref = _tc(m, _f16bits(xs), _f16bits(ys), _u32(c))
    got = get_scheme("markidis").evaluate(_u32(a), _u32(b), _u32(c), mid)
    assert np.array_equal(got, ref)


def test_plain_fp16_and_fp32_baselines():
    """fp16: RN16 inputs into the model with c; fp32: exact products (float64) and a chain whose
    every step is one RNE rounding (checked against Fractions rounded by NumPy: products of
    fp32 values are exact in float64 and a float64 sum of an exact product and an fp32 is rounded
    once more, so we compare within one fp32 ulp of the correctly rounded FMA chain)."""
    m = get_model("ampere-fp16-fp32")
    a, b, c = _data(32, 8, 9)
    ref = m.evaluate(_f16bits(a.astype(np.float16)), _f16bits(b.astype(np.float16)), _u32(c))
    assert np.array_equal(get_scheme("fp16").evaluate(_u32(a), _u32(b), _u32(c), m.id), ref)
    got = _f32(get_scheme("fp32").evaluate(_u32(a), _u32(b), _u32(c)))
    for i in range(32):
        d = Fraction(float(c[i]))
        for t in range(8):
            d = Fraction(float(np.float32(float(d + Fraction(float(a[i, t])) * Fraction(float(b[i, t]))))))
        assert abs(Fraction(float(got[i])) - d) <= abs(d) * Fraction(1, 2 ** 22)


def test_user_scheme_as_data():
    """A scheme stated as JSON data equals the catalog's 3xtf32 when it says the same thing."""
    s = scheme_from_dict({"name": "my3x", "model": "ampere-tf32-fp32", "block": 8, "c_mode": "first",
                          "split": {"fmt": "tf32", "pieces": 2, "rm": "RNA", "lo_rm": "RNA"},
                          "passes": [{"pairs": [[1, 0], [0, 1], [0, 0]], "where": "inside", "order": "kblock"}]})
    a, b, c = _data(16, 16, 4, True)
    assert np.array_equal(s.evaluate(_u32(a), _u32(b), _u32(c)),
                          get_scheme("3xtf32").evaluate(_u32(a), _u32(b), _u32(c)))


def test_schemes_are_accurate():
    """Sanity from the papers: O-Y and Markidis are fp32-accurate on uniform data (mean relative
    error near 2^-24 and far below plain fp16's 2^-11); expected orders from O-Y 2022 Fig. 6."""
    a, b, c = _data(200, 16, 1)
    ex = np.array([sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a[i], b[i])) + Fraction(float(c[i]))
                   for i in range(200)], dtype=object)

    def mean_rel(name, mid=None):
        d = _f32(get_scheme(name).evaluate(_u32(a), _u32(b), _u32(c), mid))
        return np.mean([abs(float(Fraction(float(d[i])) - ex[i]) / float(ex[i])) for i in range(200)])
    assert mean_rel("fp16") > 1e-4
    for name in ("oy-fp16", "markidis", "oy-tf32"):
        assert mean_rel(name) < 2e-6


# ---- seed 002 Table 5 ------------------------------------------------------------------------------------

def test_table5_published_inputs():
    """Seed 002 Table 5's inputs are fp16 values, so every residual is 0 and all four encodings
    reduce to the tensor-core sum of a*b with c. The exact value (Fractions, computed here) is
    68309649 / 2^40 ~ 6.2127e-5, not the published 'True = 1 + 2^-23'; RZ to fp32 of the exact sum
    (floor to 24 bits: the sum is positive) is 0x38824a52, 1/2^40 below."""
    from queries.schemes import table5, table5_inputs
    v = table5_inputs()
    f = lambda bits: Fraction(float(_f32([bits])[0]))
    ex = sum(f(v[f"a{i}"]) * f(v[f"b{i}"]) for i in range(4)) + f(v["c"])
    assert ex == Fraction(68309649, 2 ** 40)
    e = 0
    while Fraction(2) ** (e + 1) <= ex:
        e += 1
    while Fraction(2) ** e > ex:
        e -= 1
    rz = Fraction(int(ex / Fraction(2) ** (e - 23)), 1) * Fraction(2) ** (e - 23)
    r = table5()
    assert Fraction(r["exact"]) == ex
    for row in r["rows"]:
        assert Fraction(row["d_exact"]) == rz
        assert row["d"] == "0x38824a52"
        assert Fraction(row["error"]) == Fraction(-1, 2 ** 40)
