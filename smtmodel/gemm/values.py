"""Values <-> raw bits for GEMMs: matrices whose values must be exact in their formats, scales
rounded as torch stores them, alpha/beta exact in the epilogue format."""

from __future__ import annotations

import numpy as np

from ..bv import NUMPY
from ..bv.numpy_backend import fitting_u64
from ..formats import FormatError, bits_to_numpy, get_format, numpy_dtype, numpy_to_bits, uint_dtype
from ..model import ModelError


def to_bits(values, fmt) -> np.ndarray:
    """Raw bits of values already representable in ``fmt`` (NumPy / ml_dtypes arrays or floats).

    A NumPy void array of the width of ``fmt``'s ml_dtypes type (``V1`` for the FP8/FP6/FP4
    formats, ``V2`` for bf16) is read as raw bits of ``fmt``: that is what ``np.load`` gives for
    an ml_dtypes array written by ``np.save``, which keeps the bytes but not the type's name. The
    reading is the caller's to state (``mmaprobe gemm`` writes it in its sidecar); see
    :func:`void_bits`."""
    f = get_format(fmt)
    arr = np.asarray(values)
    if arr.dtype.kind == "V":
        return void_bits(arr, f)
    if f.name == "tf32":
        bits = numpy_to_bits(np.asarray(values, dtype=np.float32), "fp32")
        if np.any(bits & np.uint64(0x1FFF)):
            raise ModelError("values are not TF32 values: round them to tf32 first")
        return bits
    if arr.dtype.kind not in "fiu" and arr.dtype.kind != "b":
        raise ModelError(f"values of dtype {arr.dtype} are not numbers")
    bits = numpy_to_bits(arr, f)
    if not np.array_equal(bits_to_numpy(bits, f).astype(np.float64), arr.astype(np.float64), equal_nan=True):
        raise ModelError(f"values are not exactly representable in {f.name}")
    return bits


def void_bits(arr: np.ndarray, fmt) -> np.ndarray:
    """Raw bits (uint64) of a NumPy void array (``V1``, ``V2``: the bytes of an ml_dtypes array
    saved by ``np.save``) read as ``fmt``, whose ml_dtypes type must have the same width. Refused:
    structured arrays, another width, a format without an ml_dtypes type (fp16, fp32 and the
    integers are saved with their own NumPy type names), bits above a narrow format's width (FP6
    and FP4 hold their bits in the low bits of a byte)."""
    f = get_format(fmt)
    arr = np.asarray(arr)
    if arr.dtype.fields is not None:
        raise ModelError(f"a structured array ({arr.dtype}) holds no {f.name} values")
    dt = numpy_dtype(f)
    if dt is None or np.dtype(dt).kind != "V":
        have = f"np.{np.dtype(dt).name}" if dt is not None else "no NumPy type"
        raise ModelError(f"dtype {arr.dtype.str} is raw bytes (as np.save writes ml_dtypes arrays); {f.name} values "
                         f"come as {have} (or raw bits as unsigned integers)")
    size = np.dtype(dt).itemsize
    if arr.dtype.itemsize != size:
        raise ModelError(f"dtype {arr.dtype.str} is raw bytes, {arr.dtype.itemsize} an element; {f.name} "
                         f"(ml_dtypes.{np.dtype(dt).name}) has {size}")
    bits = np.ascontiguousarray(arr).view(uint_dtype(f)).astype(np.uint64)
    if f.width < 8 * size and np.any(bits >> np.uint64(f.width)):
        raise ModelError(f"raw bytes with bits above {f.name}'s {f.width} are not {f.name} values")
    return bits


def operand_bits(x, fmt, what: str) -> np.ndarray:
    """:func:`to_bits` of a matrix, its errors naming ``what`` and the format."""
    try:
        return to_bits(x, fmt)
    except (ModelError, FormatError) as exc:
        raise ModelError(f"{what}: {exc} ({get_format(fmt).name})" if get_format(fmt).name not in str(exc)
                         else f"{what}: {exc}") from None


def round_scale(x, fmt: str = "fp32", what: str = "scale") -> "np.ndarray | None":
    """Raw bits (uint64, x's shape) of a scale: an array of ``fmt``'s own NumPy type is taken as
    it is; Python floats, ints and other float arrays are rounded to ``fmt`` to nearest, ties to
    even, as ``torch.tensor(x, dtype=torch.float32)`` does (0.3 -> 0.30000001192092896 in fp32).
    A finite value that overflows ``fmt`` is refused, naming ``what``; None stays None."""
    if x is None:
        return None
    f = get_format(fmt)
    arr = np.asarray(x)
    dt = numpy_dtype(f)
    if arr.dtype.kind == "V" or (dt is not None and arr.dtype == np.dtype(dt)):
        return to_bits(arr, f)
    if arr.dtype.kind not in "fiub":
        raise ModelError(f"{what}: dtype {arr.dtype} is not a number")
    from ..sampling import round_to
    v = arr.astype(np.float64)
    bits = round_to(v, f.name)
    back = bits_to_numpy(bits, f).astype(np.float64)
    over = np.isfinite(v) & ~np.isfinite(back)
    if np.any(over):
        bad = float(np.ravel(v[over])[0])
        raise ModelError(f"{what} {bad:g} overflows {f.name} (largest finite {f.max_finite():g})")
    return bits


def exact_scalar(x, fmt: str, what: str) -> int:
    """Raw bits of a scalar that must be exactly representable in ``fmt`` (alpha, beta), or an
    error naming ``what`` and the nearest value of ``fmt``."""
    f = get_format(fmt)
    try:
        v = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelError(f"{what} {x!r} is not a number") from None
    if v.shape != ():
        raise ModelError(f"{what} must be a scalar, got shape {v.shape}")
    try:
        return int(to_bits(v, f))
    except (ModelError, FormatError):
        from ..sampling import round_to
        near = float(bits_to_numpy(round_to(v, f.name), f))
        raise ModelError(f"{what} {float(v)!r} is not exactly representable in {f.name} "
                         f"(the nearest {f.name} value is {near!r})") from None


def raw_bits(x, w: int) -> np.ndarray:
    """x's raw bit patterns as uint64 (x itself where it is one: read, never written), checked
    to fit ``w`` bits as the NumPy reading's inputs are."""
    arr = np.asarray(x)
    if arr.dtype.kind in "uib" and w <= 64:
        return fitting_u64(arr, w)
    return np.asarray(NUMPY.input(arr, w).v, dtype=np.uint64)
