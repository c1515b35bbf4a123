"""AMD Matrix Core operations (seed 000 §4.1.1 and §4.1.3): FTZ-Add/FTZ-Mul with pairwise
order (CDNA2), TR-FDPA and GTR-FDPA (CDNA3)."""

from __future__ import annotations

from ..bv import BV, Bool, any_of, clamp_shift, ite
from ..fp import FPValue, fp_add, ieee_sum, mul_exact, sum_specials
from ..fp.value import EXP_W, exp_const
from ..runtime import Runtime, static
from .fdpa import IEEE, Rho, Specials, finish, scaled_product_term
from .fused import Term, align_term, product_term, signed_value, truncated_sum, value_term


def ftz_mul(x: FPValue, y: FPValue, flush: bool = True) -> BV:
    """FTZ-Mul (Algorithm 1): RNE to FP32, a subnormal result flushed to a zero of its sign
    (``flush=False``: a plain IEEE fp32 multiplication)."""
    return ieee_sum([mul_exact(x, y)], "fp32", "RNE", flush_output=flush)


def ftz_add(x_bits: BV, y_bits: BV, flush: bool = True) -> BV:
    """FTZ-Add (Algorithm 1) on FP32 bits (``flush=False``: a plain IEEE fp32 addition): the
    two-operand adder :func:`~smtmodel.fp.fp_add` (proved equal to SMT-LIB fp.add), its result
    flushed."""
    return fp_add(x_bits, y_bits, "fp32", "RNE", flush_output=flush)


def ftz_addmul(a: list[FPValue], b: list[FPValue], c_bits: BV, P: int, flush: bool = True) -> BV:
    """Φ_FTZ-AddMul (Algorithm 2): products of P consecutive pairs summed pairwise, then added to
    the accumulator in order. Inputs are decoded with subnormals flushed to +0 by the caller; c
    is flushed here. ``flush=False`` is the same order with IEEE fp32 operations and nothing
    flushed: the reading of CDNA1's fp16/bf16 units as pairwise fp32 additions, a rival of
    seed 000 Table 6's exact E-FDPA.

    P is a power of two (the pairwise tree). A last group of fewer than P products (a K below the
    block) is completed with +0 products, as a kernel pads K with zeros (+0 * +0 = +0)."""
    if P < 1 or P & (P - 1):
        raise ValueError(f"pairwise group size P must be a power of two, got {P}")
    d = _flush_fp32(c_bits) if flush else c_bits
    zero = c_bits.B.const(0, 32)
    for k in range(0, len(a), P):
        p = [ftz_mul(x, y, flush) for x, y in zip(a[k:k + P], b[k:k + P])]
        p += [zero] * (P - len(p))
        while len(p) > 1:
            p = [ftz_add(p[i], p[i + 1], flush) for i in range(0, len(p), 2)]
        d = ftz_add(d, p[0], flush)
    return d


def _flush_fp32(bits: BV) -> BV:
    from ..fp import convert

    return convert(bits, "fp32", "fp32", "RNE", flush_inputs="positive")


def _product_overflow(prods: list[FPValue]) -> tuple[Bool, Bool]:
    """(+inf, -inf): a product with |s * 2^e| >= 2^128 overflows (seed 000 §4.2, TR-FDPA)."""
    big = []
    for p in prods:
        lz_top = _top_exponent(p)
        big.append(p.finite_nonzero & lz_top.sge(128))
    pos = any_of([g & ~p.sign for g, p in zip(big, prods)])
    neg = any_of([g & p.sign for g, p in zip(big, prods)])
    return pos, neg


def _top_exponent(p: FPValue) -> BV:
    from ..bv import clz

    lz = clz(p.sig)
    lz = lz.uresize(16) if lz.w <= 16 else lz.extract(15, 0)
    return p.exp - p.frac + (p.sig.w - 1) - lz


def rd_realign(S: BV, W: int, shift: BV, up: int, Wout: int) -> BV:
    """floor(S * 2^(up - shift)) as a ``Wout``-bit two's-complement value (RD = floor)."""
    from ..bv import clamp_shift

    X = S.sext(Wout - W) << up
    amt = clamp_shift(shift, Wout - 1, max(2, (Wout).bit_length() + 1))
    return X.ashr(amt.uresize(Wout) if amt.w <= Wout else amt.extract(Wout - 1, 0))


def realign_width(WT: int, F: int, F2: int) -> int:
    """Width of TR-FDPA's step-3 accumulator (units 2^(E - F2)) for a WT-bit product sum."""
    return WT + (F2 - F) + 2


def tr_c_align(c: FPValue, E: BV, F, W: int, special_trunc: bool = False) -> BV:
    """c aligned at E and rounded down to F fraction bits (Algorithm 10 line 15), W bits; with
    ``special_trunc`` (GTR-FDPA, Algorithm 11) a c more than F + 1 binades below E is dropped.
    A run-time F (:class:`~smtmodel.runtime.Runtime`): in units of 2^(E - F_top), cut at the
    lane's F (floor, its low F_top - F bits zero)."""
    Ft, cut = static(F), None
    if isinstance(F, Runtime):
        cut = exp_const(c.B, Ft) - F.value.uresize(EXP_W)
    sc = align_term(Term(c, 1, c.exp), E, Ft, W, "RD", cut)
    if special_trunc:
        lane_F = exp_const(c.B, Ft) - cut if cut is not None else Ft
        sc = ite(c.exp.slt(E - lane_F - 1), c.B.const(0, sc.w), sc)
    return sc


