"""One GEMM output element under a dataflow as a single term of any backend (the SMT reading).

The composition of :mod:`.compose` (the one the batched :func:`smtmodel.gemm.gemm_bits` runs on
whole matrices) read on one element's bit vectors (:class:`.compose.Terms`): the model's chains
(:meth:`Model.build`) over the plan's chunks (:mod:`.plan`), then the combine, the epilogue and
the output. Used for small GEMMs: tests read it with z3 on constants and compare with the twins;
:mod:`queries.crossgpu` hands it to the solvers.
"""

from __future__ import annotations

from . import compose, steps
from .plan import chains
from .spec import Dataflow


def element(m, df: Dataflow, a: list, b: list, c, *, alpha_bits: int, beta_bits: int, beta_zero: bool | None = None,
            has_c: bool = True, q_bits: int | None = None, sr_bits: int | None = None, out: str | None = None,
            E: str | None = None, block_scale=None):
    """D[i, j] from row i of op(A) (``a``, K bit vectors), column j of op(B) (``b``) and C[i, j]
    (``c`` in the model's c format). alpha/beta/q/scale_result are raw bits of the epilogue
    format ``E`` (None: :func:`.compose.epilogue_format`); ``beta_zero`` says whether beta is
    +-0 (it selects the beta = 0 rule; None: from beta's bits, as the batched reading does);
    ``has_c``: whether C is given (no C: as beta = 0, +0 where C is read); ``block_scale(t)``:
    the per-block scale term of k-tile t (``combine_op=ffma``)."""
    K = len(a)
    B = (a[0] if a else c).B
    call = compose.call(m, df, has_c=has_c, alpha_bits=alpha_bits, beta_bits=beta_bits, beta_zero=beta_zero,
                        sr_bits=sr_bits, q_bits=q_bits, E=E, out=out)
    if compose.no_products(df, K):
        return steps.zero(B, call.out)
    r = compose.Terms(call, B, a, b, block_scale)
    return compose.gemm(r, chains(df, m, K), c if has_c else None)
