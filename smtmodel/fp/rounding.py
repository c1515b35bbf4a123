"""Rounding an exact value into a format, written once in the semantic core.

Modes: ``RNE`` (nearest, ties to even), ``RNA`` (nearest, ties away), ``RZ`` (toward zero),
``RU`` (toward +inf), ``RD`` (toward -inf; on a two's-complement value this is plain truncation,
the "floor" AMD CDNA3 applies, seed 000 §4.1.3 TR-FDPA), ``RTO`` (round to odd: truncate, then
set the last bit if anything was lost).

Overflow: ``"ieee"`` follows IEEE 754 §7.4 (RNE/RNA -> inf, RZ/RTO -> max finite, RU/RD by sign);
where the format has no infinity (fn/fnuz) an infinite result becomes NaN, and where it has no
NaN either (OCP FP6/FP4) the largest finite value. ``"saturate"`` always gives +-max finite;
``"inf"`` always gives +-inf, whatever the mode (NVIDIA tensor cores after RZ, seed 000 §4.2).
Underflow is gradual unless ``flush_output`` is set: then a result that is subnormal *after*
rounding becomes a zero of its sign (seed 000 Algorithm 1, FTZ-Add/FTZ-Mul).
"""

from __future__ import annotations

from ..bv import BV, Bool, clamp_shift, clz, ite, smax
from ..formats import Format, FormatError, get_format
from ..runtime import Runtime
from .value import EXP_W, FPValue, exp_const, inf_bits, max_finite_bits, nan_bits, pack, zero_bits

MODES = ("RNE", "RNA", "RZ", "RU", "RD", "RTO")
OVERFLOW = ("ieee", "saturate", "inf")


def check_mode(rm) -> str:
    if isinstance(rm, Runtime):
        if any(c is None or c >= len(MODES) for c in rm.choices):
            raise ValueError(f"a run-time rounding mode takes indices of {MODES}, got {rm.choices}")
        return rm
    if rm not in MODES:
        raise ValueError(f"unknown rounding mode {rm!r}; one of {', '.join(MODES)}")
    return rm


def round_finite(fmt: "Format | str", sign: Bool, sig: BV, exp: BV, frac: int, rm: str = "RNE",
                 overflow: str = "ieee", flush_output: bool = False) -> BV:
    """Raw bits of ``fmt`` nearest (per ``rm``) to ``(-1)^sign * sig * 2^(exp - frac)``.

    ``sig`` is an unsigned integer of any width, ``exp`` a signed ``EXP_W``-bit exponent. A zero
    ``sig`` gives a zero of the given sign (+0 in formats without -0).
    """
    fmt = get_format(fmt)
    check_mode(rm)
    if overflow not in OVERFLOW:
        raise ValueError(f"unknown overflow policy {overflow!r}; one of {', '.join(OVERFLOW)}")
    if fmt.policy == "e8m0":
        raise FormatError("rounding into e8m0 (a scale format of powers of two) is not defined here")
    if exp.w != EXP_W:
        raise ValueError(f"exponent must be {EXP_W} bits")
    B = sig.B
    W, m, p = sig.w, fmt.mbits, fmt.precision
    Wr = max(W, p + 1) + 2
    X = sig.uresize(Wr)

    lz = clz(sig).uresize(EXP_W) if W < EXP_W else clz(sig).extract(EXP_W - 1, 0)
    lsb_exp = exp - frac
    top = lsb_exp + (W - 1) - lz                       # exponent of the leading 1
    q = smax(top, exp_const(B, fmt.emin)) - m          # exponent of the result's last bit
    s = q - lsb_exp                                    # > 0: shift right, < 0: shift left
    ra = clamp_shift(s, Wr, Wr)
    la = clamp_shift(-s, Wr, Wr)
    kept = ite(s.sgt(0), X.lshr(ra), X << la)
    half = X.lshr(ra - 1).extract(0, 0).eq(1)          # ra = 0: amount wraps to >= Wr -> 0
    sticky = ra.ugt(1) & (X & ((B.const(1, Wr) << (ra - 1)) - 1)).ne(0)
    inexact = half | sticky
    odd = kept.extract(0, 0).eq(1)
    r = kept + _select(rm, lambda mode: _increment(mode, half, sticky, odd, inexact, sign, B)).as_bv(Wr)
    if isinstance(rm, Runtime) or rm == "RTO":     # round to odd: the last bit set if anything was lost
        r = r | _select(rm, lambda mode: inexact if mode == "RTO" else B.false()).as_bv(Wr)
    carry = r.eq(1 << p)
    r = ite(carry, B.const(1 << m, Wr), r)
    q = ite(carry, q + 1, q)
    normal = r.uge(1 << m)
    e_out = q + m
    biased = ite(normal, e_out + fmt.bias, exp_const(B, 0))
    mant = r.extract(m - 1, 0) if m else B.const(0, 1)
    over = normal & (e_out.sgt(fmt.emax) | (e_out.eq(fmt.emax) & mant.ugt(fmt.max_mantissa) if m else B.false()))

    result = pack(fmt, sign, biased.extract(fmt.ebits - 1, 0), mant)
    # overflow
    to_inf = _select(rm, lambda mode: _overflows_to_inf(mode, overflow, sign, B))
    if fmt.has_inf:
        big = inf_bits(fmt, sign)
    elif fmt.has_nan:
        big = nan_bits(B, fmt)
    else:
        big = max_finite_bits(fmt, sign)
    result = ite(over, ite(to_inf, big, max_finite_bits(fmt, sign)), result)
    # zero and underflow
    is_zero = r.eq(0)
    if flush_output:
        is_zero = is_zero | ~normal
    result = ite(is_zero, zero_bits(fmt, sign), result)
    if not fmt.signed:
        result = ite(sign & ~is_zero, nan_bits(B, fmt), result)
    return result


