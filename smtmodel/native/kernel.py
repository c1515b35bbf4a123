"""A model's twin as native code: trace ``Model.build`` once, compile, run over cores.

:func:`kernel` traces :meth:`smtmodel.model.Model.build` for K terms with the recording backend
(:mod:`smtmodel.bv.trace_backend`), emits LLVM IR (:mod:`.codegen`) and JIT-compiles it
(:mod:`.jit`); the result is cached in the process per (model, K, scale count, layout).
:func:`run` calls it on chunks of cases from a thread pool (the ctypes call releases the GIL).
"""

from __future__ import annotations

import threading
import time

import numpy as np

from ..bv.trace_backend import TraceBackend
from ..formats import get_format
from ..workers import default_jobs, thread_pool

_CACHE: dict = {}
_CACHE_LOCK = threading.Lock()
_AVAILABLE: bool | None = None

ROWS = (("a", 1), ("b", 1), ("c", 1), ("s", 1))
"""Layout of :meth:`Model.evaluate`: every operand has one column per case."""
GEMM_ROW = (("a", 0), ("b", 1), ("c", 1), ("s", 1))
"""Layout of a GEMM row: ``a`` is one row of A shared by all cases (the columns of B)."""


AUTO_MIN_WORK = 1 << 22
"""Cases x K from which ``backend="auto"`` compiles a model (:meth:`smtmodel.model.Model.evaluate`,
identify's grouped reading): about 0.5 s of NumPy (~130 ns per case and term), where compiling
costs 0.2-1.3 s in a new process even with the object code on disk. Below, NumPy is faster
(a 5,000-case capture at K = 32: 0.03-0.2 s against 0.2-1.3 s)."""


class NativeError(ValueError):
    """The compiled reading cannot run: llvmlite does not load, or the traced model uses a
    primitive the code generator does not know. Callers (``Model.evaluate``, ``gemm``) turn it
    into a :class:`smtmodel.model.ModelError` (this package does not import the model)."""


class TooWide(NativeError):
    """The traced model computes on integers wider than :data:`MAX_WIDTH` bits (an exact sum
    over the whole exponent range of fp64, 4,202 bits): ``auto`` evaluates such a model with
    NumPy."""


VECTOR_WIDTH = 128
"""The widest integer emitted on vectors of :data:`~.codegen.LANES` cases. Every NVIDIA model and
CDNA3 stay within 56 bits, and since IEEE sums of one or two terms round through a window
(:func:`smtmodel.fp.exact.window_sum2`) so do CDNA1/2's FTZ and FMA chains and the fp64 FMAs."""

MAX_WIDTH = 1024
"""The widest integer a compiled reading takes. A DAG wider than :data:`VECTOR_WIDTH` is emitted on
one case at a time (``lanes = 1``): LLVM compiles CDNA1's bf16 E-FDPA (an exact sum of 16 bf16
products, 529 bits) in 0.7 s on scalars and in 91 s on ``<8 x i529>`` vectors, and the scalar
code runs 10^5 cases in 0.1 s (NumPy on Python integers: 4.8 s). The fp64 exact sums (4,202 bits)
stay on NumPy: 1.3-13 s of compilation for L = 4-16, more than NumPy takes on the batches
``auto`` compiles for. GEMM epilogues share the limit."""


