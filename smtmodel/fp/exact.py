"""Exact arithmetic on decoded values: products, exact sums, and the IEEE operations built on them.

These are the building blocks of the IEEE parts of the models (FMA chains of seed 000 Algorithm
4, E-FDPA of Algorithm 6, FTZ-Add/FTZ-Mul of Algorithm 1) and of conversions; every one is
written once in the semantic core.
"""

from __future__ import annotations

from ..bv import BV, Bool, abs_signed, all_of, any_of, clamp_shift, clz, ite, lshr_sticky, sum_all
from ..formats import Format, get_format
from .rounding import round_finite
from .value import EXP_W, FPValue, decode, exp_const, inf_bits, nan_bits

def mul_exact(x: FPValue, y: FPValue) -> FPValue:
    """The exact product: significands multiplied as integers, exponents added (unnormalised,
    seed 000 Algorithm 7 step 1). inf*0 and NaN operands give NaN."""
    w = x.sig.w + y.sig.w
    sig = x.sig.uresize(w) * y.sig.uresize(w)
    nan = x.nan | y.nan | (x.inf & y.zero) | (x.zero & y.inf)
    inf = (x.inf | y.inf) & ~nan
    zero = (x.zero | y.zero) & ~nan & ~inf
    return FPValue(x.sign ^ y.sign, x.exp + y.exp, sig, x.frac + y.frac, nan, inf, zero,
                   x.exp_lo + y.exp_lo, x.exp_hi + y.exp_hi)


def sum_specials(terms: list[FPValue]) -> tuple[Bool, Bool, Bool]:
    """(nan, inf, inf_sign) of a sum: NaN if any term is NaN or infinities of both signs meet
    (seed 000 §4.2)."""
    pos_inf = any_of([t.inf & ~t.sign for t in terms])
    neg_inf = any_of([t.inf & t.sign for t in terms])
    nan = any_of([t.nan for t in terms]) | (pos_inf & neg_inf)
    return nan, (pos_inf | neg_inf) & ~nan, neg_inf


def exact_sum(terms: list[FPValue], carry_guard: int | None = None) -> tuple[Bool, BV, BV, int]:
    """The exact sum of finite terms as (sign, magnitude, exponent, frac): value
    ``(-1)^sign * magnitude * 2^(exponent - frac)`` with a zero exponent and a static ``frac``.

    Every term is placed at its absolute position in one wide two's-complement accumulator (its
    last bit at the smallest exponent any term can reach), so nothing is lost. Non-finite terms
    are treated as zero; combine with :func:`sum_specials`. A zero magnitude means an exact 0.
    """
    B = terms[0].B
    lsb0 = min(t.lsb_lo for t in terms)
    W = accumulator_width(terms, carry_guard)
    acc = []
    for t in terms:
        mag = t.sig.uresize(W)
        amount = clamp_shift(t.exp - t.frac - lsb0, t.lsb_hi - lsb0, _width_for(t.lsb_hi - lsb0))
        mag = mag << amount.uresize(W) if amount.w <= W else mag << amount.extract(W - 1, 0)
        mag = ite(t.finite_nonzero, mag, B.const(0, W))
        acc.append(ite(t.sign, -mag, mag))
    total = sum_all(acc)
    sign, mag = abs_signed(total)
    return sign, mag, exp_const(B, 0), -lsb0


def accumulator_width(terms: list[FPValue], carry_guard: int | None = None) -> int:
    """Bits of :func:`exact_sum`'s accumulator: the terms' whole exponent range, carries, a sign."""
    lsb0 = min(t.lsb_lo for t in terms)
    span = max(t.lsb_hi - lsb0 + t.sig.w for t in terms)
    guard = carry_guard if carry_guard is not None else max(1, (len(terms) - 1).bit_length())
    return span + guard + 1


def _width_for(n: int) -> int:
    return max(1, n.bit_length() + 1)


def _exact_value(terms: list[FPValue]) -> FPValue:
    """The exact sum of finite terms (:func:`exact_sum`) as a finite FPValue."""
    sign, mag, exp, frac = exact_sum(terms)
    B = mag.B
    return FPValue(sign, exp, mag, frac, B.false(), B.false(), mag.eq(0), 0, 0)   # exp is the constant 0


