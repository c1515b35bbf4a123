"""The compiled reading of a GEMM's dot products: the GEMM reading (:mod:`smtmodel.native.gemm`:
what reads one operand computed once per element), or the per-row reading where that does not
apply; whether a model's chains compile, and the warning when ``auto`` falls back to NumPy."""

from __future__ import annotations

import warnings

import numpy as np

from ..model import Model, ModelError

class NativeFallback(UserWarning):
    """``backend="auto"``: the model's chain does not compile (a primitive the code generator
    does not know, values wider than :data:`smtmodel.native.MAX_WIDTH` bits), so the GEMM runs
    on the NumPy reading; the message says why."""


def available(m: Model, backend: str, n: int) -> bool:
    if backend == "numpy":
        return False
    from .. import native
    if native.available():
        return True
    if backend == "native":
        raise ModelError("native backend unavailable (llvmlite does not load); use backend='numpy'")
    return False


def compiles(m: Model, plan) -> bool:
    """Whether the chains of ``plan`` compile: the GEMM reading, else the per-row reading. If not,
    a :class:`NativeFallback` warning says why (``auto`` then runs the NumPy reading)."""
    from .. import native
    from ..native import gemm as ngemm
    for k in sorted({len(idx) for sl in plan for idx in sl if len(idx)}):
        try:
            ngemm.gemm_kernel(m, k)
            continue
        except (ngemm.NotSplit, native.TooWide):
            pass
        except native.NativeError as e:
            return _fallback(m, e)
        try:
            chain_kernels(m, k)
        except native.NativeError as e:
            return _fallback(m, e)
    return True


def _fallback(m: Model, e: Exception) -> bool:
    why = str(e).replace("; use backend='numpy'", "")
    if not why.startswith(m.id):
        why = f"{m.id}: {why}"
    warnings.warn(f"{why}: the GEMM runs on the NumPy reading (slower, same bits)", NativeFallback, stacklevel=5)
    return False


def chain_kernels(m: Model, k: int):
    """The compiled pieces of the model's chain for K = k, as :meth:`Model.build` composes them
    (``chain_start``, ``chain_step`` per block, ``chain_end``; :func:`smtmodel.native.gemm.chain_pieces`):
    one kernel per piece and block length instead of one per K, so a K = 2048 GEMM compiles a
    few blocks, not 64. Returns (blocks, first, next, last, end): ``blocks`` the (start, stop)
    ranges of real elements; ``last`` pads the last block with zeros (``Model.padded_k``);
    ``end`` is None when ``chain_end`` is the identity."""
    from .. import native
    from ..native.gemm import chain_pieces
    ch = chain_pieces(m, k)
    wa, wb, wc, wo = ch["widths"]
    L, tail = ch["L"], ch["tail"]
    blocks = [(s, min(s + L, k)) for s in range(0, ch["nb"] * L, L)]

    def piece(f):
        return lambda a, b, c, *_: f(a, b, c)

    key = (m, m.id)
    kf = native.function(("first",) + key, piece(ch["first"]), (wa, wb, wc, 0), L, native.GEMM_ROW)
    kn = native.function(("next",) + key, piece(ch["next"]), (wa, wb, wo, 0), L, native.GEMM_ROW) if ch["next"] else None
    kl = (native.function(("last", tail) + key, piece(ch["last"]), (wa, wb, wo, 0), tail, native.GEMM_ROW)
          if ch["last"] else kn)
    ke = (native.function(("end",) + key, lambda a, b, c, *_: ch["end"](a[0], c), (wo, wo, wc, 0), 1, native.ROWS)
          if ch["end"] else None)
    return blocks, kf, kn, kl, ke


def dots(m: Model, a, b, c, k0: int, k1: int, jobs) -> np.ndarray:
    """D[i, j] = model(a[i, k0:k1], b[k0:k1, j], c[i, j] or +0), compiled: the GEMM reading
    (:mod:`smtmodel.native.gemm`: what reads one operand computed once per element), or where
    that does not apply (values wider than 128 bits) the per-row reading :func:`dots_rows`.
    A batch (a (B, M, K), b (B, K, N), c (B, M, N) or None): the GEMM reading takes it in one
    call, the per-row reading a matrix at a time."""
    from .. import native
    from ..native import gemm as ngemm
    try:
        return ngemm.dots(m, a, b, c, k0, k1, jobs)
    except (ngemm.NotSplit, native.TooWide):
        pass
    except native.NativeError as e:
        raise ModelError(str(e)) from None
    if a.ndim == 3:
        out = np.empty(a.shape[:2] + b.shape[2:], np.uint64)
        for i in range(a.shape[0]):
            out[i] = dots_rows(m, a[i], b[i], None if c is None else c[i], k0, k1, jobs)
        return out
    return dots_rows(m, a, b, c, k0, k1, jobs)


def dots_rows(m: Model, a, b, c, k0: int, k1: int, jobs) -> np.ndarray:
    """The per-row compiled reading: per row of a, the chain's kernels one block after the other
    over all columns (A, B, C read in place)."""
    from .. import native
    M, K = a.shape
    N = b.shape[1]
    try:
        blocks, kf, kn, kl, ke = chain_kernels(m, k1 - k0)
    except native.NativeError as e:
        raise ModelError(str(e)) from None
    V = kf.lanes
    Np = -(-N // V) * V
    if Np != N:                                    # whole vectors of columns: pad once
        bp = np.zeros((b.shape[0], Np), np.uint64)
        bp[:, :N] = b
        b = bp
        if c is not None:
            cp = np.zeros((M, Np), np.uint64)
            cp[:, :N] = c
            c = cp
    out = np.empty((M, Np), np.uint64)
    zero = np.zeros(Np, np.uint64)
    a_p, b_p, o_p = a.ctypes.data, b.ctypes.data, out.ctypes.data
    c_p, c_ld = (zero.ctypes.data, 0) if c is None else (c.ctypes.data, Np)
    nb = len(blocks)

    def rows(r0: int, r1: int) -> None:
        tmp = np.empty((2, Np), np.uint64)
        t = [tmp[0].ctypes.data, tmp[1].ctypes.data]
        for i in range(r0, r1):
            c_row, o_row = c_p + 8 * i * c_ld, o_p + 8 * i * Np
            a_row = a_p + 8 * (i * K + k0)
            for j, (s, _) in enumerate(blocks):
                kern = kf if j == 0 else (kl if j == nb - 1 else kn)
                src = c_row if j == 0 else t[(j - 1) % 2]
                dst = o_row if j == nb - 1 and ke is None else t[j % 2]
                kern.fn(Np, a_row + 8 * s, 1, b_p + 8 * (k0 + s) * Np, Np, src, 0, 0, 0, dst)
            if ke is not None:
                d = t[(nb - 1) % 2]
                ke.fn(Np, d, Np, d, Np, c_row, 0, 0, 0, o_row)

    jobs = jobs or native.default_jobs()
    if jobs == 1 or M == 1:
        rows(0, M)
    else:
        step = max(1, -(-M // (4 * jobs)))
        futures = [native.pool(jobs).submit(rows, r, min(r + step, M)) for r in range(0, M, step)]
        for f in futures:
            f.result()
    return out[:, :N] if Np != N else out
