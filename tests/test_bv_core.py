"""The bitvector semantic core, concrete reading (NumPy twin), against an independent Python-int
model of SMT-LIB QF_BV semantics (arithmetic modulo 2^w, shifts by >= w give 0 / sign fill,
unsigned shift amounts), exhaustively at small widths and by Hypothesis at widths up to 128
(the > 64-bit lanes are exact Python integers in object arrays).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smtmodel.bv import (NUMPY, abs_signed, all_of, any_of, clamp_shift, clz, ite, lshr_sticky, smax,
                         smax_all, smin, sum_all, umax, umin)
from smtmodel.bv.core import BV, Bool

# ---------------------------------------------------------------------------------------------
# reference semantics on Python ints
# ---------------------------------------------------------------------------------------------


def sgn(a: int, w: int) -> int:
    return a - (1 << w) if a >> (w - 1) else a


def ref_clz(a: int, w: int) -> int:
    return w - a.bit_length()


def ref_ashr(a: int, n: int, w: int) -> int:
    return (sgn(a, w) >> min(n, w)) & ((1 << w) - 1)


BIN = {
    # name: (twin on BVs, reference on ints); results are ints (BV) or bools (Bool)
    "add": (lambda x, y: x + y, lambda a, b, w: (a + b) % (1 << w)),
    "sub": (lambda x, y: x - y, lambda a, b, w: (a - b) % (1 << w)),
    "mul": (lambda x, y: x * y, lambda a, b, w: (a * b) % (1 << w)),
    "and": (lambda x, y: x & y, lambda a, b, w: a & b),
    "or": (lambda x, y: x | y, lambda a, b, w: a | b),
    "xor": (lambda x, y: x ^ y, lambda a, b, w: a ^ b),
    "shl": (lambda x, y: x << y, lambda a, b, w: (a << b) % (1 << w) if b < w else 0),
    "lshr": (lambda x, y: x.lshr(y), lambda a, b, w: a >> b if b < w else 0),
    "rshift": (lambda x, y: x >> y, lambda a, b, w: a >> b if b < w else 0),
    "ashr": (lambda x, y: x.ashr(y), ref_ashr),
    "eq": (lambda x, y: x.eq(y), lambda a, b, w: a == b),
    "ne": (lambda x, y: x.ne(y), lambda a, b, w: a != b),
    "ult": (lambda x, y: x.ult(y), lambda a, b, w: a < b),
    "ule": (lambda x, y: x.ule(y), lambda a, b, w: a <= b),
    "ugt": (lambda x, y: x.ugt(y), lambda a, b, w: a > b),
    "uge": (lambda x, y: x.uge(y), lambda a, b, w: a >= b),
    "slt": (lambda x, y: x.slt(y), lambda a, b, w: sgn(a, w) < sgn(b, w)),
    "sle": (lambda x, y: x.sle(y), lambda a, b, w: sgn(a, w) <= sgn(b, w)),
    "sgt": (lambda x, y: x.sgt(y), lambda a, b, w: sgn(a, w) > sgn(b, w)),
    "sge": (lambda x, y: x.sge(y), lambda a, b, w: sgn(a, w) >= sgn(b, w)),
    "umax": (umax, lambda a, b, w: max(a, b)),
    "umin": (umin, lambda a, b, w: min(a, b)),
    "smax": (smax, lambda a, b, w: a if sgn(a, w) >= sgn(b, w) else b),
    "smin": (smin, lambda a, b, w: a if sgn(a, w) <= sgn(b, w) else b),
    "ite_ult": (lambda x, y: ite(x.ult(y), x, y), lambda a, b, w: a if a < b else b),
    "concat": (lambda x, y: x.concat(y), lambda a, b, w: (a << w) | b),
    "sticky_val": (lambda x, y: lshr_sticky(x, y)[0], lambda a, b, w: a >> b if b < w else 0),
    "sticky_bit": (lambda x, y: lshr_sticky(x, y)[1], lambda a, b, w: (a & ((1 << min(b, w)) - 1)) != 0),
    "bool_and": (lambda x, y: x.ult(y) & x.bit(0), lambda a, b, w: a < b and bool(a & 1)),
    "bool_or": (lambda x, y: x.ult(y) | y.bit(0), lambda a, b, w: a < b or bool(b & 1)),
    "bool_xor": (lambda x, y: x.ult(y) ^ y.msb(), lambda a, b, w: (a < b) != bool(b >> (w - 1))),
    "bool_ite": (lambda x, y: ite(x.eq(y), x.bit(0), ~y.bit(0)),
                 lambda a, b, w: bool(a & 1) if a == b else not (b & 1)),
}

UN = {
    "not": (lambda x: ~x, lambda a, w: a ^ ((1 << w) - 1)),
    "neg": (lambda x: -x, lambda a, w: (-a) % (1 << w)),
    "clz": (clz, ref_clz),
    "msb": (lambda x: x.msb(), lambda a, w: bool(a >> (w - 1))),
    "is_zero": (lambda x: x.is_zero(), lambda a, w: a == 0),
    "abs_neg": (lambda x: abs_signed(x)[0], lambda a, w: sgn(a, w) < 0),
    "abs_mag": (lambda x: abs_signed(x)[1], lambda a, w: abs(sgn(a, w)) % (1 << w)),
    "zext3": (lambda x: x.zext(3), lambda a, w: a),
    "sext3": (lambda x: x.sext(3), lambda a, w: sgn(a, w) % (1 << (w + 3))),
    "sext70": (lambda x: x.sext(70), lambda a, w: sgn(a, w) % (1 << (w + 70))),
    "zext0": (lambda x: x.zext(0), lambda a, w: a),
    "uresize+2": (lambda x: x.uresize(x.w + 2), lambda a, w: a),
    "sresize+2": (lambda x: x.sresize(x.w + 2), lambda a, w: sgn(a, w) % (1 << (w + 2))),
    "extract_hi": (lambda x: x.extract(x.w - 1, x.w // 2), lambda a, w: a >> (w // 2)),
    "extract_lo": (lambda x: x.extract((x.w - 1) // 2, 0), lambda a, w: a & ((1 << ((w - 1) // 2 + 1)) - 1)),
    "extract_mid": (lambda x: x.extract(x.w - 1 - x.w // 3, x.w // 3),
                    lambda a, w: (a >> (w // 3)) & ((1 << (w - 2 * (w // 3))) - 1)),
    "add_const": (lambda x: x + 12345, lambda a, w: (a + 12345) % (1 << w)),
    "rsub_const": (lambda x: 7 - x, lambda a, w: (7 - a) % (1 << w)),
    "rmul_const": (lambda x: 3 * x, lambda a, w: (3 * a) % (1 << w)),
    "rand_const": (lambda x: 6 & x, lambda a, w: 6 & a & ((1 << w) - 1)),
    "sum_all5": (lambda x: sum_all([x, x << 1, ~x, x, -x]),
                 lambda a, w: (a + (a << 1) + (a ^ ((1 << w) - 1)) + a - a) % (1 << w)),
    "smax_all3": (lambda x: smax_all([x, ~x, x >> 1]),
                  lambda a, w: max([a, a ^ ((1 << w) - 1), a >> 1], key=lambda v: sgn(v, w))),
    "as_bv": (lambda x: x.ult(5).as_bv(4), lambda a, w: int(a < 5 % (1 << w))),   # consts wrap
    "all_of": (lambda x: all_of([x.bit(0), x.msb(), x.ne(0)]), lambda a, w: bool(a & 1) and bool(a >> (w - 1))),
    "any_of": (lambda x: any_of([x.bit(0), x.msb()]), lambda a, w: bool(a & 1) or bool(a >> (w - 1))),
}


def const_shift_ops(w):
    """Shifts by Python-int amounts (the core's constant path), including amounts >= width."""
    ops = {}
    for n in sorted({0, 1, w - 1, w, w + 1, 2 * w + 3}):
        ops[f"shl#{n}"] = (lambda x, n=n: x << n, lambda a, w, n=n: (a << n) % (1 << w))
        ops[f"lshr#{n}"] = (lambda x, n=n: x.lshr(n), lambda a, w, n=n: a >> n)
        ops[f"ashr#{n}"] = (lambda x, n=n: x.ashr(n), lambda a, w, n=n: ref_ashr(a, n, w))
    return ops


def _lanes(v, n):
    arr = np.broadcast_to(np.asarray(v), (n,))
    return [bool(x) if isinstance(x, (bool, np.bool_)) else int(x) for x in arr]


def check_binary(w: int, A: list[int], Bs: list[int]):
    x, y = NUMPY.input(A, w), NUMPY.input(Bs, w)
    for name, (twin, ref) in BIN.items():
        r = twin(x, y)
        got = _lanes(r.v, len(A))
        exp = [ref(a, b, w) for a, b in zip(A, Bs)]
        if isinstance(r, BV):
            assert r.w == (2 * w if name == "concat" else w), name
        else:
            assert isinstance(r, Bool), name
        bad = [(a, b, g, e) for a, b, g, e in zip(A, Bs, got, exp) if g != e]
        assert not bad, f"{name} w={w}: (a, b, twin, ref) {bad[:4]}"


def check_unary(w: int, A: list[int]):
    x = NUMPY.input(A, w)
    ops = dict(UN)
    ops.update(const_shift_ops(w))
    for name, (twin, ref) in ops.items():
        if name in ("extract_mid",) and w < 3:
            continue
        r = twin(x)
        got = _lanes(r.v, len(A))
        exp = [ref(a, w) for a in A]
        bad = [(a, g, e) for a, g, e in zip(A, got, exp) if g != e]
        assert not bad, f"{name} w={w}: (a, twin, ref) {bad[:4]}"


# ---------------------------------------------------------------------------------------------
# exhaustive at small widths
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("w", [1, 2, 3, 4, 5, 6])
def test_binary_ops_exhaustive(w):
    pairs = list(itertools.product(range(1 << w), repeat=2))
    check_binary(w, [p[0] for p in pairs], [p[1] for p in pairs])


@pytest.mark.parametrize("w", [1, 2, 3, 4, 5, 8, 12])
def test_unary_ops_exhaustive(w):
    check_unary(w, list(range(1 << w)))


def test_clz_exhaustive_16():
    a = np.arange(1 << 16, dtype=np.uint64)
    got = np.asarray(clz(NUMPY.input(a, 16)).v)
    exp = np.array([16 - int(v).bit_length() for v in a])
    assert np.array_equal(got, exp)


# ---------------------------------------------------------------------------------------------
# Hypothesis at larger widths (uint64 lanes and exact-integer lanes above 64 bits)
# ---------------------------------------------------------------------------------------------

WIDTHS = [7, 8, 16, 23, 31, 32, 33, 48, 63, 64, 65, 66, 100, 128]


def _word(w):
    mask = (1 << w) - 1
    edge = sorted({0, 1, 2, mask, mask - 1, 1 << (w - 1), (1 << (w - 1)) - 1, (1 << (w - 1)) + 1})
    return st.one_of(st.sampled_from(edge), st.integers(0, mask),
                     st.integers(0, w - 1).map(lambda k: 1 << k),
                     st.integers(0, w - 1).map(lambda k: mask ^ ((1 << k) - 1)))


def _amount(w):
    return st.one_of(st.integers(0, w + 2), st.sampled_from(sorted({w - 1, w, w + 1, 2 * w, (1 << w) - 1})),
                     st.integers(0, (1 << w) - 1))


@st.composite
def batch(draw):
    w = draw(st.sampled_from(WIDTHS))
    n = draw(st.integers(1, 24))
    A = draw(st.lists(_word(w), min_size=n, max_size=n))
    Bs = draw(st.lists(st.one_of(_word(w), _amount(w)), min_size=n, max_size=n))
    return w, A, Bs


@settings(max_examples=400, deadline=None)
@given(batch())
def test_binary_ops_hypothesis(b):
    w, A, Bs = b
    check_binary(w, A, Bs)


@settings(max_examples=300, deadline=None)
@given(batch())
def test_unary_ops_hypothesis(b):
    w, A, _ = b
    check_unary(w, A)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([4, 8, 16, 17, 64, 65]), st.lists(st.integers(-300, 300), min_size=1, max_size=20),
       st.integers(0, 200), st.sampled_from([3, 5, 8, 16]))