class Kernel:
    """One compiled function of the core: ``fn(n, a, a_ld, b, b_ld, c, sa, sb, s_ld, out)`` (raw
    pointers). ``build(a, b, c, sa, sb)`` is traced once on K inputs ``a``/``b`` of width
    ``widths[0]``/``widths[1]``, ``c`` of ``widths[2]`` and scale lists of ``widths[3]``: a model's
    :meth:`~smtmodel.model.Model.build`, or any other composition of core operations (the GEMM
    epilogue)."""

    def __init__(self, build, name: str, widths: tuple, k: int, n_scales: int, layout: tuple,
                 max_width: int = MAX_WIDTH, lanes: int | None = None):
        try:
            from .codegen import LANES, UnsupportedPrimitive, emit_module
            from .jit import KERNEL, KERNEL_CHECKED, compile_ir
        except ImportError as e:
            raise NativeError(f"native backend unavailable (llvmlite: {e}); use backend='numpy'") from None
        t0 = time.perf_counter()
        T = TraceBackend()
        wa, wb, wc, ws = widths
        a = [T.input(("a", j), wa) for j in range(k)]
        b = [T.input(("b", j), wb) for j in range(k)]
        c = T.input(("c", 0), wc)
        sa = sb = None
        if n_scales:
            sa = [T.input(("sa", j), ws) for j in range(n_scales)]
            sb = [T.input(("sb", j), ws) for j in range(n_scales)]
        d = build(a, b, c, sa, sb)
        live = T.live([d.v])
        wide = max(live, key=lambda i: T.nodes[i].w)
        if T.nodes[wide].w > max_width:
            raise TooWide(f"{name}: the native reading does not compile primitive {T.nodes[wide].op!r} on "
                          f"{T.nodes[wide].w}-bit values (above {max_width}); use backend='numpy'")
        self.width = T.nodes[wide].w
        self.trace_seconds = time.perf_counter() - t0
        self.stats = T.stats([d.v])
        inputs = {("a", j): ("a", j) for j in range(k)} | {("b", j): ("b", j) for j in range(k)}
        inputs |= {("c", 0): ("c", 0)}
        inputs |= {("sa", j): ("sa", j) for j in range(n_scales)} | {("sb", j): ("sb", j) for j in range(n_scales)}
        try:
            lanes = lanes or dict(layout).get("lanes")
            lanes = (lanes or LANES) if self.width <= 64 else LANES if self.width <= VECTOR_WIDTH else 1
            lay = dict(layout)
            bits = dict(zip("abcs", lay.get("bits", (64,) * 4)))
            check = bool(lay.get("check")) and {g for g, w in zip("abcs", widths) if bits[g] > w}
            # an element stored wider than its width (fp16 bits in uint64) is truncated to the
            # narrowest integer that holds the width as it is loaded: the traced model reads only
            # those bits (the check reads the stored elements themselves)
            narrow = {g: narrow_bits(w) for g, w in zip("abcs", widths) if w and narrow_bits(w) < bits[g]}
            mod = emit_module(T.nodes, live, d.v, inputs, lay, lanes=lanes, bits=bits, check=check, narrow=narrow)
        except UnsupportedPrimitive as e:
            raise NativeError(f"{name}: the native reading cannot compile primitive {e.args[0]!r}; "
                              f"use backend='numpy'") from None
        try:
            self.compiled = compile_ir(str(mod), signature=KERNEL_CHECKED if lay.get("check") else KERNEL)
        except (ImportError, OSError, RuntimeError) as e:
            raise NativeError(f"native backend unavailable (llvmlite: {e}); use backend='numpy'") from None
        self.fn = self.compiled.fn
        self.compile_seconds = self.compiled.seconds
        self.k, self.n_scales, self.layout, self.lanes, self.widths = k, n_scales, layout, lanes, widths


def model_widths(model) -> tuple:
    """Widths of (a, b, c, scales) as the model reads them (A and B each in its own format)."""
    (wa, wb), (_, wc, _) = model.operand_widths, model.widths
    return (wa, wb, wc, get_format(model.scale_fmt).width if model.scale_fmt else 0)


