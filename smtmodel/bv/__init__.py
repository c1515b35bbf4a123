"""The bitvector semantic core: one interface, three readings (NumPy, z3, cvc5)."""

from .core import (BV, Backend, Bool, abs_signed, all_of, any_of, clamp_shift, clz, ite,
                   lshr_sticky, smax, smax_all, smin, sum_all, umax, umin)
from .numpy_backend import NUMPY, NumpyBackend

__all__ = ["BV", "Backend", "Bool", "NUMPY", "NumpyBackend", "abs_signed", "all_of", "any_of",
           "clamp_shift", "clz", "ite", "lshr_sticky", "smax", "smax_all", "smin", "sum_all",
           "umax", "umin"]
