"""The exact reference c + sum a_k b_k as a wide fixed-point value, and errors against it.

Everything is in the semantic core: a value is a two's-complement integer ``X`` of ``W`` bits
meaning ``X * 2^lsb0`` (a static ``lsb0`` below every term's last bit), so the NumPy twin and the
solvers compute the same integers. Errors are ``d - exact`` in those units; :func:`ulp_units`
gives ulp_fp32(exact) in the same units (fp32's subnormal ulp below 2^-126).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..bv import BV, Bool, abs_signed, clamp_shift, clz, ite, smax, sum_all
from ..fp import mul_exact
from ..fp.value import EXP_W, FPValue, exp_const


def narrow(v: FPValue, lo: int | None, hi: int | None) -> FPValue:
    """The same value with a tighter static exponent range (sound only where the caller asserts
    that every non-zero finite value has its exponent in [lo, hi])."""
    if lo is None:
        return v
    return FPValue(v.sign, v.exp, v.sig, v.frac, v.nan, v.inf, v.zero, max(v.exp_lo, lo), min(v.exp_hi, hi + 1))


def _bits_for(n: int) -> int:
    return max(2, n.bit_length() + 1)


def to_fixed(v: FPValue, lsb0: int, W: int) -> BV:
    """Finite ``v`` as a W-bit two's-complement multiple of 2^lsb0 (non-finite or zero: 0).
    Requires lsb0 <= v.lsb_lo and v.lsb_hi - lsb0 + sig width < W."""
    B = v.B
    if v.lsb_lo < lsb0:
        raise ValueError(f"term reaches 2^{v.lsb_lo}, below the window's 2^{lsb0}")
    span = v.lsb_hi - lsb0
    if span + v.sig.w >= W:
        raise ValueError("window too narrow")
    amount = clamp_shift(v.exp - v.frac - lsb0, span, _bits_for(span))
    mag = v.sig.uresize(W) << amount.uresize(W)
    mag = ite(v.finite_nonzero, mag, B.const(0, W))
    return ite(v.sign, -mag, mag)


@dataclass
class Window:
    """A fixed-point window: value = X * 2^lsb0 with X a W-bit two's-complement integer."""

    lsb0: int
    W: int

    @classmethod
    def covering(cls, terms: list[FPValue], extra_terms: int = 0, guard: int = 4) -> "Window":
        lsb0 = min(t.lsb_lo for t in terms)
        top = max(t.lsb_hi + t.sig.w for t in terms)
        n = len(terms) + extra_terms
        return cls(lsb0, top - lsb0 + n.bit_length() + guard + 1)


def products(a: list[FPValue], b: list[FPValue]) -> list[FPValue]:
    return [mul_exact(x, y) for x, y in zip(a, b)]


def exact_fixed(terms: list[FPValue], win: Window) -> BV:
    return sum_all([to_fixed(t, win.lsb0, win.W) for t in terms])


def abs_fixed(x: BV) -> BV:
    return abs_signed(x)[1]


def top_position(mag: BV, win: Window) -> BV:
    """Exponent (EXP_W bits, signed) of the leading 1 of an unsigned magnitude in ``win``
    (meaningless for 0)."""
    lz = clz(mag)
    lz = lz.uresize(EXP_W) if lz.w <= EXP_W else lz.extract(EXP_W - 1, 0)
    return exp_const(mag.B, win.lsb0 + win.W - 1) - lz


def ulp_units(mag: BV, win: Window, p: int = 24, emin: int = -126) -> BV:
    """ulp of a precision-``p`` format (fp32: p = 24, emin = -126) at the value ``mag`` (unsigned,
    in ``win``), as a W-bit integer multiple of 2^lsb0; 0 gives the subnormal ulp."""
    B = mag.B
    e = smax(top_position(mag, win), exp_const(B, emin))
    e = ite(mag.eq(0), exp_const(B, emin), e)
    sh = e - (p - 1) - win.lsb0
    if emin - (p - 1) < win.lsb0:
        raise ValueError("window does not reach the format's subnormal ulp")
    amount = clamp_shift(sh, win.W - 1, _bits_for(win.W))
    return B.const(1, win.W) << amount.uresize(win.W)


def pow2_units(e: BV, win: Window) -> BV:
    """2^e (e a signed EXP_W-bit exponent) in ``win`` units (clamped into the window)."""
    amount = clamp_shift(e - win.lsb0, win.W - 1, _bits_for(win.W))
    return e.B.const(1, win.W) << amount.uresize(win.W)


def scaled_ge(lhs_mag: BV, rhs: BV, q: int, num: int) -> Bool:
    """``lhs_mag * 2^q >= num * rhs`` for unsigned W-bit values, computed without overflow."""
    extra = q + max(1, num.bit_length()) + 2
    w = max(lhs_mag.w, rhs.w) + extra
    return (lhs_mag.uresize(w) << q).uge(rhs.uresize(w) * num)