def available() -> bool:
    """Whether llvmlite loads and can compile for this CPU (checked once)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        try:
            from .jit import llvm_binding
            llvm_binding()
            _AVAILABLE = True
        except Exception:                                   # noqa: BLE001 - any load failure
            _AVAILABLE = False
    return _AVAILABLE


_LANES: int | None = None


def vector_lanes() -> int:
    """Cases (or GEMM columns) per vector of a GEMM reading and of an elementwise step: 32 on a
    CPU with AVX-512 (BW), 16 on one without. Measured with GEMMs of 512^3, Hopper fp16, bf16,
    FP8 and CDNA3 FP8, compiled anew: on Zen 5 (AVX-512) 32 lanes run fastest (FP8: 8 lanes 2.1,
    16 lanes 3.9, 32 lanes 4.9-5.5 G MAC per CPU second); on Zen 3 (AVX2) 16 lanes compile in
    0.7-1.0 s against 1.0-2.0 s for 32 and run within -20 % to +15 % of them."""
    global _LANES
    if _LANES is None:
        from .jit import llvm_binding
        feats = llvm_binding().get_host_cpu_features()
        _LANES = 32 if feats.get("avx512f") and feats.get("avx512bw") else 16
    return _LANES


def is_cached(model, k: int, n_scales: int = 0, layout: tuple = ROWS) -> bool:
    """Whether the kernel is compiled (or known too wide) in this process."""
    return (model, model.id, k, n_scales, layout) in _CACHE


def _cached(key, make, cache: dict = _CACHE, lock=_CACHE_LOCK, remembered: tuple = (TooWide,)):
    """The kernel cached under ``key``, made by ``make()`` on a miss; a ``remembered`` exception
    (:class:`TooWide`: tracing again would not change it) is cached too and raised on every lookup."""
    with lock:
        kern = cache.get(key)
    if kern is None:
        try:
            kern = make()
        except remembered as e:
            kern = e
        with lock:
            kern = cache.setdefault(key, kern)
    if isinstance(kern, Exception):
        raise kern
    return kern


ROW_LANES = 16
"""Cases per vector of a kernel of :func:`row_layout` (up to 64 bits) on inputs of 1-4 bytes,
but see :func:`row_lanes` (Zen 5, fp16 inputs in uint16, 2^20 cases on one core, rows read lane
by lane: 8 lanes 4.3, 16 lanes 6.3, 32 lanes 5.4 10^7 per CPU second; e4m3 in uint8: 2.6,
3.8, 3.8)."""

BIG_LANES = 32
"""Cases per vector of a row kernel on batches of at least :data:`BIG_BATCH` cases whose a and
b elements are at most 2 bytes (Zen 5, 10^7 dot products per CPU second on 16 / 32 lanes: fp16
K = 16 9.1 / 10.4, e4m3 K = 32 7.2 / 8.6, bf16 K = 16 9.2 / 11.2; but tf32 K = 8 in uint32 14.3
/ 12.3). The compile time is 1.3-2.7x that of 8 lanes (0.3 s for Hopper fp16 K = 16, 1.9 s for
K = 64): small beside such a batch's run."""

WIDE_ELEMENT_LANES = 8
"""Cases per vector where a or b is held in 8-byte elements (uint64), whose bytes read dominate
(10^7 per CPU second on 8 / 16 / 32 lanes: fp16 K = 16 4.2 / 2.9 / 2.4, e4m3 K = 32 1.55 / 1.35
/ 1.2). A row kernel truncates such elements to the narrowest integer that holds their width as
it loads them (:class:`Kernel`): on a 2-core AMD EPYC without AVX-512 (load 9, 2x10^5 Hopper fp16
K = 16 cases, one thread) uint64 inputs ran 2.1 / 1.7 / 1.5 on 8 / 16 / 32 lanes, against 1.1 /
1.2 / 1.0 untruncated and 3.0 / 2.8 / 2.6 for uint16 inputs (the uint64 line of
``python bench/throughput.py``)."""

BIG_BATCH = 1 << 16


def row_lanes(n: int, itemsize: int = 8) -> int:
    """Cases per vector for a batch of ``n`` cases whose a and b elements take ``itemsize``
    bytes (the larger of the two): see :data:`ROW_LANES`, :data:`BIG_LANES`,
    :data:`WIDE_ELEMENT_LANES`."""
    if itemsize >= 8:
        return WIDE_ELEMENT_LANES
    return BIG_LANES if n >= BIG_BATCH and itemsize <= 2 else ROW_LANES


def kernel(model, k: int, n_scales: int = 0, layout: tuple = ROWS) -> Kernel:
    """The compiled twin of ``model`` for K = ``k`` (cached in the process)."""
    return _cached((model, model.id, k, n_scales, layout),
                   lambda: Kernel(model.build, model.id, model_widths(model), k, n_scales, layout))


def param_kernel(model, k: int, n_scales: int, params: tuple, with_params) -> Kernel:
    """The compiled twin of ``model`` for K = ``k`` with ``len(params)`` parameters read per case
    (:mod:`smtmodel.runtime`: one evaluation reads many hypotheses, lanes = (point, case) pairs).
    ``with_params(codes)`` is the model whose parameters stand on the bitvectors ``codes`` (one
    :data:`smtmodel.runtime.WIDTH`-bit code per case each), as the NumPy reading builds it. The
    codes travel as extra scale columns: a case's ``sa`` row is its ``n_scales`` scales, then its
    codes (``sb`` zeros there); run it with :func:`run_rows`. Cached in the process under
    (model, ``params``, K, scale count): ``params`` must name everything ``with_params`` reads."""
    from ..runtime import WIDTH
    wa, wb, wc, ws = model_widths(model)
    ws = ws if n_scales else 0
    wp = max(ws, WIDTH)

    def build(a, b, c, sa, sb):
        codes = [x.extract(WIDTH - 1, 0) if wp > WIDTH else x for x in sa[n_scales:]]
        sa, sb = ([x.extract(ws - 1, 0) if wp > ws else x for x in s[:n_scales]] or None for s in (sa, sb))
        return with_params(codes).build(a, b, c, sa, sb)

    n = n_scales + len(params)
    return _cached(("params", model, model.id, params, k, n_scales),
                   lambda: Kernel(build, model.id, (wa, wb, wc, wp), k, n, row_layout(k, n)))


