"""One long dot product of a model, fast where its blocks repeat.

A chain is :meth:`Model.build` read piece by piece (``chain_start``, one ``chain_step`` per block,
``chain_end``), the pieces ``smtmodel.gemm`` composes too. Probe matrices and published test
GEMMs (seed 003 §V: every row of A is 2^10 followed by one repeated pair) feed the same block
again and again, so step j is one fixed function f of the accumulator d alone. Where a run of
identical blocks is long, f is evaluated once on a window of consecutive accumulator bit patterns
around the current d (one batched call of the NumPy reading) and the run is iterated by looking
the values up; a d outside the window gets a new window. Every value looked up is a value the
model's own step computes: the result is bit-equal to ``Model.evaluate`` (tested), only the
number of calls changes (a K = 8192 chain of an exact-sum model: seconds -> tens of ms).

:func:`dots` is ``smtmodel.gemm``'s ``backend="tabulated"``: every element of a (small) GEMM's
chain by :class:`ChainEvaluator`, whose tables and results are kept per model in the process.
"""

from __future__ import annotations

import numpy as np

from .bv import NUMPY
from .formats import get_format
from .model import Model

RUN = 16
"""Repetitions of a group of blocks from which the run is tabulated instead of stepped."""
PERIOD = 8
"""Longest group of blocks looked for as the repeating unit (seed 003's pattern has period 2
products: one block of L >= 2, two blocks of an L = 1 FMA chain)."""
WINDOW = 2048
"""Accumulator patterns tabulated on each side of the current one."""


class ChainEvaluator:
    """Dot products of one model, with the step tables kept between calls (``calls``: batched
    evaluations of the model's pieces so far)."""

    def __init__(self, model: Model, run: int = RUN, window: int = WINDOW):
        self.m, self.run, self.window = model, run, window
        self.wi, self.wc, self.wo = model.widths
        self.tables: dict[tuple, dict[int, int]] = {}
        self.memo: dict[tuple, int] = {}
        self.calls = 0

    # ---- the model's pieces on NumPy batches --------------------------------------------------
    def _inputs(self, bits, w, n: int):
        return [NUMPY.input(np.full(n, x, dtype=np.uint64), w) for x in bits]

    def _step(self, a, b, d: np.ndarray, d_fmt: str, dw: int) -> np.ndarray:
        """chain_step of one block (a, b: L patterns) on every accumulator in ``d``."""
        self.calls += 1
        r = self.m.chain_step(self._inputs(a, self.wi, len(d)), self._inputs(b, self.wi, len(d)),
                              NUMPY.input(d, dw), d_fmt)
        return np.broadcast_to(np.asarray(r.v, dtype=np.uint64), d.shape).copy()

    def _end(self, d: int, c: int) -> int:
        self.calls += 1
        r = self.m.chain_end(NUMPY.input(np.array([d], np.uint64), self.wo), NUMPY.input(np.array([c], np.uint64), self.wc))
        return int(np.asarray(r.v, dtype=np.uint64).reshape(-1)[0])

    def _start(self, c: int) -> int:
        r = self.m.chain_start(NUMPY.input(np.array([c], np.uint64), self.wc))
        return int(np.asarray(r.v, dtype=np.uint64).reshape(-1)[0])

    # ---- one dot product ----------------------------------------------------------------------
    def dot(self, a: np.ndarray, b: np.ndarray, c: int) -> int:
        """Output bits of d = c + sum a_k b_k for raw patterns a, b (K,) and c, exactly as
        ``Model.evaluate`` computes them (zero padding of :meth:`Model.padded_k` included)."""
        m = self.m
        a = np.asarray(a, dtype=np.uint64).reshape(-1)
        b = np.asarray(b, dtype=np.uint64).reshape(-1)
        k = len(a)
        L, kp = m.block(k), m.padded_k(k)
        if kp != k:
            a = np.concatenate([a, np.zeros(kp - k, np.uint64)])
            b = np.concatenate([b, np.zeros(kp - k, np.uint64)])
        A, B = a.reshape(-1, L), b.reshape(-1, L)
        nb = len(A)
        d = self._step(A[0], B[0], np.array([self._start(c)], np.uint64), m.c_fmt, self.wc)[0]
        _, ids = np.unique(np.concatenate([A, B], axis=1), axis=0, return_inverse=True)
        ids = ids.reshape(-1)
        j = 1
        while j < nb:
            p, n = self._period(ids, j)
            if n < self.run:
                d = self._step(A[j], B[j], np.array([d], np.uint64), m.out_fmt, self.wo)[0]
                j += 1
            else:
                d = self._iterate(A[j:j + p], B[j:j + p], d, n)
                j += p * n
        return self._end(int(d), int(c))

    def _period(self, ids: np.ndarray, j: int) -> tuple[int, int]:
        """(p, n): the blocks from j repeat a group of p blocks n whole times, p <= PERIOD
        chosen to cover the most blocks (n = 1: no repetition)."""
        best = (1, 1)
        for p in range(1, PERIOD + 1):
            if j + 2 * p > len(ids):
                break
            tail = ids[j + p:]
            eq = tail == ids[j:len(ids) - p]
            stop = len(eq) if eq.all() else int(np.argmin(eq))
            n = (p + stop) // p
            if n * p > best[0] * best[1]:
                best = (p, n)
        return best

    def _iterate(self, a, b, d: int, n: int) -> int:
        """f^n(d) for the step f of the group of blocks (a, b: (p, L)), by tables of f on
        windows of accumulator patterns."""
        key = (a.tobytes(), b.tobytes())
        table = self.tables.setdefault(key, {})
        d = int(d)
        for _ in range(n):
            nxt = table.get(d)
            if nxt is None:
                xs = ys = self._window(d)
                for t in range(len(a)):
                    ys = self._step(a[t], b[t], ys, self.m.out_fmt, self.wo)
                table.update(zip(xs.tolist(), ys.tolist()))
                nxt = table[d]
            if nxt == d:               # a fixed point: the rest of the run leaves d as it is
                return d
            d = nxt
        return d

    def _window(self, d: int) -> np.ndarray:
        """Patterns d - W .. d + W of the output format, kept within d's sign half (where
        consecutive patterns are consecutive values)."""
        f = get_format(self.m.out_fmt)
        half = 1 << (f.width - 1) if f.signed else 1 << f.width
        lo_half = d & ~(half - 1) if f.signed else 0
        lo = max(lo_half, d - self.window)
        hi = min(lo_half + half - 1, d + self.window)
        return np.arange(lo, hi + 1, dtype=np.uint64)


