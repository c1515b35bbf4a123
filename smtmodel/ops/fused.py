"""Multi-term fixed-point summation: align at the largest exponent, cut each term to F bits.

This is step 2 of seed 000 Algorithm 7 (T-FDPA) and of its scaled, grouped and AMD variants,
written once. A :class:`Term` is an exact value ``sig * 2^(exp - frac)`` whose real significand
``sig / 2^frac`` is below ``2^ibits`` (2 for unnormalised products, 1 for c), with the exponent
``aexp`` it takes part in the alignment with.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..bv import BV, Bool, abs_signed, clamp_shift, ite, smax_all, sum_all
from ..fp.value import EXP_W, FPValue, exp_const
from ..runtime import NONE_CODE, Runtime, static

ZERO_EXP = -126
"""Alignment exponent of a zero significand (seed 000's simulator gives every zero the exponent
-126; a zero product a*b then aligns at -126 + Exp(b))."""

NEVER = -(1 << (EXP_W - 2))
"""Alignment exponent of a term that must never set e_max."""


@dataclass
class Term:
    v: FPValue
    ibits: int
    aexp: BV

    @property
    def B(self):
        return self.v.B


def value_term(x: FPValue, zero_align: str = "seed000", ibits: int = 1) -> Term:
    """A decoded input (e.g. c) as a term; zeros align per ``zero_align`` (see product_term)."""
    return Term(x, ibits, _zero_aexp(x, x.exp, zero_align, ZERO_EXP))


def product_term(a: FPValue, b: FPValue, prod: FPValue, normalize: bool = False,
                 zero_align: str = "seed000") -> Term:
    """The exact product as a term; e = Exp(a) + Exp(b) (seed 000 Algorithm 7 step 1).

    ``normalize``: products in [2, 4) align with exponent e + 1, as if normalised to FP32 first
    (seed 002 Algorithm 1, the rival of seeds 000/001's unnormalised products).
    ``zero_align``: ``"seed000"`` gives a zero operand the exponent -126, so the product aligns
    at -126 + Exp(other); ``"ignore"`` keeps zero products out of the maximum.
    """
    top = prod.sig.msb() if prod.sig.w == a.sig.w + b.sig.w else prod.B.false()
    e = ite(top, prod.exp + 1, prod.exp) if normalize else prod.exp
    B = prod.B
    if zero_align == "seed000":
        ea = ite(a.zero, exp_const(B, ZERO_EXP), a.exp)
        eb = ite(b.zero, exp_const(B, ZERO_EXP), b.exp)
        e = ite(prod.zero, ea + eb, e)
    elif zero_align == "ignore":
        e = ite(prod.zero, exp_const(B, NEVER), e)
    else:
        raise ValueError(f"zero_align must be 'seed000' or 'ignore', got {zero_align!r}")
    return Term(prod, 1 if normalize else 2, e)


def _zero_aexp(x: FPValue, e: BV, zero_align: str, zero_exp: int) -> BV:
    B = x.B
    if zero_align == "seed000":
        return ite(x.zero, exp_const(B, zero_exp), e)
    if zero_align == "ignore":
        return ite(x.zero, exp_const(B, NEVER), e)
    raise ValueError(f"zero_align must be 'seed000' or 'ignore', got {zero_align!r}")


def acc_width(terms: list[Term], F, carry) -> int:
    """Two's-complement accumulator width: sign + integer bits (+ carry bits) + F. A run-time F
    or carry (:class:`~smtmodel.runtime.Runtime`) takes its largest choice (None: unbounded)."""
    ibits = max(t.ibits for t in terms)
    unbounded = max(1, (len(terms) - 1).bit_length())
    if isinstance(carry, Runtime):
        extra = max([c for c in carry.choices if c is not None] + ([unbounded] if carry.has_none else []))
    else:
        extra = carry if carry is not None else unbounded
    return 1 + ibits + extra + static(F)


def align_term(t: Term, emax: BV, F: int, W: int, rounding: str = "RZ", cut: BV | None = None) -> BV:
    """``t`` in units of 2^(emax - F): RZ (magnitude truncated) or RD (floor), two's complement,
    ``W`` bits. Non-finite terms contribute 0. ``cut`` (a run-time F below this F, as an
    ``EXP_W``-bit BV F - F_lane): the term is cut at 2^(emax - F_lane) and stays in units of
    2^(emax - F), i.e. its ``cut`` low bits are zero."""
    B = t.B
    v = t.v
    pre = max(0, F - v.frac)                      # static left shift: then every shift is right
    wx = max(v.sig.w + pre, t.ibits + F) + 2
    X = v.sig.uresize(wx) << pre
    shift = emax - v.exp + (v.frac + pre - F)     # >= 0 whenever exp <= emax (bits lost below F)
    if cut is not None:
        shift = shift + cut
    r = clamp_shift(shift, wx, wx)
    mag = X.lshr(r)
    if rounding == "RD":
        lost = X.ne(mag << r)
        mag = mag + (lost & v.sign).as_bv(wx)
    elif rounding != "RZ":
        raise ValueError(f"alignment rounding must be RZ or RD, got {rounding!r}")
    if cut is not None:
        mag = mag << clamp_shift(cut, wx, wx)
    mag = mag.uresize(W) if wx <= W else mag.extract(W - 1, 0)
    mag = ite(v.finite_nonzero, mag, B.const(0, W))
    return ite(v.sign, -mag, mag)


def truncated_sum(terms: list[Term], F, carry=None,
                  rounding: str = "RZ") -> tuple[BV, BV, int]:
    """(S, e_max, W): the fused sum ``S * 2^(e_max - F)`` of seed 000 Algorithm 7 step 2.

    S is a ``W``-bit two's-complement integer. With ``carry=None`` the accumulator is wide enough
    for any input; with a finite ``carry`` it has that many integer bits above the widest term's
    and wraps modulo 2^W on overflow: the high bits are discarded (seed 002 Algorithm 1 step 7).

    F and carry may be run-time parameters (:class:`~smtmodel.runtime.Runtime`): S is then in
    units of 2^(e_max - F_top) (F_top = ``static(F)``, the largest choice) with each term cut at
    its lane's F (the low F_top - F bits zero: the same integer times 2^(F_top - F)), and it wraps
    at its lane's carry (the modulus 2^(1 + ibits + carry + F) in units of 2^(e_max - F) is
    2^(1 + ibits + carry + F_top) in units of 2^(e_max - F_top)).
    """
    B = terms[0].B
    aexps = [ite(t.v.nan | t.v.inf, exp_const(B, NEVER), t.aexp) for t in terms]
    emax = smax_all(aexps)
    W = acc_width(terms, F, carry)
    Fs, cut = static(F), None
    if isinstance(F, Runtime):
        cut = exp_const(B, Fs) - F.value.uresize(EXP_W)
    S = sum_all([align_term(t, emax, Fs, W, rounding, cut) for t in terms])
    if isinstance(carry, Runtime):
        ibits = max(t.ibits for t in terms)
        c = carry.value.uresize(EXP_W)
        keep = ite(c.eq(NONE_CODE), exp_const(B, W), c + (1 + ibits + Fs))
        z = clamp_shift(exp_const(B, W) - keep, W, W)
        S = (S << z).ashr(z)                       # sign-extend from the lane's top bit
    return S, emax, W


def signed_value(S: BV) -> tuple[Bool, BV]:
    """(sign, magnitude) of a two's-complement accumulator."""
    return abs_signed(S)
