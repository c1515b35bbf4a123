"""An elementwise composition of core operations run on (M, N) arrays of bits: compiled through
LLVM (:mod:`smtmodel.native`), or the NumPy reading of the same composition."""

from __future__ import annotations

import numpy as np

from ..bv import NUMPY
from ..model import CHUNK, ModelError

EW_REPEAT = 4
"""Calls of one elementwise step (one key: its composition, alpha, beta, scales) on few elements
from which it is compiled all the same: repeated GEMMs of one kind (an emulated model's layers)
run it compiled, one-off scales stay on NumPy."""


class Elementwise:
    """Runs an elementwise composition of core operations on (M,N) bit arrays: compiled, or the
    NumPy reading of the same composition."""

    _too_wide: set = set()              # (key, max_width) traced once and found too wide
    _memo: dict = {}                    # (key, x, y, z) -> result, for few elements (``memo``)
    _seen: dict = {}                    # (key, widths) -> calls on fewer than native_min elements

    def __init__(self, native: bool, jobs, max_width: int | None = None, memo: bool = False,
                 native_min: int = 1 << 15):
        """``max_width``: compile only compositions this narrow (None: the epilogue's limit);
        ``native_min``: elements from which a step is compiled (fewer: the NumPy reading, unless
        ``max_width`` is set);
        ``memo``: remember results of calls on at most 16 elements (the tabulated reading, where
        many hypotheses run the same step on the same values)."""
        self.native, self.jobs, self.max_width, self.memo = native, jobs, max_width, memo
        self.native_min = native_min

    def run(self, key, build, widths, x, y, z) -> np.ndarray:
        if self.memo and x.size <= 16:
            mk = (key, widths, x.shape, np.asarray(x, np.uint64).tobytes(), np.asarray(y, np.uint64).tobytes(),
                  np.asarray(z, np.uint64).tobytes())
            r = self._memo.get(mk)
            if r is None:
                if len(self._memo) > 1 << 16:
                    self._memo.clear()
                r = self._memo[mk] = self._run(key, build, widths, x, y, z)
            return r.copy()
        return self._run(key, build, widths, x, y, z)

    def _again(self, key, widths) -> bool:
        """Whether a step on few elements is compiled: from its :data:`EW_REPEAT`-th call in the
        process (a compile costs 0.05 s from the disk cache, 0.2-1 s without; the NumPy reading
        of an fp32 epilogue about 5 ms a call)."""
        k = (key, widths)
        n = self._seen.get(k, 0) + 1
        if n <= EW_REPEAT:
            if len(self._seen) > 1 << 14:
                self._seen.clear()
            self._seen[k] = n
        return n >= EW_REPEAT

    def _run(self, key, build, widths, x, y, z) -> np.ndarray:
        shape = x.shape
        x, y, z = (np.ascontiguousarray(v, dtype=np.uint64).reshape(-1) for v in (x, y, z))
        # few elements go to NumPy (no compile per alpha), except narrow steps when max_width is
        # set (the tabulated reading: hundreds of one-element restart additions per GEMM) and
        # steps that come again (a model's forward: the same epilogue call after call)
        if self.native and (len(x) >= self.native_min or self.max_width is not None or self._again(key, widths)) \
                and (key, self.max_width) not in self._too_wide:
            from .. import native
            try:
                kern = native.function(key, build, widths + (0,), 1, native.ROWS,
                                       self.max_width or native.MAX_WIDTH, lanes=native.vector_lanes())
                return native.run_cases(kern, x[None, :], y[None, :], z, None, None, jobs=self.jobs).reshape(shape)
            except native.TooWide:
                self._too_wide.add((key, self.max_width))   # fp64 epilogue: the NumPy reading below
            except native.NativeError as e:
                raise ModelError(str(e)) from None
        out = np.empty(x.shape, np.uint64)
        for s in range(0, len(x), CHUNK):
            sl = slice(s, s + CHUNK)
            r = build([NUMPY.input(x[sl], widths[0])], [NUMPY.input(y[sl], widths[1])],
                      NUMPY.input(z[sl], widths[2]))
            out[sl] = np.broadcast_to(np.asarray(r.v, dtype=np.uint64), out[sl].shape)
        return out.reshape(shape)