def test_clamp_shift(aw, amounts, limit, width):
    """clamp_shift: negative amounts -> 0, larger than limit -> limit, sized to ``width``."""
    limit = min(limit, (1 << width) - 1)
    x = NUMPY.input([a % (1 << aw) for a in amounts], aw)
    r = clamp_shift(x, limit, width)
    assert r.w == width
    exp = [min(max(sgn(a % (1 << aw), aw), 0), limit) for a in amounts]
    assert _lanes(r.v, len(amounts)) == exp


def test_clamp_shift_rejects_big_limit():
    with pytest.raises(ValueError):
        clamp_shift(NUMPY.input([0], 8), 16, 4)


# ---------------------------------------------------------------------------------------------
# interface behaviour
# ---------------------------------------------------------------------------------------------

def test_width_checks():
    x, y = NUMPY.input([1], 8), NUMPY.input([1], 9)
    with pytest.raises(ValueError, match="width mismatch"):
        x + y
    with pytest.raises(ValueError, match="extract"):
        x.extract(8, 0)
    with pytest.raises(ValueError, match="extract"):
        x.extract(2, 3)
    with pytest.raises(ValueError, match="ite width mismatch"):
        ite(x.eq(1), x, y)
    with pytest.raises(TypeError, match="needs a width"):
        ite(x.eq(1), 1, 2)
    with pytest.raises(ValueError, match="do not fit"):
        NUMPY.input([256], 8)
    with pytest.raises(ValueError, match="do not fit"):
        NUMPY.input([-1], 8)
    with pytest.raises(ValueError, match="do not fit"):
        NUMPY.input(np.array([-1]), 64)
    with pytest.raises(ValueError, match="do not fit"):
        NUMPY.input([1 << 100], 100)
    with pytest.raises(ValueError, match="integers"):
        NUMPY.input([1.5], 8)


