"""The dataflow's steps around the chains, each a composition of the core's operations
(:mod:`smtmodel.fp`: ``fp_add``, ``fp_mul``, ``fma``, ``convert``), on bit vectors of any backend.

:mod:`.compose` composes them into a GEMM once; its readings run them on one element's terms
(:mod:`smtmodel.dataflow.element`) or elementwise on whole matrices (:mod:`smtmodel.gemm`, NumPy
or compiled): one semantics, several readings. Constants (alpha, beta, scale_result) are raw bits
of the epilogue format.
"""

from __future__ import annotations

from ..formats import get_format
from ..fp import convert, fma
from ..fp.classify import is_inf, is_nan, sign_of
from ..fp.exact import fp_add, fp_mul
from ..fp.value import max_finite_bits, zero_bits

FP8 = ("fp8e4m3", "fp8e5m2")


def to_fmt(x, src: str, dst: str):
    """x converted RNE from ``src`` to ``dst`` (itself when equal)."""
    return x if get_format(src).name == get_format(dst).name else convert(x, src, dst)


def zero(B, fmt: str):
    """+0 of ``fmt``."""
    return zero_bits(get_format(fmt), B.false())


def add(x, y, E: str):
    """x + y in the combine format, RNE (FADD)."""
    return fp_add(x, y, E)


def ffma(s, p, acc, E: str):
    """acc + s * p with one rounding (FFMA with a per-block scale)."""
    return fma(s, p, acc, E)


def epilogue(acc, c, E: str, form: str, alpha_bits: int, beta_bits: int, c_fmt: str, use_c: str):
    """D in the epilogue format ``E`` from acc (in E) and C (in ``c_fmt``).

    ``use_c``: ``"read"`` the form as written with C; ``"skip"`` C not read: RN(alpha*acc);
    ``"fma0"`` fma(alpha, acc, +0) (cuBLASLt's beta = 0). Forms: ``fma_acc`` fma(alpha, acc,
    RN(beta*C)) (CUTLASS 2.x LinearCombination), ``fma_c`` fma(beta, C, RN(alpha*acc)) (CUTLASS
    3.x SM90, Tensile), ``alpha_acc`` RN(alpha*acc)."""
    B = acc.B
    wE = get_format(E).width
    al = B.const(alpha_bits, wE)
    if form == "alpha_acc" or use_c == "skip":
        return fp_mul(al, acc, E)
    if use_c == "fma0":
        return fma(al, acc, zero(B, E), E)
    be = B.const(beta_bits, wE)
    cE = to_fmt(c, c_fmt, E)
    if form == "fma_acc":
        return fma(al, acc, fp_mul(be, cE, E), E)
    return fma(be, cE, fp_mul(al, acc, E), E)


def c_prescale(c, c_fmt: str, E: str, rule: str, alpha_bits: int, beta_bits: int, q_bits: int | None):
    """C as it enters the accumulator (in ``c_fmt``): C, RN(beta*C), or RN(C*q) with
    q = RN(beta/alpha) (``q_bits``, computed once per call)."""
    if rule == "none":
        return c
    B = c.B
    wE = get_format(E).width
    k = B.const(beta_bits if rule == "beta" else q_bits, wE)
    return to_fmt(fp_mul(k, to_fmt(c, c_fmt, E), E), E, c_fmt)


def output(y, E: str, out: str, via: str, saturate: bool, sr_bits: int | None, nan: str):
    """D in the output format from y (epilogue format): scale_result (``sr_bits``, RN in E)
    first, then one RNE rounding (``via="fp32"``: to fp32 first); FP8 outputs saturated to
    +-max (infinities included, NaN passes) when ``saturate``; NaN written as NVIDIA's canonical
    pattern (all ones but the sign) with ``nan="nvidia"``."""
    B = y.B
    if sr_bits is not None:
        y = fp_mul(y, B.const(sr_bits, get_format(E).width), E)
    src = E
    if via == "fp32" and get_format(E).width > 32 and get_format(out).width <= 32:
        y, src = convert(y, E, "fp32"), "fp32"
    fo = get_format(out)
    if fo.name in FP8 and saturate:
        r = convert(y, src, out, "RNE", overflow="saturate")
        r = is_inf(y, src).ite(max_finite_bits(fo, sign_of(y, src)), r)
    else:
        r = to_fmt(y, src, out)
    if nan == "nvidia":
        r = is_nan(y, src).ite(B.const((1 << (fo.width - 1)) - 1, fo.width), r)
    return r


def beta_over_alpha(E: str, alpha_bits: int, beta_bits: int) -> int:
    """RN_E(beta / alpha), the constant of the ``c_scale=beta/alpha`` pre-scale, computed once per
    call: the exact quotient rounded once (Python's Fraction -> float is correctly rounded; for
    fp32, float64 then fp32 is innocuous double rounding for a quotient, 53 >= 2*24 + 2)."""
    from fractions import Fraction

    import numpy as np

    from ..formats import numpy_to_bits
    from ..fp.classify import exact_value
    from .spec import DataflowError
    al, be = exact_value(alpha_bits, E), exact_value(beta_bits, E)
    if not isinstance(al, Fraction) or not isinstance(be, Fraction) or al == 0:
        raise DataflowError("the beta/alpha pre-scale needs finite alpha != 0 and finite beta")
    q = float(be / al)
    return int(numpy_to_bits(np.array(q, dtype=np.float64 if E == "fp64" else np.float32), E))
