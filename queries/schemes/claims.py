"""Vendor claims of the form "scheme X is as accurate as Y" checked element by element against
the exact result: twin runs on input families, errors in exact integer arithmetic
(:class:`queries.schemes.witness.ErrorFormula` over the NumPy backend), the smallest witness where
X is strictly less accurate than Y (smallest K first, then fewest significant bits)."""

from __future__ import annotations

import numpy as np

from smtmodel.bv import NUMPY

from smtmodel.schemes.core import SchemeError

from .inputs import InputRange, setup
from .witness import ErrorFormula

FAMILIES = ("uniform", "wide", "cancel", "ties", "tiny")


def draw(family: str, n: int, k: int, g: np.random.Generator):
    """fp32 arrays a, b (n, k) and c (n,) of one input family:
    uniform  U(-1, 1);
    wide     significand U[1, 2), exponent uniform in [-20, 20], random sign;
    cancel   the second half of a is minus the first half with its last bit flipped, b repeated:
             sums that cancel to a few ulps of the terms;
    ties     fraction bits set only at bf16 / tf32 rounding boundaries (bits 16, 15, 13, 0) and the
             top bits: the splits' tie and carry cases;
    tiny     exponents in [-70, -56], c = 0: products (2^-140 .. 2^-110) and the splits' residuals in
             or near fp32's subnormal range."""
    if family == "uniform":
        a, b, c = g.uniform(-1, 1, (n, k)), g.uniform(-1, 1, (n, k)), g.uniform(-1, 1, n)
    elif family in ("wide", "tiny"):
        lo, hi = (-20, 20) if family == "wide" else (-70, -56)

        def f(shape):
            return g.uniform(1, 2, shape) * 2.0 ** g.integers(lo, hi + 1, shape) * g.choice([-1, 1], shape)
        a, b = f((n, k)), f((n, k))
        c = f((n,)) if family == "wide" else np.zeros(n)
    elif family == "cancel":
        h = max(1, k // 2)
        a = g.uniform(-1, 1, (n, k)).astype(np.float32)
        a[:, h:2 * h] = -(a[:, :h].view(np.uint32) ^ np.uint32(1)).view(np.float32)
        b = g.uniform(-1, 1, (n, k)).astype(np.float32)
        b[:, h:2 * h] = b[:, :h]
        c = np.zeros(n)
    elif family == "ties":
        def f(shape):
            top = g.integers(0, 1 << 7, shape, dtype=np.uint32) << np.uint32(16)
            low = sum(((g.random(shape) < 0.5).astype(np.uint32) << np.uint32(s)) for s in (15, 13, 12, 0))
            e = g.integers(120, 134, shape, dtype=np.uint32) << np.uint32(23)
            sign = (g.random(shape) < 0.5).astype(np.uint32) << np.uint32(31)
            return (sign | e | top | low).view(np.float32)
        a, b, c = f((n, k)), f((n, k)), f((n,))
    else:
        raise ValueError(f"unknown family {family!r}; one of {', '.join(FAMILIES)}")
    return [np.asarray(x, np.float32) for x in (a, b, c)]


def padded_k(setups, k: int) -> int:
    """The smallest K' >= k every scheme runs (multiples of its k-block and tile): a kernel fills
    the K tail of its last tile with zeros (TMA out-of-bounds fill), which adds exact zero products."""
    for kk in range(k, k + 4096):
        try:
            for su in setups:
                su.scheme.walk(kk, su.scheme.resolve_model(su.model), _Probe())
            return kk
        except SchemeError:
            continue
    raise SchemeError(f"no K >= {k} fits the schemes' blocks")


class _Probe:
    """A reading of Scheme.walk that computes nothing (only its K checks run)."""

    def __getattr__(self, name):
        return lambda *a, **kw: (None if name != "rescale" else None)


def _errors(setups, a, b, c):
    kk = padded_k(setups, a.shape[1])
    if kk != a.shape[1]:
        z = np.zeros((a.shape[0], kk - a.shape[1]), np.float32)
        a, b = np.concatenate([a, z], axis=1), np.concatenate([b, z], axis=1)
    f = _numpy_formula(setups, a, b, c)
    n = a.shape[0]
    errs = [np.broadcast_to(np.asarray(e.v, dtype=object), (n,)) for e in f.abs_errs]
    ulp = np.broadcast_to(np.asarray(f.ulp.v, dtype=object), (n,))
    return errs, ulp


def compare(x, y, ks=(1, 2, 4, 16, 64), families=FAMILIES, n: int = 256, seed: int = 0,
            model_x=None, model_y=None) -> dict:
    """Per family and K: how often |err_X| > |err_Y| and the converse, the largest errors in
    fp32 ulps of the exact value, and the first witness with X worse (smallest K first)."""
    sx, sy = setup(x, model_x), setup(y, model_y)
    g = np.random.default_rng(seed)
    rows, witness = [], None
    for k in ks:
        for fam in families:
            a, b, c = draw(fam, n, k, g)
            if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
                continue
            (ex, ey), ulp = _errors([sx, sy], a, b, c)
            worse = np.array([int(p) > int(q) for p, q in zip(ex, ey)])
            better = np.array([int(p) < int(q) for p, q in zip(ex, ey)])
            ux = [int(e) / int(u) for e, u in zip(ex, ulp)]
            uy = [int(e) / int(u) for e, u in zip(ey, ulp)]
            rows.append({"k": k, "family": fam, "n": n, "x_worse": int(worse.sum()), "x_better": int(better.sum()),
                         "max_ulp_x": max(ux), "max_ulp_y": max(uy),
                         "mean_ulp_x": float(np.mean(ux)), "mean_ulp_y": float(np.mean(uy))})
            if witness is None and worse.any():
                i = int(np.argmax(worse))
                witness = {"k": k, "family": fam, "a": [f"0x{v:08x}" for v in a[i].view(np.uint32)],
                           "b": [f"0x{v:08x}" for v in b[i].view(np.uint32)], "c": f"0x{int(c[i:i + 1].view(np.uint32)[0]):08x}",
                           "a_float": [float(v) for v in a[i]], "b_float": [float(v) for v in b[i]],
                           "err_x_ulp": ux[i], "err_y_ulp": uy[i]}
    return {"x": sx.label, "y": sy.label, "seed": seed, "rows": rows, "witness": witness}


def tc_products(scheme) -> int:
    """Tensor-core piece products per (row, column, k): the pairs the scheme computes (0 for fp32)."""
    s = scheme
    return 0 if s.fp32 else sum(len(p.pairs) for p in s.passes)


def table(names, k: int = 64, n: int = 64, seed: int = 0, exp_range=(-20, 20), solver: str = "bitwuzla",
          timeout: float = 120, steps: int = 0, log=None) -> list[dict]:
    """One row per scheme: tensor-core products, the proved componentwise bound at K (composition,
    inputs with exponents in ``exp_range``), the largest componentwise error |err| / (|c| + sum |a b|)
    the twin finds on the uniform, wide, cancel and ties families (n rows each), and both in bits
    (-log2), and with ``steps`` > 0 the largest error of :func:`search_worst` (inputs kept in
    ``exp_range``, so it is comparable with the proved bound). A scheme the composition does not
    cover gets its reason instead of a bound."""
    from fractions import Fraction

    from smtmodel.schemes import get_scheme

    from .bound import compose
    rows = []
    g = np.random.default_rng(seed)
    fams = ("uniform", "wide", "cancel", "ties")
    inputs = {f: draw(f, n, k, g) for f in fams}
    for name in names:
        s = get_scheme(name)
        su = setup(s)
        try:
            b = compose(s, k, None, InputRange(exp_range=exp_range, c_exp_range=exp_range), solver, timeout)
            proved, why = b.comp, ""
        except SchemeError as exc:
            proved, why = None, str(exc)
        found = 0.0
        for f in fams:
            a, bb, c = inputs[f]
            kk = padded_k([su], k)
            if kk != k:
                raise SchemeError(f"{name}: K={k} does not fit its tile; give a multiple of {kk}")
            (e,), _ = _errors([su], a, bb, c)
            denom = [abs(Fraction(float(ci))) + sum(abs(Fraction(float(x)) * Fraction(float(y)))
                                                    for x, y in zip(ar, br)) for ar, br, ci in zip(a, bb, c)]
            lsb = _lsb([su], a, bb, c)
            found = max(found, max(float(Fraction(int(ei)) * lsb / d) for ei, d in zip(e, denom) if d))
        searched = search_worst(name, k, n, steps, seed, exp_range, log)["found_comp"] if steps else None
        rows.append({"scheme": su.label, "tc_products": tc_products(s), "k": k,
                     "proved_comp": proved, "proved_bits": (-np.log2(proved) if proved else None),
                     "found_comp": found, "found_bits": (-np.log2(found) if found else None),
                     "searched_comp": searched, "searched_over_proved": (searched / proved if searched and proved else None),
                     "refused": why})
    return rows


def _lsb(setups, a, b, c):
    """The weight 2^lsb0 of the error integers of :func:`_errors` (same window)."""
    from fractions import Fraction
    return Fraction(2) ** _numpy_formula(setups, a, b, c).win.lsb0


def _numpy_formula(setups, a, b, c):
    """The schemes' error formula read by NumPy on fp32 arrays a, b (N, k) and c (N,)."""
    k = a.shape[1]
    vals = {f"a{i}": a[:, i].view(np.uint32).astype(np.uint64) for i in range(k)}
    vals.update({f"b{i}": b[:, i].view(np.uint32).astype(np.uint64) for i in range(k)})
    vals["c"] = c.view(np.uint32).astype(np.uint64)
    return ErrorFormula(NUMPY, setups, k, InputRange(exp_range=None, c_exp_range=None),
                        var=lambda name: NUMPY.input(vals[name], 32))


def _comp_errors(su, a, b, c) -> np.ndarray:
    """Componentwise errors |d - exact| / (|c| + sum |a_k b_k|) of one scheme, exact, as floats."""
    from fractions import Fraction
    (e,), _ = _errors([su], a, b, c)
    lsb = _lsb([su], a, b, c)
    out = np.zeros(a.shape[0])
    for r in range(a.shape[0]):
        d = abs(Fraction(float(c[r]))) + sum(abs(Fraction(float(x)) * Fraction(float(y))) for x, y in zip(a[r], b[r]))
        out[r] = float(Fraction(int(e[r])) * lsb / d) if d else 0.0
    return out


def search_worst(name, k: int = 32, n: int = 64, steps: int = 20, seed: int = 0, exp_range=(-20, 20),
                 log=None) -> dict:
    """A twin search for large componentwise errors: start from the families uniform, wide, cancel
    and ties (clipped to ``exp_range``), then ``steps`` rounds that keep the best half of the rows
    and refill the rest with mutations of them (random fraction bits flipped, an element negated or
    copied onto another to set up cancellation, exponents nudged within the range). Returns the
    largest error found and its inputs (a lower bound on the worst case, next to the proved one)."""
    su = setup(name)
    g = np.random.default_rng(seed)
    lo, hi = exp_range
    kk = padded_k([su], k)
    if kk != k:
        raise SchemeError(f"{name}: K={k} does not fit its tile; give a multiple of {kk}")

    def clip(x):
        u = x.view(np.uint32).copy()
        e = ((u >> 23) & 0xFF).astype(np.int64) - 127
        e = np.clip(e, lo, hi)
        u = (u & np.uint32(0x807FFFFF)) | ((e + 127).astype(np.uint32) << 23)
        return u.view(np.float32)

    pop = [draw(f, n // 4, k, g) for f in ("uniform", "wide", "cancel", "ties")]
    a = clip(np.concatenate([p[0] for p in pop])); b = clip(np.concatenate([p[1] for p in pop]))   # noqa: E702
    c = clip(np.concatenate([p[2] for p in pop]).astype(np.float32))
    c[c == 0] = np.float32(2.0 ** lo)
    err = _comp_errors(su, a, b, c)
    for step in range(steps):
        keep = np.argsort(-err)[: n // 2]
        a2, b2, c2 = a[keep].copy(), b[keep].copy(), c[keep].copy()
        m = len(keep)
        ua, ub = a2.view(np.uint32), b2.view(np.uint32)
        rows = np.arange(m)
        for u in (ua, ub):
            col = g.integers(0, k, m)
            u[rows, col] ^= (np.uint32(1) << g.integers(0, 23, m).astype(np.uint32))
        col, src = g.integers(0, k, m), g.integers(0, k, m)
        flip = g.random(m) < 0.5
        a2[rows[flip], col[flip]] = -a2[rows[flip], src[flip]]
        b2[rows[flip], col[flip]] = b2[rows[flip], src[flip]]
        a2, b2 = clip(a2), clip(b2)
        e2 = _comp_errors(su, a2, b2, c2)
        a, b, c = np.concatenate([a[keep], a2]), np.concatenate([b[keep], b2]), np.concatenate([c[keep], c2])
        err = np.concatenate([err[keep], e2])
        if log:
            log(f"{name}: step {step + 1}/{steps}: largest {err.max():.4g}")
    i = int(np.argmax(err))
    return {"scheme": su.label, "k": k, "found_comp": float(err[i]), "steps": steps, "rows": n,
            "a": [f"0x{v:08x}" for v in a[i].view(np.uint32)], "b": [f"0x{v:08x}" for v in b[i].view(np.uint32)],
            "c": f"0x{int(c[i:i + 1].view(np.uint32)[0]):08x}"}


def compare_memory(ks, n: int) -> int:
    """Bytes :func:`compare` needs at most for ``n`` rows at the largest K of ``ks``, an upper
    estimate: 384 bytes per row and product (measured: about 260, the peak RSS of ``--n 8000``
    over ``--n 2000`` at K = 64, oy-fp16 against markidis)."""
    return 384 * n * max(ks)
