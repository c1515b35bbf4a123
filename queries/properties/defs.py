"""The properties: each a statement about ONE model, checked on copies of that model's semantics.

A property names its free inputs (:meth:`Property.variables`), derives from them the inputs of
each copy of the unit (:meth:`Property.copies`: the same patterns, a permutation, negated or
scaled patterns, a zero product appended), states its hypothesis over the inputs
(:meth:`Property.hypothesis`) and what a violation is, given the copies' outputs
(:meth:`Property.violation`). Every copy's output is :meth:`Model.build` on that copy's inputs
(the one semantics), so a solver reads ``hypothesis and violation`` as one formula (unsat: the
property holds for every input of the query) and the twin reads the same predicates on NumPy
batches, the outputs coming from :meth:`Model.evaluate`.

The twin's candidates: :meth:`Property.derive` turns a batch of the distinguishing queries'
structured probes (:func:`queries.distinguish.search.probes`: alignment gaps, ties, carries,
cancellation, subnormals, zeros, the zero-rule floor...) into values of every variable (the
second copy moved so that the hypothesis usually holds); :meth:`Property.groups` lists the inputs
a witness is simplified by (set to 0 or 1.0 together while the violation stays).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from smtmodel.bv import BV, Bool, any_of
from smtmodel.formats import Format, get_format
from smtmodel.fp import EXP_W, decode
from smtmodel.fp.classify import is_nan, is_special, one_bits, pow2_bits, sign_of
from smtmodel.model import INT_OPS, Model

from ..distinguish.api import check_k
from ..distinguish.errors import QueryError
from .copies import Copy, copy_of, finite_inputs, summands, variable_names, well_formed
from .predicates import (exponent_between, finite, negate_bits, pattern_eq, pattern_le, pattern_lt, scale_bits,
                         scaled_value, value_eq, value_le)


class NotApplicable(QueryError):
    """The property does not apply to this model (or this k)."""


def instruction_k(m: Model) -> int:
    """The model's instruction K: its fused block (L_max, 2L for the FP8 mma.sync path) and its
    scale block, their least common multiple."""
    L = m.block(1 << 20)
    return math.lcm(L, m.scale_block or 1)


def _out(m: Model, d: BV):
    return decode(d, m.out_fmt)


# ---- numpy helpers for the twin's candidates ------------------------------------------------------

class _Enc:
    """Moves of raw patterns of one float format, vectorised (sign-magnitude encodings)."""

    def __init__(self, fmt: Format):
        self.f = fmt
        self.shift = np.uint64(fmt.shift)
        self.sbit = np.uint64(1 << (fmt.ebits + fmt.mbits)) if fmt.signed else np.uint64(0)
        self.maxmag = np.int64(((fmt.emax + fmt.bias) << fmt.mbits) | fmt.max_mantissa)
        self.mmask = np.uint64((1 << fmt.mbits) - 1)

    def split(self, x):
        enc = np.asarray(x, dtype=np.uint64) >> self.shift
        neg = (enc & self.sbit) != 0 if self.f.signed else np.zeros(enc.shape, bool)
        return neg, (enc & ~self.sbit).astype(np.int64)

    def join(self, neg, mag):
        mag = np.clip(mag, 0, self.maxmag).astype(np.uint64)
        enc = np.where(neg, mag | self.sbit, mag) if self.f.signed else mag
        return (enc << self.shift).astype(np.uint64)

    def step(self, x, n, up):
        """x moved ``n`` encodings up (``up`` true) or down in value; across zero the sign flips."""
        neg, mag = self.split(x)
        grow = up != neg                                  # the magnitude grows
        mag = np.where(grow, mag + n, mag - n)
        cross = mag < 0
        if self.f.signed:
            neg = np.where(cross, ~neg, neg)
        return self.join(neg, np.abs(mag))

    def pow2(self, x, up):
        """x moved to the next power of two in the direction ``up`` (mantissa cleared; exponent
        moved one binade where the mantissa is already clear)."""
        neg, mag = self.split(x)
        mant = mag & np.int64(self.mmask)
        grow = up != neg
        base = mag - mant
        one = np.int64(1 << self.f.mbits)
        mag = np.where(grow, base + one, np.where(mant != 0, base, base - one))
        return self.join(neg, np.maximum(mag, 0))

    def positive(self, x):
        neg, mag = self.split(x)
        return self.join(np.zeros_like(neg), mag)

    def negative_mask(self, x):
        return self.split(x)[0]


def _move(enc: _Enc, x, up, g):
    """One random move of patterns x in direction ``up``: 1-3 encodings, many, or a power of two."""
    kind = g.integers(0, 4, x.shape)
    n = np.where(kind == 0, 1, np.where(kind == 1, g.integers(1, 4, x.shape),
                                         g.integers(1, max(2, 1 << enc.f.mbits), x.shape)))
    return np.where(kind == 3, enc.pow2(x, up), enc.step(x, n, up))


# ---- the properties -------------------------------------------------------------------------------

class Property(ABC):
    """One property; subclasses fill in the statement (:meth:`copies` and :meth:`violation`)."""

    name = ""
    title = ""
    claim = ""
    source = ""
    integer = False                     # applies to integer units too

    def default_k(self, m: Model) -> int:
        return instruction_k(m)

    def check(self, m: Model, k: int) -> None:
        """Raise :class:`NotApplicable` (or QueryError for a bad k) where the property says nothing."""
        if m.op in INT_OPS and not self.integer:
            raise NotApplicable(f"property {self.name} does not apply to {m.id}: an integer unit (exact products "
                                "and sum, wrapped or saturated in int32) has no rounding for it to test")
        check_k(m, k)

    def variables(self, m: Model, k: int) -> dict:
        return variable_names(m, k)

    @abstractmethod
    def copies(self, m: Model, k: int, v: dict) -> list[Copy]:
        """The copies of the unit the property compares, built from the variables ``v``."""

    def hypothesis(self, m: Model, k: int, v: dict, cps: list[Copy]) -> list[Bool]:
        return [t for cp in cps for t in well_formed(m, cp)]

    @abstractmethod
    def violation(self, m: Model, k: int, v: dict, cps: list[Copy], d: list[BV]) -> Bool:
        """What holds exactly when the copies' outputs ``d`` break the property."""

    def derive(self, m: Model, k: int, base: dict, g: np.random.Generator) -> dict:
        """Values of every variable from a batch of probes (copy 1's inputs)."""
        return dict(base)

    def restricted(self, m: Model, k: int, live: int) -> dict:
        """The variables a restricted question fixes: name -> None (the constant +0) or the name
        of the variable it equals. Here the inputs of products ``live``..k-1 of every copy (a_j,
        b_j and their moved copies a_j_2, b_j_2) at +0. Its violations are the property's own
        (witnesses with zero products), and with those products folded away a solver can often
        answer it where the whole formula is out of its reach. The property's extra inputs (the
        product ``zero-padding`` appends) stay free."""
        out = {}
        for name in self.variables(m, k):
            pos = name[1:].split("_")[0]
            if name[0] in "ab" and pos.isdigit() and live <= int(pos) < k:
                out[name] = None
        return out

    def groups(self, m: Model, k: int) -> list[tuple]:
        """Variables a witness is simplified by, together (set to 0, or to 1.0)."""
        gs = [(f"a{i}",) for i in range(k)] + [(f"b{i}",) for i in range(k)] + [("c",)]
        return gs

    def explain(self, m: Model, k: int, copies: list[dict]) -> list[str]:
        return []

    def reduction(self, m: Model, k: int, seconds: float):
        """A proof by reduction (:class:`.reductions.Reduction`): ``m`` recognised by its terms as an
        operation of which the property is a theorem (a solver may take ``seconds`` to show it);
        None where there is none."""
        return None


