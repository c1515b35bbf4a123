"""Proved worst-case error bounds for GEMM schemes, by composition.

A monolithic "no input has error >= t" query over a whole scheme does not finish (it relates the
scheme's multiplications to the exact reference's: docs/schemes.md, "Worst case"). This module
proves the upper half of ``worst`` the way Table 9 is proved: every elementary step of
:meth:`smtmodel.schemes.Scheme.build` gets an error bound that is either a solver-proved lemma or
an IEEE 754 property the project proves elsewhere, and the bounds are combined with the triangle
inequality (the forward error analysis of Higham, *Accuracy and Stability*, §3.1, §8):

* conversion of x to the split format with mode rm: |conv(x) - x| <= u_rm |x| + eta_rm
  (u = 2^-p for RN, 2^(1-p) for directed modes; eta = half / one subnormal spacing);
* an fp32 addition (``fp_add``, proved equal to SMT-LIB fp.add), fp32 FMA: the same with fp32's
  u and eta; scaling by a power of two: exact in the range (checked statically);
* one FDPA of a tensor-core call with L' products: seed 000 Table 9, proved per summand by
  :func:`queries.bounds.prove_lemmas`, |d - (acc + sum x y)| <= alpha 2^(e_max - F) + beta ulp(d),
  alpha = L' + 1 (L' when lemma A0 holds); 2^(e_max) <= sum over summands of
  (|x| + 2^emin)(|y| + 2^emin) + (|acc| + 2^-126) (a zero operand aligns at -126 + Exp(other));
  ulp(d) <= 2^(1-p) |d| + 2^(emin - p + 1).

Every quantity is a linear form in |a_k b_k| (k = 0..K-1), |c| and 1 with exact rational
coefficients (absolute terms of a piece of a are turned into relative ones with |a| >= 2^lo,
since a = 0 makes all its pieces 0). The result is |d - (c + sum a_k b_k)| <= sum_k g_k |a_k b_k|
+ g_c |c| + A, reported componentwise: |err| / (|c| + sum |a_k b_k|) <= max(g_k, g_c) + A / M_min
(M_min the smallest non-zero denominator in the range), and absolutely over the range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from smtmodel.formats import get_format
from smtmodel.model import Model
from smtmodel.ops.fdpa import RHO, rho_format
from smtmodel.schemes.core import SchemeError

from .inputs import InputRange, setup

F32 = get_format("fp32")
TWO = Fraction(2)
DIRECTED = ("RZ", "RD", "RU", "RTO")


def unit(fmt, rm: str) -> Fraction:
    """Relative rounding error bound u of ``fmt`` under ``rm`` (normal range)."""
    p = get_format(fmt).precision
    return TWO ** (1 - p) if rm in DIRECTED else TWO ** (-p)


def eta(fmt, rm: str) -> Fraction:
    """Absolute rounding error bound in the subnormal range (half or one spacing)."""
    f = get_format(fmt)
    sp = TWO ** (f.emin - f.precision + 1)
    return sp if rm in DIRECTED else sp / 2


class Lin:
    """sum_k ab[k] |a_k b_k| + cc |c| + one, coefficients exact and >= 0."""

    __slots__ = ("ab", "cc", "one")

    def __init__(self, K: int, ab=None, cc=Fraction(0), one=Fraction(0)):
        self.ab = list(ab) if ab is not None else [Fraction(0)] * K
        self.cc, self.one = Fraction(cc), Fraction(one)

    def __add__(self, o: "Lin") -> "Lin":
        return Lin(0, [x + y for x, y in zip(self.ab, o.ab)], self.cc + o.cc, self.one + o.one)

    def __mul__(self, f) -> "Lin":
        f = Fraction(f)
        return Lin(0, [x * f for x in self.ab], self.cc * f, self.one * f)

    __rmul__ = __mul__

    def plus(self, one) -> "Lin":
        return Lin(0, self.ab, self.cc, self.one + Fraction(one))


@dataclass
class Value:
    """A computed value: |computed| <= T, |computed - ideal| <= E (unscaled units)."""

    T: Lin
    E: Lin


@dataclass
class SplitBound:
    """Pieces of a split, relative to |x|: |piece_i 2^(-i s)| <= P[i] |x|; x = sum of the
    weighted pieces + delta with |delta| <= D |x|; sub[i] = 2^(emin - i s - lo): a piece's
    subnormal threshold relative to |x|."""

    P: list
    D: Fraction
    sub: list


def split_bound(sp, lo: int) -> SplitBound:
    """Forward analysis of Scheme.split_values (conversions, fl32 residuals, exact scalings)."""
    tf = get_format(sp.fmt)
    R, D_acc = Fraction(1), Fraction(0)
    P, sub = [], []
    for i in range(sp.pieces):
        rm = sp.piece_rm(i)
        if i == 0:      # src = x itself, |x| >= 2^lo: |conv(x) - x| <= max(u |x|, eta) <= max(u, eta 2^-lo) |x|
            conv_err = max(unit(tf, rm), eta(tf, rm) * TWO ** (-lo))
        else:           # a residual has no lower bound: u |src| + eta
            conv_err = unit(tf, rm) * R + eta(tf, rm) * TWO ** (-i * sp.scale - lo)
        P.append(R + conv_err)
        sub.append(TWO ** (tf.emin - i * sp.scale - lo))
        if i + 1 < sp.pieces:
            sub_err = unit(F32, sp.sub_rm) * conv_err + eta(F32, sp.sub_rm) * TWO ** (-lo)
            D_acc += sub_err
            R = conv_err + sub_err
        else:
            D = conv_err + D_acc
    return SplitBound(P, D, sub)


def _check_split_range(s, m: Model, lo: int, hi: int) -> None:
    """Static conditions the composition relies on, or SchemeError:
    (1) no split conversion overflows: |src_i| <= Rabs_i 2^(i s) stays below the format's largest
        finite value (Rabs: absolute bounds of the residuals, |x| < 2^(hi+1));
    (2) scaling by powers of two is exact: a non-zero stored piece i is >= 2^g_i (>= 2^(lo-25+is)
        when that is normal in the split format, else its smallest subnormal), so a non-zero
        tensor-core result of pass weight w is a multiple of 2^(g_i + g_j - 2 - F) and its unscaled
        value a multiple of 2^(g_i + g_j - 2 - F - w) >= 2^-149: representable in fp32."""
    sp = s.split
    tf = get_format(sp.fmt)
    max_finite = TWO ** tf.emax * (2 - TWO ** (1 - tf.precision))
    rabs = TWO ** (hi + 1)
    g = []
    for i in range(sp.pieces):
        if rabs * TWO ** (i * sp.scale) >= max_finite:
            raise SchemeError(f"piece {i} of inputs up to 2^{hi + 1} can overflow {tf.name}")
        rm = sp.piece_rm(i)
        top = TWO ** hi if i == 0 else rabs            # |x| < 2^(hi+1): its rounding error is at most u 2^hi
        conv = unit(tf, rm) * top + eta(tf, rm) * TWO ** (-i * sp.scale)
        rabs = conv * (1 + unit(F32, sp.sub_rm)) + eta(F32, sp.sub_rm)
        small = lo - 1 if i == 0 else lo - 25 + i * sp.scale
        g.append(small if small >= tf.emin else tf.emin - tf.precision + 1)
    for p in s.passes:
        for i, j in p.pairs:
            if (i + j) * sp.scale and g[i] + g[j] - 2 - m.F - (i + j) * sp.scale < -149:
                raise SchemeError(f"pass pair {(i, j)}: results may leave fp32's range when unscaled; not covered")


def _check_no_overflow(T: Lin, lo: int, hi: int, c_hi, w_max: int) -> None:
    """Every intermediate magnitude bound is <= the final one (they only grow), so if that bound,
    at the top of the range and at the largest pass scale 2^w_max, stays below fp32's largest
    finite value, no step overflows (Table 9 and the rounding bounds assume finite results; a
    directed rounding would otherwise saturate silently)."""
    top = sum(g * TWO ** (2 * (hi + 1)) for g in T.ab) + (T.cc * TWO ** (c_hi + 1) if c_hi is not None else 0) + T.one
    if top * TWO ** w_max * (1 + TWO ** -22) >= TWO ** 128 * (1 - TWO ** -24):
        raise SchemeError("inputs at the top of the range can overflow fp32 in the scheme; not covered")


@dataclass
class SchemeBound:
    scheme: str
    k: int
    range: str
    comp: float                      # proved: |err| <= comp * (|c| + sum |a_k b_k|)
    abs: float                       # proved: |err| <= abs over the range
    g_ab: list = field(default_factory=list)
    g_c: float = 0.0
    absolute: float = 0.0
    alphas: dict = field(default_factory=dict)
    lemma_seconds: float = 0.0
    parts: dict = field(default_factory=dict)

    def text(self) -> str:
        u = 2.0 ** -24
        return (f"{self.scheme}, K={self.k}, {self.range}: PROVED |err| <= {self.comp:.6g} x (|c| + sum |a_k b_k|)"
                f" = {self.comp / u:.4g} u32, and |err| <= {self.abs:.6g} over the range "
                f"(composition of Table 9 lemmas {self.alphas} ({self.lemma_seconds:.1f} s) and IEEE rounding bounds)")


class _Analysis:
    def __init__(self, scheme, m: Model | None, k: int, rng: InputRange, alpha_tight: bool, alpha_fn=None):
        self.s, self.m, self.K, self.rng = scheme, m, k, rng
        self.lo, self.hi = rng.exp_range
        self.alpha_fn = alpha_fn or (lambda n: n + 1 - (1 if alpha_tight else 0))

    def lin(self, **kw) -> Lin:
        return Lin(self.K, **kw)

    def ab(self, k: int, coef) -> Lin:
        v = self.lin()
        v.ab[k] = Fraction(coef)
        return v

    # one FDPA (Table 9) on products [(k, i, j)] and an accumulator
    def fdpa(self, prods: list, acc: Value, sb_a: SplitBound, sb_b: SplitBound, w: int) -> Value:
        m = self.m
        tf = get_format(m.in_fmt)
        rho = RHO[m.rho]
        rf = rho_format(rho)
        beta = Fraction(1) if rho.rm == "RZ" else Fraction(1, 2)
        s = self.s.split.scale
        n = len(prods)
        alpha = self.alpha_fn(n)
        S_al = acc.T.plus(TWO ** (-126 - w))
        T_id = Lin(self.K) + acc.T
        for k, i, j in prods:
            xa, yb = sb_a.P[i] + sb_a.sub[i], sb_b.P[j] + sb_b.sub[j]
            S_al = S_al + self.ab(k, xa * yb)
            big = max(sb_a.P[i] * TWO ** (i * s), sb_b.P[j] * TWO ** (j * s)) * TWO ** (self.hi + 1)
            S_al = S_al.plus(TWO ** (-126 - w) * (big + TWO ** tf.emin))       # zero-operand alignment
            T_id = T_id + self.ab(k, sb_a.P[i] * sb_b.P[j])
        q = beta * TWO ** (1 - rf.precision)
        err = (alpha * TWO ** (-m.F) * S_al + q * T_id).plus(beta * TWO ** (rf.emin - rf.precision + 1 - w)) * (1 / (1 - q))
        return Value(T_id + err, acc.E + err)

    def tc_call(self, prods: list, acc: Value, sb_a, sb_b, w: int) -> Value:
        """Model.build over the products: FDPAs of L' = min(n, L) chained (Algorithm 5)."""
        L = min(len(prods), self.m.L)
        if len(prods) % L:
            raise SchemeError(f"{len(prods)} products are not a multiple of the block {L}")
        for t in range(0, len(prods), L):
            acc = self.fdpa(prods[t:t + L], acc, sb_a, sb_b, w)
        return acc

    def add32(self, x: Value, y: Value, rm: str, w: int = 0) -> Value:
        u, e = unit(F32, rm), eta(F32, rm) * TWO ** (-w)
        T = x.T + y.T
        return Value((T * (1 + u)).plus(e), (x.E + y.E + T * u).plus(e))


