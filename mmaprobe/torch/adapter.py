"""Optional PyTorch adapter: ``matmul`` and ``scaled_mm`` on CPU tensors, computed by a model's
twin and a dataflow (docs/dataflow.md). Needs the ``torch`` extra (``pip install -e '.[torch]'``);
nothing else in mmaprobe imports torch.

``scaled_mm`` takes the arguments of ``torch._scaled_mm`` (``input, mat2, scale_a, scale_b,
bias, scale_result, out_dtype, use_fast_accum``) and, by default, the Ada cuBLASLt FP8 profile
(fast or slow accumulation as ``use_fast_accum`` says) on the Ada FP8 model of the operands'
formats: the dataflow that reproduces the RTX 4060 recordings. Tensors go in and come out on the
CPU; the bits are exactly the twin's.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

try:
    import torch
except ImportError as _e:                  # pragma: no cover - exercised only without the extra
    raise ImportError("mmaprobe.torch needs PyTorch: pip install -e '.[torch]'") from _e

from smtmodel.catalog import get_model
from smtmodel.formats import FormatError, bits_to_torch, dtype_name, format_of_dtype, get_format, torch_to_bits
from smtmodel.gemm import epilogue_format, exact_scalar, gemm_bits, output_format, resolve_dataflow, round_scale
from smtmodel.model import ModelError

_FLOATS = ("fp32", "fp16", "bf16", "fp64", "fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz")
"""The formats whose tensors the adapter takes and gives (the torch dtypes of floating matmuls)."""


def fmt_of(dtype) -> str | None:
    """The format of a torch dtype the adapter takes (:data:`_FLOATS`), or None."""
    try:
        f = _FMT_CACHE[dtype]
    except KeyError:
        try:
            f = format_of_dtype(dtype).name
        except FormatError:
            f = None
        f = _FMT_CACHE.setdefault(dtype, f if f in _FLOATS else None)
    return f


_FMT_CACHE: dict = {}

ADA_FP8_MODEL = "ada-{ab}-fp32:zero_align=ignore"


def _fmt(t: "torch.Tensor", what: str) -> str:
    if not isinstance(t, torch.Tensor):
        raise ModelError(f"{what} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ModelError(f"{what} is on {t.device}: mmaprobe.torch takes CPU tensors (move it with .cpu())")
    if fmt_of(t.dtype) is None:
        raise ModelError(f"{what} has dtype {t.dtype}; mmaprobe.torch knows "
                         f"{', '.join(dtype_name(f) for f in _FLOATS)}")
    return fmt_of(t.dtype)


def to_bits_tensor(t: "torch.Tensor") -> np.ndarray:
    """Raw bits (uint64) of a CPU tensor."""
    return raw_bits(t).astype(np.uint64)


raw_bits = torch_to_bits
"""Raw bits of a CPU tensor as an unsigned NumPy array of its element width (no uint64 copy:
``gemm_bits`` reads these directly)."""


def from_bits(bits: np.ndarray, fmt: str) -> "torch.Tensor":
    """A CPU tensor of ``fmt``'s dtype from raw bits."""
    if fmt not in _FLOATS:
        raise ModelError(f"no torch dtype for format {fmt}")
    return bits_to_torch(bits, fmt)


def matmul(a, b, *, model, dataflow=None, c=None, alpha: float = 1.0, beta: float = 1.0,
           backend: str = "auto", jobs: int | None = None) -> "torch.Tensor":
    """D = alpha·a·b + beta·c (c optional) with ``model`` and ``dataflow``: a (M,K), b (K,N) CPU
    tensors in the model's operand formats, c (M,N) in its c format. Returns D (CPU) in the
    dataflow's output format."""
    m = get_model(model)
    df = resolve_dataflow(dataflow)
    fa, fb = m.operand_fmts
    for t, f, what in ((a, fa, "a"), (b, fb, "b")):
        if _fmt(t, what) != get_format(f).name:
            raise ModelError(f"{what} is {t.dtype} but {m.id} takes {f} for it")
    cb = None
    if c is not None:
        if _fmt(c, "c") != get_format(m.c_fmt).name:
            raise ModelError(f"c is {c.dtype} but {m.id} takes {m.c_fmt} for C")
        cb = to_bits_tensor(c)
    E = epilogue_format(m, df)
    d = gemm_bits(m, to_bits_tensor(a), to_bits_tensor(b), cb,
                  alpha_bits=exact_scalar(alpha, E, "alpha"), beta_bits=exact_scalar(beta, E, "beta"),
                  dataflow=df, backend=backend, jobs=jobs)
    return from_bits(d, output_format(m, df))


def _scalar_bits(s, what):
    if isinstance(s, torch.Tensor):
        if s.numel() != 1:
            raise ModelError(f"{what}: only per-tensor (one-element) scales are modelled here")
        s = s.detach().cpu().to(torch.float32).reshape(())
        return int(to_bits_tensor(s.reshape(1))[0])
    return int(round_scale(s, "fp32", what))          # a Python float: rounded as torch stores it


def scaled_mm(input, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
              use_fast_accum: bool = False, *, model=None, dataflow=None, splitk: "tuple | None" = None,
              backend: str = "auto", jobs: int | None = None) -> "torch.Tensor":
    """``torch._scaled_mm`` by the twin: input (M,K) and mat2 (K,N) FP8 CPU tensors, per-tensor
    fp32 scales, ``scale_result`` for FP8 outputs, ``out_dtype`` (default: input's dtype).
    ``model``: default the Ada FP8 model of the operand formats; ``dataflow``: default the Ada
    cuBLASLt profile (``use_fast_accum`` picks fast or slow); ``splitk=(S, combine)``: the split
    cuBLASLt chose for the call (default unsplit)."""
    if bias is not None:
        raise ModelError("scaled_mm: bias is not modelled")
    fa, fb = _fmt(input, "input"), _fmt(mat2, "mat2")
    if model is None:
        model = ADA_FP8_MODEL.format(ab=fa if fa == fb else f"{fa}x{fb}")
    m = get_model(model)
    if dataflow is None:
        dataflow = "cublaslt-ada-fp8-fast" if use_fast_accum else "cublaslt-ada-fp8-slow"
    df = resolve_dataflow(dataflow)
    out = fmt_of(out_dtype if out_dtype is not None else input.dtype)
    if out is None:
        raise ModelError(f"scaled_mm: out_dtype {out_dtype} is not modelled")
    kw = {"out": out}
    if splitk is not None:
        S, comb = splitk
        kw.update(slices=int(S), combine=comb if int(S) > 1 else df.combine)
    df = replace(df, **kw).validate()
    if tuple(m.operand_fmts) != (fa, fb) and (get_format(m.operand_fmts[0]).name, get_format(m.operand_fmts[1]).name) != (fa, fb):
        raise ModelError(f"input/mat2 are {fa} x {fb} but {m.id} takes {' x '.join(m.operand_fmts)}")
    sr = None if scale_result is None else _scalar_bits(scale_result, "scale_result")
    d = gemm_bits(m, to_bits_tensor(input), to_bits_tensor(mat2), None, beta_bits=0, dataflow=df,
                  scale_a_bits=_scalar_bits(scale_a, "scale_a"), scale_b_bits=_scalar_bits(scale_b, "scale_b"),
                  scale_result_bits=sr, backend=backend, jobs=jobs)
    return from_bits(d, out)
