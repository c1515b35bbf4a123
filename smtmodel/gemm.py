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
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from .bv import NUMPY
from .bv.numpy_backend import fitting_u64
from .catalog import get_model
from .dataflow import Dataflow, DataflowError, compose, parse_dataflow, steps
from .dataflow.compose import epilogue_format, output_format, scale_result_applies
from .dataflow.plan import chains, is_range
from .fp.classify import one_bits
from .formats import FormatError, bits_to_numpy, get_format, numpy_dtype, numpy_to_bits, uint_dtype
from .model import CHUNK, INT_OPS, Model, ModelError

K_ORDERS = ("plain", "split", "interval")
BACKENDS = ("auto", "native", "numpy", "tabulated")
"""Readings of a GEMM: ``native`` compiled, ``numpy`` the reference, ``auto`` native where it
compiles, ``tabulated`` the NumPy reading element by element with repeated blocks' steps
tabulated (:mod:`smtmodel.tabulate`: GEMMs of few distinct elements and long chains, e.g.
seed 003 §V's K = 8192); all bit-equal."""


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
    from .sampling import round_to
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
        from .sampling import round_to
        near = float(bits_to_numpy(round_to(v, f.name), f))
        raise ModelError(f"{what} {float(v)!r} is not exactly representable in {f.name} "
                         f"(the nearest {f.name} value is {near!r})") from None


def parse_k_order(text: str) -> tuple[str, int]:
    """``plain`` | ``split:S`` | ``interval:N`` -> (kind, S or N; 0 for plain)."""
    kind, _, n = str(text).partition(":")
    if kind not in K_ORDERS or (kind == "plain") != (n == ""):
        raise ModelError(f"bad K order {text!r}: use plain, split:S or interval:N")
    if kind == "plain":
        return kind, 0
    try:
        v = int(n)
    except ValueError:
        v = 0
    if v < 1:
        raise ModelError(f"bad K order {text!r}: S and N are integers >= 1")
    return kind, v


def resolve_dataflow(dataflow=None, k_order: str | None = None) -> Dataflow:
    """The dataflow of a call: ``dataflow`` (text, JSON, dict or :class:`Dataflow`; None: the
    default) with ``k_order``'s chain fields on top (None or ``plain``: none)."""
    try:
        df = parse_dataflow(dataflow)
        if k_order is None:
            return df
        kind, n = parse_k_order(k_order)
        if kind == "split":
            df = replace(df, slices=n, assign="contiguous", bounds=(), tile=0, restart=0)
        elif kind == "interval":
            df = replace(df, tile=n, restart=1, pad="block")
        return df.validate()
    except DataflowError as e:
        raise ModelError(str(e)) from None


def k_chunks(m: Model, K: int, k_order: str = "plain") -> list[tuple[int, int]]:
    """The ranges of K chained separately under a ``k_order`` shorthand (one range: plain)."""
    out = []
    for sl in chains(resolve_dataflow(None, k_order), m, K):
        for idx in sl:
            real = idx[idx >= 0]
            out.append((int(real[0]), int(real[-1]) + 1))
    return out