class _BoundReading:
    """:meth:`Scheme.walk` read as error bounds: each tensor-core call by Table 9 (``_Analysis.fdpa``),
    each fp32 addition by IEEE rounding; unscaling by 2^-w is exact in the range (checked by
    ``_check_no_overflow``); c in a scaled pass is not covered."""

    def __init__(self, an: _Analysis, cval: Value, zero: Value, sp):
        self.an, self.cval, self.zero, self.sp = an, cval, zero, sp

    def c(self) -> Value:
        return self.cval

    def start(self, use_c: bool, w: int) -> Value:
        if use_c and w:
            raise SchemeError("c in a scaled pass; not covered")
        return self.cval if use_c else self.zero

    def call(self, prods: list, acc: Value, w: int) -> Value:
        return self.an.tc_call(prods, acc, self.sp, self.sp, w)

    def add(self, x: Value, y: Value, rm: str, w: int) -> Value:
        return self.an.add32(x, y, rm, w)

    def unscale(self, r: Value, w: int, rm: str) -> Value:
        return r

    def rescale(self, r: Value, w_from: int, w_to: int) -> Value:
        """Scaling the accumulator by 2^(w_to - w_from) is exact unless the result is an fp32
        subnormal: at most one subnormal spacing of the new weight, 2^-149 * 2^-w_to."""
        if w_to >= w_from:
            return r
        e = TWO ** (-149 - w_to)
        return Value(r.T.plus(e), r.E.plus(e))

    def mask(self, r: Value, kind: str, w: int) -> Value:
        """Replacing a NaN / non-finite accumulator by +0 never fires on finite results, which
        the composition assumes (``_check_no_overflow``)."""
        return r

    def fma(self, t: int, d: Value) -> Value:
        """fma: one rounding of a_t b_t + d (u32 |a b + d| + eta)."""
        return self.an.add32(Value(self.an.ab(t, 1), self.an.lin()), d, "RNE")


