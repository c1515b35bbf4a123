"""IEEE steps on float64 / float32 arrays through the core's operations (``smtmodel.fp``: one
rounding each, in the mode asked): what the Ozaki-scheme twins compute around their integer GEMMs."""

from __future__ import annotations

import numpy as np

from ..bv import NUMPY
from ..formats import bits_to_numpy, get_format, numpy_dtype, numpy_to_bits
from ..fp import fma, fp_add, fp_mul


def as_bits(x: np.ndarray, fmt: str = "fp64"):
    """Float array -> the NumPy reading's BV of its raw bits (flattened)."""
    return NUMPY.input(numpy_to_bits(np.asarray(x, dtype=numpy_dtype(fmt)), fmt).reshape(-1), get_format(fmt).width)


def as_values(b, shape, fmt: str = "fp64") -> np.ndarray:
    """The NumPy reading's BV of raw bits -> a float array of ``shape``."""
    return bits_to_numpy(np.broadcast_to(np.asarray(b.v, dtype=np.uint64), (int(np.prod(shape)),)), fmt).reshape(shape).copy()


def _full(x, shape, fmt: str):
    return np.broadcast_to(np.asarray(x, dtype=numpy_dtype(fmt)), shape)


def ieee_fma(a, b, c, fmt="fp64", rm="RNE") -> np.ndarray:
    """fl(a·b + c) elementwise (broadcast), one rounding."""
    shape = np.broadcast(np.asarray(a), np.asarray(b), np.asarray(c)).shape
    return as_values(fma(*(as_bits(_full(v, shape, fmt), fmt) for v in (a, b, c)), fmt, rm), shape, fmt)


def ieee_add(a, b, fmt="fp64", rm="RNE") -> np.ndarray:
    """fl(a + b) elementwise (broadcast)."""
    shape = np.broadcast(np.asarray(a), np.asarray(b)).shape
    x, y = (as_bits(_full(v, shape, fmt), fmt) for v in (a, b))
    return as_values(fp_add(x, y, fmt, rm), shape, fmt)


def ieee_mul(a, b, fmt="fp64", rm="RNE") -> np.ndarray:
    """fl(a · b) elementwise (broadcast)."""
    shape = np.broadcast(np.asarray(a), np.asarray(b)).shape
    x, y = (as_bits(_full(v, shape, fmt), fmt) for v in (a, b))
    return as_values(fp_mul(x, y, fmt, rm), shape, fmt)
