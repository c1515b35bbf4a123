"""A narrow two-operand IEEE addition for the schemes, written once in the semantic core.

:func:`smtmodel.fp.fp_add` places both operands in one exact window spanning the format's whole
exponent range (about 280 bits for fp32), which is simple but makes solver formulas with many
fp32 additions large. :func:`add2` is the textbook adder: order the operands by magnitude, keep
p + 3 extra bits below the larger one's last bit, shift the smaller one right and fold every bit
shifted out into a sticky last bit, add or subtract, and round once with
:func:`smtmodel.fp.round_finite` (2p + 4 bits instead of ~280).

Why it rounds correctly: if the exponent difference d <= p + 2 nothing is shifted out and the sum
is exact. Otherwise |small| < 2^(e_big - p - 1), so the result keeps exponent >= e_big - 1 and
its rounding position is >= 2 bits above the window's last bit; the exact and the sticky-folded
sums then lie in the same open interval between consecutive multiples of 2 window units, which
contains no representable number and no midpoint -- every rounding mode gives the same result.
tests/test_schemes_core.py checks it against fp_add on the twin and proves equality with z3.
"""

from __future__ import annotations

from ..bv import BV, clamp_shift, ite
from ..formats import get_format
from ..fp import decode, ieee_zero_sign, inf_bits, nan_bits, round_finite, sum_specials


def add2(x_bits: BV, y_bits: BV, fmt="fp32", rm: str = "RNE") -> BV:
    fmt = get_format(fmt)
    B = x_bits.B
    X, Y = decode(x_bits, fmt), decode(y_bits, fmt)
    p = fmt.precision
    x_big = X.exp.sgt(Y.exp) | (X.exp.eq(Y.exp) & X.sig.uge(Y.sig))
    eb = ite(x_big, X.exp, Y.exp)
    es = ite(x_big, Y.exp, X.exp)
    sb = ite(x_big, X.sig, Y.sig)
    ss = ite(x_big, Y.sig, X.sig)
    sgb = ite(x_big, X.sign, Y.sign)
    sgs = ite(x_big, Y.sign, X.sign)
    W = 2 * p + 5
    g = p + 3
    Xw = sb.uresize(W) << g
    Yf = ss.uresize(W) << g
    d = clamp_shift(eb - es, W, max(2, W.bit_length() + 1)).uresize(W)
    Yk = Yf.lshr(d)
    sticky = Yf.ne(Yk << d)
    Yk = Yk | sticky.as_bv(W)
    same = ~(sgb ^ sgs)
    mag = ite(same, Xw + Yk, Xw - Yk)
    zero = mag.eq(0)
    sign = ite(zero, ieee_zero_sign([X, Y], rm), sgb)
    finite = round_finite(fmt, sign, mag, eb, X.frac + g, rm, "ieee")
    nan, inf, inf_sign = sum_specials([X, Y])
    return ite(nan, nan_bits(B, fmt), ite(inf, inf_bits(fmt, inf_sign), finite))