def _int_dataflow(dataflow, k_order) -> bool:
    """Integer models run as the instruction chains them (C in the s32 accumulator, one chain over
    K, no epilogue): the dataflow must be unset or the ``instruction`` profile."""
    return (dataflow is None or dataflow == "instruction" or getattr(dataflow, "name", None) == "instruction") \
        and k_order in (None, "plain")


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
        if alpha != 1.0 or (beta != 1.0 and C is not None) or not _int_dataflow(dataflow, k_order):
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
              cache: dict | None = None) -> np.ndarray:
    """:func:`gemm` on raw bits: a (M,K), b (K,N) (any strides), c (M,N) or None; alpha, beta and
    scale_result as raw bits of the epilogue format (None: 1.0, 1.0, none); scales as fp32 bits
    (scalars or per-block arrays). Returns the output bits (M,N) uint64.

    ``cache``: a dict the caller keeps across calls; the combined accumulator (before the
    epilogue) is stored there under the model, the dataflow's chain and combine fields and the
    contents of a and b, so calls that differ only in the epilogue or the output (alpha, scales,
    output format) run the chains once. Not used when C enters the accumulator, with per-block
    scales, or with combines that round in the output type."""
    m = get_model(m)
    df = resolve_dataflow(dataflow, k_order)
    if m.scale_fmt:
        raise ModelError(f"{m.id}: gemm takes models without block scales")
    if backend not in BACKENDS:
        raise ModelError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2:
        raise ModelError(f"op(A) and op(B) must be matrices, got shapes {a.shape} and {b.shape}")
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2 or (c is not None and np.shape(c) != (M, N)):
        raise ModelError(f"shapes do not fit: op(A) {a.shape}, op(B) {b.shape}"
                         + ("" if c is None else f", C {np.shape(c)}") + " (need (M,K), (K,N), (M,N))")
    if m.op in INT_OPS:                # the s32 accumulator takes C directly; no integer epilogue is modelled
        if alpha_bits is not None or beta_bits is not None or not _int_dataflow(dataflow, k_order):
            raise ModelError(f"{m.id}: integer models take alpha = beta = 1 and the 'instruction' dataflow only "
                             "(C enters the s32 accumulator)")
        if any(x is not None for x in (scale_a_bits, scale_b_bits, scale_result_bits)):
            raise ModelError(f"{m.id}: integer models take no scales (D is the s32 accumulator)")
        if M == 0 or N == 0:
            return np.zeros((M, N), np.uint64)
        _check_memory(M, N, K, 1)
        c = np.zeros((M, N), dtype=np.uint64) if c is None else c
        wi, wc, _ = m.widths
        a, b, c = (np.ascontiguousarray(_raw_bits(x, w)) for x, w in ((a, wi), (b, wi), (c, wc)))
        native = _use_native(m, backend, M * N) and (backend == "native" or _compiles(m, [[np.arange(K)]]))
        return (_dots_native if native else _dots_numpy)(m, a, b, c, 0, K, jobs)
    E = epilogue_format(m, df)
    out = output_format(m, df)
    (wa, wb), (_, wc, _) = m.operand_widths, m.widths
    try:
        plan = chains(df, m, K)
    except DataflowError as e:
        raise ModelError(str(e)) from None
    alpha_bits = one_bits(E) if alpha_bits is None else int(alpha_bits)
    alpha_bits, blocks = _scales(m, df, E, M, N, K, alpha_bits, scale_a_bits, scale_b_bits)
    sr = _scale_result(df, out, scale_result_bits)
    if M == 0 or N == 0 or compose.no_products(df, K):
        return np.zeros((M, N), np.uint64)       # K = 0 with k0=zero: D = +0, no epilogue
    _check_memory(M, N, K, len(plan) + (max(len(sl) for sl in plan) > 1))
    a, b = (np.ascontiguousarray(_raw_bits(x, w)).reshape(shape) for x, w, shape in ((a, wa, (M, K)), (b, wb, (K, N))))
    if c is not None:
        c = np.ascontiguousarray(_raw_bits(c, wc)).reshape(M, N)
    native = backend != "tabulated" and _use_native(m, backend, M * N)
    if native and backend == "auto" and not _compiles(m, plan):
        native = False
    # the tabulated reading runs the elementwise steps compiled where llvmlite loads (a chain of
    # 256 restarts is 256 one-element additions: ~6 ms each in NumPy, microseconds compiled)
    # (narrow steps only: an fp32 FMA epilogue takes LLVM seconds to compile, and runs once)
    if backend == "tabulated":
        from .native import VECTOR_WIDTH
        ew = _Elementwise(_use_native(m, "auto", M * N), jobs, max_width=VECTOR_WIDTH, memo=True)
    else:
        ew = _Elementwise(native, jobs)
    call = compose.call(m, df, has_c=c is not None, alpha_bits=alpha_bits, beta_bits=beta_bits, sr_bits=sr,
                        E=E, out=out)
    run = _Arrays(call, a, b, blocks, ew, native, jobs, tabulated=backend == "tabulated")
    if cache is None or call.c_in_acc or blocks is not None or df.combine in ("output", "workspace"):
        return compose.gemm(run, plan, c)
    key = (m.id, E, _chain_fields(df), (M, N, K), _digest(a), _digest(b))
    acc = cache.get(key)
    if acc is None:
        acc = cache[key] = compose.combine(run, compose.parts(run, plan, c))
    return compose.epilogue(run, acc, c)


# ---- the dataflow's pieces, batched --------------------------------------------------------------

def _fn1(f):
    """An elementwise step of one input (the third) in _Elementwise's build signature."""
    def build(a, b, c, sa=None, sb=None):
        return f(c)
    return build


def _fn3(f):
    def build(a, b, c, sa=None, sb=None):
        return f(a[0], b[0], c)
    return build


