"""D = alpha·op(A)·op(B) + beta·C on whole matrices, computed by a model's twin and a dataflow.

Each output element is a set of dot products chained over K exactly as the model defines (seed
000 Algorithm 5; any K, zero-padded as :meth:`Model.padded_k` says); elements are independent
(seed 000 §3.1.1). The compiled reading is the GEMM reading (:mod:`smtmodel.native.gemm`): what
reads only an element of A or of B is computed once per element, the rest in one compiled loop
over rows and vectors of columns, on all cores.

What a library adds around the instruction is a :class:`~smtmodel.dataflow.Dataflow` (data, the
``dataflow`` argument; docs/dataflow.md): where C enters (the epilogue or the accumulator), the
epilogue's form and format, what beta = 0 does, how K is cut into chains (k-tiles, slices,
restarts) and how the partial sums are combined, the output format and rounding. The result
depends on the dataflow only, never silently on the values of alpha and beta. The default is the
``cutlass2`` profile: one chain from +0 over K, then D = fma(alpha, acc, RN(beta·C)) in fp32
(CUTLASS 2.x ``LinearCombination``); see :data:`smtmodel.dataflow.DEFAULT` for why.
The composition around the chains is written once over the core's operations
(:mod:`smtmodel.dataflow.compose`); this module reads it on (M, N) arrays and
:func:`smtmodel.dataflow.element` on one element's terms, so the two give the same bits.

``k_order`` (``plain`` | ``split:S`` | ``interval:N``) is kept as a shorthand for the chain
fields of the default dataflow: ``split:S`` is ``S=S`` (contiguous slices of whole model
blocks, summed serially in fp32), ``interval:N`` is ``tile=N,restart=1,pad=block`` (the FP8
promotion interval N_C, DeepSeek-V3 §3.3.2).

The package, by job: :mod:`.values` (values <-> raw bits), :mod:`.flow` (the ``dataflow`` and
``k_order`` arguments), :mod:`.scales`, the readings behind one factory (:mod:`.readings`: the
dot products by :mod:`.dots_native`, :mod:`.dots_numpy`, :mod:`.dots_tabulated`; the elementwise
steps by :mod:`.elementwise`), :mod:`.arrays` (the composition of
:mod:`smtmodel.dataflow.compose` read on (M, N) arrays) and here the public :func:`gemm` and
:func:`gemm_bits`.
"""

from __future__ import annotations

import numpy as np

from ..catalog import get_model
from ..dataflow import Dataflow, DataflowError, compose
from ..dataflow.compose import epilogue_format, output_format, scale_result_applies
from ..dataflow.plan import chains
from ..formats import bits_to_numpy
from ..fp.classify import one_bits
from ..model import INT_OPS, Model, ModelError
from .arrays import Arrays
from .arrays import _zero_blocks  # noqa: F401
from .dots_native import NativeFallback
from .dots_native import dots as _dots_native  # noqa: F401  (tests run the readings by these names)
from .dots_native import dots_rows as _dots_rows  # noqa: F401
from .dots_numpy import dots as _dots_numpy  # noqa: F401
from .flow import K_ORDERS, int_dataflow, k_chunks, parse_k_order, resolve_dataflow
from .readings import BACKENDS, readings
from .scales import applied_scale_result, scales
from .values import exact_scalar, operand_bits, raw_bits, round_scale, to_bits, void_bits

__all__ = ["BACKENDS", "K_ORDERS", "NativeFallback", "epilogue_format", "exact_scalar", "gemm", "gemm_bits",
           "k_chunks", "operand_bits", "output_format", "parse_k_order", "resolve_dataflow", "round_scale",
           "scale_result_applies", "to_bits", "void_bits"]

_EW_NATIVE_MIN = 1 << 15
"""Elements from which an elementwise step is compiled: below, the NumPy reading (a compile
costs 0.2-1 s and the steps' keys carry alpha, beta and scale_result, so small calls with many
different scales would compile one kernel each)."""


