"""Statistics of model outputs over random inputs: the error against the exact result (seed 000
§5's error distributions) and the discrepancy between models (the fraction of cases on which two
models' outputs differ). Pure computation on raw bits; the figures and campaigns that use it
sit in the command line (``mmaprobe plot``, ``mmaprobe report``).

The exact result ``c + sum_i a_i b_i`` is computed with Python ``Fraction`` arithmetic from the
inputs' values (the formats' decoding only), independently of the models' accumulation.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from smtmodel.formats import bits_to_numpy, get_format
from smtmodel.sampling import KINDS, validation_mix

from .bounds.exact import ulp_of


def draw(in_fmt: str, c_fmt: str, k: int, n: int, dist: str = "normal", seed: int = 0):
    """``n`` cases of ``k`` products from one kind of :func:`smtmodel.sampling.validation_mix`
    (``normal``, ``wide``, ``cancel``, ``raw``): raw bits ``(a, b, c)``."""
    if dist not in KINDS:
        raise ValueError(f"unknown input distribution {dist!r}: one of {', '.join(KINDS)}")
    a, b, c, kinds = validation_mix(in_fmt, c_fmt, k, n * len(KINDS), seed)
    sel = np.flatnonzero(kinds == dist)[:n]
    return a[sel], b[sel], c[sel]


def _values(bits: np.ndarray, fmt) -> np.ndarray:
    """float64 values of raw bits (exact: every format here has at most 24 significant bits)."""
    return bits_to_numpy(bits, fmt).astype(np.float64)


def exact_dots(a, b, c, in_fmt: str, c_fmt: str) -> list:
    """``c + sum_i a_i b_i`` per case as an exact ``Fraction``; ``None`` where an input is not finite."""
    va, vb, vc = _values(a, in_fmt), _values(b, in_fmt), _values(c, c_fmt)
    ok = np.isfinite(va).all(axis=1) & np.isfinite(vb).all(axis=1) & np.isfinite(vc)
    out = []
    for i in range(len(vc)):
        if not ok[i]:
            out.append(None)
            continue
        s = Fraction(float(vc[i]))
        for x, y in zip(va[i], vb[i]):
            if x and y:
                s += Fraction(float(x)) * Fraction(float(y))
        out.append(s)
    return out


def error_ulps(d, exact: list, out_fmt: str) -> np.ndarray:
    """Signed error ``(d - exact) / ulp(exact)`` in units in the last place of the output format
    at the exact value (float; NaN where the output or the exact value is not finite)."""
    fo = get_format(out_fmt)
    vd = _values(np.asarray(d, dtype=np.uint64), fo)
    p, emin = fo.mbits + 1, 1 - fo.bias
    err = np.full(len(vd), np.nan)
    for i, (x, ex) in enumerate(zip(vd, exact)):
        if ex is None or not np.isfinite(x):
            continue
        err[i] = float((Fraction(float(x)) - ex) / ulp_of(abs(ex), p, emin))
    return err


def summary(err: np.ndarray) -> dict:
    """Mean, median, max of |error| (ulps), the exact fraction, over the finite cases."""
    e = err[np.isfinite(err)]
    if not e.size:
        return {"cases": 0}
    ae = np.abs(e)
    return {"cases": int(e.size), "mean_abs": float(ae.mean()), "median_abs": float(np.median(ae)),
            "max_abs": float(ae.max()), "mean": float(e.mean()), "exact_fraction": float(np.mean(e == 0))}


def differ(x, y, fmt) -> np.ndarray:
    """Elementwise: do raw outputs ``x``, ``y`` differ (bitwise, any NaN equal to any NaN)?"""
    x, y = np.asarray(x, dtype=np.uint64), np.asarray(y, dtype=np.uint64)
    with np.errstate(invalid="ignore"):
        both_nan = np.isnan(_values(x, fmt)) & np.isnan(_values(y, fmt))
    return (x != y) & ~both_nan


def discrepancy_matrix(outputs: dict, out_fmt: str) -> tuple[list[str], np.ndarray]:
    """For outputs ``{model_id: raw bits}`` on the same cases: the ids and the matrix of the
    fractions of cases on which each pair differs (symmetric, zero diagonal)."""
    ids = list(outputs)
    m = np.zeros((len(ids), len(ids)))
    for i, x in enumerate(ids):
        for j in range(i + 1, len(ids)):
            m[i, j] = m[j, i] = float(differ(outputs[x], outputs[ids[j]], out_fmt).mean())
    return ids, m


# ---- error-compensated GEMM schemes -----------------------------------------------------------------

def scheme_errors(scheme, k: int, n: int = 256, seed: int = 0, model=None, representable_in: str | None = None):
    """Errors in fp32 ulps of the exact result (|d - exact| / ulp(exact)) of a GEMM scheme
    (:mod:`smtmodel.schemes`) on ``n`` random dot products of length ``k``: a, b, c uniform in
    (-1, 1); with ``representable_in`` (e.g. ``fp8e4m3``) a and b are first rounded to that format,
    so the split is exact and the error is the accumulation's alone (the FP8 promotion interval
    N_C). Exact integer arithmetic in the semantic core (:class:`queries.schemes.ErrorFormula`)."""
    from smtmodel.bv import NUMPY
    from smtmodel.sampling import round_to

    from .schemes import ErrorFormula, InputRange, setup

    su = setup(scheme, model)
    g = np.random.default_rng(seed)
    a = g.uniform(-1, 1, (n, k))
    b = g.uniform(-1, 1, (n, k))
    if representable_in:
        a = _values(round_to(a, representable_in), representable_in)
        b = _values(round_to(b, representable_in), representable_in)
    bits = lambda x: np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    vals = {f"a{i}": bits(a[:, i]) for i in range(k)}
    vals.update({f"b{i}": bits(b[:, i]) for i in range(k)})
    vals["c"] = bits(g.uniform(-1, 1, n))
    f = ErrorFormula(NUMPY, [su], k, InputRange(exp_range=None, c_exp_range=None),
                     var=lambda name: NUMPY.input(vals[name], 32))
    err = np.broadcast_to(np.asarray(f.abs_errs[0].v, dtype=object), (n,))
    ulp = np.broadcast_to(np.asarray(f.ulp.v, dtype=object), (n,))
    return np.array([int(e) / int(u) for e, u in zip(err, ulp)])