def window_sum2(x: FPValue, y: FPValue, p: int) -> tuple[Bool, BV, BV, int]:
    """The sum of two finite terms as (sign, magnitude, exponent, frac), exact or with the bits
    below a window folded into a sticky bit, such that rounding it to any format of precision
    ``p`` (any mode) gives what rounding the exact sum gives; an exact zero stays 0.

    The two-term case of :func:`ieee_sum` (an FMA's product and addend, a product plus c; also an
    exact sum of products plus c where c alone would widen the accumulator): the
    significands, w bits each, are normalised (leading 1 at bit w-1, at exponents t_big >= t_small),
    the larger is placed g = max(2, p - w + 3) bits above the window's last bit and the smaller
    shifted right, every bit shifted out folded into that last bit. Why it rounds alike: bits fall
    out only when t_small < t_big - g, so |small| < 2^(t_big-g) and the sum is >= 2^(t_big-1); its
    rounding position is then >= t_big - p >= (the window's last bit) + 2. The exact and the
    folded sums lie in one open interval between consecutive even multiples of the window's unit
    (the larger term is an even multiple), which holds no representable number and no midpoint
    -- the argument of :func:`fp_add`. Width w + g + 1 instead of the exponent range
    :func:`exact_sum` spans (29 bits for bf16 products plus fp32, not 528). Checked against the
    exact sum in tests/test_window_sum.py.
    """
    B = x.B
    w = max(x.sig.w, y.sig.w)
    g = max(2, p - w + 3)
    W = w + g + 1
    norm, top = [], []
    for t in (x, y):
        s = ite(t.finite_nonzero, t.sig.uresize(w), B.const(0, w))
        lz = clz(s)
        norm.append(s << lz)
        lz16 = lz.uresize(EXP_W) if lz.w < EXP_W else lz.extract(EXP_W - 1, 0)
        top.append(t.exp - t.frac + (w - 1) - lz16)
    (nx, ny), (tx, ty) = norm, top
    x_big = x.finite_nonzero & (~y.finite_nonzero | tx.sgt(ty) | (tx.eq(ty) & nx.uge(ny)))
    nb, ns = ite(x_big, nx, ny), ite(x_big, ny, nx)
    tb, ts = ite(x_big, tx, ty), ite(x_big, ty, tx)
    sb, ss = ite(x_big, x.sign, y.sign), ite(x_big, y.sign, x.sign)
    d = clamp_shift(tb - ts, W, max(2, W.bit_length() + 1)).uresize(W)
    kept, out = lshr_sticky(ns.uresize(W) << g, d)
    small = kept | out.as_bv(W)
    big = nb.uresize(W) << g
    mag = ite(sb ^ ss, big - small, big + small)
    return sb, mag, tb, w - 1 + g


def ieee_zero_sign(terms: list[FPValue], rm: str) -> Bool:
    """Sign of an exact zero sum under IEEE 754 §6.3: -0 only if every term is a zero of sign -
    (all -0), or under RD when the terms are not all +0."""
    all_neg = all_of([t.sign for t in terms])
    all_pos = all_of([~t.sign for t in terms])
    if rm == "RD":
        return ~all_pos
    return all_neg & all_of([t.zero for t in terms])


def ieee_sum(terms: list[FPValue], fmt: "Format | str", rm: str = "RNE",
             flush_output: bool = False, nan_pattern: int | None = None) -> BV:
    """Correctly rounded sum of any number of terms with IEEE specials (single rounding)."""
    fmt = get_format(fmt)
    B = terms[0].B
    nan, inf, inf_sign = sum_specials(terms)
    if len(terms) == 1:
        # One term is its own exact sum: round its significand at its own exponent (the width of
        # the significand, not of the format's whole exponent range as the accumulator would be).
        t = terms[0]
        sign, mag, exp, frac = t.sign, ite(t.finite_nonzero, t.sig, B.const(0, t.sig.w)), t.exp, t.frac
    elif len(terms) == 2:
        sign, mag, exp, frac = window_sum2(terms[0], terms[1], fmt.precision)
    elif 2 * accumulator_width(terms[:-1]) < accumulator_width(terms):
        # The last term (c) alone widens the accumulator (fp16 products ~100 bits, with an fp32
        # c 284): the others are summed exactly and c joins through the window.
        sign, mag, exp, frac = window_sum2(_exact_value(terms[:-1]), terms[-1], fmt.precision)
    else:
        sign, mag, exp, frac = exact_sum(terms)
    zero = mag.eq(0)
    sign = ite(zero, ieee_zero_sign(terms, rm), sign)
    finite = round_finite(fmt, sign, mag, exp, frac, rm, "ieee", flush_output)
    return ite(nan, nan_bits(B, fmt, nan_pattern), ite(inf, inf_bits(fmt, inf_sign), finite))


