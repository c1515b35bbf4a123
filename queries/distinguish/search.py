"""The twin's side of a query: both models evaluated on concrete cases, the constraints read
concretely, and the twin search -- structured probes and random cases within the query's
constraints, evaluated in batches (:class:`smtmodel.solve.TwinSearch`).

Probe kinds follow the cases the seeds build by hand to expose an accumulator's internals
(seed 002 §4, seed 000 §3): one large product and small ones at chosen exponent gaps (alignment
and truncation width), short mantissas (ties), all-ones mantissas of one sign (carries), equal
and opposite products (cancellation), subnormals, specials, zero products beside tiny terms;
plus random normal cases.
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


def arrays(vals: list[dict], k: int, ma: Model):
    a = np.array([[v[f"a{i}"] for i in range(k)] for v in vals], dtype=np.uint64)
    b = np.array([[v[f"b{i}"] for i in range(k)] for v in vals], dtype=np.uint64)
    c = np.array([v["c"] for v in vals], dtype=np.uint64)
    sc = (None, None)
    if ma.scale_fmt:
        n = k // ma.scale_block
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


def probes(ma: Model, k: int, cons: Constraints, seed: int = 0):
    """Batches of candidate cases ``{name: uint64 array}``: the structured kinds, then random
    cases, round after round, each with the caller's fixed entries and sign patterns applied."""
    g = np.random.default_rng(seed)
    (fi, fb), fc = (get_format(f) for f in ma.operand_fmts), get_format(ma.c_fmt)
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

    def finish(a, b, c):
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
            ns = k // ma.scale_block
            for nm in ("sa", "sb"):
                s = DS.normal(DS.exps((n, ns), -3, 3), "zero", neg=np.zeros((n, ns), bool))
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

    kinds = [kind_random, kind_zeros, kind_gaps, kind_random_mid, kind_ties, kind_carry, kind_cancel, kind_subnormal,
             kind_specials]
    while True:
        for kind in kinds:
            yield finish(*kind())


def twin_search(ma: Model, mb: Model, k: int, cons: Constraints, timeout: float, want: int = 1,
                max_cases: int = 16384, seed: int = 0) -> Result:
    """Cases on which the two models' outputs differ and the constraints hold, found by the twin
    alone (``Sat`` with ``extra["models"]``), or ``Unknown`` after ``max_cases`` or ``timeout``."""
    def batches():
        total = 0
        for batch in probes(ma, k, cons, seed):
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
            ns = k // ma.scale_block
            sc = tuple(np.stack([batch[f"{nm}{i}"] for i in range(ns)], axis=1) for nm in ("sa", "sb"))
        return _mask(ma, a, b, c, k, cons) & (ma.evaluate(a, b, c, *sc) != mb.evaluate(a, b, c, *sc))

    return TwinSearch().search(batches(), accept, timeout, want)
