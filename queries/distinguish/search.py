"""The twin's side of a query: both models evaluated on concrete cases, the constraints read
concretely, and the twin search -- structured probes and random cases within the query's
constraints, evaluated in batches (:class:`smtmodel.solve.TwinSearch`).

Probe kinds follow the cases the seeds build by hand to expose an accumulator's internals
(seed 002 §4, seed 000 §3): one large product and small ones at chosen exponent gaps (alignment
and truncation width), short mantissas (ties), all-ones mantissas of one sign (carries), equal
and opposite products (cancellation), subnormals, specials, zero products beside tiny terms,
products just below a model's fixed zero exponent with c = 0 (docs/zeros.md); plus random
normal cases.
"""

from __future__ import annotations

import numpy as np

from smtmodel.bv import NUMPY
from smtmodel.bv.core import all_of
from smtmodel.formats import Format, get_format
from smtmodel.fp.classify import encode_fields, pow2_bits
from smtmodel.model import Model
from smtmodel.solve import Result, TwinSearch

from .constraints import Constraints, constraint_terms, level_terms, signs
from .errors import TwinDisagreement

BATCH = 256
KINDS, READABLE_KINDS = 9, 3
"""Batches per round of :func:`probes`: the structured and random kinds, and the readable kinds
that start each round in simple mode."""


def arrays(vals: list[dict], k: int, ma: Model):
    a = np.array([[v[f"a{i}"] for i in range(k)] for v in vals], dtype=np.uint64)
    b = np.array([[v[f"b{i}"] for i in range(k)] for v in vals], dtype=np.uint64)
    c = np.array([v["c"] for v in vals], dtype=np.uint64)
    sc = (None, None)
    if ma.scale_fmt:
        n = ma.scale_count(k)
        sc = (np.array([[v[f"sa{i}"] for i in range(n)] for v in vals], dtype=np.uint64),
              np.array([[v[f"sb{i}"] for i in range(n)] for v in vals], dtype=np.uint64))
    return a, b, c, sc


def twin_outputs(ma: Model, mb: Model, vals: list[dict], k: int):
    a, b, c, sc = arrays(vals, k, ma)
    return ma.evaluate(a, b, c, *sc), mb.evaluate(a, b, c, *sc)


def _mask(ma: Model, a, b, c, k: int, cons: Constraints, level: int | None = None) -> np.ndarray:
    (fi, fb), fc = (get_format(f) for f in ma.operand_fmts), get_format(ma.c_fmt)
    v = {f"a{i}": NUMPY.input(a[:, i], fi.width) for i in range(k)}
    v.update({f"b{i}": NUMPY.input(b[:, i], fb.width) for i in range(k)})
    v["c"] = NUMPY.input(c, fc.width)
    terms = constraint_terms(v, fi, fc, k, cons, fb) + ([] if level is None else level_terms(level, v, fi, fc, k, fb))
    ok = all_of(terms) if terms else NUMPY.true()
    return np.broadcast_to(np.asarray(ok.v, dtype=bool), (a.shape[0],))


def twin_constraints_ok(ma: Model, vals: list[dict], k: int, cons: Constraints, level: int | None = None):
    """The constraints read by the twin: a bool array, one lane per candidate."""
    a, b, c, _ = arrays(vals, k, ma)
    return _mask(ma, a, b, c, k, cons, level)


def confirm(ma: Model, mb: Model, values: dict, k: int, solver: str) -> tuple[int, int]:
    """Both outputs on one case, by the twin; a case the twin does not see differ is a bug."""
    da, db = twin_outputs(ma, mb, [values], k)
    if int(da[0]) == int(db[0]):
        raise TwinDisagreement(
            f"{solver} claims {ma.id} and {mb.id} differ on {values}, but the twin computes "
            f"{int(da[0]):#x} for both: a backend disagrees with the twin (a bug; please report)")
    return int(da[0]), int(db[0])


# ---- drawing patterns -------------------------------------------------------------------------------

