"""Simple mode's twin-guided reduction: make a distinguishing vector more readable without losing it.

Readability is measured (:func:`readability`, smaller is better, compared in this order): the
number of non-zero products, of non-zero entries, of significant mantissa bits, of b_i other
than 1.0, the exponent spread of the non-zero entries, and their distance from 2^0. Each step
builds a whole batch of edited vectors, evaluates them with the twin at once (one lane per
candidate) and keeps the most readable one on which the outputs still differ and the caller's
constraints still hold; the steps repeat until none helps.
"""

from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np

from smtmodel.formats import Format, get_format
from smtmodel.fp.classify import classify_bits, encode_fields, one_bits
from smtmodel.model import Model

from .constraints import SIMPLE_LEVELS, Constraints
from .search import twin_constraints_ok, twin_outputs

CHUNK = 1024
"""Candidates evaluated by the twin per call."""


def _fields(x: int, f: Format) -> tuple[int, int, int]:
    """(sign, biased exponent field, mantissa field) of a raw pattern."""
    enc = x >> f.shift
    m = enc & ((1 << f.mbits) - 1)
    e = (enc >> f.mbits) & ((1 << f.ebits) - 1)
    s = (enc >> (f.ebits + f.mbits)) & 1 if f.signed else 0
    return s, e, m


def _sign_mask(f) -> int:
    """The sign bit's pattern (0 for unsigned formats)."""
    return encode_fields(f, 1, 0, 0) if f.signed else 0


def _is_zero(x: int, f: Format) -> bool:
    return _info(f)(x)[0]


def _is_finite_normal_or_sub(x: int, f: Format) -> bool:
    return _info(f)(x)[1]


def _exponent(x: int, f: Format) -> int:
    _s, e, _m = _fields(x, f)
    return max(e, 1) - f.bias if f.policy != "e8m0" else e - f.bias


def _mant_bits(x: int, f: Format) -> int:
    """Significant mantissa-field bits: the field's width less its trailing zeros."""
    m = _fields(x, f)[2]
    return 0 if m == 0 else f.mbits - ((m & -m).bit_length() - 1)


class _Info:
    """Per-format facts of raw patterns, memoised: (zero, finite, exponent, mantissa bits)."""

    def __init__(self, f: Format):
        self.f, self.memo = f, {}

    def __call__(self, x: int) -> tuple:
        got = self.memo.get(x)
        if got is None:
            f = self.f
            cls = classify_bits(x, f)        # the format's own zero, NaN and infinity rules
            got = self.memo[x] = (cls.zero, not (cls.nan or cls.inf), _exponent(x, f), _mant_bits(x, f))
        return got


_INFO: dict = {}


def _info(f: Format) -> _Info:
    if f.name not in _INFO or _INFO[f.name].f != f:
        _INFO[f.name] = _Info(f)
    return _INFO[f.name]


def readability(values: dict, ma: Model, k: int) -> tuple:
    """(non-zero products, significant mantissa bits, exponent spread of the non-zero products
    and c, b_i other than 1.0, non-zero entries, distance of the exponents from 2^0): smaller
    reads more easily."""
    (fi, fb), fc = (get_format(f) for f in ma.operand_fmts), get_format(ma.c_fmt)
    ii, ib, ic = _info(fi), _info(fb), _info(fc)
    one = one_bits(fb)                   # b_i = 1.0 in b's format (mixed operands)
    a = [ii(values[f"a{i}"]) for i in range(k)]
    b = [ib(values[f"b{i}"]) for i in range(k)]
    c = ic(values["c"])
    nz = [x for x in a + b + [c] if not x[0]]
    fin = [x for x in nz if x[1]]
    live = [i for i in range(k) if not a[i][0] and not b[i][0]]
    terms = [a[i][2] + b[i][2] for i in live if a[i][1] and b[i][1]]
    if not c[0] and c[1]:
        terms.append(c[2])
    not_one = sum(1 for i in range(k) if values[f"b{i}"] != one)
    return (len(live), sum(x[3] for x in fin), (max(terms) - min(terms)) if terms else 0, not_one,
            len(nz), sum(abs(x[2]) for x in fin))


def simple_level(ma: Model, values: dict, k: int, cons: Constraints) -> int:
    """The first (most readable) simple-mode level whose constraints the vector meets."""
    for lv in range(len(SIMPLE_LEVELS)):
        if bool(twin_constraints_ok(ma, [values], k, cons, lv)[0]):
            return lv
    return len(SIMPLE_LEVELS) - 1