def gemm(model: "str | Model", A, B, C=None, *, alpha: float = 1.0, beta: float = 1.0,
         transa: bool = False, transb: bool = False, dataflow=None, k_order: str | None = None,
         scale_a=None, scale_b=None, scale_result=None,
         backend: str = "auto", jobs: int | None = None) -> np.ndarray:
    """D = alpha·op(A)·op(B) + beta·C with the model and the dataflow (module docstring).

    A (M,K) (``transa``: (K,M)) and B (K,N) (``transb``: (N,K)) hold values of the model's input
    formats (A's and B's: :attr:`Model.operand_fmts`), C (M,N) values of its c format (None: no
    C). ``alpha`` and ``beta`` must be values of the epilogue format. ``scale_a``/``scale_b``:
    fp32 per-tensor scales (with a dataflow that takes them, ``alpha_from_scales``) or per-block
    arrays (M, ceil(K/128)) and (ceil(N/128), ceil(K/128)); ``scale_result``: a scale in the
    epilogue format (FP8 outputs). Scales given as Python floats or float64 arrays are rounded
    to their format to nearest even, as torch stores them (:func:`round_scale`). Returns D as an
    array of the output format's NumPy / ml_dtypes type."""
    m = get_model(model)
    if m.scale_fmt:
        raise ModelError(f"{m.id}: gemm takes models without block scales")
    df = resolve_dataflow(dataflow, k_order)
    A, B = np.asarray(A), np.asarray(B)
    if A.ndim != 2 or B.ndim != 2:
        raise ModelError(f"A and B must be matrices, got shapes {A.shape} and {B.shape}")
    fa, fb = m.operand_fmts
    (M, K), N = (A.shape[::-1] if transa else A.shape), (B.shape[0] if transb else B.shape[1])
    _check_memory(M, N, K, 1 + (df.slices > 1 or df.restart > 0))
    a, b = operand_bits(A, fa, "A"), operand_bits(B, fb, "B")
    c = None if C is None else operand_bits(C, m.c_fmt, "C")
    if m.op in INT_OPS:
        if alpha != 1.0 or (beta != 1.0 and C is not None) or not int_dataflow(dataflow, k_order):
            raise ModelError(f"{m.id}: integer models take alpha = beta = 1 and the 'instruction' dataflow only "
                             "(C enters the s32 accumulator)")
        d = gemm_bits(m, a.T if transa else a, b.T if transb else b, c, backend=backend, jobs=jobs)
        return bits_to_numpy(d, m.out_fmt)
    E = epilogue_format(m, df)

    al, be = exact_scalar(alpha, E, "alpha"), exact_scalar(beta, E, "beta")
    sa, sb = round_scale(scale_a, "fp32", "scale_a"), round_scale(scale_b, "fp32", "scale_b")
    sr = round_scale(scale_result, E, "scale_result")
    d = gemm_bits(m, a.T if transa else a, b.T if transb else b, c, alpha_bits=al, beta_bits=be,
                  dataflow=df, scale_a_bits=sa, scale_b_bits=sb,
                  scale_result_bits=None if sr is None else int(sr), backend=backend, jobs=jobs)
    return bits_to_numpy(d, output_format(m, df))