class _Draw:
    """Vectorised patterns of one format, composed from classify's encodings (fields are disjoint)."""

    def __init__(self, fmt: Format, g: np.random.Generator):
        self.f, self.g = fmt, g
        self.pow2 = np.array([pow2_bits(fmt, e) for e in range(fmt.emin, fmt.emax + 1)], dtype=np.uint64)
        self.unit = np.uint64(encode_fields(fmt, 0, 0, 1)) if fmt.mbits else np.uint64(0)
        self.sign = np.uint64(encode_fields(fmt, 1, 0, 0)) if fmt.signed else np.uint64(0)
        self.top = (1 << fmt.ebits) - 1

    def mant(self, shape, mode: str):
        m = self.f.mbits
        if not m:
            return np.zeros(shape, np.uint64)
        if mode == "ones":
            return np.full(shape, (1 << m) - 1, np.uint64)
        if mode == "short":            # at most the top two mantissa bits
            keep = min(2, m)
            return (self.g.integers(0, 1 << keep, shape, dtype=np.uint64) << np.uint64(m - keep))
        if mode == "top3":             # at most the top three mantissa bits (simple level 3bit)
            keep = min(3, m)
            return (self.g.integers(0, 1 << keep, shape, dtype=np.uint64) << np.uint64(m - keep))
        if mode == "pow2":             # no mantissa bits: powers of two
            return np.zeros(shape, np.uint64)
        return self.g.integers(0, 1 << m, shape, dtype=np.uint64)

    def normal(self, e, mode: str = "random", neg=None):
        """±(1.m) 2^e for integer exponents ``e`` (clipped to the normal range)."""
        e = np.clip(e, self.f.emin, self.f.emax) - self.f.emin
        x = self.pow2[e] | (self.mant(e.shape, mode) * self.unit)
        neg = self.g.integers(0, 2, e.shape).astype(bool) if neg is None else neg
        return np.where(neg, x | self.sign, x)

    def exps(self, shape, lo: int, hi: int):
        lo, hi = max(lo, self.f.emin), min(hi, self.f.emax)
        return self.g.integers(lo, max(lo, hi) + 1, shape)

    def subnormal(self, shape):
        m = self.g.integers(1, 1 << max(self.f.mbits, 1), shape, dtype=np.uint64) if self.f.mbits else np.zeros(shape, np.uint64)
        return np.where(self.g.integers(0, 2, shape).astype(bool), m * self.unit | self.sign, m * self.unit)

    def at(self, x, mode: str = "random", neg=None):
        """±2^x (1.m) for integer exponents ``x``: normal where x >= emin, else the subnormal power
        of two 2^x (clipped to the smallest subnormal)."""
        f = self.f
        sub_lo = f.emin - f.mbits
        x = np.clip(x, sub_lo, f.emax)
        m = np.left_shift(np.uint64(1), np.clip(x - sub_lo, 0, max(f.mbits - 1, 0)).astype(np.uint64))
        sub = m * self.unit if f.mbits else np.zeros(x.shape, np.uint64)
        neg = self.g.integers(0, 2, x.shape).astype(bool) if neg is None else neg
        sub = np.where(neg, sub | self.sign, sub)
        return np.where(x >= f.emin, self.normal(x, mode, neg), sub)

    def top_field(self, shape):
        """Patterns with the all-ones exponent field (infinities and NaNs where the format has them)."""
        pats = sorted({encode_fields(self.f, s, self.top, m) for s in (0, 1)
                       for m in {0, 1, (1 << self.f.mbits) - 1} if m < (1 << self.f.mbits or 1)})
        return np.array(pats, dtype=np.uint64)[self.g.integers(0, len(pats), shape)]


def _range(cons_range, lo: int, hi: int) -> tuple[int, int]:
    """[lo, hi] within a constraint's exponent range (the range itself where they do not meet)."""
    if cons_range is not None:
        lo, hi = max(lo, cons_range[0]), min(hi, cons_range[1])
        if lo > hi:
            lo, hi = cons_range
    return lo, hi


def fixed_zero_exponents(*models: Model) -> list[int]:
    """The fixed e_zero values the models' zero rules name (:data:`smtmodel.model.ZERO_RULES`)."""
    from smtmodel.model import ZERO_RULES
    return sorted({getattr(m, r) for m in models for r in ZERO_RULES if isinstance(getattr(m, r), int)})