def _increment(rm: str, half: Bool, sticky: Bool, odd: Bool, inexact: Bool, sign: Bool, B) -> Bool:
    """Whether mode ``rm`` adds one unit to the truncated significand."""
    if rm == "RNE":
        return half & (sticky | odd)
    if rm == "RNA":
        return half
    if rm == "RU":
        return inexact & ~sign
    if rm == "RD":
        return inexact & sign
    return B.false()


def _overflows_to_inf(rm: str, overflow: str, sign: Bool, B) -> Bool:
    """Whether an overflow in mode ``rm`` gives infinity (else the largest finite value)."""
    if overflow == "inf":
        return B.true()
    if overflow == "saturate" or rm in ("RZ", "RTO"):
        return B.false()
    if rm == "RU":
        return ~sign
    if rm == "RD":
        return sign
    return B.true()


def _select(rm, fn) -> Bool:
    """``fn(rm)``; for a run-time mode (:class:`~smtmodel.runtime.Runtime` over indices of
    :data:`MODES`) the lane's choice among ``fn`` of each choice."""
    if not isinstance(rm, Runtime):
        return fn(rm)
    choices = list(dict.fromkeys(rm.choices))
    out = fn(MODES[choices[-1]])
    for i in reversed(choices[:-1]):
        out = ite(rm.value.eq(i), fn(MODES[i]), out)
    return out


def round_value(x: FPValue, fmt: "Format | str", rm: str = "RNE", overflow: str = "ieee",
                flush_output: bool = False, nan_pattern: int | None = None) -> BV:
    """Round a decoded value with its specials: NaN -> the format's NaN, inf -> inf (or as
    overflow would, in formats without infinities), zero -> a zero of its sign."""
    fmt = get_format(fmt)
    B = x.B
    finite = round_finite(fmt, x.sign, x.sig, x.exp, x.frac, rm, overflow, flush_output)
    if fmt.has_inf:
        inf = inf_bits(fmt, x.sign)
    elif fmt.has_nan and overflow == "ieee":
        inf = nan_bits(B, fmt, nan_pattern)
    else:
        inf = max_finite_bits(fmt, x.sign)
    nan = nan_bits(B, fmt, nan_pattern) if fmt.has_nan else max_finite_bits(fmt, x.sign)
    return ite(x.nan, nan, ite(x.inf, inf, finite))