def gemm_bits(m: Model, a, b, c=None, *, alpha_bits: int | None = None, beta_bits: int | None = None,
              dataflow=None, k_order: str | None = None, scale_a_bits=None, scale_b_bits=None,
              scale_result_bits: int | None = None, backend: str = "auto", jobs: int | None = None,
              cache: dict | None = None, info: dict | None = None) -> np.ndarray:
    """:func:`gemm` on raw bits: a (M,K), b (K,N) (any strides), c (M,N) or None; alpha, beta and
    scale_result as raw bits of the epilogue format (None: 1.0, 1.0, none); scales as fp32 bits
    (scalars or per-block arrays). Returns the output bits (M,N) uint64.

    A batch: a (B,M,K), b (B,K,N), c (B,M,N) or None -> (B,M,N), each matrix of the batch the
    GEMM of its own a, b and c under the same model, dataflow, alpha, beta and scales (per-tensor
    only) in one call: the elementwise steps run once over the whole batch and the chains of the
    matrices on the cores side by side (``bmm``; many small GEMMs).

    What a call decides before reading any element (the dataflow parsed, its K plan, the scales
    folded into alpha, the epilogue's composition, which readings compile) is remembered per
    (model, dataflow, shape, alpha, beta, scales), so repeated calls of one shape pay it once.

    ``cache``: a dict the caller keeps across calls; the combined accumulator (before the
    epilogue) is stored there under the model, the dataflow's chain and combine fields and the
    contents of a and b, so calls that differ only in the epilogue or the output (alpha, scales,
    output format) run the chains once. Not used when C enters the accumulator, with per-block
    scales, or with combines that round in the output type.

    ``info``: a dict the call fills with ``reading``: what ran the chains (``compiled``, ``numpy``
    or ``tabulated``; ``auto`` runs NumPy where the chains do not compile, and warns)."""
    m = get_model(m)
    df = _dataflow(dataflow, k_order)
    if m.scale_fmt:
        raise ModelError(f"{m.id}: gemm takes models without block scales")
    if backend not in BACKENDS:
        raise ModelError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")
    a, b = np.asarray(a), np.asarray(b)
    batched = a.ndim == 3
    if a.ndim not in (2, 3) or b.ndim != a.ndim or (batched and a.shape[0] != b.shape[0]):
        raise ModelError(f"op(A) and op(B) must be matrices (or batches of as many matrices), got shapes "
                         f"{a.shape} and {b.shape}")
    (M, K), (K2, N) = a.shape[-2:], b.shape[-2:]
    lead = a.shape[:-2]
    if K != K2 or (c is not None and np.shape(c) != lead + (M, N)):
        raise ModelError(f"shapes do not fit: op(A) {a.shape}, op(B) {b.shape}"
                         + ("" if c is None else f", C {np.shape(c)}") + " (need (M,K), (K,N), (M,N)"
                         + (", each with the batch first)" if batched else ")"))
    nb = lead[0] if batched else 1
    if m.op in INT_OPS:                # the s32 accumulator takes C directly; no integer epilogue is modelled
        if alpha_bits is not None or beta_bits is not None or not int_dataflow(dataflow, k_order):
            raise ModelError(f"{m.id}: integer models take alpha = beta = 1 and the 'instruction' dataflow only "
                             "(C enters the s32 accumulator)")
        if any(x is not None for x in (scale_a_bits, scale_b_bits, scale_result_bits)):
            raise ModelError(f"{m.id}: integer models take no scales (D is the s32 accumulator)")
        if batched:
            return _stack([gemm_bits(m, a[i], b[i], None if c is None else np.asarray(c)[i], dataflow=dataflow,
                                     k_order=k_order, backend=backend, jobs=jobs) for i in range(nb)], (nb, M, N))
        if M == 0 or N == 0:
            return np.zeros((M, N), np.uint64)
        _check_memory(M, N, K, 1)
        c = np.zeros((M, N), dtype=np.uint64) if c is None else c
        wi, wc, _ = m.widths
        a, b, c = (np.ascontiguousarray(raw_bits(x, w)) for x, w in ((a, wi), (b, wi), (c, wc)))
        rd = readings(m, backend, [[np.arange(K)]], M * N, jobs, _EW_NATIVE_MIN)
        if info is not None:
            info["reading"] = rd.name
        return rd.dots(m, a, b, c, 0, K, jobs)
    per_block = any(s is not None and np.size(s) != 1 for s in (scale_a_bits, scale_b_bits))
    if batched and per_block:
        raise ModelError("a batch takes per-tensor scales only (per-block scales: one GEMM per call)")
    p = _prepare(m, df, lead, M, N, K, c is not None, alpha_bits, beta_bits, scale_a_bits, scale_b_bits,
                 scale_result_bits, backend, jobs, per_block)
    if p is None:
        return np.zeros(lead + (M, N), np.uint64)      # K = 0 with k0=zero: D = +0, no epilogue
    plan, call, rd, blocks = p
    if info is not None:
        info["reading"] = rd.name
    (wa, wb), (_, wc, _) = m.operand_widths, m.widths
    a, b = (np.ascontiguousarray(raw_bits(x, w)).reshape(lead + shape)
            for x, w, shape in ((a, wa, (M, K)), (b, wb, (K, N))))
    if c is not None:
        c = np.ascontiguousarray(raw_bits(c, wc)).reshape(lead + (M, N))
    run = Arrays(call, a, b, blocks, rd, jobs)
    if cache is None or call.c_in_acc or blocks is not None or df.combine in ("output", "workspace"):
        return compose.gemm(run, plan, c)
    key = (m.id, call.E, _chain_fields(df), a.shape, b.shape, _digest(a), _digest(b))
    acc = cache.get(key)
    if acc is None:
        acc = cache[key] = compose.combine(run, compose.parts(run, plan, c))
    return compose.epilogue(run, acc, c)


_PREPARED: dict = {}
"""(model, dataflow, shape, alpha, beta, scales, backend, jobs) -> what :func:`gemm_bits` decides
before reading an element (:func:`_prepare`)."""

_DATAFLOWS: dict = {}


