"""GEMM inputs for ``mmaprobe explain``: named generators (no files for 2^13 × 2^13 matrices) or
``.npy`` arrays, as a :class:`Problem` (structured inputs, formats, α and β).

Generator spec text: ``NAME[:key=value,...]``, e.g. ``seed003`` or ``seed003:k=64``.

``seed003`` (seed 003 §V): D = α·A·B + β·C with α = −1, β = 1, m = n = k = 2^13, A and B fp16,
C and D fp32; C_ij = 2^20; A_i0 = B_0j = 2^10; the other entries of A are 2^-2 in odd columns and
2^-3 in even ones, the other entries of B 2^-3. The paper's prose gives every entry positive, but
its second line writes the small products subtracted, −(2^10·2^10 − Σ 2^-2·2^-3 − Σ 2^-3·2^-3),
and only then is the stated exact value 2^7 + 2^6 − 2^-6 reached: the small entries of A are taken
negative (negating B's instead gives the same products). Every row of A is the same, and every
column of B: D is one value repeated (the paper: "all D_ij will be the same").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from smtmodel.formats import get_format, numpy_to_bits
from smtmodel.io import NpyError, read_npy
from smtmodel.limits import check_memory

from .structure import InputError, Structured, from_arrays


@dataclass
class Problem:
    """What a GEMM was run on: structured raw bits, formats, α, β, and where it comes from."""

    inputs: Structured
    in_fmt: str
    c_fmt: str
    alpha: float
    beta: float
    source: str = ""
    params: dict = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.inputs.shape

    def describe(self) -> str:
        M, N, K = self.shape
        A, B, _, _, _ = self.inputs.reduced()
        return (f"{self.source}: M={M} N={N} K={K}, A/B {self.in_fmt}, C {self.c_fmt}, alpha={self.alpha:g}, "
                f"beta={self.beta:g}; {A.shape[0]} distinct row(s) x {B.shape[1]} distinct column(s)")


def _bits(values, fmt) -> np.ndarray:
    return numpy_to_bits(np.asarray(values), get_format(fmt)).astype(np.uint64)


def seed003(m: int = 8192, n: int = 8192, k: int = 8192) -> Problem:
    """Seed 003 §V's GEMM (module docstring)."""
    if min(m, n, k) < 1:
        raise InputError("seed003: m, n and k are at least 1")
    check_memory(32.0 * (k + 2 * m + 2 * n), f"seed003 with m={m}, n={n}, k={k}", "lower m, n or k")
    row = np.where(np.arange(k) % 2 == 1, -0.25, -0.125).astype(np.float16)
    row[0] = 1024
    col = np.full(k, 0.125, np.float16)
    col[0] = 1024
    s = Structured(_bits(row, "fp16")[None, :], np.zeros(m, np.int64), _bits(col, "fp16")[:, None],
                   np.zeros(n, np.int64), _bits(np.float32(2.0 ** 20), "fp32").reshape(1, 1),
                   np.zeros(m, np.int64), np.zeros(n, np.int64))
    return Problem(s, "fp16", "fp32", -1.0, 1.0, source="seed 003 §V", params={"m": m, "n": n, "k": k})


GENERATORS = {"seed003": seed003}


def from_spec(text: str) -> Problem:
    """A generator spec ``NAME[:key=value,...]`` (module docstring)."""
    name, _, rest = text.partition(":")
    if name not in GENERATORS:
        raise InputError(f"unknown generator {name!r}; one of {', '.join(GENERATORS)}")
    kw = {}
    for item in filter(None, rest.split(",")):
        key, eq, val = item.partition("=")
        if not eq or key.strip() not in ("m", "n", "k"):
            raise InputError(f"generator {name}: bad parameter {item!r} (m=, n=, k=)")
        try:
            kw[key.strip()] = int(val)
        except ValueError:
            raise InputError(f"generator {name}: {key}={val!r} is not an integer") from None
    p = GENERATORS[name](**kw)
    p.inputs.validate()
    return p


def from_npy(a_path: str, b_path: str, c_path: str | None, in_fmt: str, c_fmt: str,
             alpha: float, beta: float) -> Problem:
    """A, B (and C) from ``.npy`` files of values exactly representable in the formats (float16 /
    ml_dtypes / float32 arrays) or of raw bits (unsigned integer arrays)."""
    arrs = []
    for path, fmt in ((a_path, in_fmt), (b_path, in_fmt), (c_path, c_fmt)):
        if path is None:
            arrs.append(None)
            continue
        try:
            x = read_npy(path)
        except NpyError as exc:
            raise InputError(str(exc)) from None
        if x.dtype.kind == "u":
            w = get_format(fmt).width
            if w < 64 and x.size and int(x.max()) >> w:
                raise InputError(f"{path}: a pattern 0x{int(x.max()):x} does not fit {get_format(fmt).name} ({w} bits)")
            arrs.append(x.astype(np.uint64))
        else:
            arrs.append(_exact_bits(x, fmt, path))
    return Problem(from_arrays(*arrs), get_format(in_fmt).name, get_format(c_fmt).name, alpha, beta,
                   source=f"A={a_path} B={b_path}" + (f" C={c_path}" if c_path else ""))


def _exact_bits(x: np.ndarray, fmt: str, path: str) -> np.ndarray:
    from smtmodel.gemm import to_bits
    from smtmodel.model import ModelError
    try:
        return to_bits(x, fmt).astype(np.uint64)
    except ModelError as exc:
        raise InputError(f"{path}: {exc}") from None