def fp_add(x_bits: BV, y_bits: BV, fmt: "Format | str", rm: str = "RNE", flush_output: bool = False) -> BV:
    """IEEE addition in one format: the textbook two-operand adder.

    Order the operands by magnitude, keep g = 3 bits below the larger one's last bit (guard,
    round, sticky), shift the smaller one right folding every bit shifted out into the sticky
    last bit, add or subtract in p + 4 bits (the carry) and round once with
    :func:`round_finite` (28 bits for fp32, not the ~280 of the exponent range that
    :func:`exact_sum` spans: small solver formulas, 32-bit lanes in the compiled reading).

    Why it rounds correctly: if the exponent difference d <= g nothing is shifted out and the
    sum is exact. Otherwise the larger operand is normal (a subnormal one has the smallest
    exponent, so d = 0), |small| < 2^(e_big - g) and the result is >= 2^(e_big - 1): its last
    bit, normal or subnormal, lies >= g - 1 = 2 bits above the window's last bit, and a midpoint
    1 bit above. The exact and the sticky-folded sums lie in one open interval between
    consecutive even multiples of the window's unit (the larger operand is a multiple of 2^g),
    which holds no representable number and no midpoint: every mode rounds them alike.
    Proved equal to SMT-LIB ``fp.add`` in tests/test_ieee_proofs.py.
    """
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
    g = 3
    W = p + g + 1
    Xw = sb.uresize(W) << g
    Yf = ss.uresize(W) << g
    d = clamp_shift(eb - es, W, max(2, W.bit_length() + 1)).uresize(W)
    Yk, sticky = lshr_sticky(Yf, d)
    Yk = Yk | sticky.as_bv(W)
    same = ~(sgb ^ sgs)
    mag = ite(same, Xw + Yk, Xw - Yk)
    zero = mag.eq(0)
    sign = ite(zero, ieee_zero_sign([X, Y], rm), sgb)
    finite = round_finite(fmt, sign, mag, eb, X.frac + g, rm, "ieee", flush_output)
    nan, inf, inf_sign = sum_specials([X, Y])
    return ite(nan, nan_bits(B, fmt), ite(inf, inf_bits(fmt, inf_sign), finite))


def fp_mul(x_bits: BV, y_bits: BV, fmt: "Format | str", rm: str = "RNE", out: "Format | str | None" = None) -> BV:
    """IEEE multiplication (result in ``out``, default the input format)."""
    fmt = get_format(fmt)
    return ieee_sum([mul_exact(decode(x_bits, fmt), decode(y_bits, fmt))], out or fmt, rm)


def fma(a_bits: BV, b_bits: BV, c_bits: BV, fmt: "Format | str", rm: str = "RNE") -> BV:
    """IEEE fused multiply-add a*b + c with one rounding (seed 000 Algorithm 3)."""
    fmt = get_format(fmt)
    p = mul_exact(decode(a_bits, fmt), decode(b_bits, fmt))
    return ieee_sum([p, decode(c_bits, fmt)], fmt, rm)


def fma_propagating(a_bits: BV, b_bits: BV, c_bits: BV, fmt: "Format | str", first: str, default_nan: int,
                    rm: str = "RNE") -> BV:
    """:func:`fma` whose NaN operands pass through, quieted (the quiet bit set, sign and payload
    kept): of several, the operand named first in ``first`` (a permutation of "abc") wins; an
    invalid operation without a NaN operand (inf * 0, inf - inf) gives ``default_nan``. IEEE 754
    §6.2 leaves both choices to the implementation; the H100's DMMA reads "bca" with the default
    NaN 0xfff8000000000000 (hwdata/survey/h100-sxm and its probes)."""
    from .classify import is_nan
    fmt = get_format(fmt)
    if sorted(first) != ["a", "b", "c"]:
        raise ValueError(f"first={first!r}: a permutation of 'abc'")
    quiet = 1 << (fmt.mbits - 1)
    r = fma(a_bits, b_bits, c_bits, fmt, rm)
    r = is_nan(r, fmt).ite(r.B.const(default_nan, fmt.width), r)
    ops = {"a": a_bits, "b": b_bits, "c": c_bits}
    for name in reversed(first):                  # the last one applied, the first named, wins
        x = ops[name]
        r = is_nan(x, fmt).ite(x | quiet, r)
    return r
