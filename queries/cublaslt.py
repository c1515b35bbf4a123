"""Replay recorded cuBLASLt FP8 GEMMs (``torch._scaled_mm`` on an RTX 4060, the
``mmaemu-hwmini/1`` recordings read by :mod:`smtmodel.mmaemu`) with a catalog model and the Ada
cuBLASLt profiles, each call's split and combine read from its recording.

:func:`call_dataflow` maps a recorded output to (model, dataflow, scales); :func:`replay`
computes its bits with :func:`smtmodel.gemm.gemm_bits`. Recordings whose split-K is not recorded
(small K: one 64-wide k-tile or none) run unsplit.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from smtmodel.dataflow import get_profile

ADA_MODEL = "ada-{ab}-fp32:zero_align=ignore"
"""The instruction: Ada FP8 mma.sync, seed 000 Table 4 (T-FDPA L=16, F=13, RZ-E8M13), zero
products left out of the alignment maximum (the catalog's Ada FP8 zero rule is being revisited;
the override states it)."""


def call_model(out, template: str = ADA_MODEL):
    """The model for a recorded call's operand formats (the mixed catalog model where they differ)."""
    from smtmodel.catalog import get_model
    fa, fb = out.fmt_a, out.fmt_b
    return get_model(template.format(ab=fa if fa == fb else f"{fa}x{fb}"))


def call_dataflow(out):
    """The Ada cuBLASLt dataflow of one recorded output: fast or slow accumulation, the recorded
    (S, scheme), the recorded output format."""
    df = get_profile("cublaslt-ada-fp8-fast" if out.fast else "cublaslt-ada-fp8-slow")
    S, scheme = out.splitk if out.splitk else (1, "none")
    kw = dict(out=out.out_fmt, slices=S)
    if S > 1:
        kw["combine"] = scheme
    return replace(df, **kw).validate()


def replay(out, template: str = ADA_MODEL, backend: str = "auto", jobs: int | None = None,
           cache: dict | None = None) -> np.ndarray:
    """The twin's bits for a recorded output, shaped as its ``expect``; ``cache`` (a dict kept
    across calls) lets outputs of the same call share the chains (:func:`gemm_bits`)."""
    from smtmodel.gemm import gemm_bits
    m = call_model(out, template)
    df = call_dataflow(out)
    a = np.asarray(out.a, dtype=np.uint64)
    b = np.asarray(out.b, dtype=np.uint64)
    if out.select == "diagonal":
        d = np.array([gemm_bits(m, a[i:i + 1], b[i:i + 1].T, None, beta_bits=0, dataflow=df,
                                scale_a_bits=out.scale_a_bits, scale_b_bits=out.scale_b_bits,
                                scale_result_bits=out.scale_result_bits, backend=backend, jobs=jobs,
                                cache=cache)[0, 0]
                      for i in range(a.shape[0])], dtype=np.uint64)
    else:
        d = gemm_bits(m, a, b.T, None, beta_bits=0, dataflow=df, scale_a_bits=out.scale_a_bits,
                      scale_b_bits=out.scale_b_bits, scale_result_bits=out.scale_result_bits,
                      backend=backend, jobs=jobs, cache=cache)
    return d.astype(out.expect.dtype).reshape(out.expect.shape)