def function(key, build, widths: tuple, k: int = 1, layout: tuple = ROWS, max_width: int = MAX_WIDTH,
             lanes: int | None = None) -> Kernel:
    """A compiled composition of core operations other than a model (see :class:`Kernel`),
    cached in the process under ``key`` (which must name everything ``build`` depends on).
    ``lanes``: cases per vector where the composition stays within 64 bits (None: LANES)."""
    full = ("function", key, widths, k, layout, lanes)
    with _CACHE_LOCK:
        kern = _CACHE.get(full)
    if kern is None:
        kern = Kernel(build, str(key[0]), widths, k, 0, layout, max_width, lanes)
        with _CACHE_LOCK:
            kern = _CACHE.setdefault(full, kern)
    return kern


pool = thread_pool
"""The thread pool the compiled calls run on (:func:`smtmodel.workers.thread_pool`)."""


def _ptr(x: np.ndarray, offset: int = 0) -> int:
    return x.ctypes.data + 8 * offset


def run_cases(kern: Kernel, aT: np.ndarray, bT: np.ndarray, c: np.ndarray, saT, sbT,
              jobs: int | None = None, chunk: int = 8192) -> np.ndarray:
    """Evaluate N cases laid out one column per case: ``aT``, ``bT`` (K, N), ``c`` (N,),
    scales (S, N); all uint64, C-contiguous. Returns the output bits (N,) uint64."""
    n = c.shape[0]
    V = kern.lanes
    main = n - n % V
    out = np.empty(n, dtype=np.uint64)
    if main < n:                       # the tail, zero-padded to one vector of cases
        def padded(x):
            if x is None:
                return None
            y = np.zeros(x.shape[:-1] + (V,), dtype=np.uint64)
            y[..., :n - main] = x[..., main:]
            return y
        t = _call_all(kern, padded(aT), padded(bT), padded(c), padded(saT), padded(sbT), 1, chunk)
        out[main:] = t[:n - main]
    if main:
        _call_all(kern, aT, bT, c, saT, sbT, jobs, chunk, main, out)
    return out