# ---- monotonicity ------------------------------------------------------------------------------------

class Monotonicity(Property):
    """If every summand grows (weakly, as exact reals), the result must not shrink."""

    name = "monotonicity"
    title = "monotonic in every summand, c included"
    claim = ("finite inputs; if every product a_i*b_i and c grow or stay (as exact reals: "
             "a_i*b_i <= a_i'*b_i', c <= c'), then d <= d' (NaN results excepted)")
    source = "seed 003 §I-A (after Mikaitis, IEEE TC 2024; Fasi et al. 2021)"
    move_c = True       # c moves (else c' = c)
    inputs = False      # a_i, b_i themselves grow, nonnegative (else the products)

    def reduction(self, m, k, seconds):
        """Every form's hypothesis makes each summand grow (nonnegative factors that grow make their
        product grow), so a unit that rounds its exact sum once is monotone in each form."""
        from .reductions import correctly_rounded_sum
        return correctly_rounded_sum(m, k, seconds)

    def restricted(self, m, k, live):
        """Zero products as every property's, and c' = c: a violation of ``monotonicity-products``
        is one of this form too."""
        return super().restricted(m, k, live) | ({"c_2": "c"} if self.move_c else {})

    def variables(self, m, k):
        out = variable_names(m, k) | variable_names(m, k, "_2", scales=False)
        if not self.move_c:
            out.pop("c_2")
        return out

    def copies(self, m, k, v):
        one = copy_of(v, m, k, "d")
        two = copy_of(v | ({} if self.move_c else {"c_2": v["c"]}), m, k, "d'", "_2", scale_suffix="")
        return [one, two]

    def hypothesis(self, m, k, v, cps):
        one, two = cps
        out = super().hypothesis(m, k, v, cps) + finite_inputs(m, one) + finite_inputs(m, two)
        fa, fb = m.operand_fmts
        if self.inputs:
            for xs, ys, f in ((one.a, two.a, fa), (one.b, two.b, fb)):
                for x, y in zip(xs, ys):
                    sx = sign_of(x, f)
                    if sx is not None:
                        out.append(~sx)
                    out.append(pattern_le(x, y, f))
        else:
            out += [value_le(p, q) for p, q in zip(summands(m, one), summands(m, two))]
        if self.move_c:
            out.append(pattern_le(one.c, two.c, m.c_fmt))
        return out

    def violation(self, m, k, v, cps, d):
        return pattern_lt(d[1], d[0], m.out_fmt)

    def derive(self, m, k, base, g):
        fa, fb = (get_format(f) for f in m.operand_fmts)
        ea, eb, ec = _Enc(fa), _Enc(fb), _Enc(get_format(m.c_fmt))
        n = len(base["c"])
        a = np.stack([base[f"a{i}"] for i in range(k)], axis=1)
        b = np.stack([base[f"b{i}"] for i in range(k)], axis=1)
        if self.inputs:
            a, b = ea.positive(a), eb.positive(b)
        a2, b2 = a.copy(), b.copy()
        rows = np.arange(n)
        # the position(s) moved: one random product, the largest (by exponent fields), or all
        pick = g.integers(0, k, n)
        mag = (a >> np.uint64(fa.shift + fa.mbits)) % np.uint64(1 << fa.ebits) + \
            (b >> np.uint64(fb.shift + fb.mbits)) % np.uint64(1 << fb.ebits)
        pick = np.where(g.random(n) < 0.4, np.argmax(mag, axis=1), pick)
        every = g.random(n) < 0.2
        which = g.integers(0, 2, n).astype(bool)          # move a (true) or b
        up_a = ~eb.negative_mask(b)                         # a_i moves up where b_i >= 0, down where b_i < 0
        up_b = ~ea.negative_mask(a)
        ma, mb = _move(ea, a, up_a, g), _move(eb, b, up_b, g)
        sel = np.zeros((n, k), bool)
        sel[rows, pick] = True
        sel |= every[:, None]
        a2 = np.where(sel & which[:, None], ma, a2)
        b2 = np.where(sel & ~which[:, None], mb, b2)
        if not self.inputs:       # a product refactored: a_j 2^-t, b_j 2^t (the same value where exact)
            t = g.integers(1, 17, n) * np.where(g.random(n) < 0.5, -1, 1)
            refac = g.random(n) < 0.25
            ra, rb = _rescale(a[rows, pick], fa, -t), _rescale(b[rows, pick], fb, t)
            if ra is not None and rb is not None:
                a2[rows, pick] = np.where(refac, ra, a2[rows, pick])
                b2[rows, pick] = np.where(refac, rb, b2[rows, pick])
        c = base["c"]
        out = {f"a{i}": a[:, i] for i in range(k)} | {f"b{i}": b[:, i] for i in range(k)} | {"c": c}
        out |= {f"a{i}_2": a2[:, i] for i in range(k)} | {f"b{i}_2": b2[:, i] for i in range(k)}
        out |= {nm: x for nm, x in base.items() if nm.startswith(("sa", "sb"))}
        if self.move_c:
            c_only = g.random(n) < 0.3                      # only c moves in these rows
            out |= {f"a{i}_2": np.where(c_only, a[:, i], a2[:, i]) for i in range(k)}
            out |= {f"b{i}_2": np.where(c_only, b[:, i], b2[:, i]) for i in range(k)}
            moves_c = c_only | (g.random(n) < 0.3)
            out["c_2"] = np.where(moves_c, _move(ec, c, np.ones(n, bool), g), c)
        u = g.random(n)
        for share, make in ((u < 0.4, self._cut_crossing), (u >= 0.75, self._refactored),
                            ((u >= 0.4) & (u < 0.45), self._carry)):
            for nm, x in (make(m, k, n, g) or {}).items():
                out[nm] = np.where(share, x, out[nm])
        return out

    def _carry(self, m, k, n, g) -> dict | None:
        """:func:`_carry_fill`: the exact sum just below 4 kk grows to 4 kk by a_0 one encoding up;
        an accumulator with too few carry bits wraps it to -4 kk."""
        cf = _carry_fill(m, k, n, g)
        if cf is None:
            return None
        a, b, c = cf["a"], cf["b"], cf["c"]
        a1 = a.copy()
        a1[:, 0] = cf["a_lo"]
        out = {f"a{i}": a1[:, i] for i in range(k)} | {f"b{i}": b[:, i] for i in range(k)} | {"c": c}
        out |= {f"a{i}_2": a[:, i] for i in range(k)} | {f"b{i}_2": b[:, i] for i in range(k)}
        if self.move_c:
            out["c_2"] = c
        return out

    def _refactored(self, m, k, n, g) -> dict | None:
        """The same product written with a subnormal factor: a_0 b_0 = (a_0 2^u)(2^-u) with 2^-u
        a subnormal b_0'. Seed 000's products are not normalised and a subnormal's exponent is the
        format's emin, so the product's alignment exponent rises by up to b's mantissa bits while
        its value stays: the cut 2^(e_max - F) moves up, and every other product (positive, its
        last bits just above the old cut) loses them. None where this does not apply (inputs
        form, block scales, a format without subnormals)."""
        fa, fb = (get_format(f) for f in m.operand_fmts)
        if self.inputs or m.scale_fmt or not fb.mbits or not fb.subnormals or m.op in INT_OPS:
            return None
        F = np.full(n, m.F) if m.F else get_format(m.out_fmt).precision + g.integers(-1, 4, n)
        delta = g.integers(1, fb.mbits + 1, n)              # how far the alignment exponent rises
        up = delta - fb.emin                                 # a_0 2^up, b_0' = 2^(emin - delta)
        hi = np.maximum(fa.emax - up, fa.emin)
        e0 = fa.emin + np.floor(g.random(n) * (hi - fa.emin + 1)).astype(np.int64)
        PA, PB = _Pow2(fa), _Pow2(fb)
        mant0 = g.integers(0, 1 << fa.mbits, n).astype(np.uint64) << np.uint64(fa.shift) if fa.mbits else \
            np.zeros(n, np.uint64)
        q = e0 - F + np.floor(g.random(n) * delta).astype(np.int64)     # small products' last bit
        eb = np.clip(g.integers(-3, 4, (n, k)), fb.emin, fb.emax)
        ea = np.clip(q[:, None] + fa.mbits - eb, fa.emin, fa.emax)
        mant = np.where(g.random((n, k)) < 0.5, (1 << fa.mbits) - 1, g.integers(0, 1 << fa.mbits, (n, k)) | 1)
        a = PA(ea) + (mant.astype(np.uint64) << np.uint64(fa.shift))
        b = PB(eb)
        a[:, 0], b[:, 0] = PA(e0) + mant0, np.uint64(one_bits(fb))
        a2, b2 = a.copy(), b.copy()
        a2[:, 0], b2[:, 0] = PA(e0 + up) + mant0, PB(fb.emin - delta)
        c = np.zeros(n, np.uint64)
        out = {f"a{i}": a[:, i] for i in range(k)} | {f"b{i}": b[:, i] for i in range(k)} | {"c": c}
        out |= {f"a{i}_2": a2[:, i] for i in range(k)} | {f"b{i}_2": b2[:, i] for i in range(k)}
        if self.move_c:
            out["c_2"] = c
        return out

    def _cut_crossing(self, m, k, n, g) -> dict:
        """Mikaitis' construction for adders that truncate each term below the largest exponent:
        the largest term just below a power of two 2^E (c, or product 0 where c may not move)
        grows to 2^E, moving the cut 2^(e_max - F) up by one bit; every other product has its
        last bit exactly at the old cut (or one off), so each loses it. With enough products the
        loss exceeds the growth. F is the model's (or, for units without one, near the output
        precision); block-scaled units reach the cut through their scales (c is the large term)."""
        fa, fb, fc = (get_format(f) for f in (*m.operand_fmts, m.c_fmt))
        F = np.full(n, m.F) if m.F else get_format(m.out_fmt).precision + g.integers(-1, 4, n)
        t = g.integers(-1, 2, n)
        eb = np.clip(g.integers(-3, 4, (n, k)), fb.emin, fb.emax)
        scaled = bool(m.scale_fmt)
        big_c = np.ones(n, bool) if scaled else self.move_c & (g.random(n) < 0.6)
        if scaled:               # products anywhere in range, the scales bring them to the cut
            fs = get_format(m.scale_fmt)
            ea = g.integers(fa.emin, fa.emax + 1, (n, 1)) + np.zeros((n, k), np.int64)
            eb = g.integers(fb.emin, fb.emax + 1, (n, 1)) + np.zeros((n, k), np.int64)
            se = g.integers(fs.emin, fs.emax + 1, (n, 2))
            q = ea[:, 0] - fa.mbits + eb[:, 0] + se.sum(axis=1)
            E = np.clip(q + 1 + F - t, fc.emin + 1, fc.emax - 1)
        else:
            # the last bit of every small product, q, within what a_i b_i can reach; the large term's
            # 2^E = 2^(q + 1 + F - t): c's (any exponent of its format), or product 0's (a's range)
            q_lo, q_hi = fa.emin - fa.mbits + fb.emin, fa.emax - fa.mbits + fb.emax
            E_lo = np.maximum(fa.emin + 1, q_lo + 1 + F - t)
            fits = E_lo <= fa.emax
            big_c = (big_c | ~fits) & self.move_c
            E = np.where(big_c, np.clip(g.integers(q_lo, q_hi + 1, n) + 1 + F - t, fc.emin + 1, fc.emax - 1),
                         E_lo + np.floor(g.random(n) * np.maximum(fa.emax - E_lo + 1, 1)).astype(np.int64))
            q = E - 1 - F + t
            ea = np.clip(q[:, None] + fa.mbits - eb, fa.emin, fa.emax)
        PA, PB, PC = _Pow2(fa), _Pow2(fb), _Pow2(fc)
        mant = (g.integers(0, 1 << max(fa.mbits, 1), (n, k)) | 1) % (1 << max(fa.mbits, 1)) if fa.mbits else \
            np.zeros((n, k), np.int64)
        a = PA(ea) + (mant.astype(np.uint64) << np.uint64(fa.shift))
        b = PB(eb)
        neg = g.random(n) < 0.3
        if fa.signed:
            a = np.where(neg[:, None], a | (_Enc(fa).sbit << np.uint64(fa.shift)), a)
        if not scaled:
            ones_a = PA(E - 1) + np.uint64(fa.max_mantissa << fa.shift)
            a[:, 0] = np.where(big_c, a[:, 0], ones_a)
            b[:, 0] = np.where(big_c, b[:, 0], np.uint64(one_bits(fb)))
        a2 = a.copy()
        if not scaled:
            a2[:, 0] = np.where(big_c, a[:, 0], PA(E))
        c1 = np.where(big_c, PC(E - 1) + np.uint64(fc.max_mantissa << fc.shift), np.uint64(0))
        c2 = np.where(big_c, PC(E), c1)
        out = {f"a{i}": a[:, i] for i in range(k)} | {f"b{i}": b[:, i] for i in range(k)} | {"c": c1}
        out |= {f"a{i}_2": a2[:, i] for i in range(k)} | {f"b{i}_2": b[:, i] for i in range(k)}
        if self.move_c:
            out["c_2"] = c2
        if scaled:
            PS = _Pow2(get_format(m.scale_fmt))
            for j in range(k // m.scale_block):
                out[f"sa{j}"], out[f"sb{j}"] = PS(se[:, 0]), PS(se[:, 1])
        if self.inputs:
            out |= {nm: _Enc(fa if nm[0] == "a" else fb).positive(x) for nm, x in out.items() if nm[0] in "ab"}
        return out

    def groups(self, m, k):
        gs = [(f"a{i}", f"a{i}_2") for i in range(k)] + [(f"b{i}", f"b{i}_2") for i in range(k)]
        return gs + ([("c", "c_2")] if self.move_c else [("c",)])

    def explain(self, m, k, copies):
        from smtmodel.fp.classify import exact_value, value_text
        one, two = copies
        fa, fb = m.operand_fmts
        lines = []
        for i in range(k):
            if (one["a"][i], one["b"][i]) != (two["a"][i], two["b"][i]):
                p = exact_value(one["a"][i], fa) * exact_value(one["b"][i], fb)
                q = exact_value(two["a"][i], fa) * exact_value(two["b"][i], fb)
                lines.append(f"a{i}*b{i}: {_num(p)} -> {_num(q)}")
        if one["c"] != two["c"]:
            lines.append(f"c: {value_text(one['c'], m.c_fmt)} -> {value_text(two['c'], m.c_fmt)}")
        lines.append(f"d = {value_text(one['d'], m.out_fmt)} > d' = {value_text(two['d'], m.out_fmt)}: "
                     "the summands grew, the result shrank")
        return lines


def _carry_fill(m: Model, k: int, n: int, g) -> dict | None:
    """Candidates that fill an accumulator's carry bits exactly: the first kk = k, k/2 or k/4
    products (the rest zero) all a_i = 2 - 2^-p_a, b_i = 2 - 2^-p_b (the largest products below
    4 at one exponent, unnormalised), and c the rest up to T = 4 kk, so that the exact sum is the
    power of two T. An accumulator with log2(kk) carry bits above the products' two integer bits
    holds at most T - 2^-F: T wraps to -T, the most negative value, which is its own negation
    (a carry rival, seed 000 Algorithm 7 with a narrow accumulator). ``a_lo`` is a_0 one encoding
    lower (the sum just below T). None where NumPy has no type of a format or c cannot carry the
    rest exactly."""
    from smtmodel.formats import numpy_dtype, numpy_to_bits
    fa, fb, fc = (get_format(f) for f in (*m.operand_fmts, m.c_fmt))
    if m.op in INT_OPS or any(numpy_dtype(f) is None for f in (fa, fb, fc)) or m.scale_fmt:
        return None
    va, vb = 2.0 - 2.0 ** -fa.mbits, 2.0 - 2.0 ** -fb.mbits
    if va > fa.max_finite() or vb > fb.max_finite():
        return None
    pa = int(numpy_to_bits(np.array([va]).astype(numpy_dtype(fa)), fa)[0])
    pb = int(numpy_to_bits(np.array([vb]).astype(numpy_dtype(fb)), fb)[0])
    rows = []
    for r in range(3):
        kk = k >> r
        if kk < 1:
            break
        rest = 4.0 * kk - kk * va * vb
        cv = np.array([rest]).astype(numpy_dtype(fc))
        if not 0 < rest < 2 or float(cv[0]) != rest:
            continue
        rows.append((kk, int(numpy_to_bits(cv, fc)[0])))
    if not rows:
        return None
    pick = np.arange(n) % len(rows)          # no draw from g: the other candidates stay as they were
    kk = np.array([rows[i][0] for i in pick])
    a = np.where(np.arange(k)[None, :] < kk[:, None], np.uint64(pa), np.uint64(0))
    b = np.broadcast_to(np.uint64(pb), (n, k)).copy()
    c = np.array([rows[i][1] for i in pick], dtype=np.uint64)
    a_lo = np.uint64(pa - (1 << fa.shift))
    return {"a": a, "b": b, "c": c, "a_lo": a_lo, "neg_a": _Enc(fa).sbit << np.uint64(fa.shift),
            "neg_c": _Enc(fc).sbit << np.uint64(fc.shift)}


def _rescale(x, fmt: Format, t):
    """Patterns of x * 2^t (rounded to nearest where subnormal; inf past the range), or None
    where NumPy has no type of the format's layout."""
    from smtmodel.formats import bits_to_numpy, numpy_dtype
    dt = numpy_dtype(fmt)
    if dt is None:
        return None
    with np.errstate(all="ignore"):
        v = bits_to_numpy(np.asarray(x) >> np.uint64(fmt.shift) << np.uint64(fmt.shift), fmt).astype(np.float64)
        v = (v * np.exp2(np.asarray(t, dtype=np.float64))).astype(dt)
    out = np.asarray(v).view(np.uint64 if v.dtype.itemsize == 8 else np.uint32 if v.dtype.itemsize == 4
                             else np.uint16 if v.dtype.itemsize == 2 else np.uint8).astype(np.uint64)
    if fmt.shift:
        out &= ~np.uint64((1 << fmt.shift) - 1)
    return out & np.uint64((1 << fmt.width) - 1)


class _Pow2:
    """Patterns of 2^e of one format for integer arrays e (clipped to the format's range,
    subnormal powers of two included)."""

    def __init__(self, fmt: Format):
        self.lo = fmt.emin - (fmt.mbits if fmt.policy != "e8m0" else 0)
        self.table = np.array([pow2_bits(fmt, e) for e in range(self.lo, fmt.emax + 1)], dtype=np.uint64)

    def __call__(self, e):
        return self.table[np.clip(np.asarray(e) - self.lo, 0, len(self.table) - 1)]


class MonotonicityNormal(Monotonicity):
    name = "monotonicity-normal"
    title = "monotonic in every summand, c included, on normal inputs"
    claim = ("finite inputs, every a_i, b_i and c normal or zero; if every product a_i*b_i and c grow or stay "
             "(exact reals), then d <= d' (NaN results excepted): the adder alone, without input flushing or "
             "subnormal exponents")
    source = "seed 003 §I-A (the 3 extra bits, after Mikaitis, IEEE TC 2024)"

    def hypothesis(self, m, k, v, cps):
        from smtmodel.fp.classify import is_subnormal
        out = super().hypothesis(m, k, v, cps)
        fa, fb = m.operand_fmts
        for cp in cps:
            out += [~is_subnormal(x, fa) for x in cp.a] + [~is_subnormal(y, fb) for y in cp.b]
            out.append(~is_subnormal(cp.c, m.c_fmt))
        return out


class MonotonicityProducts(Monotonicity):
    name = "monotonicity-products"
    title = "monotonic in the products, c fixed"
    claim = ("finite inputs, c' = c; if every product grows or stays (exact reals: a_i*b_i <= a_i'*b_i'), "
             "then d <= d' (NaN results excepted)")
    move_c = False


class MonotonicityInputs(Monotonicity):
    name = "monotonicity-inputs"
    title = "monotonic in nonnegative a and b, c fixed"
    claim = ("finite inputs, a_i, b_i with sign bit clear, c' = c; if every a_i and b_i grows or stays "
             "(a_i <= a_i', b_i <= b_i'), then d <= d' (NaN results excepted)")
    move_c = False
    inputs = True

    def groups(self, m, k):
        return [(f"a{i}", f"a{i}_2") for i in range(k)] + [(f"b{i}", f"b{i}_2") for i in range(k)] + [("c",)]


def _num(x) -> str:
    """An exact value as short text (a float where exact, else a float with ~)."""
    if isinstance(x, float):
        return repr(x)
    return repr(float(x)) if float(x) == x else f"{float(x)!r}~"


# ---- permutations ---------------------------------------------------------------------------------

def _blocks(m: Model, k: int) -> list[list[int]]:
    """The positions 0..k-1 by fused block (and by scale block within it, for block-scaled units:
    a product moved to another scale block would be another summand)."""
    L = m.block(k)
    step = min(L, m.scale_block) if m.scale_block else L
    return [list(range(i, min(i + step, k))) for i in range(0, k, step)]


def _permuted(cp: Copy, perm: list[int], label: str) -> Copy:
    return Copy(label, [cp.a[j] for j in perm], [cp.b[j] for j in perm], cp.c, cp.scales)


class Permutation(Property):
    name = "permutation"
    title = "invariant under permutations of the products within a block"
    claim = ("any inputs; permuting the products a_i*b_i within one fused block (and one scale block) leaves "
             "the output bits unchanged (checked on generators of the block's permutations: a swap of its first "
             "two products and a rotation by one)")
    source = "seed 000 Algorithms 5-11 (a fused block has no order); seed 003 §I-A (order)"

    def gens(self, m, k):
        out = []
        for blk in _blocks(m, k):
            if len(blk) < 2:
                continue
            perm = list(range(k))
            perm[blk[0]], perm[blk[1]] = perm[blk[1]], perm[blk[0]]
            out.append((perm, f"products {blk[0]} and {blk[1]} swapped"))
            if len(blk) > 2:
                perm = list(range(k))
                perm[blk[0]:blk[-1] + 1] = blk[1:] + blk[:1]
                out.append((perm, f"products {blk[0]}..{blk[-1]} rotated by one"))
        return out

    def check(self, m, k):
        super().check(m, k)
        if not self.gens(m, k):
            raise NotApplicable(f"property {self.name} does not apply to {m.id} at k={k}: each block holds one "
                                f"product (L={m.block(k)}); permutation-blocks swaps products across blocks")

    def copies(self, m, k, v):
        one = copy_of(v, m, k, "d")
        return [one] + [_permuted(one, p, f"d ({what})") for p, what in self.gens(m, k)]

    def violation(self, m, k, v, cps, d):
        return any_of([x.ne(d[0]) for x in d[1:]])

    def explain(self, m, k, copies):
        from smtmodel.fp.classify import value_text
        fo = get_format(m.out_fmt)
        return [f"{cp['label']} = {fo.hex(cp['d'])} = {value_text(cp['d'], fo)}" + ("" if cp["d"] == copies[0]["d"]
                                                                                   else "   <- differs")
                for cp in copies]


class PermutationBlocks(Permutation):
    name = "permutation-blocks"
    title = "invariant under swapping products across chained blocks"
    claim = ("any inputs, K > L; swapping product 0 (first block) with product L (second block) leaves the "
             "output bits unchanged (block-scaled units: the two scale blocks' scales equal)")
    source = "seed 000 Algorithm 5 (blocks chained through the output format)"

    def default_k(self, m):
        return 2 * instruction_k(m)

    def gens(self, m, k):
        L = m.block(k)
        if k <= L:
            return []
        perm = list(range(k))
        perm[0], perm[L] = perm[L], perm[0]
        return [(perm, f"products 0 and {L} swapped")]

    def check(self, m, k):
        Property.check(self, m, k)
        if not self.gens(m, k):
            raise NotApplicable(f"property {self.name} needs k above the block ({m.id}: L={m.block(k)}); "
                                f"try --k {2 * instruction_k(m)}")

    def hypothesis(self, m, k, v, cps):
        out = super().hypothesis(m, k, v, cps)
        if m.scale_fmt:
            j = m.block(k) // m.scale_block
            out += [v["sa0"].eq(v[f"sa{j}"]), v["sb0"].eq(v[f"sb{j}"])]
        return out

    def derive(self, m, k, base, g):
        out = dict(base)
        if m.scale_fmt:
            j = m.block(k) // m.scale_block
            out[f"sa{j}"], out[f"sb{j}"] = out["sa0"], out["sb0"]
        return out


# ---- sign symmetry --------------------------------------------------------------------------------

class SignSymmetry(Property):
    name = "sign-symmetry"
    title = "negating a and c negates the result"
    claim = ("any inputs; d(-a, b, -c) = -d(a, b, c) as values (-0 = +0), and one is NaN exactly when the "
             "other is")
    source = "IEEE 754 §6.3 (rounding modes symmetric about zero: RNE, RZ; RD/RU are not)"

    def check(self, m, k):
        super().check(m, k)
        fa, fc = get_format(m.operand_fmts[0]), get_format(m.c_fmt)
        for f in (fa, fc):
            if not f.signed:
                raise NotApplicable(f"property {self.name} does not apply to {m.id}: {f.name} has no sign")

    def copies(self, m, k, v):
        one = copy_of(v, m, k, "d")
        fa = m.operand_fmts[0]
        two = Copy("d(-a, b, -c)", [negate_bits(x, fa) for x in one.a], one.b, negate_bits(one.c, m.c_fmt),
                   one.scales)
        return [one, two]

    def violation(self, m, k, v, cps, d):
        fo = get_format(m.out_fmt)
        xn, yn = is_nan(d[0], fo), is_nan(d[1], fo)
        return (xn ^ yn) | (~xn & ~yn & ~pattern_eq(d[0], d[1], fo, negate=True))

    def derive(self, m, k, base, g):
        """The probes, and in a tenth of the rows :func:`_carry_fill` made negative: the exact sum
        is -4 kk, which a narrow accumulator holds as its most negative value while +4 kk wraps
        to it too."""
        out = dict(base)
        cf = _carry_fill(m, k, len(base["c"]), g)
        if cf is None:
            return out
        rows = g.random(len(base["c"])) < 0.1
        a = np.where(cf["a"] != 0, cf["a"] | cf["neg_a"], cf["a"])
        for i in range(k):
            out[f"a{i}"] = np.where(rows, a[:, i], out[f"a{i}"])
            out[f"b{i}"] = np.where(rows, cf["b"][:, i], out[f"b{i}"])
        out["c"] = np.where(rows, cf["c"] | cf["neg_c"], out["c"])
        return out

    def explain(self, m, k, copies):
        from smtmodel.fp.classify import value_text
        one, two = copies
        return [f"d = {value_text(one['d'], m.out_fmt)}; d(-a, b, -c) = {value_text(two['d'], m.out_fmt)} "
                f"(expected {_neg_text(one['d'], m.out_fmt)})"]


def _neg_text(bits: int, fmt: str) -> str:
    from smtmodel.fp.classify import exact_value
    x = exact_value(bits, fmt)
    return _num(-x) if not (isinstance(x, float) and x != x) else "NaN"


# ---- power-of-two scaling -------------------------------------------------------------------------

S_MAX = 64
"""|s| of the power-of-two scaling property's shift (the normal-range constraints bound it more)."""


class Scaling(Property):
    name = "scaling"
    title = "scaling a and c by 2^s scales the result, away from overflow and underflow"
    claim = ("a_i, b_i, c and 2^s a_i, 2^s c normal or zero, s != 0; every summand (a_i*b_i, c) of both copies "
             "with its last bit at or above the output format's smallest normal 2^emin and below "
             "2^(emax - ceil(log2(K+1))) (so every partial sum is normal or zero, none overflows); "
             "then d(2^s a, b, 2^s c) = 2^s d(a, b, c) exactly")
    source = "IEEE 754 (scaling by a power of two is exact in the normal range)"

    def reduction(self, m, k, seconds):
        from .reductions import SCALING, correctly_rounded_sum
        return correctly_rounded_sum(m, k, seconds, SCALING)

    def variables(self, m, k):
        return variable_names(m, k) | {"s": EXP_W}

    def copies(self, m, k, v):
        one = copy_of(v, m, k, "d")
        fa = m.operand_fmts[0]
        s = v["s"]
        two = Copy("d(2^s a, b, 2^s c)", [scale_bits(x, fa, s)[0] for x in one.a], one.b,
                   scale_bits(one.c, m.c_fmt, s)[0], one.scales)
        return [one, two]

    def _ranges(self, m, k):
        fo = get_format(m.out_fmt)
        top = fo.emax - math.ceil(math.log2(k + 1))
        return fo.emin, top

    def hypothesis(self, m, k, v, cps):
        one, two = cps
        out = super().hypothesis(m, k, v, cps) + finite_inputs(m, one)
        fa, fb = m.operand_fmts
        s = v["s"]
        out += [s.ne(0), s.sge(-S_MAX), s.sle(S_MAX)]
        out += [scale_bits(x, fa, s)[1] for x in one.a] + [scale_bits(one.c, m.c_fmt, s)[1]]
        from smtmodel.fp.classify import is_subnormal
        out += [~is_subnormal(y, fb) for y in one.b]
        lo, top = self._ranges(m, k)
        for cp in cps:
            for p in summands(m, cp):
                out += [exponent_between(p, lo, 10 ** 4, lsb=True), exponent_between(p, -10 ** 4, top - 2)]
            c = decode(cp.c, m.c_fmt)
            out += [exponent_between(c, lo, 10 ** 4, lsb=True), exponent_between(c, -10 ** 4, top - 1)]
        return out

    def violation(self, m, k, v, cps, d):
        x, y = _out(m, d[0]), _out(m, d[1])
        return ~(x.nan & y.nan) & ~value_eq(y, scaled_value(x, v["s"]))

    def derive(self, m, k, base, g):
        """Normal inputs whose products and c lie in the hypothesis' range (zeros sprinkled in),
        and a small shift s; the probes' own values are not used (they rarely meet the range)."""
        from ..distinguish.search import _Draw
        n = len(base["c"])
        fa, fb = (get_format(f) for f in m.operand_fmts)
        fc = get_format(m.c_fmt)
        lo, top = self._ranges(m, k)
        out = {nm: x for nm, x in base.items() if nm.startswith(("sa", "sb"))}
        DA, DB, DC = _Draw(fa, g), _Draw(fb, g), _Draw(fc, g)
        if m.scale_fmt:      # the block scales at 1.0 in half the rows (scaled summands are harder to aim)
            one = np.uint64(one_bits(m.scale_fmt))
            keep = g.random(n) < 0.5
            for nm in list(out):
                out[nm] = np.where(keep, one, out[nm])
        s = g.integers(1, 4, n) * np.where(g.random(n) < 0.5, -1, 1)
        s = np.where(g.random(n) < 0.2, g.integers(-S_MAX, S_MAX + 1, n), s)
        up, dn = np.maximum(s, 0), np.maximum(-s, 0)

        def pick(lo_, hi_):       # a uniform integer in [lo_, hi_] per lane (lo_ where the range is empty)
            return lo_ + np.floor(g.random(np.shape(lo_)) * np.maximum(hi_ - lo_ + 1, 1)).astype(np.int64)
        p_lo = max(lo + fa.mbits + fb.mbits, fa.emin + fb.emin)
        p_hi = min(top - 2, fa.emax + fb.emax)
        e = pick(np.broadcast_to(p_lo + dn[:, None], (n, k)), np.broadcast_to(p_hi - up[:, None], (n, k)))
        ea = pick(np.maximum(fa.emin + dn[:, None], e - fb.emax), np.minimum(fa.emax - up[:, None], e - fb.emin))
        a = DA.normal(ea)
        b = DB.normal(np.clip(e - ea, fb.emin, fb.emax))
        zero = g.random((n, k)) < 0.15
        a = np.where(zero, np.uint64(0), a)
        c = DC.normal(pick(max(lo + fc.mbits, fc.emin) + dn, min(top - 1, fc.emax) - up))
        c = np.where(g.random(n) < 0.2, np.uint64(0), c)
        out |= {f"a{i}": a[:, i] for i in range(k)} | {f"b{i}": b[:, i] for i in range(k)} | {"c": c}
        out["s"] = (s.astype(np.int64) % (1 << EXP_W)).astype(np.uint64)
        return out

    def groups(self, m, k):
        return [(f"a{i}",) for i in range(k)] + [("c",)]

    def explain(self, m, k, copies):
        from smtmodel.fp.classify import exact_value, value_text
        one, two = copies
        s = one["vals"]["s"]
        s = s - (1 << EXP_W) if s >> (EXP_W - 1) else s
        x = exact_value(one["d"], m.out_fmt)
        want = _num(x * 2 ** s) if not isinstance(x, float) else repr(x)
        return [f"s = {s}: d = {value_text(one['d'], m.out_fmt)}; d(2^s a, b, 2^s c) = "
                f"{value_text(two['d'], m.out_fmt)} (2^s d = {want})"]


# ---- zero padding ------------------------------------------------------------------------------------

class ZeroPadding(Property):
    name = "zero-padding"
    title = "appending a zero product leaves the result unchanged"
    claim = ("any inputs; d over K products = d over K+1 products, the last a_K*b_K an exact zero "
             "(a_K or b_K +-0, the other finite; block-scaled units: any finite scales for a new scale block)")
    source = "docs/zeros.md (where a zero aligns)"

    def _scales(self, m, k):
        if not m.scale_fmt:
            return 0, 0
        return m.scale_count(k), m.scale_count(k + 1)

    def variables(self, m, k):
        out = variable_names(m, k)
        fa, fb = m.operand_widths
        out |= {f"a{k}": fa, f"b{k}": fb}
        n1, n2 = self._scales(m, k)
        ws = get_format(m.scale_fmt).width if m.scale_fmt else 0
        for j in range(n1, n2):
            out |= {f"sa{j}": ws, f"sb{j}": ws}
        return out

    def copies(self, m, k, v):
        one = copy_of(v, m, k, "d (K products)")
        n1, n2 = self._scales(m, k)
        scales = None
        if m.scale_fmt:
            scales = ([v[f"sa{j}"] for j in range(n2)], [v[f"sb{j}"] for j in range(n2)])
        two = Copy(f"d (K+1 = {k + 1} products)", one.a + [v[f"a{k}"]], one.b + [v[f"b{k}"]], one.c, scales)
        return [one, two]

    def hypothesis(self, m, k, v, cps):
        out = super().hypothesis(m, k, v, cps)
        fa, fb = m.operand_fmts
        x, y = decode(v[f"a{k}"], fa), decode(v[f"b{k}"], fb)
        out.append((x.zero & finite(y)) | (y.zero & finite(x)))
        n1, n2 = self._scales(m, k)
        out += [~is_special(v[f"{p}{j}"], m.scale_fmt) for j in range(n1, n2) for p in ("sa", "sb")]
        return out

    def violation(self, m, k, v, cps, d):
        return d[0].ne(d[1])

    def derive(self, m, k, base, g):
        from ..distinguish.search import _Draw
        n = len(base["c"])
        fa, fb = (get_format(f) for f in m.operand_fmts)
        out = dict(base)
        DA, DB = _Draw(fa, g), _Draw(fb, g)
        other_a = DA.normal(DA.exps(n, fa.emin, fa.emax))
        other_b = DB.normal(DB.exps(n, fb.emin, fb.emax))
        zero_a = g.random(n) < 0.7
        za = np.where(g.random(n) < 0.5, np.uint64(0), DA.sign)
        zb = np.where(g.random(n) < 0.5, np.uint64(0), DB.sign)
        out[f"a{k}"] = np.where(zero_a, za, other_a)
        out[f"b{k}"] = np.where(zero_a, other_b, zb)
        if fa.has_neg_zero:        # rows whose sum is an exact zero of either sign (a zero's sign is bits too)
            zs = g.random(n) < 0.15
            for i in range(k):
                out[f"a{i}"] = np.where(zs, DA.sign, out[f"a{i}"])
            fc = get_format(m.c_fmt)
            if fc.has_neg_zero:
                out["c"] = np.where(zs, _Draw(fc, g).sign * g.integers(0, 2, n).astype(np.uint64), out["c"])
        n1, n2 = self._scales(m, k)
        if n2 > n1:
            fs = get_format(m.scale_fmt)
            DS = _Draw(fs, g)
            for j in range(n1, n2):
                for p in ("sa", "sb"):
                    out[f"{p}{j}"] = DS.normal(DS.exps(n, -3, 3), "zero", neg=np.zeros(n, bool))
        return out

    def groups(self, m, k):
        return super().groups(m, k) + [(f"b{k}",), (f"a{k}",)]

    def explain(self, m, k, copies):
        from smtmodel.fp.classify import value_text
        one, two = copies
        fa, fb = m.operand_fmts
        return [f"appended a{k} = {value_text(two['a'][k], fa)}, b{k} = {value_text(two['b'][k], fb)}: "
                f"d = {value_text(one['d'], m.out_fmt)} becomes {value_text(two['d'], m.out_fmt)}"]


class ZeroPaddingBlock(ZeroPadding):
    name = "zero-padding-block"
    title = "a zero product appended inside the block leaves the result unchanged"
    claim = ("any inputs, K = L-1 by default; d over K products (a block of K) = d over K+1 products (the "
             "block of L a unit computes on a K padded with one zero: a_K or b_K +-0, the other finite)")
    source = "docs/zeros.md (a zero's exponent in the alignment); Model.block (a K below L is a block of K)"

    def default_k(self, m):
        return max(1, m.block(1 << 20) - 1)

    def check(self, m, k):
        L = m.block(1 << 20)
        if m.op not in INT_OPS and m.scale_block:
            raise NotApplicable(f"property {self.name} does not apply to {m.id}: a block-scaled unit takes K in "
                                f"whole scale blocks of {m.scale_block}; see zero-padding")
        if m.op not in INT_OPS and isinstance(k, int) and not 1 <= k < L:
            raise NotApplicable(f"property {self.name} needs 1 <= k < L so that the zero product joins the block "
                                f"({m.id}: L={L}, k={k}); see zero-padding for a zero opening a new block")
        super().check(m, k)


PROPERTIES: dict[str, Property] = {p.name: p for p in (
    Monotonicity(), MonotonicityNormal(), MonotonicityProducts(), MonotonicityInputs(), Permutation(),
    PermutationBlocks(), SignSymmetry(), Scaling(), ZeroPadding(), ZeroPaddingBlock())}
"""The properties by name."""


def get_property(name: str) -> Property:
    if name not in PROPERTIES:
        raise QueryError(f"unknown property {name!r}; one of {', '.join(PROPERTIES)}")
    return PROPERTIES[name]


__all__ = ["Copy", "NotApplicable", "PROPERTIES", "Property", "get_property", "instruction_k"]
