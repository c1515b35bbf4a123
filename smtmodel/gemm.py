"""D = A·B + C on whole matrices of values, computed by a model's twin.

Each output element is one dot product ``c_ij + sum_k a_ik b_kj`` chained over K exactly as the
model defines (seed 000 Algorithm 5); elements are independent (seed 000 §3.1.1, CLFP step 1).
"""

from __future__ import annotations

import numpy as np

from .catalog import get_model
from .formats import bits_to_numpy, get_format, numpy_to_bits
from .model import Model, ModelError


def to_bits(values, fmt) -> np.ndarray:
    """Raw bits of values already representable in ``fmt`` (NumPy / ml_dtypes arrays or floats)."""
    f = get_format(fmt)
    if f.name == "tf32":
        bits = numpy_to_bits(np.asarray(values, dtype=np.float32), "fp32")
        if np.any(bits & np.uint64(0x1FFF)):
            raise ModelError("values are not TF32 values: round them to tf32 first")
        return bits
    arr = np.asarray(values)
    bits = numpy_to_bits(arr, f)
    if not np.array_equal(bits_to_numpy(bits, f).astype(np.float64), arr.astype(np.float64), equal_nan=True):
        raise ModelError(f"values are not exactly representable in {f.name}")
    return bits


def gemm(model: "str | Model", A, B, C, chunk: int = 16384) -> np.ndarray:
    """D = A·B + C with the model; A (M,K), B (K,N) in the model's input format, C (M,N) in its
    c format; returns D as an array of the output format's NumPy / ml_dtypes type."""
    m = get_model(model)
    A, B, C = np.asarray(A), np.asarray(B), np.asarray(C)
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2 or C.shape != (M, N):
        raise ModelError(f"shapes do not fit: A {A.shape}, B {B.shape}, C {C.shape}")
    a, b, c = to_bits(A, m.in_fmt), to_bits(B, m.in_fmt), to_bits(C, m.c_fmt).reshape(-1)
    out = np.empty(M * N, dtype=np.uint64)
    bt = np.ascontiguousarray(b.T)
    for s in range(0, M * N, chunk):
        idx = np.arange(s, min(s + chunk, M * N))
        out[idx] = m.evaluate(a[idx // N], bt[idx % N], c[idx])
    return bits_to_numpy(out, m.out_fmt).reshape(M, N)
