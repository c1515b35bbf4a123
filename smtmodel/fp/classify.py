"""Classification and encoding of raw patterns: the one place these format rules are written.

Predicates take a :class:`~smtmodel.bv.BV` of the format's stored width and return a core
:class:`~smtmodel.bv.Bool`, so the same rule is a constraint for a solver (z3 / cvc5 backend) and
a mask over a batch (NumPy backend). :func:`classify_bits` and :func:`exact_value` read plain
Python integers through the NumPy reading, for display and exact re-checks.

The rules follow the format's policy (``formats.POLICIES``): IEEE (inf and NaNs at the all-ones
exponent), OCP ``fn`` (one NaN per sign at all ones, no inf), AMD ``fnuz`` (the negative-zero
pattern is the NaN, no -0), ``e8m0`` (OCP MX scale: all ones is NaN, no zero, no sign) and
``finite``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..bv import BV, Bool
from ..formats import Format, get_format


def fields(x: BV, fmt: "Format | str") -> tuple[Bool | None, BV, BV | None]:
    """(sign or None, exponent field, mantissa field or None) of a stored pattern."""
    fmt = get_format(fmt)
    s, m, e = fmt.shift, fmt.mbits, fmt.ebits
    sign = x.bit(s + m + e) if fmt.signed else None
    ef = x.extract(s + m + e - 1, s + m)
    mf = x.extract(s + m - 1, s) if m else None
    return sign, ef, mf


def is_nan(x: BV, fmt: "Format | str") -> Bool:
    fmt = get_format(fmt)
    _, ef, mf = fields(x, fmt)
    top = (1 << fmt.ebits) - 1
    if fmt.policy == "ieee":
        return ef.eq(top) & mf.ne(0)
    if fmt.policy == "fn":
        return ef.eq(top) & mf.eq((1 << fmt.mbits) - 1)
    if fmt.policy == "fnuz":
        return x.eq(fmt.canonical_nan)
    if fmt.policy == "e8m0":
        return ef.eq(top)
    return x.B.false()


def is_inf(x: BV, fmt: "Format | str") -> Bool:
    fmt = get_format(fmt)
    if not fmt.has_inf:
        return x.B.false()
    _, ef, mf = fields(x, fmt)
    return ef.eq((1 << fmt.ebits) - 1) & mf.eq(0)


def is_special(x: BV, fmt: "Format | str") -> Bool:
    """An infinity or a NaN."""
    return is_nan(x, fmt) | is_inf(x, fmt)


def is_zero(x: BV, fmt: "Format | str") -> Bool:
    """A pattern of +0 or -0 (the fnuz NaN and every e8m0 pattern are not zeros)."""
    fmt = get_format(fmt)
    if fmt.policy == "e8m0":
        return x.B.false()
    _, ef, mf = fields(x, fmt)
    z = ef.eq(0) if mf is None else ef.eq(0) & mf.eq(0)
    return z & ~is_nan(x, fmt)


def is_subnormal(x: BV, fmt: "Format | str") -> Bool:
    """A subnormal pattern: zero exponent field, non-zero mantissa (read as zero by a format
    declared without subnormals, but still this pattern)."""
    fmt = get_format(fmt)
    _, ef, mf = fields(x, fmt)
    if fmt.policy == "e8m0" or mf is None:
        return x.B.false()
    return ef.eq(0) & mf.ne(0)


def is_well_formed(x: BV, fmt: "Format | str") -> Bool:
    """A stored pattern whose container bits below the encoding are zero (TF32: low 13 bits)."""
    fmt = get_format(fmt)
    return x.extract(fmt.shift - 1, 0).eq(0) if fmt.shift else x.B.true()


def exponent_in(x: BV, fmt: "Format | str", lo: int, hi: int) -> Bool:
    """A finite pattern whose unbiased exponent (emin for subnormals) lies in [lo, hi], or a zero."""
    fmt = get_format(fmt)
    _, ef, _ = fields(x, fmt)
    ok = x.B.false()
    for efv in range(max(lo + fmt.bias, 0), min(hi + fmt.bias, (1 << fmt.ebits) - 1) + 1):
        ok = ok | ef.eq(efv)
    if lo <= fmt.emin <= hi:
        ok = ok | ef.eq(0)
    return (ok & ~is_special(x, fmt)) | is_zero(x, fmt)


def sign_of(x: BV, fmt: "Format | str") -> Bool | None:
    """The sign bit (None for unsigned formats)."""
    return fields(x, fmt)[0]


def low_mantissa_zero(x: BV, fmt: "Format | str", keep: int) -> Bool:
    """At most the top ``keep`` bits of the mantissa field are non-zero."""
    fmt = get_format(fmt)
    drop = fmt.mbits - keep
    return x.extract(fmt.shift + drop - 1, fmt.shift).eq(0) if drop > 0 else x.B.true()


# ---- encodings as integers ------------------------------------------------------------------------

def encode_fields(fmt: "Format | str", sign: int, exp_field: int, mant_field: int = 0) -> int:
    """The stored pattern of (sign, biased exponent field, mantissa field)."""
    fmt = get_format(fmt)
    if not 0 <= exp_field < (1 << fmt.ebits) or not 0 <= mant_field < (1 << fmt.mbits or 1):
        raise ValueError(f"{fmt.name}: fields ({exp_field}, {mant_field}) out of range")
    bits = (exp_field << fmt.mbits) | mant_field
    if fmt.signed:
        bits |= (sign & 1) << (fmt.ebits + fmt.mbits)
    return bits << fmt.shift


def pow2_bits(fmt: "Format | str", e: int, sign: int = 0) -> int:
    """The pattern of ±2^e (normal, or subnormal below emin)."""
    fmt = get_format(fmt)
    if fmt.policy == "e8m0":
        return encode_fields(fmt, 0, e + fmt.bias)
    if e >= fmt.emin:
        if e > fmt.emax:
            raise ValueError(f"2^{e} overflows {fmt.name}")
        return encode_fields(fmt, sign, e + fmt.bias)
    if e < fmt.emin - fmt.mbits:
        raise ValueError(f"2^{e} underflows {fmt.name}")
    return encode_fields(fmt, sign, 0, 1 << (e - fmt.emin + fmt.mbits))


def one_bits(fmt: "Format | str") -> int:
    """The pattern of 1.0."""
    return pow2_bits(fmt, 0)


# ---- plain integers, through the NumPy reading ----------------------------------------------------

@dataclass(frozen=True)
class Classes:
    nan: bool
    inf: bool
    zero: bool
    subnormal: bool
    negative: bool


def classify_bits(bits: int, fmt: "Format | str") -> Classes:
    """The classes of one stored pattern (the predicates above, read concretely)."""
    from ..bv import NUMPY

    fmt = get_format(fmt)
    x = NUMPY.input(np.array([int(bits)], dtype=np.uint64), fmt.width)
    val = lambda p: bool(np.asarray(p.v).reshape(-1)[0])
    sign = sign_of(x, fmt)
    return Classes(val(is_nan(x, fmt)), val(is_inf(x, fmt)), val(is_zero(x, fmt)), val(is_subnormal(x, fmt)),
                   False if sign is None else val(sign))


def exact_value(bits: int, fmt: "Format | str") -> "Fraction | float":
    """The value of a stored pattern: an exact Fraction for finite numbers, ``float('nan')`` or
    ``±inf`` for specials, ``-0.0`` for negative zero; subnormals of a format declared without
    them read as (signed) zero, like :func:`~smtmodel.fp.decode`."""
    fmt = get_format(fmt)
    if getattr(fmt, "kind", "") == "int":          # an integer format's pattern reads as its integer
        return Fraction(fmt.value(bits))
    cls = classify_bits(bits, fmt)
    if cls.nan:
        return float("nan")
    if cls.inf:
        return float("-inf") if cls.negative else float("inf")
    enc = int(bits) >> fmt.shift
    ef = (enc >> fmt.mbits) & ((1 << fmt.ebits) - 1)
    mf = enc & ((1 << fmt.mbits) - 1)
    if fmt.policy == "e8m0":
        return Fraction(2) ** (ef - fmt.bias)
    if ef == 0 and (not fmt.subnormals or mf == 0):
        return -0.0 if cls.negative else Fraction(0)
    sig = mf | ((ef != 0) << fmt.mbits)
    v = Fraction(sig) * Fraction(2) ** (max(ef, 1) - fmt.bias - fmt.mbits)
    return -v if cls.negative else v


def value_text(bits: int, fmt: "Format | str") -> str:
    """A short decimal text of a pattern's value ('nan', '-inf', '-0.0', '1.5', '6.1e-05')."""
    v = exact_value(bits, fmt)
    if isinstance(v, float):
        return repr(v)
    return repr(float(v)) if float(v) == v else f"{float(v)!r}~"
