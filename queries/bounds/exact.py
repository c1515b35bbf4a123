"""Exact rational re-checks, independent of the semantic core: values of raw patterns, floor(log2),
ulp. A solver's witness is confirmed with these before it is reported."""

from __future__ import annotations

import math
from fractions import Fraction

from smtmodel.fp.classify import exact_value


def value_of(bits: int, fmt) -> Fraction:
    """Exact value of finite raw bits (:func:`smtmodel.fp.classify.exact_value`; -0 reads 0)."""
    v = exact_value(int(bits), fmt)
    if isinstance(v, float):
        if v == 0:
            return Fraction(0)
        raise ValueError(f"{fmt}: pattern {int(bits):#x} is not finite")
    return v


def floor_log2(x: Fraction) -> int:
    """floor(log2 |x|) of a non-zero rational, exactly (float log2 only as the first guess)."""
    e = math.floor(math.log2(abs(x)))
    while Fraction(2) ** e > abs(x):
        e -= 1
    while Fraction(2) ** (e + 1) <= abs(x):
        e += 1
    return e


def ulp_of(x: Fraction, p: int, emin: int) -> Fraction:
    """ulp of a precision-p format with minimum exponent emin at x (the subnormal ulp at 0)."""
    return Fraction(2) ** ((emin if x == 0 else max(floor_log2(x), emin)) - p + 1)