class _Reducer:
    def __init__(self, ma: Model, mb: Model, k: int, cons: Constraints):
        self.ma, self.mb, self.k, self.cons = ma, mb, k, cons
        (self.fi, self.fb), self.fc = (get_format(f) for f in ma.operand_fmts), get_format(ma.c_fmt)
        self.fixed = {n for n, _ in cons.fixed}
        self.evaluated = 0

    def fmt(self, name: str) -> Format:
        return self.fc if name == "c" else self.fb if name[0] == "b" else self.fi

    def best(self, cur: dict, cands: list) -> dict:
        """The most readable candidate (more readable than ``cur``) that still distinguishes."""
        score = readability(cur, self.ma, self.k)
        uniq = {tuple(sorted(c.items())): c for c in cands}.values()
        ranked = sorted(((readability(c, self.ma, self.k), i, c) for i, c in enumerate(uniq)), key=lambda t: t[:2])
        scored = [c for sc, _i, c in ranked if sc < score]
        for start in range(0, len(scored), CHUNK):
            chunk = scored[start:start + CHUNK]
            self.evaluated += len(chunk)
            da, db = twin_outputs(self.ma, self.mb, chunk, self.k)
            ok = twin_constraints_ok(self.ma, chunk, self.k, self.cons) & (da != db)
            idx = np.flatnonzero(ok)
            if idx.size:
                return chunk[int(idx[0])]
        return cur

    # ---- the edits ------------------------------------------------------------------------

    def fewer_products(self, v: dict) -> list:
        """Keep a subset of the products (up to three), the others zero (signs kept or not)."""
        k, sign, sign_b = self.k, _sign_mask(self.fi), _sign_mask(self.fb)
        live = [i for i in range(k) if not (_is_zero(v[f"a{i}"], self.fi) or _is_zero(v[f"b{i}"], self.fb))]
        free = [i for i in live if not ({f"a{i}", f"b{i}"} & self.fixed)]
        out = []
        sizes = [s for s in range(0, min(3, len(live))) if comb(len(free), len(live) - s) <= 2000]
        one = one_bits(self.fb)

        def dropped(w, i, how):
            if how == "unit":                          # 0 * 1.0: simple level b=1,a=2^e keeps b_i = 1.0
                w[f"a{i}"], w[f"b{i}"] = 0, one
            else:                                      # 0 * 0, signs kept or not
                w[f"a{i}"] = v[f"a{i}"] & sign if how == "signed" else 0
                w[f"b{i}"] = v[f"b{i}"] & sign_b if how == "signed" else 0

        for size in sizes:
            for drop in combinations(free, len(live) - size):
                for how in ("unit", "zero", "signed"):
                    w = dict(v)
                    for i in drop:
                        dropped(w, i, how)
                    out.append(w)
        for i in free:                                 # one product fewer
            for how in ("unit", "zero", "signed"):
                w = dict(v)
                dropped(w, i, how)
                out.append(w)
        return out

    def unit_b(self, v: dict) -> list:
        """b_i = 1.0 (its sign moved to a_i or dropped), one at a time and all at once."""
        one, sign, sign_b = one_bits(self.fb), _sign_mask(self.fi), _sign_mask(self.fb)
        idx = [i for i in range(self.k) if v[f"b{i}"] != one and f"b{i}" not in self.fixed]
        out = []
        for move_sign in (True, False):
            def edit(w, i):
                w[f"b{i}"] = one
                if move_sign and v[f"b{i}"] & sign_b and f"a{i}" not in self.fixed:
                    w[f"a{i}"] = v[f"a{i}"] ^ sign
            every = dict(v)
            for i in idx:
                edit(every, i)
            out.append(every)
            for i in idx:
                w = dict(v)
                edit(w, i)
                out.append(w)
        return out

    def zero_c(self, v: dict) -> list:
        if "c" in self.fixed or _is_zero(v["c"], self.fc):
            return []
        return [{**v, "c": 0}, {**v, "c": v["c"] & _sign_mask(self.fc)}]

    def shorter_mantissas(self, v: dict) -> list:
        """Each entry with fewer significant mantissa bits (low bits cleared)."""
        out = []
        for n, x in v.items():
            if n in self.fixed or n not in self._entries():
                continue
            f = self.fmt(n)
            bits = _mant_bits(x, f)
            for keep in range(0, bits):
                drop = f.mbits - keep
                out.append({**v, n: x & ~encode_fields(f, 0, 0, (1 << drop) - 1)})
        return out

    def closer_exponents(self, v: dict) -> list:
        """Each non-zero finite entry moved to every normal exponent, and all of a and c shifted
        together (the alignment between them kept)."""
        out = []
        names = [n for n in self._entries() if n not in self.fixed]
        movable = [n for n in names if not _is_zero(v[n], self.fmt(n)) and _is_finite_normal_or_sub(v[n], self.fmt(n))
                   and _fields(v[n], self.fmt(n))[1] != 0]
        for n in movable:
            f = self.fmt(n)
            s, e, m = _fields(v[n], f)
            for e2 in range(1, (1 << f.ebits) - 1):
                if e2 != e:
                    out.append({**v, n: encode_fields(f, s, e2, m)})
        joint = [n for n in movable if n[0] in "ac"]
        if len(joint) > 1:
            for d in range(-(1 << self.fi.ebits), (1 << self.fi.ebits) + 1):
                w, ok = dict(v), d != 0
                for n in joint:
                    f = self.fmt(n)
                    s, e, m = _fields(v[n], f)
                    if not 1 <= e + d < (1 << f.ebits) - 1:
                        ok = False
                        break
                    w[n] = encode_fields(f, s, e + d, m)
                if ok:
                    out.append(w)
        return out

    def _entries(self) -> list:
        return [f"a{i}" for i in range(self.k)] + [f"b{i}" for i in range(self.k)] + ["c"]


def reduce_vector(ma: Model, mb: Model, values: dict, k: int, cons: Constraints, max_rounds: int = 60) -> dict:
    """Make a distinguishing vector more readable without losing it (twin only).

    Edits, each step keeping the most readable candidate (:func:`readability`) on which the
    outputs still differ and the caller's constraints still hold: keep fewer products (the others
    zero, signs kept or not), set b_i = 1.0, set c = 0, shorten mantissas (clear low bits), move
    exponents closer together (one entry, or every a_i and c shifted together); repeated until
    no step helps or ``max_rounds`` steps were taken."""
    r = _Reducer(ma, mb, k, cons)
    cur = dict(values)
    steps = (r.fewer_products, r.unit_b, r.zero_c, r.shorter_mantissas, r.closer_exponents)
    rounds = 0
    while rounds < max_rounds:
        before = cur
        for step in steps:
            while rounds < max_rounds:
                rounds += 1
                nxt = r.best(cur, step(cur))
                if nxt is cur:
                    break
                cur = nxt
        if cur is before:
            break
    return cur
