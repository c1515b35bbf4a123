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
"""Exp(0) of the earlier convention (the catalog's first reading of seed 000's simulator code):
every zero input has the exponent -126, so a zero product a*b aligns at -126 + Exp(b) and c = +-0
at -126 (the ``"seed000"`` zero rule)."""

NEVER = -(1 << (EXP_W - 2))
"""Alignment exponent of a term that must never set e_max."""

ZERO_RULE_NAMES = ("seed000", "ignore")
"""Named zero rules; any integer in :data:`ZERO_FIXED_RANGE` is the third kind (a fixed e_zero)."""

ZERO_FIXED_RANGE = (-1000, 1000)
"""Fixed zero exponents a rule may name (well inside ``EXP_W``-bit exponent arithmetic)."""


def check_zero_rule(rule) -> None:
    """Raise ValueError unless ``rule`` is a zero rule: ``"seed000"`` (the earlier convention of
    its place), ``"ignore"`` (zeros left out of the maximum) or an int e (zeros align at e)."""
    if isinstance(rule, bool) or not (rule in ZERO_RULE_NAMES or isinstance(rule, int)):
        raise ValueError(f"a zero rule is seed000, ignore or an integer exponent, got {rule!r}")
    if isinstance(rule, int) and not ZERO_FIXED_RANGE[0] <= rule <= ZERO_FIXED_RANGE[1]:
        raise ValueError(f"a fixed zero exponent lies in {ZERO_FIXED_RANGE}, got {rule}")


def zero_aexp(zero, e: BV, rule, earlier: "BV | None" = None) -> BV:
    """The alignment exponent of a term with exponent ``e`` that is zero when ``zero``, per the
    zero rule of its place: ``"seed000"`` -> ``earlier`` (the place's earlier convention, given by
    the caller), ``"ignore"`` -> :data:`NEVER`, an int -> that fixed exponent (MMA-Sim 2.1.1's
    e_zero: with a zero present, every nonzero term below it is cut at 2^(e_zero - F))."""
    check_zero_rule(rule)
    B = e.B
    if rule == "seed000":
        z = earlier
    elif rule == "ignore":
        z = exp_const(B, NEVER)
    else:
        z = exp_const(B, rule)
    return ite(zero, z, e)


@dataclass
class Term:
    v: FPValue
    ibits: int
    aexp: BV
    peak: int | None = None       # the largest value v.sig can take (None: all ones of its width)

    @property
    def B(self):
        return self.v.B


def value_term(x: FPValue, zero_c="seed000", ibits: int = 1) -> Term:
    """A decoded input (e.g. c) as a term; a zero aligns per the zero rule ``zero_c``
    (``"seed000"``: at :data:`ZERO_EXP`; see :func:`zero_aexp`)."""
    return Term(x, ibits, zero_aexp(x.zero, x.exp, zero_c, exp_const(x.B, ZERO_EXP)))


def product_term(a: FPValue, b: FPValue, prod: FPValue, normalize: bool = False,
                 zero_prod="seed000", scale_exp: "BV | None" = None) -> Term:
    """The exact product as a term; e = Exp(a) + Exp(b) (seed 000 Algorithm 7 step 1), plus the
    block scales' exponent sum ``scale_exp`` where there is one (Algorithm 8).

    ``normalize``: products in [2, 4) align with exponent e + 1, as if normalised to FP32 first
    (seed 002 Algorithm 1, the rival of seeds 000/001's unnormalised products).
    ``zero_prod``: the zero rule of a zero product (:func:`zero_aexp`); its ``"seed000"`` reading
    gives a zero operand the exponent -126, so the product aligns at -126 + Exp(other) (+ the
    scales); a fixed e_zero is not moved by the scales (MMA-Sim 2.1.1 arithmetic/fdpa.py:176-177).
    """
    top = prod.sig.msb() if prod.sig.w == a.sig.w + b.sig.w else prod.B.false()
    e = ite(top, prod.exp + 1, prod.exp) if normalize else prod.exp
    B = prod.B
    earlier = None
    if zero_prod == "seed000":
        ea = ite(a.zero, exp_const(B, ZERO_EXP), a.exp)
        eb = ite(b.zero, exp_const(B, ZERO_EXP), b.exp)
        earlier = ea + eb
        if scale_exp is not None:
            earlier = earlier + scale_exp
    if scale_exp is not None:
        e = e + scale_exp
    peak = ((1 << a.sig.w) - 1) * ((1 << b.sig.w) - 1) if prod.sig.w == a.sig.w + b.sig.w else None
    return Term(prod, 1 if normalize else 2, zero_aexp(prod.zero, e, zero_prod, earlier), peak)


def filled_carry(terms: list[Term], F) -> int:
    """The carry bits the terms can fill at most: the least e with 2^(ibits + e + F) above the
    largest magnitude their sum can take, in units of 2^(e_max - F) (F: the largest choice of a
    run-time F). A term is ``sig * 2^(exp - frac)`` with exp <= its alignment exponent <= e_max,
    so it is at most min(peak * 2^(F - frac), 2^(ibits + F)) units (peak: the largest ``sig``, from
    the widths: a product of a p_a- and a p_b-bit significand is at most (2^p_a - 1)(2^p_b - 1));
    aligning rounds down in magnitude, or up by less than a unit at the lane's F (RD on a negative
    term: 2^(F_top - F_lane) units of F_top). E.g. 32 fp8 e4m3 products (each below 3.52) and an
    fp32 c (below 2) stay below 128 = 2^(2 + 5): 5 carry bits, where ceil(log2 33) = 6."""
    Fs = static(F)
    slack = 1 << (Fs - min(c for c in F.choices if c is not None)) if isinstance(F, Runtime) else 1
    ibits = max(t.ibits for t in terms)
    total = 0
    for t in terms:
        peak = t.peak if t.peak is not None else (1 << t.v.sig.w) - 1
        frac = t.v.frac
        units = min(-(-(peak << Fs) >> frac) if frac >= 0 else peak << (Fs - frac), 1 << (t.ibits + Fs))
        total += units + slack
    e = 0
    while (1 << (ibits + e + Fs)) <= total:
        e += 1
    return e


def acc_width(terms: list[Term], F, carry) -> int:
    """Two's-complement accumulator width: sign + integer bits (+ carry bits) + F. A run-time F
    or carry (:class:`~smtmodel.runtime.Runtime`) takes its largest choice (None: unbounded).

    Unbounded is ceil(log2 n) carry bits for n terms: each term's magnitude is below
    2^(ibits + F) units, so their sum is below n * 2^(ibits + F) <= 2^(ceil(log2 n) + ibits + F).
    A static carry at least as wide as the terms can fill (:func:`filled_carry`, at most that)
    never wraps either, so it is the unbounded accumulator: the same function, and the same traced
    terms (identify proves such points alike without a solver)."""
    ibits = max(t.ibits for t in terms)
    unbounded = max(1, (len(terms) - 1).bit_length())
    if isinstance(carry, Runtime):
        extra = max([c for c in carry.choices if c is not None] + ([unbounded] if carry.has_none else []))
    elif carry is None or carry >= unbounded or carry >= filled_carry(terms, F):
        extra = unbounded
    else:
        extra = carry
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