def compose(x, k: int = 4, model=None, rng: InputRange | None = None, solver: str = "bitwuzla",
            timeout: float = 120) -> SchemeBound:
    """Proved componentwise and absolute bounds on |d - (c + sum a_k b_k)| for scheme ``x``, for
    every input in the range (exponents >= -126, so no subnormal inputs). What the composition
    does not cover (overflow at the top of the range, scaled c, mixed-weight passes, unscaling that
    could leave fp32's range, models other than T-FDPA) raises SchemeError instead."""
    from ..bounds import TR_OPS, lemma_table

    rng = rng or InputRange()
    if rng.exp_range is None or (not rng.c_zero and rng.c_exp_range is None):
        raise SchemeError("the compositional bound needs exponent ranges for a, b and c")
    su = setup(x, model)
    s, lo, hi = su.scheme, rng.exp_range[0], rng.exp_range[1]
    c_lo, c_hi = (None, None) if rng.c_zero else rng.c_exp_range
    if lo < -126 or (c_lo is not None and c_lo < -126):
        # such a range admits fp32 subnormals (queries.schemes.inputs.input_ok), below 2^lo
        raise SchemeError("the compositional bound needs exponent ranges >= -126 (no fp32 subnormal inputs)")
    K = k
    alphas, secs, tight, alpha_fn = {}, 0.0, False, None
    m = None
    if not s.fp32:
        m = s.resolve_model(su.model)
        if m.op not in ("tfdpa",) + TR_OPS:
            raise SchemeError(f"{m.id}: the compositional bound covers T-FDPA and TR-/GTR-FDPA models, not {m.op}")
        (row,) = lemma_table([m], solver, timeout)
        secs = row["seconds"]
        if not row["proved"]:
            raise SchemeError(f"{m.id}: Table 9 is not proved for this model; no bound can be composed")
        if m.op in TR_OPS:
            st = {x["name"]: x["status"] == "unsat" for x in row["lemmas"]}
            alpha_fn = tr_alpha_n(m, st["A0:product"], st["A0:c"])
            alphas = {m.id: f"alpha = tr_alpha(L') (TR: units 2^(E-F), E = max(e_max, Exp(c))); "
                            f"L: {row['alpha_proved']}"}
        else:
            tight = row["alpha_proved"] == m.L
            alphas = {m.id: f"alpha = L'{'' if tight else ' + 1'}"}
        _check_split_range(s, m, lo, hi)
    an = _Analysis(s, m, K, rng, tight, alpha_fn)
    reading = _BoundReading(an, Value(an.lin(cc=1), an.lin()), Value(an.lin(), an.lin()),
                            None if s.fp32 else split_bound(s.split, lo))
    d = s.walk(K, m, reading)
    E = d.E
    parts = {}
    if s.fp32:
        _check_no_overflow(d.T, lo, hi, c_hi, 0)
        split_err = an.lin()
    else:
        sp = reading.sp
        pairs_seen = set()
        for p in s.passes:
            for pr in p.pairs:
                if pr in pairs_seen:
                    raise SchemeError(f"pair {pr} appears twice; not covered")
                pairs_seen.add(pr)
        _check_no_overflow(d.T, lo, hi, c_hi, max((i + j) * s.split.scale for p in s.passes for i, j in p.pairs))
        n = s.split.pieces
        PA = sum(sp.P)
        dropped = sum(sp.P[i] * sp.P[j] for i in range(n) for j in range(n) if (i, j) not in pairs_seen)
        per_k = dropped + 2 * PA * sp.D + sp.D * sp.D
        split_err = an.lin(ab=[per_k] * K)
        parts = {"split P": [float(x) for x in sp.P], "split D": float(sp.D), "dropped pairs": float(dropped)}
    total = E + split_err
    m_min = [TWO ** (2 * lo)] + ([] if c_lo is None else [TWO ** c_lo])
    comp = max(total.ab + [total.cc]) + total.one / min(m_min)
    absb = sum(g * TWO ** (2 * (hi + 1)) for g in total.ab) + (total.cc * TWO ** (c_hi + 1) if c_hi is not None else 0) + total.one
    parts.update({"tensor-core/fp32 error, max_k g_k": float(max(E.ab)), "split error per k": float(split_err.ab[0]),
                  "g_c": float(total.cc), "absolute": float(total.one)})
    return SchemeBound(su.label, K, rng.describe(), _up(comp), _up(absb), [float(g) for g in total.ab],
                       float(total.cc), float(total.one), alphas, secs, parts)


def tr_alpha_n(m: Model, a0p: bool, a0c: bool):
    """The TR-/GTR-FDPA constant for an FDPA of n <= L possibly non-zero products: ``tr_alpha``'s
    case analysis with n products in place of L (a zero product aligns to 0 and loses nothing), in
    units 2^(E - F), E = max(e_max, Exp(c)). The composition bounds 2^E by the same sum as Table
    9's 2^(e_max), which includes |acc|, so the TR bound reads like the T-FDPA one."""
    from ..bounds.lemmas import tr_alpha

    def alpha(n: int) -> Fraction:
        if n < 1 or n > m.L:
            raise SchemeError(f"{m.id}: an FDPA of {n} products (L = {m.L})")
        return tr_alpha(m, a0p, a0c, n)
    return alpha


def _up(x: Fraction) -> float:
    """A float >= x (so the printed bound stays a bound)."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)

