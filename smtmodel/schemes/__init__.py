"""Error-compensated tensor-core GEMM schemes (Markidis, Ootomo-Yokota, baselines) as data over
the catalog models, written once in the semantic core; see docs/schemes.md."""

from .catalog import SCHEMES, all_schemes, get_scheme, scheme_from_dict
from .core import Pass, Scheme, SchemeError, Split, neg32, scale_pow2
from .exact import Window, abs_fixed, exact_fixed, narrow, products, to_fixed, ulp_units

__all__ = ["SCHEMES", "Pass", "Scheme", "SchemeError", "Split", "Window", "abs_fixed", "all_schemes",
           "exact_fixed", "get_scheme", "narrow", "neg32", "products", "scale_pow2", "scheme_from_dict",
           "to_fixed", "ulp_units"]
