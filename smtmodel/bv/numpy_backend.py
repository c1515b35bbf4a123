"""Concrete reading of the semantic core: NumPy arrays, one lane per case.

Vectors up to 64 bits are ``uint64`` arrays; wider ones are ``object`` arrays of exact Python
integers (e.g. the exact sum of FP32 terms). Every value is kept reduced to [0, 2^width).
"""

from __future__ import annotations

import numpy as np

from .core import BV, Backend

_U64 = np.uint64


def _mask(w: int):
    return _U64((1 << w) - 1) if w <= 64 else (1 << w) - 1


def _is_small(w: int) -> bool:
    return w <= 64


def _as_width(x, w: int):
    """Convert a lane array to the storage type of width ``w`` (values must already fit)."""
    x = np.asarray(x)
    if _is_small(w):
        return x if x.dtype == _U64 else x.astype(_U64)
    return x if x.dtype == object else x.astype(object)


class NumpyBackend(Backend):
    name = "numpy"

    # ---- inputs --------------------------------------------------------------------------
    def bv_const(self, value: int, width: int):
        return _U64(value) if _is_small(width) else np.array(value, dtype=object)

    def bool_const(self, value: bool):
        return np.bool_(value)

    def input(self, bits, width: int) -> BV:
        """Wrap an array of raw bit patterns (any integer dtype, or Python ints) as a BV."""
        arr = np.asarray(bits)
        if _is_small(width):
            arr = arr.astype(_U64)
            if width < 64 and np.any(arr >> _U64(width)):
                raise ValueError(f"input bits do not fit {width} bits")
        else:
            arr = arr.astype(object)
        return BV(self, arr, width)

    @staticmethod
    def value(x: BV) -> np.ndarray:
        return np.asarray(x.v)

    # ---- arithmetic ------------------------------------------------------------------------
    def add(self, a, b, w):
        with np.errstate(over="ignore"):
            return (a + b) & _mask(w)

    def sub(self, a, b, w):
        with np.errstate(over="ignore"):
            if _is_small(w):
                return (a - b) & _mask(w)
            return (a - b + (1 << w)) & _mask(w)

    def mul(self, a, b, w):
        with np.errstate(over="ignore"):
            return (a * b) & _mask(w)

    def and_(self, a, b, w):
        return a & b

    def or_(self, a, b, w):
        return a | b

    def xor(self, a, b, w):
        return a ^ b

    def not_(self, a, w):
        return a ^ _mask(w)

    def neg(self, a, w):
        return self.sub(self.bv_const(0, w), a, w)

    # ---- shifts (amount >= width -> 0, SMT-LIB semantics) -----------------------------------
    def shl(self, a, n, w):
        if _is_small(w):
            big = n >= _U64(w)
            nn = np.where(big, _U64(0), n).astype(_U64)
            return np.where(big, _U64(0), (a << nn) & _mask(w)).astype(_U64)
        nn = np.minimum(np.asarray(n, dtype=object), w)
        return (np.asarray(a, dtype=object) << nn) & _mask(w)

    def lshr(self, a, n, w):
        if _is_small(w):
            big = n >= _U64(w)
            nn = np.where(big, _U64(0), n).astype(_U64)
            return np.where(big, _U64(0), a >> nn).astype(_U64)
        nn = np.minimum(np.asarray(n, dtype=object), w)
        return np.asarray(a, dtype=object) >> nn

    def ashr(self, a, n, w):
        logical = self.lshr(a, n, w)
        neg = self.ult(self.bv_const((1 << (w - 1)) - 1, w), a, w)
        fill = self.not_(self.lshr(_mask(w), n, w), w)
        zero = self.bv_const(0, w)
        return self.or_(logical, self.ite(neg, fill, zero), w)

    # ---- comparisons -----------------------------------------------------------------------
    def eq(self, a, b, w):
        return np.asarray(a == b, dtype=bool)

    def ult(self, a, b, w):
        return np.asarray(a < b, dtype=bool)

    def ule(self, a, b, w):
        return np.asarray(a <= b, dtype=bool)

    def _flip(self, a, w):
        return a ^ (_U64(1 << (w - 1)) if _is_small(w) else 1 << (w - 1))

    def slt(self, a, b, w):
        return self.ult(self._flip(a, w), self._flip(b, w), w)

    def sle(self, a, b, w):
        return self.ule(self._flip(a, w), self._flip(b, w), w)

    # ---- structure -------------------------------------------------------------------------
    def extract(self, a, hi, lo, w):
        nw = hi - lo + 1
        if _is_small(w):
            return (a >> _U64(lo)) & _mask(nw) if lo else a & _mask(nw)
        r = (np.asarray(a, dtype=object) >> lo) & _mask(nw)
        return _as_width(r, nw)

    def concat(self, a, b, wa, wb):
        w = wa + wb
        if _is_small(w):
            return (_as_width(a, w) << _U64(wb)) | _as_width(b, w)
        return (_as_width(a, w) << wb) | _as_width(b, w)

    def zext(self, a, n, w):
        return _as_width(a, w + n)

    def sext(self, a, n, w):
        neg = self.ult(self.bv_const((1 << (w - 1)) - 1, w), a, w)
        ext = _as_width(a, w + n)
        high = ((1 << n) - 1) << w
        high = _U64(high) if _is_small(w + n) else high
        zero = _U64(0) if _is_small(w + n) else 0
        return ext | np.where(neg, high, zero).astype(ext.dtype if hasattr(ext, "dtype") else object)

    def ite(self, c, a, b):
        r = np.where(c, a, b)
        if r.dtype != object and r.dtype != bool and r.dtype != _U64:
            r = r.astype(_U64)
        return r

    # ---- Booleans --------------------------------------------------------------------------
    def b_and(self, a, b):
        return np.logical_and(a, b)

    def b_or(self, a, b):
        return np.logical_or(a, b)

    def b_xor(self, a, b):
        return np.logical_xor(a, b)

    def b_not(self, a):
        return np.logical_not(a)


NUMPY = NumpyBackend()
