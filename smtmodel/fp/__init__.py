"""Floating-point operations of the semantic core: decode/encode, rounding, exact arithmetic."""

from . import classify
from .convert import convert
from .exact import exact_sum, fma, fp_add, fp_mul, ieee_sum, ieee_zero_sign, mul_exact, sum_specials
from .rounding import MODES, OVERFLOW, round_finite, round_value
from .value import EXP_W, FPValue, decode, exp_const, inf_bits, max_finite_bits, nan_bits, pack, zero_bits

__all__ = ["EXP_W", "classify", "FPValue", "MODES", "OVERFLOW", "convert", "decode", "exact_sum", "exp_const", "fma",
           "fp_add", "fp_mul", "ieee_sum", "ieee_zero_sign", "inf_bits", "max_finite_bits", "mul_exact",
           "nan_bits", "pack", "round_finite", "round_value", "sum_specials", "zero_bits"]
