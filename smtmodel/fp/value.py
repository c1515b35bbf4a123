"""Decoded floating-point values in the semantic core, and the decode/encode of raw bits.

An :class:`FPValue` is ``(-1)^sign * sig * 2^(exp - frac)`` with an unsigned integer significand
``sig`` (any width), a signed exponent ``exp`` (``EXP_W`` bits) and a static number of fraction
bits ``frac``, plus NaN / infinity / zero flags. Subnormals keep the minimum exponent and a
significand without the hidden bit (seed 000 §4.1.3, "SignedSig" and "Exp").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..bv import BV, Bool, ite
from ..formats import Format, FormatError, get_format
from ..runtime import NONE_CODE, Runtime

EXP_W = 16
"""Width of exponent arithmetic: covers fp64 products and the widest fixed-point windows."""


@dataclass
class FPValue:
    sign: Bool
    exp: BV
    sig: BV
    frac: int
    nan: Bool
    inf: Bool
    zero: Bool
    exp_lo: int
    exp_hi: int

    @property
    def B(self):
        return self.sig.B

    @property
    def finite_nonzero(self) -> Bool:
        return ~(self.nan | self.inf | self.zero)

    @property
    def lsb_lo(self) -> int:
        """Smallest possible exponent of the significand's last bit."""
        return self.exp_lo - self.frac

    @property
    def lsb_hi(self) -> int:
        return self.exp_hi - self.frac


def exp_const(B, value: int) -> BV:
    return B.const(value, EXP_W)


FLUSH_CODES = {None: NONE_CODE, "signed": 1, "positive": 2}
"""Lane codes of a run-time ``flush_subnormals``."""


def decode(bits: BV, fmt: "Format | str", flush_subnormals: str | None = None) -> FPValue:
    """Split raw bits of ``fmt`` into sign, exponent, integer significand and special flags.

    ``flush_subnormals``: None keeps subnormal inputs; ``"signed"`` flushes them to a zero of the
    same sign; ``"positive"`` to +0 (AMD CDNA2, seed 000 Algorithm 2). A format declared without
    subnormals flushes with sign kept.
    """
    fmt = get_format(fmt)
    if bits.w != fmt.width:
        raise FormatError(f"{fmt.name} patterns are {fmt.width} bits, got {bits.w}")
    B = bits.B
    enc = bits.extract(fmt.width - 1, fmt.shift) if fmt.shift else bits
    m, e = fmt.mbits, fmt.ebits
    E = enc.extract(m + e - 1, m)
    M = enc.extract(m - 1, 0) if m else None
    sign = enc.msb() if fmt.signed else B.false()
    e_ones = E.eq((1 << e) - 1)
    if fmt.policy == "ieee":
        nan = e_ones & M.ne(0)
        inf = e_ones & M.eq(0)
    elif fmt.policy == "fn":
        nan = e_ones & M.eq((1 << m) - 1)
        inf = B.false()
    elif fmt.policy == "fnuz":
        nan = enc.eq(1 << (fmt.enc_width - 1))
        inf = B.false()
    elif fmt.policy == "e8m0":
        nan = e_ones
        inf = B.false()
    else:
        nan = inf = B.false()

    if fmt.policy == "e8m0":
        sig = B.const(1, 1)
        exp = E.zext(EXP_W - e) - fmt.bias
        zero = B.false()
        return FPValue(sign, exp, sig, 0, nan, inf, zero, fmt.emin, fmt.emax + 1)

    sub = E.eq(0)
    hidden = B.const(1 << m, m + 1)
    sig = ite(sub, M.zext(1), M.zext(1) | hidden) if m else ite(sub, B.const(0, 1), hidden)
    flush = flush_subnormals or (None if fmt.subnormals else "signed")
    if isinstance(flush, Runtime):      # a run-time choice (smtmodel.runtime): FLUSH_CODES per lane
        on = B.true() if not fmt.subnormals else flush.value.ne(NONE_CODE)
        sig = ite(sub & on, B.const(0, m + 1), sig)
        sign = sign & ~(sub & flush.value.eq(FLUSH_CODES["positive"]))
    elif flush:
        sig = ite(sub, B.const(0, m + 1), sig)
        if flush == "positive":
            sign = sign & ~sub
    exp = ite(sub, exp_const(B, fmt.emin), E.zext(EXP_W - e) - fmt.bias)
    zero = sig.eq(0) & ~nan
    return FPValue(sign, exp, sig, m, nan, inf, zero, fmt.emin, fmt.emax + 1)


def pack(fmt: Format, sign: Bool, biased: BV, mant: BV | None) -> BV:
    """Assemble sign, biased-exponent field and mantissa field into the format's raw bits."""
    B = biased.B
    parts = biased.uresize(fmt.ebits)
    if fmt.mbits:
        parts = parts.concat(mant.uresize(fmt.mbits))
    if fmt.signed:
        parts = sign.as_bv(1).concat(parts)
    if fmt.shift:
        parts = parts.concat(B.const(0, fmt.shift))
    return parts


def nan_bits(B, fmt: Format, pattern: int | None = None) -> BV:
    pattern = fmt.canonical_nan if pattern is None else pattern
    if pattern is None:
        raise FormatError(f"{fmt.name} has no NaN encoding")
    return B.const(pattern, fmt.width)


def inf_bits(fmt: Format, sign: Bool) -> BV:
    B = sign.B
    return pack(fmt, sign, B.const((1 << fmt.ebits) - 1, fmt.ebits), B.const(0, max(fmt.mbits, 1)))


def max_finite_bits(fmt: Format, sign: Bool) -> BV:
    B = sign.B
    return pack(fmt, sign, B.const(fmt.emax + fmt.bias, fmt.ebits), B.const(fmt.max_mantissa, max(fmt.mbits, 1)))


def zero_bits(fmt: Format, sign: Bool) -> BV:
    B = sign.B
    if not fmt.has_neg_zero:
        sign = B.false()
    return pack(fmt, sign, B.const(0, fmt.ebits), B.const(0, max(fmt.mbits, 1)))