class _Arrays(compose.Reading):
    """The composition's reading on (M, N) arrays of bits (:mod:`smtmodel.dataflow.compose`):
    each step the bit-vector composition of :mod:`~smtmodel.dataflow.steps` run elementwise
    (:class:`_Elementwise`: NumPy or compiled), the chains by the GEMM's dot-product readings,
    and two fast paths that trace the same steps into fewer passes (:meth:`fused_part`,
    :meth:`combine_finish`)."""

    def __init__(self, call: compose.Call, a, b, blocks, ew, native: bool, jobs, tabulated: bool = False):
        self.call, self.m, self.df, self.E = call, call.m, call.df, call.E
        self.a, self.b, self.blocks = a, b, blocks
        self.ew, self.native, self.jobs, self.tabulated = ew, native, jobs, tabulated
        self.shape = (a.shape[0], b.shape[1])
        self.wE = get_format(call.E).width

    def zero(self, fmt):
        return np.zeros(self.shape, np.uint64)  # +0 is the all-zero pattern in every format here

    def convert(self, x, src, dst):
        if get_format(src).name == get_format(dst).name:
            return x
        w = get_format(src).width
        return self.ew.run(("df-to", src, dst), _fn1(lambda v: steps.to_fmt(v, src, dst)), (w,) * 3, x, x, x)

    def add(self, x, y):
        E = self.E
        return self.ew.run(("df-add", E), _fn3(lambda u, v, _: steps.add(u, v, E)), (self.wE,) * 3, x, y, y)

    def ffma(self, s, p, acc):
        E = self.E
        return self.ew.run(("df-ffma", E), _fn3(lambda u, v, w: steps.ffma(u, v, w, E)), (self.wE,) * 3, s, p, acc)

    def fp32_mul(self, x, y):
        """RN(x * y) in fp32 of two uint64 arrays of fp32 bits (the block scales' products)."""
        from .fp.exact import fp_mul
        return self.ew.run(("df-mul", "fp32"), _fn3(lambda u, v, _: fp_mul(u, v, "fp32")), (32,) * 3, x, y, y)

    def block_scale(self, idx):
        return self.blocks(idx, self.fp32_mul)

    def prescale(self, c):
        call, m = self.call, self.m
        if self.df.c_scale == "none":
            return c
        wc = get_format(m.c_fmt).width
        return self.ew.run(("df-cscale", m.c_fmt, call.E, self.df.c_scale, call.alpha_bits, call.beta_bits, call.q_bits),
                           _fn1(call.prescale), (wc,) * 3, c, c, c)

    def through_out(self, p):
        E, out = self.E, self.call.out
        return self.ew.run(("df-ws", E, out), _fn1(lambda x: steps.to_fmt(steps.to_fmt(x, E, out), out, E)),
                           (self.wE,) * 3, p, p, p)

    def finish(self, acc, c, epi):
        return self.ew.run(epi.key, _fn3(lambda x, _, z: epi.term(x, z)), (self.wE, self.wE, get_format(epi.c_fmt).width),
                           acc, acc, c)

    def chain(self, idx, c) -> np.ndarray:
        """The model's chain over the K elements idx (-1: zero) from c (None: +0), in the
        model's output format."""
        m, a, b = self.m, self.a, self.b
        dots = _dots_tabulated if self.tabulated else _dots_native if self.native else _dots_numpy
        r = _plain_range(m, idx)
        if r is not None:
            return dots(m, a, b, c, r[0], r[1], self.jobs)
        pad = idx < 0
        k = np.where(pad, 0, idx)
        ag = np.ascontiguousarray(a[:, k])
        bg = np.ascontiguousarray(b[k, :])
        if pad.any():
            ag[:, pad] = 0
            bg[pad, :] = 0
        return dots(m, ag, bg, c, 0, len(idx), self.jobs)

    def fused_part(self, chunks, c0):
        """A slice's partial sum (:func:`smtmodel.dataflow.compose.part`) in the GEMM reading:
        per run of equal-length chunks one compiled pass that chains each chunk and adds it (to
        E, then ``add`` or ``ffma`` with the block scale: the same steps, traced into the kernel)
        to the partial sum as it goes, instead of an (M, N) array and an elementwise pass per
        chunk. None where the GEMM reading does not apply (compiled chains only)."""
        if not self.native or self.tabulated:
            return None
        from . import native
        from .native import gemm as ngemm
        m, E, ffma, a, b = self.m, self.E, self.df.combine_op == "ffma", self.a, self.b
        if any(len(idx) == 0 for idx in chunks):
            return None
        runs = []              # [zero blocks, L, chunks]: chunks of equal length and zero tail
        for j, idx in enumerate(chunks):
            nz, L, real = _zero_blocks(m, idx)
            if nz < 0 and (ffma or (j == 0 and c0 is not None)):
                nz, L, real = 0, 0, idx    # a chunk of zeros from C, or scaled: chained as it is
            if runs and runs[-1][:2] == [nz, L] and len(runs[-1][2][0]) == len(real):
                runs[-1][2].append(real)
            else:
                runs.append([nz, L, [real]])
        (wa, wb), (_, wc, _) = m.operand_widths, m.widths

        def combine(nz: int, L: int):
            def build(part, acc, s):
                if nz:                     # the chunk's zero tail: whole blocks of zero products
                    za, zb = acc.B.const(0, wa), acc.B.const(0, wb)
                    for _ in range(nz):
                        acc = m.chain_step([za] * L, [zb] * L, acc, m.out_fmt)
                p = steps.to_fmt(acc, m.out_fmt, E)
                return steps.ffma(s, p, part, E) if ffma else steps.add(part, p, E)
            return (("df-slice", m.out_fmt, E, self.df.combine_op, nz, L), build, (self.wE, 32 if ffma else 0))
        try:
            for nz, L, run in runs:
                if nz >= 0:
                    ngemm.gemm_kernel(m, len(run[0]), combine(nz, L))
        except (ngemm.NotSplit, native.TooWide):
            return None
        except native.NativeError as e:
            raise ModelError(str(e)) from None
        part = None
        for j, (nz, L, run) in enumerate(runs):
            if nz < 0:                     # chunks of zeros from +0: a constant chain, added
                n, E_ = len(run[0]), E

                def zbuild(x, y, part, sa=None, sb=None, n=n):
                    B = part.B
                    acc = m.build([B.const(0, wa)] * n, [B.const(0, wb)] * n, B.const(0, wc))
                    return steps.add(part, steps.to_fmt(acc, m.out_fmt, E_), E_)
                if part is None:
                    part = self.zero(E)
                for _ in run:
                    part = self.ew.run(("df-zero-chunk", m, m.id, n, E), zbuild, (self.wE,) * 3, part, part, part)
                continue
            idx = np.concatenate(run)
            r = is_range(idx)
            if r is not None:
                aa, bb, k0, k1 = a, b, r[0], r[1]
            else:
                aa, bb, k0, k1 = _gather(a, idx, 1), _gather(b, idx, 0), 0, len(idx)
            scales = None
            if ffma:
                sc = np.ascontiguousarray(self.blocks(run, self.fp32_mul, compact=True))
                scales = (sc, sc.shape[1] * sc.shape[2], sc.shape[2] if sc.shape[1] > 1 else 0)
            part = ngemm.dots(m, aa, bb, c0 if j == 0 else None, k0, k1, self.jobs, chunks=len(run),
                              combine=combine(nz, L), part=part, scales=scales)
        return part

    def combine_finish(self, parts, c, epi):
        """:func:`~smtmodel.dataflow.compose.combine` and the epilogue as one elementwise step:
        the same composition read on the bit vectors of one element (:class:`~smtmodel.dataflow.
        compose.Terms`) and run once over the partial sums instead of one pass per addition and
        one more for the epilogue, where the partials and the C it reads are at most three
        arrays; None otherwise."""
        S, reads_c, call, wE = len(parts), epi.reads_c, self.call, self.wE
        if S + reads_c > 3:
            return None
        wc = get_format(epi.c_fmt).width

        def f(x, y, z):
            r = compose.Terms(call, x.B)
            acc = compose.combine(r, [x, y, z][:S])
            return epi.term(acc, z if reads_c else x.B.const(0, wc))
        arrays = parts + ([c] if reads_c else [])
        arrays += [arrays[-1]] * (3 - len(arrays))
        return self.ew.run(("df-combine", self.df.combine, S) + epi.key, _fn3(f),
                           (wE, wE, wc if reads_c else wE), *arrays)


