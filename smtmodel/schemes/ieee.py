"""IEEE steps on float64 / float32 arrays through the core's operations (``smtmodel.fp``: one
rounding each, in the mode asked): what the Ozaki-scheme twins compute around their integer GEMMs."""

from __future__ import annotations

import numpy as np

from ..bv import NUMPY
from ..fp import fma, fp_add, fp_mul


def as_bits(x: np.ndarray, fmt: str = "fp64"):
    """Float array -> the NumPy reading's BV of its raw bits (flattened)."""
    dt, ut, w = (np.float64, np.uint64, 64) if fmt == "fp64" else (np.float32, np.uint32, 32)
    return NUMPY.input(np.ascontiguousarray(x, dtype=dt).view(ut).reshape(-1).astype(np.uint64), w)


def as_values(b, shape, fmt: str = "fp64") -> np.ndarray:
    """The NumPy reading's BV of raw bits -> a float array of ``shape``."""
    v = np.broadcast_to(np.asarray(b.v, dtype=np.uint64), (int(np.prod(shape)),))
    if fmt == "fp64":
        return v.astype(np.uint64).view(np.float64).reshape(shape).copy()
    return v.astype(np.uint32).view(np.float32).reshape(shape).copy()


def _full(x, shape, dt=np.float64):
    return np.broadcast_to(np.asarray(x, dtype=dt), shape)


def _dtype(fmt: str):
    return np.float64 if fmt == "fp64" else np.float32


def ieee_fma(a, b, c, fmt="fp64", rm="RNE") -> np.ndarray:
    """fl(a·b + c) elementwise (broadcast), one rounding."""
    shape = np.broadcast(np.asarray(a), np.asarray(b), np.asarray(c)).shape
    return as_values(fma(*(as_bits(_full(v, shape, _dtype(fmt)), fmt) for v in (a, b, c)), fmt, rm), shape, fmt)


def ieee_add(a, b, fmt="fp64", rm="RNE") -> np.ndarray:
    """fl(a + b) elementwise (broadcast)."""
    shape = np.broadcast(np.asarray(a), np.asarray(b)).shape
    x, y = (as_bits(_full(v, shape, _dtype(fmt)), fmt) for v in (a, b))
    return as_values(fp_add(x, y, fmt, rm), shape, fmt)


def ieee_mul(a, b, fmt="fp64", rm="RNE") -> np.ndarray:
    """fl(a · b) elementwise (broadcast)."""
    shape = np.broadcast(np.asarray(a), np.asarray(b)).shape
    x, y = (as_bits(_full(v, shape, _dtype(fmt)), fmt) for v in (a, b))
    return as_values(fp_mul(x, y, fmt, rm), shape, fmt)
