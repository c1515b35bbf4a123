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
from .formats import FormatError, bits_to_numpy, get_format, numpy_dtype, numpy_to_bits
from .model import Model

RUN = 3
"""Repetitions of a group of blocks from which the run is tabulated instead of stepped."""
PERIOD = 8
"""Longest group of blocks looked for as the repeating unit (seed 003's pattern has period 2
products: one block of L >= 2, two blocks of an L = 1 FMA chain)."""
STEP_LAYOUT = (("a", 0), ("b", 0), ("c", 1), ("s", 1))
"""Compiled step: one block shared by every case, one accumulator per case."""
NEAR = 32
WINDOW = 2048
"""Accumulator patterns tabulated on each side of the current one: NEAR at first, four times
more each time the trajectory leaves the table, at most WINDOW."""


class ChainEvaluator:
    """Dot products of one model, with the step tables kept between calls (``calls``: batched
    evaluations of the model's pieces so far)."""

    def __init__(self, model: Model, run: int = RUN, window: int = WINDOW, native: bool | None = None):
        """``native``: compile the model's step where it compiles (None: when llvmlite loads)."""
        self.m, self.run, self.window = model, run, window
        if native is None:
            from .native import available
            native = available()
        self.native = native
        self.kernels: dict = {}
        self.wi, self.wc, self.wo = model.widths
        self.tables: dict[tuple, dict[int, int]] = {}
        self.memo: dict[tuple, int] = {}
        self.steps: dict[tuple, int] = {}
        self.calls = 0

    # ---- the model's pieces on NumPy batches --------------------------------------------------
    def _inputs(self, bits, w, n: int):
        return [NUMPY.input(np.full(n, x, dtype=np.uint64), w) for x in bits]

    def _step(self, a, b, d: np.ndarray, d_fmt: str, dw: int) -> np.ndarray:
        """chain_step of one block (a, b: L patterns) on every accumulator in ``d``: compiled
        where the model's step compiles (and llvmlite loads), else the NumPy reading."""
        if len(d) == 1:                 # single steps recur across chains (every chain's first block)
            key = (np.asarray(a, np.uint64).tobytes(), np.asarray(b, np.uint64).tobytes(), d_fmt, int(d[0]))
            r = self.steps.get(key)
            if r is None:
                r = self.steps[key] = int(self._step_many(a, b, d, d_fmt, dw)[0])
            return np.array([r], np.uint64)
        return self._step_many(a, b, d, d_fmt, dw)

    def _step_many(self, a, b, d: np.ndarray, d_fmt: str, dw: int) -> np.ndarray:
        self.calls += 1
        kern = self._kernel(len(a), d_fmt, dw)
        if kern is not None:
            V = kern.lanes
            n = len(d)
            dp = np.zeros(-(-n // V) * V, np.uint64)
            dp[:n] = d
            out = np.empty_like(dp)
            aa = np.ascontiguousarray(a, dtype=np.uint64)
            bb = np.ascontiguousarray(b, dtype=np.uint64)
            kern.fn(len(dp), aa.ctypes.data, 1, bb.ctypes.data, 1, dp.ctypes.data, 0, 0, 0, out.ctypes.data)
            return out[:n]
        r = self.m.chain_step(self._inputs(a, self.wi, len(d)), self._inputs(b, self.wi, len(d)),
                              NUMPY.input(d, dw), d_fmt)
        return np.broadcast_to(np.asarray(r.v, dtype=np.uint64), d.shape).copy()

    def _kernel(self, L: int, d_fmt: str, dw: int):
        """The compiled step for blocks of L from an accumulator in ``d_fmt`` (None: NumPy)."""
        key = (L, d_fmt)
        if key not in self.kernels:
            self.kernels[key] = None
            if self.native:
                from . import native
                m = self.m

                def step(a, b, c, *_):
                    return m.chain_step(a, b, c, d_fmt)
                try:
                    self.kernels[key] = native.function(("tabulate-step", m, m.id, L, d_fmt), step,
                                                        (self.wi, self.wi, dw, 0), L, STEP_LAYOUT)
                except native.NativeError:       # too wide (exact sums) or not compilable
                    pass
        return self.kernels[key]

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
        windows of accumulator patterns (the window grows each time the trajectory leaves it)."""
        key = (a.tobytes(), b.tobytes())
        table = self.tables.setdefault(key, {})
        d = int(d)
        near = NEAR
        for t in range(n):
            nxt = table.get(d)
            if nxt is None:
                nxt = table[d] = int(self._group(a, b, np.array([d], np.uint64))[0])
                if nxt != d:
                    xs = self._window(d, nxt, near, min(n - t, 2 * self.window))
                    table.update(zip(xs.tolist(), self._group(a, b, xs).tolist()))
                    near = min(4 * near, self.window)
            if nxt == d:               # a fixed point: the rest of the run leaves d as it is
                return d
            d = nxt
        return d

    def _group(self, a, b, xs: np.ndarray) -> np.ndarray:
        for t in range(len(a)):
            xs = self._step(a[t], b[t], xs, self.m.out_fmt, self.wo)
        return xs

    def _window(self, d: int, y: int, near: int, steps: int) -> np.ndarray:
        """Where the trajectory d -> y -> ... is likely to go: the patterns d - near .. d + near
        of the output format (kept within d's sign half, where consecutive patterns are
        consecutive values: an accumulator drifting by a few ulps), and the values d + j·(y - d),
        j <= steps, that the format holds exactly (an accumulator growing by one exact step)."""
        f = get_format(self.m.out_fmt)
        half = 1 << (f.width - 1) if f.signed else 1 << f.width
        lo_half = d & ~(half - 1) if f.signed else 0
        lo = max(lo_half, d - near)
        hi = min(lo_half + half - 1, d + near)
        near = np.arange(lo, hi + 1, dtype=np.uint64)
        try:
            dv, yv = (float(bits_to_numpy(np.array([x], np.uint64), f)[0]) for x in (d, y))
        except (FormatError, OverflowError, ValueError):
            return near
        if not (np.isfinite(dv) and np.isfinite(yv)) or dv == yv:
            return near
        prog = dv + np.arange(1, steps + 1) * (yv - dv)
        with np.errstate(all="ignore"):
            cast = prog.astype(numpy_dtype(f))
        ok = np.isfinite(prog) & (cast.astype(np.float64) == prog)
        return np.unique(np.concatenate([near, numpy_to_bits(cast[ok], f).astype(np.uint64)]))


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