def _dataflow(dataflow, k_order):
    """:func:`resolve_dataflow`, remembered for hashable arguments (a profile's text, a Dataflow)."""
    if isinstance(dataflow, dict):
        return resolve_dataflow(dataflow, k_order)
    key = (type(dataflow), dataflow, k_order)
    df = _DATAFLOWS.get(key)
    if df is None:
        df = resolve_dataflow(dataflow, k_order)
        if len(_DATAFLOWS) > 1024:
            _DATAFLOWS.clear()
        _DATAFLOWS[key] = df
    return df


def _prepare(m: Model, df: Dataflow, lead: tuple, M: int, N: int, K: int, has_c: bool, alpha_bits, beta_bits,
             scale_a_bits, scale_b_bits, scale_result_bits, backend: str, jobs, per_block: bool):
    """(plan, call, readings, blocks) of a GEMM, or None for one that computes nothing (K = 0
    with ``k0=zero``, an empty D); remembered in :data:`_PREPARED` unless it has per-block scales
    (``blocks``: their function; None otherwise)."""
    key = None
    if not per_block:
        sc = tuple(None if s is None else int(np.ravel(s)[0]) for s in (scale_a_bits, scale_b_bits))
        key = (m.id, df, lead, M, N, K, has_c, None if alpha_bits is None else int(alpha_bits),
               None if beta_bits is None else int(beta_bits), sc,
               None if scale_result_bits is None else int(scale_result_bits), backend, jobs)
        got = _PREPARED.get(key)
        if got is not None and (got[0] is m or got[0] == m):
            _check_memory(M, N, K, got[2], len(lead) and lead[0])
            return got[1]
    E = epilogue_format(m, df)
    out = output_format(m, df)
    try:
        plan = chains(df, m, K)
    except DataflowError as e:
        raise ModelError(str(e)) from None
    alpha = one_bits(E) if alpha_bits is None else int(alpha_bits)
    alpha, blocks = scales(m, df, E, M, N, K, alpha, scale_a_bits, scale_b_bits)
    sr = applied_scale_result(df, out, scale_result_bits)
    partials = len(plan) + (max((len(sl) for sl in plan), default=0) > 1)
    if M == 0 or N == 0 or (lead and lead[0] == 0) or compose.no_products(df, K):
        prep = None
    else:
        _check_memory(M, N, K, partials, len(lead) and lead[0])
        rd = readings(m, backend, plan, M * N, jobs, _EW_NATIVE_MIN)
        call = compose.call(m, df, has_c=has_c, alpha_bits=alpha, beta_bits=beta_bits, sr_bits=sr, E=E, out=out)
        prep = (plan, call, rd, blocks)
    if key is not None:
        if len(_PREPARED) > 4096:
            _PREPARED.clear()
        _PREPARED[key] = (m, prep, partials)
    return prep


def _stack(parts: list, shape: tuple) -> np.ndarray:
    out = np.empty(shape, np.uint64)
    for i, d in enumerate(parts):
        out[i] = d
    return out


_MEMORY_CHECK_MIN = 1 << 24
"""Bytes from which a GEMM's memory is checked against what is available (reading
/proc/meminfo costs more than a small GEMM)."""


def _check_memory(M: int, N: int, K: int, partials: int, batch: int = 0) -> None:
    """Refuse, before allocating, a GEMM that needs more memory than is available, saying how much
    it needs (:func:`smtmodel.native.gemm.memory_needed`; a batch: ``batch`` times that)."""
    from ..native import gemm as ngemm
    need = ngemm.memory_needed(M, N, K, partials) * max(batch, 1)
    if need < _MEMORY_CHECK_MIN:
        return
    have = ngemm.memory_available()
    if have is not None and need > have:
        what = f"a batch of {batch} GEMMs" if batch else "a GEMM"
        raise ModelError(f"{what} of op(A) {M}x{K} and op(B) {K}x{N} needs about {need / 2 ** 30:.1f} GiB of memory; "
                         f"{have / 2 ** 30:.1f} GiB are available")


def _chain_fields(df: Dataflow) -> tuple:
    """The fields that decide the accumulator before the epilogue (C entering the epilogue)."""
    return (df.tile, df.pad, df.slices, df.assign, tuple(df.bounds), df.restart, df.combine, df.combine_op)


def _digest(x: np.ndarray) -> str:
    import hashlib
    return hashlib.sha1(np.ascontiguousarray(x).tobytes()).hexdigest()