def test_input_keeps_python_ints_exact():
    """A list mixing small ints and ints >= 2^63 (NumPy would make it float64) stays exact."""
    x = NUMPY.input([0, (1 << 63) + 1, (1 << 64) - 1], 64)
    assert _lanes(x.v, 3) == [0, (1 << 63) + 1, (1 << 64) - 1]
    y = NUMPY.input([0, (1 << 99) + 1], 100)
    assert _lanes(y.v, 2) == [0, (1 << 99) + 1]


def test_bool_has_no_truth_value():
    with pytest.raises(TypeError, match="no Python truth value"):
        bool(NUMPY.input([1], 8).eq(1))


def test_constants_and_ite_with_ints():
    B = NUMPY
    assert int(B.const(-1, 8).v) == 255 and int(B.const(256 + 5, 8).v) == 5
    assert int(B.const(-1, 100).v) == (1 << 100) - 1
    x = B.input([3, 200], 8)
    assert list(np.asarray(ite(x.ult(100), x, 7).v)) == [3, 7]
    assert list(np.asarray(ite(x.ult(100), 9, x).v)) == [9, 200]
    c = ite(x.ult(100), True, x.eq(200))
    assert list(np.asarray(c.v)) == [True, True]
    assert bool(B.true().v) and not bool(B.false().v)
    assert list(np.asarray((x.eq(3) & True).v)) == [True, False]
    assert list(np.asarray((True & x.eq(3)).v)) == [True, False]
    assert list(np.asarray((x.eq(3) | False).v)) == [True, False]
    assert repr(x) == "BV<numpy,8>"


def test_wide_lanes_are_exact_integers():
    w = 130
    a = [(1 << 129) + 12345, (1 << 130) - 1, 0]
    x = NUMPY.input(a, w)
    assert np.asarray(x.v).dtype == object
    y = x * x + 1
    assert _lanes(y.v, 3) == [(v * v + 1) % (1 << w) for v in a]
    assert _lanes(x.extract(129, 66).v, 3) == [v >> 66 for v in a]
    assert np.asarray(x.extract(63, 0).v).dtype == np.uint64
    assert _lanes(x.extract(7, 0).sext(200).v, 3) == [sgn(v & 255, 8) % (1 << 208) for v in a]