def tr_fdpa(a: list[FPValue], b: list[FPValue], c: FPValue, *, F=24, F2=31,
            rho: Rho = Rho("fp32", "RNE", "fp32"), group_even_odd: bool = False,
            special_trunc: bool = False, specials: Specials = IEEE, zero_prod="seed000",
            zero_c="ignore", scale_exp: BV | None = None) -> BV:
    """TR-FDPA (seed 000 Algorithm 10) and, with ``group_even_odd``/``special_trunc``, GTR-FDPA
    (Algorithm 11): products summed with truncation to F bits (per group), group sums rounded
    down to F bits at their common exponent, then the sum rounded down to F2 bits and c to F bits
    at E = max(e_max, e_c) and added; ρ = RNE-FP32. Zero products align in step 2 per the zero
    rule ``zero_prod``, c = +-0 in E per ``zero_c`` (:func:`~smtmodel.ops.fused.zero_aexp`).
    GTR-FDPA of a single product (K = 1) has an empty odd group: the even group's sum is T.

    F and F2 may be run-time parameters (:class:`~smtmodel.runtime.Runtime`, F <= F2 in every
    lane): the sums are formed at F_top and F2_top (the largest choices) and each is cut at its
    lane's value, exactly as :func:`~smtmodel.ops.fused.truncated_sum` does for F: the step-2 sum
    T is the lane's times 2^(F_top - F) (GTR's group sums each floored at the lane's F after their
    realignment); realigned to 2^(E - F2_top) and floored at the lane's F2
    it is the lane's T' times 2^(F2_top - F2) (a floor of a floor); c floored at the lane's F and
    moved up by F2_top - F_top is the lane's c term times the same power, so the rounded sum is
    the lane's (the same value, read at ``frac`` = F2_top).

    ``scale_exp``: the block's scale exponent sum (E8M0 per block), added to every product's
    exponent before step 2 as ST-FDPA (Algorithm 8) adds it to T-FDPA's: the scaled reading of
    the CDNA3 datapath that the CDNA4 block-scaled MFMA hypotheses take (no seed measures one)."""
    Ft, F2t = static(F), static(F2)
    if scale_exp is None:
        prods = [mul_exact(x, y) for x, y in zip(a, b)]
        terms = [product_term(x, y, p, zero_prod=zero_prod) for x, y, p in zip(a, b, prods)]
    else:                    # each product times 2^scale_exp, its value and its alignment exponent
        terms = [scaled_product_term(x, y, scale_exp, zero_prod=zero_prod) for x, y in zip(a, b)]
        prods = [t.v for t in terms]
    if group_even_odd and len(terms) > 1:      # one product (K = 1): the odd group is empty, no term
        (Se, ee, We), (So, eo, Wo) = truncated_sum(terms[0::2], F), truncated_sum(terms[1::2], F)
        from ..bv import smax

        emax = smax(ee, eo)
        Wg = max(We, Wo) + 1
        Te = rd_realign(S=Se, W=We, shift=emax - ee, up=0, Wout=Wg)
        To = rd_realign(S=So, W=Wo, shift=emax - eo, up=0, Wout=Wg)
        if isinstance(F, Runtime):                                  # each floored at the lane's F
            z = clamp_shift(exp_const(c.B, Ft) - F.value.uresize(EXP_W), Wg - 1, Wg)
            Te, To = Te.ashr(z) << z, To.ashr(z) << z
        T, WT = Te + To, Wg
    else:
        T, emax, WT = truncated_sum(terms, F)
    # Step 3: align T (F bits at emax) and c at E = max(emax, e_c)
    ec = value_term(c, zero_c).aexp
    from ..bv import smax

    E = smax(emax, ec)
    Wout = realign_width(WT, Ft, F2t)
    Tp = rd_realign(T, WT, E - emax, F2t - Ft, Wout)               # units 2^(E - F2)
    if isinstance(F2, Runtime):                                     # floored at the lane's F2
        z = clamp_shift(exp_const(c.B, F2t) - F2.value.uresize(EXP_W), Wout - 1, Wout)
        Tp = Tp.ashr(z) << z
    sc = tr_c_align(c, E, F, Wout - (F2t - Ft), special_trunc)      # units 2^(E - F)
    S = Tp + (sc.sext(F2t - Ft) << (F2t - Ft))
    sign, mag = signed_value(S)
    nan, inf, inf_sign = sum_specials(prods + [c])
    pos, neg = _product_overflow(prods)
    nan = nan | (pos & neg) | (inf & ((pos & inf_sign) | (neg & ~inf_sign)))
    inf = (inf | pos | neg) & ~nan
    inf_sign = ite(pos | neg, neg, inf_sign)
    return finish(sign, mag, E, F2t, nan, inf, inf_sign, rho, specials)
