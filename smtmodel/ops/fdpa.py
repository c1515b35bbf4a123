"""Fused dot-product-add operations (seed 000 §4.1.3): E-FDPA, T-FDPA, ST-FDPA, GST-FDPA.

Each takes decoded inputs (lists of :class:`~smtmodel.fp.FPValue`) and returns raw output bits.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..bv import BV, Bool, ite
from ..formats import Format, get_format
from ..fp import FPValue, decode, fp_add, ieee_sum, inf_bits, mul_exact, round_finite, sum_specials, zero_bits
from ..runtime import static
from .fused import Term, product_term, signed_value, truncated_sum, value_term, zero_aexp


@dataclass(frozen=True)
class Rho:
    """Output conversion ρ of seed 000 Table 2: round to ``target`` with ``rm``, stored as
    ``container`` (RZ-E8M13 rounds to E8M13 and stores an fp32 pattern)."""

    target: str
    rm: str
    container: str

    @property
    def name(self) -> str:
        return f"{self.rm}-{self.target.upper()}"


class _RhoTable(dict):
    """The named output conversions; any ``MODE-TARGET`` name is read on demand: a rounding mode
    of the core (:data:`smtmodel.fp.rounding.MODES`) and FP32, FP16 or an intermediate E8M<n>
    (1 <= n <= 23, stored as fp32: the generalisation of seed 000's RZ-E8M13 that open
    hypothesis spaces range over). A :class:`Rho` given directly is taken as it is (a run-time
    mode, :mod:`smtmodel.runtime`)."""

    def __missing__(self, key):
        if isinstance(key, Rho):
            return key
        rho = _parse_rho(key)
        if rho is None:
            raise KeyError(key)
        self[key] = rho           # parsed once: a batched space looks its ρ up per lane and per call
        return rho

    def __contains__(self, key):
        return dict.__contains__(self, key) or isinstance(key, Rho) or _parse_rho(key) is not None


def _parse_rho(name) -> "Rho | None":
    from ..fp.rounding import MODES
    if not isinstance(name, str):
        return None
    rm, _, tgt = name.partition("-")
    tgt = tgt.upper()
    if rm not in MODES:
        return None
    if tgt in ("FP32", "FP16"):
        return Rho(tgt.lower(), rm, tgt.lower())
    if tgt.startswith("E8M") and tgt[3:].isdigit() and 1 <= int(tgt[3:]) <= 23:
        return Rho(f"{tgt.lower()},container=32", rm, "fp32")
    return None


RHO = _RhoTable({
    "RZ-FP32": Rho("fp32", "RZ", "fp32"),
    "RZ-E8M13": Rho("e8m13,container=32", "RZ", "fp32"),
    "RNE-FP32": Rho("fp32", "RNE", "fp32"),
    "RNE-FP16": Rho("fp16", "RNE", "fp16"),
    "RZ-FP16": Rho("fp16", "RZ", "fp16"),
})


def rho_format(rho: Rho) -> Format:
    if rho.target.startswith("e8m"):
        n = int(rho.target.split(",")[0][3:])
        return Format(f"e8m{n}", 8, n, 127, container=32)
    return get_format(rho.target)


@dataclass(frozen=True)
class Specials:
    """How an operation encodes special results (seed 000 §4.2, seed 002 §4.4)."""

    nan: str = "nvidia"          # "nvidia": 0x7FFFFFFF / 0x7FFF; "canonical": the format's qNaN
    zero: str = "positive"       # "positive": every zero result is +0; "ieee": IEEE 754 §6.3
    overflow: str = "inf"        # passed to rounding: "inf", "ieee" or "saturate"

    def nan_pattern(self, fmt: Format) -> int | None:
        if self.nan == "nvidia":
            return {32: 0x7FFFFFFF, 16: 0x7FFF}.get(fmt.width, fmt.canonical_nan)
        return fmt.canonical_nan


NVIDIA = Specials()
IEEE = Specials("canonical", "ieee", "ieee")


def finish(sign: Bool, mag: BV, exp: BV, frac: int, nan: Bool, inf: Bool, inf_sign: Bool,
           rho: Rho, specials: Specials) -> BV:
    """Step 3 of Algorithm 7: ρ(S * 2^(exp - frac)), with NaN / inf / zero encoded per specials."""
    B = mag.B
    tgt, out = rho_format(rho), get_format(rho.container)
    if specials.zero == "positive":
        sign = sign & mag.ne(0)
    bits = round_finite(tgt, sign, mag, exp, frac, rho.rm, specials.overflow)
    if tgt.width != out.width:
        raise ValueError(f"ρ target {tgt.name} does not fit container {out.name}")
    if specials.zero == "positive":
        bits = ite(bits.eq(zero_bits(out, B.true())), zero_bits(out, B.false()), bits)
    return ite(nan, B.const(specials.nan_pattern(out), out.width), ite(inf, inf_bits(out, inf_sign), bits))


def scaled_product_term(x: FPValue, y: FPValue, scale_exp: BV | None = None, normalize: bool = False,
                        zero_prod="seed000") -> Term:
    """The exact product x*y as a summand of T-FDPA (seed 000 Algorithm 7 step 1); with the E8M0
    scale exponent sum ``scale_exp`` of ST-FDPA (Algorithm 8), 2^scale_exp * x*y, aligning at
    Exp(x) + Exp(y) + scale_exp. A zero product aligns per the zero rule ``zero_prod``
    (:func:`~smtmodel.ops.fused.product_term`)."""
    p = mul_exact(x, y)
    t = product_term(x, y, p, normalize, zero_prod, scale_exp)
    if scale_exp is None:
        return t
    # the value moves by the scale, once (Algorithm 8 line 4); product_term moved its exponent
    v = FPValue(p.sign, p.exp + scale_exp, p.sig, p.frac, p.nan, p.inf, p.zero, p.exp_lo - 254, p.exp_hi + 254)
    return Term(v, t.ibits, t.aexp, t.peak)


def t_fdpa(a: list[FPValue], b: list[FPValue], c: FPValue, *, F, rho: Rho,
           carry=None, normalize: bool = False, zero_prod="seed000", zero_c="seed000",
           specials: Specials = NVIDIA, scale_exp: BV | None = None) -> BV:
    """Truncated FDPA (seed 000 Algorithm 7); with ``scale_exp`` it is ST-FDPA (Algorithm 8):
    the E8M0 scale exponents are added to every product's exponent. Zero products and c = +-0
    align per the zero rules ``zero_prod`` and ``zero_c`` (:func:`~smtmodel.ops.fused.zero_aexp`)."""
    terms = [scaled_product_term(x, y, scale_exp, normalize, zero_prod) for x, y in zip(a, b)]
    prods = [t.v for t in terms]
    terms.append(value_term(c, zero_c))
    nan, inf, inf_sign = sum_specials(prods + [c])
    S, emax, _ = truncated_sum(terms, F, carry)      # F, carry: constants or run-time (smtmodel.runtime)
    sign, mag = signed_value(S)
    return finish(sign, mag, emax, static(F), nan, inf, inf_sign, rho, specials)


def add_late_c(d: BV, out: str, c: BV, c_fmt: str, specials: Specials = NVIDIA, rm: str = "RNE") -> BV:
    """d + c with one IEEE rounding (``rm``, RNE by default) in ``out``: c enters after the
    products (seed 001 §IV-A5/A6, the FP8 mma.sync path on Hopper/Blackwell). Same formats: the
    two-operand adder ``fp_add`` (proved equal to SMT-LIB fp.add), with the NaN encoding of
    ``specials``."""
    fmt, cf = get_format(out), get_format(c_fmt)
    nan = specials.nan_pattern(fmt)
    if cf == fmt:
        r = fp_add(d, c, fmt, rm)
        return ite(decode(r, fmt).nan, d.B.const(nan, fmt.width), r)
    return ieee_sum([decode(d, fmt), decode(c, cf)], fmt, rm, nan_pattern=nan)


def e_fdpa(a: list[FPValue], b: list[FPValue], c: FPValue, out: str = "fp32",
           rm: str = "RNE") -> BV:
    """Exact FDPA (seed 000 Algorithm 6): c + sum a_k b_k with one rounding (AMD CDNA1)."""
    return ieee_sum([mul_exact(x, y) for x, y in zip(a, b)] + [c], out, rm)


def group_sum(a: list[FPValue], b: list[FPValue]) -> tuple[list[FPValue], Bool, BV, int]:
    """(products, sign, magnitude, f0): the exact dot product of a GST-FDPA group before its
    scales (seed 000 Algorithm 9), value ``(-1)^sign magnitude 2^-f0`` (``fp.exact_sum``)."""
    from ..fp import exact_sum

    prods = [mul_exact(x, y) for x, y in zip(a, b)]
    sgn, mag, _, f0 = exact_sum(prods)
    return prods, sgn, mag, f0


def scale_group(sgn: Bool, mag: BV, f0: int, s_a: FPValue, s_b: FPValue) -> FPValue:
    """The scale step of a GST-FDPA group (seed 000 Algorithm 9): the group's exact sum
    ``(-1)^sgn mag 2^-f0`` times the two scales' significands, as an FPValue at the scale
    exponent sum ea + eb (its value ``(-1)^sgn sig 2^(ea + eb - frac)``, nothing lost: ``sig``
    is wide enough for the product). :func:`group_term` is :func:`group_sum` followed by this step."""
    B = s_a.B
    w = mag.w + s_a.sig.w + s_b.sig.w
    sig = mag.uresize(w) * s_a.sig.uresize(w) * s_b.sig.uresize(w)
    # value = sig * 2^(ea + eb - (f0 + fa + fb)); the group aligns at ea + eb (Algorithm 9)
    frac = f0 + s_a.frac + s_b.frac
    return FPValue(sgn, s_a.exp + s_b.exp, sig, frac, s_a.nan | s_b.nan, B.false(), sig.eq(0),
                   s_a.exp_lo + s_b.exp_lo, s_a.exp_hi + s_b.exp_hi)


def group_term(a: list[FPValue], b: list[FPValue], s_a: FPValue, s_b: FPValue,
               zero_group="seed000", zero_scale="seed000") -> tuple[Term, list[FPValue]]:
    """(term, products) of one group of GST-FDPA (seed 000 Algorithm 9): the exact dot product of
    the group times the two scales' significands, aligning at the scale exponent sum ea + eb.

    Zero rules (:func:`~smtmodel.ops.fused.zero_aexp`; ``"seed000"`` keeps ea + eb, a zero scale
    at its format's minimum exponent): ``zero_scale`` for a group with a zero scale, else
    ``zero_group`` for a group whose G products are all zero (a nonzero group that cancels to 0
    keeps ea + eb, as in MMA-Sim 2.1.1 arithmetic/fdpa.py:261-270)."""
    prods, sgn, mag, f0 = group_sum(a, b)
    v = scale_group(sgn, mag, f0, s_a, s_b)
    w = v.sig.w
    frac = v.frac
    aexp = v.exp
    if zero_group != "seed000":
        all_zero = prods[0].zero
        for p in prods[1:]:
            all_zero = all_zero & p.zero
        aexp = zero_aexp(all_zero, aexp, zero_group)
    if zero_scale != "seed000":
        aexp = zero_aexp(s_a.zero | s_b.zero, aexp, zero_scale)
    return Term(v, max(1, w - frac), aexp), prods


def gst_fdpa(a: list[FPValue], b: list[FPValue], c: FPValue, sa: list[FPValue], sb: list[FPValue],
             *, G: int, F: int, rho: Rho, specials: Specials = NVIDIA, zero_c="seed000",
             zero_group="seed000", zero_scale="seed000") -> BV:
    """Group-scaled truncated FDPA (seed 000 Algorithm 9): exact dot products per group of G,
    times the groups' scale significands, aligned at the largest scale exponent sum; c = +-0, an
    all-zero group and a group with a zero scale align per their zero rules (:func:`group_term`).

    ``sa``, ``sb``: the scales of each group (one pair per group, ceil(len(a) / G) groups). A last
    group of fewer than G products (a K below the block) is summed as it is: its exact sum is that
    of the group zero-padded to G, as a kernel pads K."""
    L = len(a)
    n = -(-L // G)
    if len(sa) != n or len(sb) != n:
        raise ValueError(f"GST-FDPA: {L} products in groups of {G} take {n} scale pairs, got {len(sa)}, {len(sb)}")
    terms = []
    specials_in = []
    for g in range(n):
        s_a, s_b = sa[g], sb[g]
        t, prods = group_term(a[g * G:(g + 1) * G], b[g * G:(g + 1) * G], s_a, s_b, zero_group, zero_scale)
        terms.append(t)
        specials_in += prods + [s_a, s_b]
    terms.append(value_term(c, zero_c))
    nan, inf, inf_sign = sum_specials(specials_in + [c])
    S, emax, _ = truncated_sum(terms, F)            # F: a constant or run-time (smtmodel.runtime)
    sign, mag = signed_value(S)
    return finish(sign, mag, emax, static(F), nan, inf, inf_sign, rho, specials)
