"""The NumPy reading of a GEMM's dot products: per-element copies of the operands through
:meth:`Model.evaluate`, in batches of ``CHUNK`` (the reference the others are tested against)."""

from __future__ import annotations

import numpy as np

from ..model import CHUNK, Model

def dots(m: Model, a, b, c, k0: int, k1: int, jobs) -> np.ndarray:
    """The NumPy reading of :func:`.dots_native.dots` (per-element copies, batches of CHUNK)."""
    M, N = a.shape[0], b.shape[1]
    bt = np.ascontiguousarray(b[k0:k1].T)
    out = np.empty((M, N), np.uint64)
    rb = max(1, CHUNK // N)
    for r in range(0, M, rb):
        r1 = min(r + rb, M)
        aa = np.repeat(a[r:r1, k0:k1], N, axis=0)
        bb = np.tile(bt, (r1 - r, 1))
        cc = np.zeros(len(aa), np.uint64) if c is None else c[r:r1].reshape(-1)
        out[r:r1] = m.evaluate(aa, bb, cc, backend="numpy").reshape(r1 - r, N)
    return out