def _raw_bits(x, w: int) -> np.ndarray:
    """x's raw bit patterns as uint64 (x itself where it is one: read, never written), checked
    to fit ``w`` bits as the NumPy reading's inputs are."""
    arr = np.asarray(x)
    if arr.dtype.kind in "uib" and w <= 64:
        return fitting_u64(arr, w)
    return np.asarray(NUMPY.input(arr, w).v, dtype=np.uint64)


def _zero_blocks(m: Model, idx: np.ndarray) -> tuple[int, int, np.ndarray]:
    """(z, L, head) for a chunk of K's elements ``idx`` (-1: a zero, the padding of a slice's last
    k-tiles, always at the end), L = ``m.block(len(idx))``: z >= 1 when the chunk is the chain
    over its first elements ``head``, which fill whole blocks, followed by z blocks of zero
    products (the chunk's chain, :meth:`Model.build`, cut at a block boundary: the same blocks);
    z = -1 for a chunk of zeros only; z = 0 for any other chunk (head = idx), and where the chain
    ends with a step of its own (``chain_end``) that would come between the two parts."""
    n = len(idx)
    L = m.block(n)
    real = int(np.count_nonzero(idx >= 0))
    if real == n or np.any(idx[:real] < 0):
        return 0, 0, idx
    if real == 0:
        return -1, L, idx
    if real % L or n % L or m.block(real) != L or m.c_entry == "end" or m.flush_outputs:
        return 0, 0, idx
    return (n - real) // L, L, idx[:real]


