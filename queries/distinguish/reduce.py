"""Simple mode's twin-guided reduction: make a distinguishing vector more readable without losing it."""

from __future__ import annotations

import numpy as np

from smtmodel.formats import get_format
from smtmodel.fp.classify import encode_fields, one_bits
from smtmodel.model import Model

from .constraints import Constraints
from .search import twin_constraints_ok, twin_outputs


def _sign_mask(f) -> int:
    """The sign bit's pattern (0 for unsigned formats)."""
    return encode_fields(f, 1, 0, 0) if f.signed else 0


def reduce_vector(ma: Model, mb: Model, values: dict, k: int, cons: Constraints, max_rounds: int = 200) -> dict:
    """Greedily make a distinguishing vector more readable without losing it (twin only).

    Candidate edits, tried in this order, each kept only if the twin still sees the outputs
    differ and the caller's constraints still hold: drop a product (a_i = b_i = 0, signs kept),
    set b_i = 1.0, set c = 0, then shorten mantissas (keep fewer leading mantissa bits)."""
    (fi, fb), fc = (get_format(f) for f in ma.operand_fmts), get_format(ma.c_fmt)
    fixed = {n for n, _ in cons.fixed}
    one = one_bits(fb)                   # b_i = 1.0 in b's format
    sign_i, sign_b = _sign_mask(fi), _sign_mask(fb)
    cur = dict(values)

    def shorten(x, f, keep):
        drop = f.mbits - keep
        return x if drop <= 0 else x & ~encode_fields(f, 0, 0, (1 << drop) - 1)

    def candidates(v):
        for i in range(k):
            if not ({f"a{i}", f"b{i}"} & fixed):
                if v[f"a{i}"] or v[f"b{i}"]:
                    yield {**v, f"a{i}": 0, f"b{i}": 0}
                zs = {**v, f"a{i}": v[f"a{i}"] & sign_i, f"b{i}": v[f"b{i}"] & sign_b}
                if zs != v:
                    yield zs
        for i in range(k):
            n = f"b{i}"
            if n not in fixed and v[n] != one:
                yield {**v, n: one}
        if "c" not in fixed and v["c"] != 0:
            yield {**v, "c": 0}
        names = [(f"a{i}", fi) for i in range(k)] + [(f"b{i}", fb) for i in range(k)] + [("c", fc)]
        for keep in range(0, max(fi.mbits, fb.mbits, fc.mbits)):
            for n, f in names:
                if n not in fixed and keep < f.mbits:
                    y = shorten(v[n], f, keep)
                    if y != v[n]:
                        yield {**v, n: y}

    for _ in range(max_rounds):
        cands = list(candidates(cur))
        if not cands:
            break
        improved = False
        for start in range(0, len(cands), 64):
            chunk = cands[start:start + 64]
            da, db = twin_outputs(ma, mb, chunk, k)
            ok = twin_constraints_ok(ma, chunk, k, cons) & (da != db)
            idx = np.flatnonzero(ok)
            if idx.size:
                cur = chunk[int(idx[0])]
                improved = True
                break
        if not improved:
            break
    return cur