_EVALUATORS: dict = {}
_MEMO_MAX = 1 << 16


def evaluator(m: Model) -> ChainEvaluator:
    """The process's evaluator of model ``m`` (tables shared by every call)."""
    key = (m, m.id)
    ev = _EVALUATORS.get(key)
    if ev is None:
        if len(_EVALUATORS) > 256:
            _EVALUATORS.clear()
        ev = _EVALUATORS[key] = ChainEvaluator(m)
    return ev


def dots(m: Model, a: np.ndarray, b: np.ndarray, c, k0: int, k1: int) -> np.ndarray:
    """D[i, j] = the model's chain over a[i, k0:k1], b[k0:k1, j] from c[i, j] (None: +0), element
    by element (``smtmodel.gemm``'s tabulated reading; meant for GEMMs of few distinct elements
    with long repeated chains). Results are remembered per (row, column, c)."""
    ev = evaluator(m)
    M, N = a.shape[0], b.shape[1]
    out = np.empty((M, N), np.uint64)
    rows = [np.ascontiguousarray(a[i, k0:k1]) for i in range(M)]
    cols = [np.ascontiguousarray(b[k0:k1, j]) for j in range(N)]
    rk = [r.tobytes() for r in rows]
    ck = [x.tobytes() for x in cols]
    for i in range(M):
        for j in range(N):
            cv = 0 if c is None else int(c[i, j])
            key = (rk[i], ck[j], cv)
            d = ev.memo.get(key)
            if d is None:
                if len(ev.memo) > _MEMO_MAX:
                    ev.memo.clear()
                d = ev.memo[key] = ev.dot(rows[i], cols[j], cv)
            out[i, j] = d
    return out