def _gather(x: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    """x's columns (axis 1) or rows (axis 0) idx, -1 giving zeros: contiguous runs copied as
    slices (a k-tile is a run; a fancy-indexed gather of columns is ~20x slower)."""
    cut = np.flatnonzero((np.diff(idx) != 1) | (idx[1:] < 0) | (idx[:-1] < 0)) + 1
    parts = []
    for run in np.split(idx, cut):
        if run[0] < 0:
            shape = (x.shape[0], len(run)) if axis else (len(run), x.shape[1])
            parts.append(np.zeros(shape, np.uint64))
        else:
            parts.append(x[:, run[0]:run[-1] + 1] if axis else x[run[0]:run[-1] + 1])
    return np.ascontiguousarray(np.concatenate(parts, axis=axis), dtype=np.uint64)


def _chain_fields(df: Dataflow) -> tuple:
    """The fields that decide the accumulator before the epilogue (C entering the epilogue)."""
    return (df.tile, df.pad, df.slices, df.assign, tuple(df.bounds), df.restart, df.combine, df.combine_op)


def _digest(x: np.ndarray) -> str:
    import hashlib
    return hashlib.sha1(np.ascontiguousarray(x).tobytes()).hexdigest()


def _plain_range(m: Model, idx: np.ndarray):
    """(k0, k1) where the chain over idx equals the model's chain over K[k0:k1] read in place:
    a plain range, possibly with trailing zeros the model pads itself."""
    real = idx[idx >= 0]
    n = len(real)
    if n == 0 or (n < len(idx) and not (idx[n:] < 0).all()):
        return None
    r = is_range(real)
    if r is None:
        return None
    if n < len(idx) and (m.padded_k(n) != len(idx) or m.block(n) != m.block(len(idx))):
        return None
    return r


class NativeFallback(UserWarning):
    """``backend="auto"``: the model's chain does not compile (a primitive the code generator
    does not know, values wider than :data:`smtmodel.native.MAX_WIDTH` bits), so the GEMM runs
    on the NumPy reading; the message says why."""


def _compiles(m: Model, plan) -> bool:
    """Whether the chains of ``plan`` compile: the GEMM reading, else the per-row reading. If not,
    a :class:`NativeFallback` warning says why (``auto`` then runs the NumPy reading)."""
    from . import native
    from .native import gemm as ngemm
    for k in sorted({len(idx) for sl in plan for idx in sl if len(idx)}):
        try:
            ngemm.gemm_kernel(m, k)
            continue
        except (ngemm.NotSplit, native.TooWide):
            pass
        except native.NativeError as e:
            return _fallback(m, e)
        try:
            _chain_kernels(m, k)
        except native.NativeError as e:
            return _fallback(m, e)
    return True


def _fallback(m: Model, e: Exception) -> bool:
    why = str(e).replace("; use backend='numpy'", "")
    if not why.startswith(m.id):
        why = f"{m.id}: {why}"
    warnings.warn(f"{why}: the GEMM runs on the NumPy reading (slower, same bits)", NativeFallback, stacklevel=4)
    return False


def _check_memory(M: int, N: int, K: int, partials: int) -> None:
    """Refuse, before allocating, a GEMM that needs more memory than is available, saying how much
    it needs (:func:`smtmodel.native.gemm.memory_needed`)."""
    from .native.gemm import memory_available, memory_needed
    need, have = memory_needed(M, N, K, partials), memory_available()
    if have is not None and need > have:
        raise ModelError(f"a GEMM of op(A) {M}x{K} and op(B) {K}x{N} needs about {need / 2 ** 30:.1f} GiB of memory; "
                         f"{have / 2 ** 30:.1f} GiB are available")


def _scale_result(df: Dataflow, out: str, sr_bits):
    """scale_result's bits where the dataflow applies it to this output, else None."""
    if sr_bits is None or not scale_result_applies(df, out):
        return None
    return int(sr_bits)


def _scales(m: Model, df: Dataflow, E: str, M: int, N: int, K: int, alpha_bits: int, sa, sb):
    """alpha with per-tensor scales folded in (``alpha_from_scales``: alpha = RN(RN(sa*sb)*alpha)),
    and for per-block scales a function chunk -> (M,N) scale bits RN(sa[i,t] * sb[j//128, t])."""
    from .fp.exact import fp_mul
    per_block = df.scale_a != "tensor" or df.scale_b != "tensor"
    if not per_block:
        if sa is None and sb is None:
            return alpha_bits, None
        if not df.alpha_from_scales:
            raise ModelError("scale_a/scale_b given but the dataflow does not take per-tensor scales "
                             "(alpha_from_scales=no)")
        if sa is None or sb is None or np.size(sa) != 1 or np.size(sb) != 1:
            raise ModelError("per-tensor scales: give both scale_a and scale_b as scalars")
        s = fp_mul(NUMPY.input(np.array([int(np.ravel(sa)[0])], np.uint64), 32),
                   NUMPY.input(np.array([int(np.ravel(sb)[0])], np.uint64), 32), "fp32")
        s = int(np.ravel(np.asarray(s.v, dtype=np.uint64))[0])
        if E != "fp32":
            from .fp import convert
            s = int(np.ravel(np.asarray(convert(NUMPY.input(np.array([s], np.uint64), 32), "fp32", E).v))[0])
        wE = get_format(E).width
        r = fp_mul(NUMPY.input(np.array([s], np.uint64), wE), NUMPY.input(np.array([alpha_bits], np.uint64), wE), E)
        return int(np.ravel(np.asarray(r.v, dtype=np.uint64))[0]), None
    nk = -(-K // 128)
    sa = np.ones((M, nk), np.uint64) * np.uint64(0x3F800000) if sa is None else np.asarray(sa, np.uint64)
    nb = -(-N // 128) if df.scale_b == "128x128" else 1
    sb = np.ones((nb, nk), np.uint64) * np.uint64(0x3F800000) if sb is None else np.asarray(sb, np.uint64)
    if df.scale_a == "tensor":
        sa = np.broadcast_to(sa.reshape(1, 1) if sa.size == 1 else sa, (M, nk))
    if df.scale_b == "tensor":
        sb = np.broadcast_to(sb.reshape(1, 1) if sb.size == 1 else sb, (1, nk))
    if sa.shape != (M, nk) or sb.shape != (nb, nk):
        raise ModelError(f"per-block scales: scale_a must be ({M}, {nk}) and scale_b ({nb}, {nk}) for "
                         f"M={M}, N={N}, K={K} (got {sa.shape} and {sb.shape})")
    if E != "fp32":
        raise ModelError("per-block scales are multiplied in fp32 (epi_fmt fp32)")

    cols = np.arange(N) // 128 if df.scale_b == "128x128" else np.zeros(N, int)

    def blocks(idx, mul, compact: bool = False):
        """RN(sa[i, t] * sb[j // 128, t]) for the chunk's k-tile t: multiplied once per distinct
        pair (M x column blocks), then spread over the columns (``compact``: (M, column blocks);
        ``idx`` a list of chunks and ``compact``: (M, column blocks, chunks)). ``mul(x, y)``:
        the fp32 products of two uint64 arrays (the GEMM's elementwise reading)."""
        many = isinstance(idx, list)
        ts = [int(i[i >= 0][0]) // 128 for i in (idx if many else [idx])]
        n = len(ts)
        x = np.ascontiguousarray(np.broadcast_to(sa[:, ts][:, None, :], (M, nb, n))).reshape(-1)
        y = np.ascontiguousarray(np.broadcast_to(sb[:, ts][None, :, :], (M, nb, n))).reshape(-1)
        r = mul(x, y).reshape(M, nb, n)
        if many:
            return r
        return r[:, :, 0] if compact else np.ascontiguousarray(r[:, cols, 0])
    return alpha_bits, blocks


# ---- elementwise steps on (M,N) arrays ----------------------------------------------------------

_EW_NATIVE_MIN = 1 << 15
"""Elements from which an elementwise step is compiled: below, the NumPy reading (a compile
costs 0.2-1 s and the steps' keys carry alpha, beta and scale_result, so small calls with many
different scales would compile one kernel each)."""


_EW_LANES = 32
"""Elements per vector of a compiled elementwise step within 64 bits (an fp32 addition: 7.2 ns per
element on 8 lanes, 4.9 ns on 32; Zen 5)."""


class _Elementwise:
    """Runs an elementwise composition of core operations on (M,N) bit arrays: compiled, or the
    NumPy reading of the same composition."""

    _too_wide: set = set()              # (key, max_width) traced once and found too wide
    _memo: dict = {}                    # (key, x, y, z) -> result, for few elements (``memo``)

    def __init__(self, native: bool, jobs, max_width: int | None = None, memo: bool = False):
        """``max_width``: compile only compositions this narrow (None: the epilogue's limit);
        ``memo``: remember results of calls on at most 16 elements (the tabulated reading, where
        many hypotheses run the same step on the same values)."""
        self.native, self.jobs, self.max_width, self.memo = native, jobs, max_width, memo

    def run(self, key, build, widths, x, y, z) -> np.ndarray:
        if self.memo and x.size <= 16:
            mk = (key, widths, x.shape, np.asarray(x, np.uint64).tobytes(), np.asarray(y, np.uint64).tobytes(),
                  np.asarray(z, np.uint64).tobytes())
            r = self._memo.get(mk)
            if r is None:
                if len(self._memo) > 1 << 16:
                    self._memo.clear()
                r = self._memo[mk] = self._run(key, build, widths, x, y, z)
            return r.copy()
        return self._run(key, build, widths, x, y, z)

    def _run(self, key, build, widths, x, y, z) -> np.ndarray:
        shape = x.shape
        x, y, z = (np.ascontiguousarray(v, dtype=np.uint64).reshape(-1) for v in (x, y, z))
        # few elements go to NumPy (no compile per alpha), except narrow steps when max_width is
        # set (the tabulated reading: hundreds of one-element restart additions per GEMM)
        if self.native and (len(x) >= _EW_NATIVE_MIN or self.max_width is not None) \
                and (key, self.max_width) not in self._too_wide:
            from . import native
            try:
                kern = native.function(key, build, widths + (0,), 1, native.ROWS,
                                       self.max_width or native.MAX_WIDTH, lanes=_EW_LANES)
                return native.run_cases(kern, x[None, :], y[None, :], z, None, None, jobs=self.jobs).reshape(shape)
            except native.TooWide:
                self._too_wide.add((key, self.max_width))   # fp64 epilogue: the NumPy reading below
            except native.NativeError as e:
                raise ModelError(str(e)) from None
        out = np.empty(x.shape, np.uint64)
        for s in range(0, len(x), CHUNK):
            sl = slice(s, s + CHUNK)
            r = build([NUMPY.input(x[sl], widths[0])], [NUMPY.input(y[sl], widths[1])],
                      NUMPY.input(z[sl], widths[2]))
            out[sl] = np.broadcast_to(np.asarray(r.v, dtype=np.uint64), out[sl].shape)
        return out.reshape(shape)


# ---- dot products ------------------------------------------------------------------------------

def _use_native(m: Model, backend: str, n: int) -> bool:
    if backend == "numpy":
        return False
    from . import native
    if native.available():
        return True
    if backend == "native":
        raise ModelError("native backend unavailable (llvmlite does not load); use backend='numpy'")
    return False


def _chain_kernels(m: Model, k: int):
    """The compiled pieces of the model's chain for K = k, as :meth:`Model.build` composes them
    (``chain_start``, ``chain_step`` per block, ``chain_end``; :func:`smtmodel.native.gemm.chain_pieces`):
    one kernel per piece and block length instead of one per K, so a K = 2048 GEMM compiles a
    few blocks, not 64. Returns (blocks, first, next, last, end): ``blocks`` the (start, stop)
    ranges of real elements; ``last`` pads the last block with zeros (``Model.padded_k``);
    ``end`` is None when ``chain_end`` is the identity."""
    from . import native
    from .native.gemm import chain_pieces
    ch = chain_pieces(m, k)
    wa, wb, wc, wo = ch["widths"]
    L, tail = ch["L"], ch["tail"]
    blocks = [(s, min(s + L, k)) for s in range(0, ch["nb"] * L, L)]

    def piece(f):
        return lambda a, b, c, *_: f(a, b, c)

    key = (m, m.id)
    kf = native.function(("first",) + key, piece(ch["first"]), (wa, wb, wc, 0), L, native.GEMM_ROW)
    kn = native.function(("next",) + key, piece(ch["next"]), (wa, wb, wo, 0), L, native.GEMM_ROW) if ch["next"] else None
    kl = (native.function(("last", tail) + key, piece(ch["last"]), (wa, wb, wo, 0), tail, native.GEMM_ROW)
          if ch["last"] else kn)
    ke = (native.function(("end",) + key, lambda a, b, c, *_: ch["end"](a[0], c), (wo, wo, wc, 0), 1, native.ROWS)
          if ch["end"] else None)
    return blocks, kf, kn, kl, ke


def _dots_native(m: Model, a, b, c, k0: int, k1: int, jobs) -> np.ndarray:
    """D[i, j] = model(a[i, k0:k1], b[k0:k1, j], c[i, j] or +0), compiled: the GEMM reading
    (:mod:`smtmodel.native.gemm`: what reads one operand computed once per element), or where
    that does not apply (values wider than 128 bits) the per-row reading :func:`_dots_rows`."""
    from . import native
    from .native import gemm as ngemm
    try:
        return ngemm.dots(m, a, b, c, k0, k1, jobs)
    except (ngemm.NotSplit, native.TooWide):
        pass
    except native.NativeError as e:
        raise ModelError(str(e)) from None
    return _dots_rows(m, a, b, c, k0, k1, jobs)


def _dots_rows(m: Model, a, b, c, k0: int, k1: int, jobs) -> np.ndarray:
    """The per-row compiled reading: per row of a, the chain's kernels one block after the other
    over all columns (A, B, C read in place)."""
    from . import native
    M, K = a.shape
    N = b.shape[1]
    try:
        blocks, kf, kn, kl, ke = _chain_kernels(m, k1 - k0)
    except native.NativeError as e:
        raise ModelError(str(e)) from None
    V = kf.lanes
    Np = -(-N // V) * V
    if Np != N:                                    # whole vectors of columns: pad once
        bp = np.zeros((b.shape[0], Np), np.uint64)
        bp[:, :N] = b
        b = bp
        if c is not None:
            cp = np.zeros((M, Np), np.uint64)
            cp[:, :N] = c
            c = cp
    out = np.empty((M, Np), np.uint64)
    zero = np.zeros(Np, np.uint64)
    a_p, b_p, o_p = a.ctypes.data, b.ctypes.data, out.ctypes.data
    c_p, c_ld = (zero.ctypes.data, 0) if c is None else (c.ctypes.data, Np)
    nb = len(blocks)

    def rows(r0: int, r1: int) -> None:
        tmp = np.empty((2, Np), np.uint64)
        t = [tmp[0].ctypes.data, tmp[1].ctypes.data]
        for i in range(r0, r1):
            c_row, o_row = c_p + 8 * i * c_ld, o_p + 8 * i * Np
            a_row = a_p + 8 * (i * K + k0)
            for j, (s, _) in enumerate(blocks):
                kern = kf if j == 0 else (kl if j == nb - 1 else kn)
                src = c_row if j == 0 else t[(j - 1) % 2]
                dst = o_row if j == nb - 1 and ke is None else t[j % 2]
                kern.fn(Np, a_row + 8 * s, 1, b_p + 8 * (k0 + s) * Np, Np, src, 0, 0, 0, dst)
            if ke is not None:
                d = t[(nb - 1) % 2]
                ke.fn(Np, d, Np, d, Np, c_row, 0, 0, 0, o_row)

    jobs = jobs or native.default_jobs()
    if jobs == 1 or M == 1:
        rows(0, M)
    else:
        step = max(1, -(-M // (4 * jobs)))
        futures = [native.pool(jobs).submit(rows, r, min(r + step, M)) for r in range(0, M, step)]
        for f in futures:
            f.result()
    return out[:, :N] if Np != N else out


def _dots_tabulated(m: Model, a, b, c, k0: int, k1: int, jobs) -> np.ndarray:
    """:func:`_dots_numpy` element by element with repeated block groups tabulated."""
    from .tabulate import dots
    return dots(m, a, b, c, k0, k1)


def _dots_numpy(m: Model, a, b, c, k0: int, k1: int, jobs) -> np.ndarray:
    """The NumPy reading of :func:`_dots_native` (per-element copies, batches of CHUNK)."""
    M, N = a.shape[0], b.shape[1]
    bt = np.ascontiguousarray(b[k0:k1].T)
    out = np.empty((M, N), np.uint64)
    rb = max(1, CHUNK // N)
    for r in range(0, M, rb):
        r1 = min(r + rb, M)
        aa = np.repeat(a[r:r1, k0:k1], N, axis=0)
        bb = np.tile(bt, (r1 - r, 1))
        cc = np.zeros(len(aa), np.uint64) if c is None else c[r:r1].reshape(-1)
        out[r:r1] = m.evaluate(aa, bb, cc, backend="numpy").reshape(r1 - r, N)
    return out