def probes(ma: Model, k: int, cons: Constraints, seed: int = 0, targets: tuple = (), simple: bool = False):
    """Batches of candidate cases ``{name: uint64 array}``: the structured kinds, then random
    cases, round after round, each with the caller's fixed entries and sign patterns applied.
    ``targets``: fixed zero exponents (:func:`fixed_zero_exponents`) the zero-floor kind aims at.
    ``simple``: each round starts with readable cases (the shapes of simple mode's levels: one to
    three non-zero products of powers of two, b_i = 1.0, c with three mantissa bits or zero)."""
    g = np.random.default_rng(seed)
    (fi, fb), fc = (get_format(f) for f in ma.operand_fmts), get_format(ma.c_fmt)
    if getattr(fi, "kind", "") == "int":
        yield from _int_probes(k, fi, fc, cons, g)
        return
    DI, DC = _Draw(fi, g), _Draw(fc, g)
    DB = DI if fb == fi else _Draw(fb, g)      # b in its own format (mixed operands)
    p = fi.precision
    n = BATCH
    elo, ehi = _range(cons.exp_range, fi.emin, fi.emax)
    clo, chi = _range(cons.c_exp_range, fc.emin, fc.emax)
    mid = max(elo, min(0, ehi))            # a central exponent inside the allowed range
    cmid = max(clo, min(2 * mid, chi))
    a_pat, b_pat = signs(cons.a_signs, k, "a_signs"), signs(cons.b_signs, k, "b_signs")
    fixed = dict(cons.fixed)

    def finish(a, b, c, scale_exp=None):
        for pat, x, D in ((a_pat, a, DI), (b_pat, b, DB)):
            if pat and D.sign:
                for i, ch in enumerate(pat):
                    if ch in "+-":
                        x[:, i] = np.where(ch == "-", x[:, i] | D.sign, x[:, i] & ~D.sign)
        if cons.c_sign in ("+", "-") and DC.sign:
            c = c | DC.sign if cons.c_sign == "-" else c & ~DC.sign
        if cons.c_zero:
            c = np.zeros_like(c)
        out = {f"a{i}": a[:, i] for i in range(k)} | {f"b{i}": b[:, i] for i in range(k)} | {"c": c}
        if ma.scale_fmt:
            fs = get_format(ma.scale_fmt)
            DS = _Draw(fs, g)
            ns = ma.scale_count(k)
            for j, nm in enumerate(("sa", "sb")):
                e = DS.exps((n, ns), -3, 3) if scale_exp is None else \
                    np.broadcast_to(scale_exp[j], (n, ns)).astype(np.int64)
                s = DS.normal(e, "zero", neg=np.zeros((n, ns), bool))
                out |= {f"{nm}{i}": s[:, i] for i in range(ns)}
        for name, bits in fixed.items():
            if name in out:
                out[name] = np.full(n, int(bits), np.uint64)
        return out

    def rnd_c(lo=clo, hi=chi, mode="random"):
        return DC.normal(DC.exps(n, lo, hi), mode)

    def kind_random():
        return DI.normal(DI.exps((n, k), elo, ehi)), DB.normal(DB.exps((n, k), elo, ehi)), rnd_c()

    def kind_random_mid():
        return (DI.normal(DI.exps((n, k), mid - p, mid + p)), DB.normal(DB.exps((n, k), mid - p, mid + p)),
                rnd_c(cmid - 2 * p, cmid + 2 * p))

    def kind_gaps():
        gap = g.integers(0, 3 * fc.precision + 4, (n, k))
        gap[:, 0] = 0
        a = DI.normal(mid - gap // 2)
        b = DB.normal(mid - (gap - gap // 2))
        c = rnd_c(cmid - 2 * p, cmid + 2)
        return a, b, c

    def kind_ties():
        return (DI.normal(DI.exps((n, k), mid - p, mid + 1), "short"), DB.normal(DB.exps((n, k), mid - 2, mid + 1), "short"),
                rnd_c(cmid - p, cmid + p, "short"))

    def kind_carry():
        pos = np.zeros((n, k), bool)
        e = DI.exps((n, 1), mid - 1, mid + 1).repeat(k, axis=1)
        return DI.normal(e, "ones", pos), DB.normal(e, "ones", pos), DC.normal(DC.exps(n, cmid - 1, cmid + 2), "ones",
                                                                                np.zeros(n, bool))

    def kind_cancel():
        a, b, c = kind_random_mid()
        h = k // 2
        if h:
            a[:, h:2 * h] = a[:, :h] ^ DI.sign
            b[:, h:2 * h] = b[:, :h]
        return a, b, c

    def kind_subnormal():
        a, b, c = kind_random_mid()
        pick = g.random((n, k)) < 0.3
        a = np.where(pick, DI.subnormal((n, k)), a)
        c = np.where(g.random(n) < 0.3, DC.subnormal(n), c)
        return a, b, c

    def kind_specials():
        a, b, c = kind_random_mid()
        pick = g.random((n, k)) < 0.15
        a = np.where(pick, DI.top_field((n, k)), a)
        b = np.where(g.random((n, k)) < 0.1, np.uint64(0), b)
        c = np.where(g.random(n) < 0.2, DC.top_field(n), c)
        return a, b, c

    def kind_zeros():
        """Zero products beside tiny ones and a tiny c: where a zero's exponent enters the alignment."""
        a, b, c = kind_random_mid()
        zero = g.random((n, k)) < np.array([1.0, 0.9, 0.5])[g.integers(0, 3, (n, 1))]   # all, most or half
        a = np.where(zero, a & DI.sign, DI.normal(DI.exps((n, k), elo, elo + p)))
        b = np.where(zero, b, DB.normal(DB.exps((n, k), elo, elo + p)))
        c = np.where(g.random(n) < 0.5, DC.subnormal(n), DC.normal(DC.exps(n, clo, clo + 2 * fc.precision)))
        return a, b, c

    def kind_zero_floor():
        """A fixed e_zero binding (docs/zeros.md): c = +-0 and a zero product beside an anchor product
        just below e_zero (or at the output's rounding boundary) and a tiny product between the
        anchor's cut 2^(e_anchor - F) and e_zero's 2^(e_zero - F). Block-scaled models: the scales
        carry the products there (ST-FDPA: one shift for the block; GST-FDPA: block 0 just below
        e_zero, each later block about F binades lower, one product per block)."""
        F = ma.F or 24
        t = np.array(targets)[g.integers(0, len(targets), (n, 1))]
        fo = get_format(ma.out_fmt)
        edge = fo.emin - fo.mbits - 1                    # the smallest subnormal's tie point
        shift = None
        if ma.op == "gstfdpa":
            fs = get_format(ma.scale_fmt)
            ns = ma.scale_count(k)
            steps = np.concatenate([np.zeros((n, 1), int), g.integers(F - 4, F + 8, (n, max(ns - 1, 0)))], axis=1)
            sh = np.clip(t - g.integers(1, 9, (n, 1)) - np.cumsum(steps, axis=1), 2 * fs.emin, 2 * fs.emax)
            shift = (sh // 2, sh - sh // 2)
            e = np.zeros((n, k), np.int64)
            first = (np.arange(k) % ma.scale_block) == 0
            a = np.where(first[None, :], DI.normal(e, "short"), DI.normal(e) & DI.sign)
            b = DI.normal(e, "short")
            c = np.where(g.random(n) < 0.8, DC.sign * g.integers(0, 2, n).astype(np.uint64), DC.subnormal(n))
            return a, b, c, shift
        if ma.scale_fmt:           # ST-FDPA: products high in the format's range, the scales move them
            fs = get_format(ma.scale_fmt)
            t_in = 2 * ehi - 2
            sh = np.clip(t - t_in, 2 * fs.emin, 2 * fs.emax)
            shift = (np.maximum(sh // 2, fs.emin), sh - np.maximum(sh // 2, fs.emin))
            edge, t = edge - sh, t - sh
        ea = np.where(g.random((n, 1)) < 0.5, t - g.integers(1, 13, (n, 1)), edge + g.integers(-1, 3, (n, 1)))
        ea = np.minimum(ea, t - 1)
        et = ea - F + g.integers(0, np.maximum(1, t[:, 0] - ea[:, 0]) + 1)[:, None]
        et = np.minimum(et, t - F - 1)
        e = np.zeros((n, k), np.int64) + np.int64(fi.emin - fi.mbits - 1) * 4     # the rest: zero below
        e[:, :1], e[:, 1 % k:1 % k + 1] = ea, et
        half = e // 2
        a = DI.at(half, "short")
        b = DB.at(e - half, "short", neg=np.zeros((n, k), bool))
        rest = np.arange(k) >= 2
        a = np.where(rest[None, :], a & DI.sign, a)
        b = np.where(rest[None, :], DB.normal(DB.exps((n, k), mid - p, fb.emax)), b)
        c = np.where(g.random(n) < 0.8, DC.sign * g.integers(0, 2, n).astype(np.uint64), DC.subnormal(n))
        return a, b, c, shift

    def kind_readable(level: int):
        """One to three non-zero products at random positions: a_i = ±2^e and b_i = 1.0 (level
        0), a_i, b_i = ±2^e (1), both with <= 3 mantissa bits (2); c with <= 3 mantissa bits at
        an exponent gap from the largest product that spans the accumulator's alignment (or 0)."""
        few = g.integers(1, min(k, 3) + 1, (n, 1))
        keep = np.argsort(g.random((n, k)), axis=1) < few
        mode = "pow2" if level < 2 else "top3"
        ea = DI.exps((n, k), max(elo, mid - p), min(ehi, mid + p))
        a = DI.normal(ea, mode)
        if level == 0:
            eb = np.zeros((n, k), np.int64)
            b = DB.normal(eb, "pow2", np.zeros((n, k), bool))
        else:
            eb = DB.exps((n, k), max(elo, -2), min(ehi, 2))
            b = DB.normal(eb, mode)
        a, b = np.where(keep, a, np.uint64(0)), np.where(keep, b, np.uint64(0))
        top = np.where(keep, ea + eb, -10 ** 6).max(axis=1)
        gap = g.integers(-fc.precision - 4, 2 * fc.precision + 5, n)
        c = DC.normal(top + gap, "top3")
        c = np.where(g.random(n) < 0.15, np.uint64(0), c)
        return a, b, c

    kinds = [kind_random, kind_zeros] + ([kind_zero_floor] if targets and k >= 2 else []) + [
        kind_gaps, kind_random_mid, kind_ties, kind_carry, kind_cancel, kind_subnormal, kind_specials]
    assert len(kinds) == KINDS + (1 if targets and k >= 2 else 0)
    if simple:
        kinds = [lambda: kind_readable(0), lambda: kind_readable(1), lambda: kind_readable(2)] + kinds
    while True:
        for kind in kinds:
            yield finish(*kind())          # (a, b, c) or (a, b, c, scale exponents)


def _int_probes(k: int, fi, fc, cons: Constraints, g: np.random.Generator):
    """Integer models (op imma): uniform patterns, then the extreme products (all inputs at the
    format's min or max, so the sum runs far from 0) with c near the s32 limits -- where
    wrap-around and saturation part -- round after round; fixed entries applied."""
    n = BATCH
    lo, hi = fi.lo, fi.hi
    mask = np.uint64((1 << fi.width) - 1)
    cmask = np.uint64((1 << fc.width) - 1)

    def enc(v, m):
        return (np.asarray(v, dtype=np.int64).astype(np.uint64)) & m

    def uniform():
        return (g.integers(0, 1 << fi.width, (n, k), dtype=np.uint64), g.integers(0, 1 << fi.width, (n, k), dtype=np.uint64),
                g.integers(0, 1 << fc.width, n, dtype=np.uint64))

    def extreme():
        va = np.where(g.random((n, 1)) < 0.5, lo, hi).repeat(k, axis=1)
        vb = np.where(g.random((n, 1)) < 0.5, lo, hi).repeat(k, axis=1)
        edge = np.where(g.random(n) < 0.5, fc.lo, fc.hi) - g.integers(-(1 << 20), 1 << 20, n)
        c = np.clip(edge, fc.lo, fc.hi)
        return enc(va, mask), enc(vb, mask), enc(c, cmask)

    while True:
        for kind in (uniform, extreme):
            a, b, c = kind()
            if cons.c_zero:
                c = np.zeros_like(c)
            out = {f"a{i}": a[:, i] for i in range(k)} | {f"b{i}": b[:, i] for i in range(k)} | {"c": c}
            for name, bits in cons.fixed:
                if name in out:
                    out[name] = np.full(n, int(bits), np.uint64)
            yield out


def twin_search(ma: Model, mb: Model, k: int, cons: Constraints, timeout: float, want: int = 1,
                max_cases: int = 16384, seed: int = 0, simple: bool = False, rounds: int | None = None) -> Result:
    """Cases on which the two models' outputs differ and the constraints hold, found by the twin
    alone (``Sat`` with ``extra["models"]``), or ``Unknown`` after ``max_cases`` (or ``rounds``
    rounds of probes) or ``timeout``. ``simple``: readable probes first (:func:`probes`)."""
    targets = tuple(fixed_zero_exponents(ma, mb))
    if rounds is not None:
        max_cases = rounds * (KINDS + (1 if targets and k >= 2 else 0) + READABLE_KINDS * simple) * BATCH

    def batches():
        total = 0
        for batch in probes(ma, k, cons, seed, targets, simple):
            yield batch
            total += BATCH
            if total >= max_cases:
                return

    def accept(batch):
        a = np.stack([batch[f"a{i}"] for i in range(k)], axis=1)
        b = np.stack([batch[f"b{i}"] for i in range(k)], axis=1)
        c = batch["c"]
        sc = (None, None)
        if ma.scale_fmt:
            ns = ma.scale_count(k)
            sc = tuple(np.stack([batch[f"{nm}{i}"] for i in range(ns)], axis=1) for nm in ("sa", "sb"))
        return _mask(ma, a, b, c, k, cons) & (ma.evaluate(a, b, c, *sc) != mb.evaluate(a, b, c, *sc))

    return TwinSearch().search(batches(), accept, timeout, want)
