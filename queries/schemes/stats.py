"""Scheme error statistics on random matrices, computed by the twin in exact integer arithmetic,
and the catalog models a scheme can run on."""

from __future__ import annotations

import numpy as np

from smtmodel.bv import NUMPY
from smtmodel.catalog import all_models
from smtmodel.formats import get_format
from smtmodel.schemes import get_scheme
from smtmodel.schemes.core import SchemeError

from .inputs import InputRange, setup
from .witness import ErrorFormula


def stats(scheme, model=None, k: int = 64, m: int = 32, n: int = 32, seed: int = 0, dist: str = "uniform",
          exp_range=(-15, 14)) -> dict:
    """Twin run of a scheme on random matrices A (m x k), B (k x n), C (m x n): error statistics
    of the m*n outputs in fp32 ulps of the exact result (and relative), exact integer arithmetic."""
    s = get_scheme(scheme)
    su = setup(s, model)
    g = np.random.default_rng(seed)
    if dist == "uniform":
        A = g.uniform(-1, 1, (m, k)).astype(np.float32)
        Bm = g.uniform(-1, 1, (k, n)).astype(np.float32)
        C = g.uniform(-1, 1, (m, n)).astype(np.float32)
        rng = InputRange(exp_range=None, c_exp_range=None)
    elif dist == "exp":       # O-Y "type 1"-like: random exponents in a range, random signs
        lo, hi = exp_range
        def draw(shape):
            mant = g.uniform(1, 2, shape)
            return (mant * 2.0 ** g.integers(lo, hi + 1, shape) * g.choice([-1, 1], shape)).astype(np.float32)
        A, Bm, C = draw((m, k)), draw((k, n)), draw((m, n))
        rng = InputRange(exp_range=None, c_exp_range=None)
    else:
        raise SchemeError(f"unknown distribution {dist!r}: uniform or exp")
    ai = np.repeat(np.arange(m), n)
    bj = np.tile(np.arange(n), m)
    a = A[ai].view(np.uint32).astype(np.uint64)
    b = Bm[:, bj].T.copy().view(np.uint32).astype(np.uint64)
    c = C.reshape(-1).view(np.uint32).astype(np.uint64)
    vals = {f"a{i}": a[:, i] for i in range(k)}
    vals.update({f"b{i}": b[:, i] for i in range(k)})
    vals["c"] = c
    f = ErrorFormula(NUMPY, [su], k, rng, var=lambda name: NUMPY.input(vals[name], 32))
    N = m * n
    err = np.broadcast_to(np.asarray(f.abs_errs[0].v, dtype=object), (N,))
    ulp = np.broadcast_to(np.asarray(f.ulp.v, dtype=object), (N,))
    ex = np.broadcast_to(np.asarray(f.abs_exact.v, dtype=object), (N,))
    ulps = np.array([int(e) / int(u) for e, u in zip(err, ulp)])
    rel = np.array([int(e) / int(x) if int(x) else 0.0 for e, x in zip(err, ex)])
    return {"scheme": su.label, "k": k, "shape": [m, n], "dist": dist, "seed": seed,
            "mean_ulp": float(ulps.mean()), "max_ulp": float(ulps.max()), "median_ulp": float(np.median(ulps)),
            "exact_fraction": float(np.mean(ulps == 0)), "mean_rel": float(rel.mean()), "max_rel": float(rel.max())}


def compatible_models(scheme) -> list[str]:
    """One catalog model per architecture that the scheme can run on (base ids only)."""
    s = get_scheme(scheme)
    if s.fp32:
        return [None]
    fmt = get_format(s.split.fmt).name
    out, seen = [], set()
    for m in all_models():
        if m.op != "tfdpa" or get_format(m.in_fmt).name != fmt or get_format(m.c_fmt).name != "fp32":
            continue
        if m.kind != "catalog" or m.out_fmt != "fp32" or m.arch in seen:
            continue
        seen.add(m.arch)
        out.append(m.id)
    return out


def stats_memory(m: int, n: int, k: int) -> int:
    """Bytes :func:`stats` needs at most for (m, k) x (k, n) random matrices, an upper estimate:
    16 float64 copies of A and B (the scheme's split terms) and 512 bytes per output (the exact
    values)."""
    return 8 * 16 * (m * k + k * n) + 512 * m * n