def _call_all(kern, aT, bT, c, saT, sbT, jobs, chunk, n=None, out=None) -> np.ndarray:
    """The kernel on the first ``n`` cases (default all), written into ``out`` (a new array if
    None; else C-contiguous uint64 of at least ``n`` elements), which is returned."""
    ld = c.shape[0]
    n = ld if n is None else n
    out = np.empty(n, dtype=np.uint64) if out is None else out
    dummy = np.zeros(1, dtype=np.uint64)
    saT = dummy if saT is None else saT
    sbT = dummy if sbT is None else sbT
    s_ld = ld if kern.n_scales else 0

    def part(s: int, e: int) -> None:
        kern.fn(e - s, _ptr(aT, s), ld, _ptr(bT, s), ld, _ptr(c, s),
                _ptr(saT, s if kern.n_scales else 0), _ptr(sbT, s if kern.n_scales else 0), s_ld,
                _ptr(out, s))

    jobs = jobs or default_jobs()
    if jobs == 1 or n <= chunk:
        part(0, n)
        return out
    step = max(chunk, -(-n // (jobs * 4)))
    step += -step % kern.lanes
    futures = [pool(jobs).submit(part, s, min(s + step, n)) for s in range(0, n, step)]
    for f in futures:
        f.result()
    return out


def narrow_bits(width: int) -> int:
    """The element size in bits (8, 16, 32, 64) that holds ``width``-bit values."""
    return next(b for b in (8, 16, 32, 64) if width <= b)


def row_layout(k: int, n_scales: int = 0, dtypes: tuple | None = None, lanes: int | None = None) -> tuple:
    """Layout of :meth:`Model.evaluate`'s own arrays: cases are rows, a and b (N, K), scales
    (N, S), read in place (case strides K and S). ``dtypes``: the unsigned NumPy dtypes of a, b,
    c and the scales (default all uint64), each read in its own element size (fp16 bits as
    uint16 are a quarter of the memory traffic of uint64). The kernel ORs every element it reads
    (``check``) so that :func:`run_rows` checks the widths without a second pass. ``lanes``:
    cases per vector (default: :func:`row_lanes` of a small batch of these dtypes). Elements
    stored wider than their widths (fp16 bits as uint64) are truncated to the narrowest integer
    holding the width as they are loaded, and transposed at that width (:class:`Kernel`)."""
    bits = tuple(8 * np.dtype(d).itemsize for d in (dtypes or (np.uint64,) * 4))
    lanes = lanes or row_lanes(0, max(bits[:2]) // 8)
    return (("a", k), ("b", k), ("c", 1), ("s", max(n_scales, 1)), ("bits", bits), ("check", True),
            ("lanes", lanes))


def run_rows(kern: Kernel, a: np.ndarray, b: np.ndarray, c: np.ndarray, sa=None, sb=None,
             jobs: int | None = None, chunk: int = 8192, widths: tuple | None = None) -> np.ndarray:
    """Evaluate N cases given as :meth:`Model.evaluate` takes them, with a kernel of
    :func:`row_layout`: ``a``, ``b`` (N, K), ``c`` (N,), scales (N, S), unsigned, of the dtypes the
    kernel was made for, C-contiguous, read in place; chunks of cases over ``jobs`` threads, the
    last partial vector of cases copied and zero-padded. ``widths`` (of a, c, scales and, when a
    fourth is given, b; else b as a): the inputs are checked to fit them, as the NumPy reading
    checks its inputs (ValueError "input bits do not fit"), from the OR of every element the
    kernel read (no second pass over the inputs)."""
    n = c.shape[0]
    V = kern.lanes
    k = a.shape[1]
    ns = kern.n_scales
    out = np.empty(n, dtype=np.uint64)
    dummy = np.zeros(1, dtype=np.uint64)
    sa = dummy if sa is None else sa
    sb = dummy if sb is None else sb
    lay = dict(kern.layout)
    bits = lay.get("bits", (64,) * 4)
    for x, bw in ((a, bits[0]), (b, bits[1]), (c, bits[2])) + (((sa, bits[3]), (sb, bits[3])) if ns else ()):
        if x.dtype.itemsize * 8 != bw or x.dtype.kind != "u" or not x.flags.c_contiguous:
            raise ValueError(f"run_rows: a {bw}-bit unsigned C-contiguous array expected, got {x.dtype}")
    checked = bool(lay.get("check"))
    ors = []

    def call(a, b, c, sa, sb, o, s: int, e: int) -> None:
        args = (e - s, a.ctypes.data + a.itemsize * s * k, 1, b.ctypes.data + b.itemsize * s * k, 1,
                c.ctypes.data + c.itemsize * s, sa.ctypes.data + sa.itemsize * s * ns,
                sb.ctypes.data + sb.itemsize * s * ns, 1, _ptr(o, s))
        if checked:
            chk = np.zeros(4 * V, np.uint64)
            kern.fn(*args, chk.ctypes.data)
            ors.append(chk)
        else:
            kern.fn(*args)

    def verify() -> None:
        if not widths or not checked:
            return
        got = np.bitwise_or.reduce(np.array(ors).reshape(-1, 4, V), axis=(0, 2))
        wb = widths[3] if len(widths) > 3 else widths[0]
        for g, w in zip(got, (widths[0], wb, widths[1], widths[2])):
            if w < 64 and int(g) >> w:
                raise ValueError(f"input bits do not fit {w} bits")

    main = n - n % V
    if main < n:
        def pad(x, w):
            y = np.zeros((V,) + x.shape[1:], x.dtype)
            y[:n - main] = x[main:]
            return y
        o = np.empty(V, np.uint64)
        call(pad(a, k), pad(b, k), pad(c, 1), pad(sa, ns) if ns else dummy, pad(sb, ns) if ns else dummy, o, 0, V)
        out[main:] = o[:n - main]
    jobs = jobs or default_jobs()
    bounds = [(s, min(s + chunk, main)) for s in range(0, main, chunk)]
    if jobs == 1 or len(bounds) <= 1:
        for s, e in bounds:
            call(a, b, c, sa, sb, out, s, e)
        verify()
        return out
    futures = [pool(jobs).submit(call, a, b, c, sa, sb, out, s, e) for s, e in bounds]
    for f in futures:
        f.result()
    verify()
    return out
