"""Concrete reading of the semantic core: NumPy arrays, one lane per case.

Vectors up to 32 bits are ``uint32`` arrays, up to 64 bits ``uint64`` (narrow lanes halve the
memory traffic), wider ones ``object`` arrays of exact Python integers (e.g. the exact sum of
FP32 terms). Every value is kept reduced to [0, 2^width); constants carry their lane type, so
NumPy never widens a lane behind our back.
"""

from __future__ import annotations

import numpy as np

from .core import BV, Backend

_U64 = np.uint64
_U32 = np.uint32


def _dtype(w: int):
    return _U32 if w <= 32 else _U64 if w <= 64 else object


def _scalar(value: int, w: int):
    dt = _dtype(w)
    return dt(value) if dt is not object else np.array(value, dtype=object)


def _mask(w: int):
    return _scalar((1 << w) - 1, w) if w <= 64 else (1 << w) - 1


def _is_small(w: int) -> bool:
    return w <= 64


def _as_width(x, w: int):
    """Convert a lane array to the storage type of width ``w`` (values must already fit)."""
    x = np.asarray(x)
    dt = _dtype(w)
    return x if x.dtype == dt else x.astype(dt)


def fitting_u64(arr: np.ndarray, width: int) -> np.ndarray:
    """An integer (or Boolean, or object of ints) array of raw bit patterns as ``uint64`` (the
    array itself where it is one), checked to fit ``width`` <= 64 bits: ValueError "input bits
    do not fit" otherwise. One reduction per bound, no temporary array."""
    if arr.size and arr.dtype.kind == "i" and arr.min() < 0:
        raise ValueError(f"input bits do not fit {width} bits")
    arr = arr.astype(_U64, copy=False)
    if arr.size and width < 64 and int(arr.max()) >> width:
        raise ValueError(f"input bits do not fit {width} bits")
    return arr


class NumpyBackend(Backend):
    name = "numpy"

    # ---- inputs --------------------------------------------------------------------------
    def bv_const(self, value: int, width: int):
        return _scalar(value, width)

    def bool_const(self, value: bool):
        return np.bool_(value)

    def input(self, bits, width: int) -> BV:
        """Wrap an array of raw bit patterns (any integer dtype, or Python ints) as a BV."""
        arr = np.asarray(bits)
        if arr.dtype.kind not in "uib" or not _is_small(width):
            # Python ints >= 2^63 beside small ones make NumPy pick float64 (lossy) or object
            arr = np.asarray(bits, dtype=object)
            if not all(isinstance(v, (int, np.integer)) for v in arr.flat):
                raise ValueError("input bits must be integers")
            if any(int(v) < 0 or int(v) >> width for v in arr.flat):
                raise ValueError(f"input bits do not fit {width} bits")
            arr = np.vectorize(int, otypes=[object])(arr) if arr.size else arr
        if _is_small(width):
            given = arr
            arr = fitting_u64(arr, width)
            if arr is given:
                arr = arr.copy()                   # a BV's lanes are its own
        return BV(self, _as_width(arr, width), width)

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
    @staticmethod
    def _storage_bits(w: int) -> int:
        return 32 if w <= 32 else 64

    def shl(self, a, n, w):
        if _is_small(w):
            S = self._storage_bits(w)
            r = (a << np.minimum(n, _scalar(S - 1, w))) & _mask(w)   # amounts >= w leave 0 bits below w
            return r if w < S else np.where(n >= _scalar(w, w), _scalar(0, w), r)
        nn = np.minimum(np.asarray(n, dtype=object), w)
        return (np.asarray(a, dtype=object) << nn) & _mask(w)

    def lshr(self, a, n, w):
        if _is_small(w):
            S = self._storage_bits(w)
            r = a >> np.minimum(n, _scalar(S - 1, w))                  # a < 2^w: amounts >= w give 0
            return r if w < S else np.where(n >= _scalar(w, w), _scalar(0, w), r)
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
        return a ^ _scalar(1 << (w - 1), w)

    def slt(self, a, b, w):
        return self.ult(self._flip(a, w), self._flip(b, w), w)

    def sle(self, a, b, w):
        return self.ule(self._flip(a, w), self._flip(b, w), w)

    # ---- structure -------------------------------------------------------------------------
    def extract(self, a, hi, lo, w):
        nw = hi - lo + 1
        if _is_small(w):
            r = (a >> _scalar(lo, w)) & _scalar((1 << nw) - 1, w) if lo else a & _scalar((1 << nw) - 1, w)
            return _as_width(r, nw)
        r = (np.asarray(a, dtype=object) >> lo) & _mask(nw)
        return _as_width(r, nw)

    def concat(self, a, b, wa, wb):
        w = wa + wb
        return (_as_width(a, w) << _scalar(wb, w)) | _as_width(b, w)

    def zext(self, a, n, w):
        return _as_width(a, w + n)

    def sext(self, a, n, w):
        neg = self.ult(self.bv_const((1 << (w - 1)) - 1, w), a, w)
        ext = _as_width(a, w + n)
        high = _scalar(((1 << n) - 1) << w, w + n)
        return ext | np.where(neg, high, _scalar(0, w + n))

    def ite(self, c, a, b):
        return np.where(c, a, b)

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
