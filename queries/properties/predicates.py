"""The predicates a property states, written over the semantic core's decoded values, so that a
solver reads them symbolically and the twin concretely (one lane per case).

Nothing here computes what a unit computes: the units are :meth:`smtmodel.model.Model.build`.
These are the comparisons a property makes between exact values -- a product grows, a result
shrinks, a result is the negative or the 2^s multiple of another -- and the input patterns a
property derives from others (the negation of a pattern, a pattern times 2^s). Exact
comparisons reuse the core's exact two-term sum (:func:`smtmodel.fp.exact.window_sum2`): x <= y
exactly when x - y is zero or negative.
"""

from __future__ import annotations

from dataclasses import replace

from smtmodel.bv import BV, Bool, ite
from smtmodel.formats import Format, get_format
from smtmodel.fp import EXP_W, FPValue, decode, mul_exact
from smtmodel.fp.classify import fields, is_nan, is_special, is_subnormal, is_zero
from smtmodel.fp.exact import window_sum2
from smtmodel.fp.value import exp_const, pack


def negated(x: FPValue) -> FPValue:
    """-x (the sign flag flipped)."""
    return replace(x, sign=~x.sign)


def _diff(x: FPValue, y: FPValue) -> tuple[Bool, BV]:
    """(sign, magnitude) of the exact x - y of finite values (magnitude 0: x = y exactly; non-finite
    values read as 0, see :func:`window_sum2`)."""
    sign, mag, _e, _f = window_sum2(x, negated(y), 1)
    return sign, mag


def finite(x: FPValue) -> Bool:
    return ~(x.nan | x.inf)


def value_le(x: FPValue, y: FPValue) -> Bool:
    """x <= y as extended reals (-0 = +0, -inf <= everything <= +inf); false where either is NaN."""
    sign, mag = _diff(x, y)
    both = finite(x) & finite(y)
    return ~(x.nan | y.nan) & ((x.inf & x.sign) | (y.inf & ~y.sign) | (both & (mag.eq(0) | sign)))


def value_lt(x: FPValue, y: FPValue) -> Bool:
    """x < y as extended reals; false where either is NaN."""
    return value_le(x, y) & ~value_eq(x, y)


def value_eq(x: FPValue, y: FPValue) -> Bool:
    """x = y as extended reals (-0 = +0); false where either is NaN."""
    _sign, mag = _diff(x, y)
    return ~(x.nan | y.nan) & ((x.inf & y.inf & ~(x.sign ^ y.sign)) | (finite(x) & finite(y) & mag.eq(0)))


def _key(x: BV, fmt: Format) -> tuple[Bool, BV, Bool]:
    """(sign, magnitude, zero) of a pattern as an order key: the exponent and mantissa fields as
    one unsigned integer, which grows with |value| over every finite pattern and infinity of a
    float format (sign-magnitude encodings). A format that reads subnormal patterns as zero
    (``subnormals=False``) gets magnitude 0 for them, so that equal values have equal keys; an
    e8m0 pattern is never zero."""
    sign, ef, mf = fields(x, fmt)
    mag = ef if mf is None else ef.concat(mf)
    if not fmt.subnormals:
        mag = ef.eq(0).ite(mag.B.const(0, mag.w), mag)
    zero = x.B.false() if fmt.policy == "e8m0" else mag.eq(0)
    return (x.B.false() if sign is None else sign), mag, zero


def pattern_le(x: BV, y: BV, fmt: "Format | str") -> Bool:
    """x <= y as values of one format's patterns (-0 = +0, infinities included); false where
    either is NaN. The same relation as :func:`value_le` on the decoded values
    (``tests/test_properties.py`` checks it against the values of every pattern of the narrow
    formats), read from the fields: a comparator instead of an exact subtraction."""
    fmt = get_format(fmt)
    sx, mx, zx = _key(x, fmt)
    sy, my, zy = _key(y, fmt)
    le = (sx & ~sy) | (zx & zy) | (~sx & ~sy & mx.ule(my)) | (sx & sy & my.ule(mx))
    return ~(is_nan(x, fmt) | is_nan(y, fmt)) & le


def pattern_lt(x: BV, y: BV, fmt: "Format | str") -> Bool:
    """x < y as values of one format's patterns; false where either is NaN."""
    fmt = get_format(fmt)
    return ~(is_nan(x, fmt) | is_nan(y, fmt)) & ~pattern_le(y, x, fmt)


def pattern_eq(x: BV, y: BV, fmt: "Format | str", negate: bool = False) -> Bool:
    """y = x (``negate``: y = -x) as values of one format's patterns (-0 = +0); false where
    either is NaN: the magnitudes equal and the signs agree (differ), or both are zero."""
    fmt = get_format(fmt)
    sx, mx, zx = _key(x, fmt)
    sy, my, _ = _key(y, fmt)
    signs = (sx ^ sy) if negate else ~(sx ^ sy)
    return ~(is_nan(x, fmt) | is_nan(y, fmt)) & mx.eq(my) & (signs | zx)


def product(a: BV, b: BV, fa: "Format | str", fb: "Format | str") -> FPValue:
    """The exact product of two input patterns as their formats read them (the core's
    :func:`mul_exact`): the summand a_i b_i of the multi-term sum, whatever a unit makes of it."""
    return mul_exact(decode(a, fa), decode(b, fb))


def scaled_value(x: FPValue, s: BV) -> FPValue:
    """x * 2^s (the exponent moved by ``s``, an EXP_W-bit signed integer); exact."""
    return replace(x, exp=x.exp + s)


def negate_bits(x: BV, fmt: "Format | str") -> BV:
    """The pattern of -x: the sign bit flipped, except a zero of a format without -0 (fnuz, where
    the flipped pattern is the NaN), which stays."""
    fmt = get_format(fmt)
    sign, ef, mf = fields(x, fmt)
    flipped = pack(fmt, ~sign, ef, mf)
    return flipped if fmt.has_neg_zero else is_zero(x, fmt).ite(x, flipped)


def scale_bits(x: BV, fmt: "Format | str", s: BV) -> tuple[BV, Bool]:
    """(the pattern of x * 2^s, whether that pattern is exact): the exponent field moved by ``s``
    (EXP_W-bit signed). Exact where x is zero (it stays) or x is normal and the moved field is a
    normal, finite one; a subnormal or special x is never exact here."""
    fmt = get_format(fmt)
    B = x.B
    sign, ef, mf = fields(x, fmt)
    sign = B.false() if sign is None else sign
    moved = ef.uresize(EXP_W) + s
    ok_field = moved.sge(exp_const(B, 1)) & moved.sle(exp_const(B, (1 << fmt.ebits) - 1))
    y = pack(fmt, sign, moved.extract(fmt.ebits - 1, 0), mf)
    zero = is_zero(x, fmt)
    normal = ~zero & ~is_subnormal(x, fmt) & ~is_special(x, fmt)
    exact = zero | (normal & ok_field & ~is_special(y, fmt))
    return ite(zero, x, y), exact


def exponent_between(x: FPValue, lo: int, hi: int, lsb: bool = False) -> Bool:
    """A zero, or a finite nonzero value whose exponent (``x.exp``) lies in [lo, hi]; ``lsb``: the
    exponent of its last significand bit (``x.exp - x.frac``, the value's quantum) instead."""
    B = x.B
    e = x.exp - x.frac if lsb else x.exp
    return x.zero | (finite(x) & e.sge(exp_const(B, lo)) & e.sle(exp_const(B, hi)))
