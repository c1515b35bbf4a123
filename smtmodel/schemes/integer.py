"""What the Ozaki-scheme twins share: their error type, the input checks, the residues, and the
integer GEMM as a catalog integer MMA model computes it."""

from __future__ import annotations

import numpy as np

from ..model import Model, ModelError


class OzakiError(ModelError):
    """A configuration that cannot be exact (int32 overflow), or inputs the scheme refuses."""


def refuse_specials(*mats) -> None:
    for x in mats:
        if x is not None and not np.all(np.isfinite(x)):
            raise OzakiError("inputs with inf or NaN: the Ozaki schemes slice exponents as numbers "
                             "(ozIMMU's scale becomes inf/NaN); refused")


def sym_residue(X: np.ndarray, p: int) -> np.ndarray:
    """The residue of integer-valued X mod p in [-(p-1)/2, (p-1)/2] (p odd) or [-128, 127]
    (p = 256: int8's range), as int64 (an int8 residue as the Ozaki-II twins store it)."""
    r = np.fmod(np.asarray(X, dtype=np.float64), p)      # exact, sign of x
    r = np.where(r < 0, r + p, r)
    top = 127 if p == 256 else p // 2
    return np.where(r > top, r - p, r).astype(np.int64)


def int_gemm(A: np.ndarray, B: np.ndarray, m: Model) -> np.ndarray:
    """C = A·B for integer matrices A (M,K), B (K,N) as the integer MMA model ``m`` computes it
    over K from c = 0: exact products and sums (float64 BLAS is exact here: every partial sum is
    an integer below 2^53, checked), then the model's s32 wrap-around, or its ``.satfinite``
    clamp applied per instruction block of ``m.L`` along K in order."""
    K = A.shape[1]
    bound = K * int(np.abs(A).max(initial=0)) * int(np.abs(B).max(initial=0))
    if bound >= 1 << 53:
        raise OzakiError(f"int_gemm: |sum| may reach {bound} >= 2^53; not exact in float64")
    Af, Bf = A.astype(np.float64), B.astype(np.float64)
    lo, hi = -(1 << 31), (1 << 31) - 1
    if not m.saturate:
        s = (Af @ Bf).astype(np.int64)
        return (s - lo) % (1 << 32) + lo
    acc = np.zeros((A.shape[0], B.shape[1]), dtype=np.int64)
    for k0 in range(0, K, m.L):
        acc = np.clip(acc + (Af[:, k0:k0 + m.L] @ Bf[k0:k0 + m.L]).astype(np.int64), lo, hi)
    return acc


def check_shapes(A, B, C):
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0] or A.shape[1] < 1:
        raise OzakiError(f"shapes do not fit: A {A.shape}, B {B.shape} (need (M,K), (K,N), K >= 1)")
    if C is not None and C.shape != (A.shape[0], B.shape[1]):
        raise OzakiError(f"C has shape {C.shape}, need {(A.shape[0], B.shape[1])}")
