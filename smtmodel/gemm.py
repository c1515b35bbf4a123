"""D = alpha·op(A)·op(B) + beta·C on whole matrices, computed by a model's twin.

Each output element is a dot product chained over K exactly as the model defines (seed 000
Algorithm 5; any K, zero-padded as :meth:`Model.padded_k` says); elements are independent
(seed 000 §3.1.1). The compiled reading evaluates one row of op(A) against all columns of op(B)
per native call, reading A, B and C in place (no per-element copies), rows spread over threads.

What a library adds around the instruction, as options:

* ``alpha``, ``beta``: with ``alpha = beta = 1`` and the plain K order, C enters the model's
  chain as the instruction's c (a kernel that loads C into the accumulators). Otherwise the
  epilogue of cuBLAS/CUTLASS (``LinearCombination``): acc = op(A)·op(B) by the model from +0,
  then, in fp32 (fp64 for fp64 models) with round-to-nearest-even, ``t = beta·C`` and
  ``D = fma(alpha, acc, t)``; ``beta = 0`` reads no C (``D = alpha·acc``). D is then rounded
  (RNE) to the model's output format. Every step is an operation of the core (:mod:`smtmodel.fp`).
* ``k_order``: ``"plain"`` one chain over K; ``"split:S"`` split-K, S slices of K (each a
  multiple of the block) chained from +0, their results summed in order in fp32 RNE;
  ``"interval:N"`` the FP8 promotion interval N_C: the chain restarts every N elements of K and
  the partial results are added in fp32 RNE (DeepSeek-V3 §3.3.2, N_C = 128).
"""

from __future__ import annotations

import numpy as np

from .bv import NUMPY
from .catalog import get_model
from .formats import bits_to_numpy, get_format, numpy_to_bits
from .fp import convert, fma
from .fp.exact import fp_add, fp_mul
from .model import CHUNK, INT_OPS, Model, ModelError

K_ORDERS = ("plain", "split", "interval")


def to_bits(values, fmt) -> np.ndarray:
    """Raw bits of values already representable in ``fmt`` (NumPy / ml_dtypes arrays or floats)."""
    f = get_format(fmt)
    if f.name == "tf32":
        bits = numpy_to_bits(np.asarray(values, dtype=np.float32), "fp32")
        if np.any(bits & np.uint64(0x1FFF)):
            raise ModelError("values are not TF32 values: round them to tf32 first")
        return bits
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiuV" and arr.dtype.kind != "b":
        raise ModelError(f"values of dtype {arr.dtype} are not numbers")
    bits = numpy_to_bits(arr, f)
    if not np.array_equal(bits_to_numpy(bits, f).astype(np.float64), arr.astype(np.float64), equal_nan=True):
        raise ModelError(f"values are not exactly representable in {f.name}")
    return bits


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


def k_chunks(m: Model, K: int, k_order: str = "plain") -> list[tuple[int, int]]:
    """The ranges of K chained separately (one range: the plain order)."""
    kind, n = parse_k_order(k_order)
    if kind == "plain":
        return [(0, K)]
    if kind == "split":
        L = m.block(K)
        size = -(-(-(-K // n)) // L) * L
    else:
        size = n
    return [(s, min(s + size, K)) for s in range(0, K, size)]


def epilogue_format(m: Model) -> str:
    """The format of the partial sums and the alpha/beta epilogue: fp32, fp64 for fp64 models."""
    return "fp64" if get_format(m.out_fmt).width > 32 else "fp32"


def gemm(model: "str | Model", A, B, C=None, *, alpha: float = 1.0, beta: float = 1.0,
         transa: bool = False, transb: bool = False, k_order: str = "plain",
         backend: str = "auto", jobs: int | None = None) -> np.ndarray:
    """D = alpha·op(A)·op(B) + beta·C with the model (see the module docstring).

    A (M,K) (``transa``: (K,M)) and B (K,N) (``transb``: (N,K)) hold values of the model's input
    format, C (M,N) values of its c format (None: no C, as beta = 0). Returns D as an array of the
    output format's NumPy / ml_dtypes type."""
    m = get_model(model)
    if m.scale_fmt:
        raise ModelError(f"{m.id}: gemm takes models without block scales")
    A, B = np.asarray(A), np.asarray(B)
    if A.ndim != 2 or B.ndim != 2:
        raise ModelError(f"A and B must be matrices, got shapes {A.shape} and {B.shape}")
    a, b = to_bits(A, m.in_fmt), to_bits(B, m.in_fmt)
    c = None if C is None else to_bits(np.asarray(C), m.c_fmt)
    if m.op in INT_OPS:
        if alpha != 1.0 or (beta != 1.0 and C is not None) or k_order != "plain":
            raise ModelError(f"{m.id}: integer models take alpha = beta = 1 and the plain K order only "
                             "(C enters the s32 accumulator)")
        d = gemm_bits(m, a.T if transa else a, b.T if transb else b, c, backend=backend, jobs=jobs)
        return bits_to_numpy(d, m.out_fmt)
    E = epilogue_format(m)
    al, be = (int(to_bits(np.array(x, dtype=np.float64), E)) for x in (alpha, beta))
    d = gemm_bits(m, a.T if transa else a, b.T if transb else b, c, alpha_bits=al, beta_bits=be,
                  k_order=k_order, backend=backend, jobs=jobs)
    return bits_to_numpy(d, m.out_fmt)


def gemm_bits(m: Model, a, b, c=None, *, alpha_bits: int | None = None, beta_bits: int | None = None,
              k_order: str = "plain", backend: str = "auto", jobs: int | None = None) -> np.ndarray:
    """:func:`gemm` on raw bits: a (M,K), b (K,N) (any strides), c (M,N) or None; alpha and beta
    as raw bits of the epilogue format (None: 1.0). Returns the output bits (M,N) uint64."""
    if m.scale_fmt:
        raise ModelError(f"{m.id}: gemm takes models without block scales")
    if backend not in ("auto", "native", "numpy"):
        raise ModelError(f"unknown backend {backend!r}; one of auto, native, numpy")
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2 or K < 1 or M < 1 or N < 1 or (c is not None and c.shape != (M, N)):
        raise ModelError(f"shapes do not fit: op(A) {a.shape}, op(B) {b.shape}"
                         + ("" if c is None else f", C {c.shape}") + " (need (M,K), (K,N), (M,N))")
    if m.op in INT_OPS:                # the s32 accumulator takes C directly; no integer epilogue is modelled
        if alpha_bits is not None or beta_bits is not None or parse_k_order(k_order)[0] != "plain":
            raise ModelError(f"{m.id}: integer models take alpha = beta = 1 and the plain K order only "
                             "(C enters the s32 accumulator)")
        c = np.zeros((M, N), dtype=np.uint64) if c is None else c
        wi, wc, _ = m.widths
        a = np.ascontiguousarray(NUMPY.input(np.asarray(a), wi).v, dtype=np.uint64)
        b = np.ascontiguousarray(NUMPY.input(np.asarray(b), wi).v, dtype=np.uint64)
        c = np.ascontiguousarray(NUMPY.input(np.asarray(c), wc).v, dtype=np.uint64)
        dot = _dots_native if _use_native(m, backend, M * N) else _dots_numpy
        return dot(m, a, b, c, 0, K, jobs)
    E = epilogue_format(m)
    one = _one_bits(E)
    alpha_bits = one if alpha_bits is None else int(alpha_bits)
    beta_bits = one if beta_bits is None else int(beta_bits)
    wi, wc, _ = m.widths
    a = np.ascontiguousarray(NUMPY.input(np.asarray(a), wi).v, dtype=np.uint64)
    b = np.ascontiguousarray(NUMPY.input(np.asarray(b), wi).v, dtype=np.uint64)
    if c is not None:
        c = np.ascontiguousarray(NUMPY.input(np.asarray(c), wc).v, dtype=np.uint64)
    chunks = k_chunks(m, K, k_order)
    use_c = beta_bits != 0 and c is not None
    direct = len(chunks) == 1 and alpha_bits == one and beta_bits == one and c is not None
    native = _use_native(m, backend, M * N)
    if native and backend == "auto" and _too_wide(m, K, k_order):
        native = False
    dot = _dots_native if native else _dots_numpy
    if direct:
        return dot(m, a, b, c, 0, K, jobs)
    parts = [dot(m, a, b, None, k0, k1, jobs) for k0, k1 in chunks]
    ew = _Elementwise(native, jobs)
    wo = get_format(m.out_fmt).width

    def to_E(p):
        return p if m.out_fmt == E else ew.run(("to", m.out_fmt, E), _convert_fn(m.out_fmt, E), (wo,) * 3, p, p, p)
    acc = to_E(parts[0])
    for p in parts[1:]:
        pE = to_E(p)
        acc = ew.run(("add", E), lambda x, y, z, *_: fp_add(x[0], y[0], E), (get_format(E).width,) * 3,
                     acc, pE, pE)
    cc = c if use_c else np.zeros((M, N), np.uint64)
    d = ew.run(("epilogue", E, m.c_fmt, m.out_fmt, alpha_bits, beta_bits, use_c),
               _epilogue_fn(E, m.c_fmt, m.out_fmt, alpha_bits, beta_bits, use_c),
               (get_format(E).width, get_format(E).width, wc), acc, acc, cc)
    return d.reshape(M, N)


# ---- the epilogue, composed of core operations ------------------------------------------------

def _one_bits(fmt: str) -> int:
    return int(to_bits(np.array(1.0), fmt))


def _convert_fn(src: str, dst: str):
    def f(a, b, c, sa=None, sb=None):
        return c if src == dst else convert(c, src, dst)
    return f


def _epilogue_fn(E: str, c_fmt: str, out_fmt: str, alpha_bits: int, beta_bits: int, use_c: bool):
    """D = RNE_out(fma(alpha, acc, RNE_E(beta · C))), or RNE_out(alpha · acc) without C."""
    wE = get_format(E).width

    def f(a, b, c, sa=None, sb=None):
        acc, B = a[0], a[0].B
        al = B.const(alpha_bits, wE)
        if use_c:
            cE = c if c_fmt == E else convert(c, c_fmt, E)
            d = fma(al, acc, fp_mul(B.const(beta_bits, wE), cE, E), E)
        else:
            d = fp_mul(al, acc, E)
        return d if out_fmt == E else convert(d, E, out_fmt)
    return f


class _Elementwise:
    """Runs an elementwise composition of core operations on (M,N) bit arrays: compiled, or the
    NumPy reading of the same composition."""

    def __init__(self, native: bool, jobs):
        self.native, self.jobs = native, jobs

    def run(self, key, build, widths, x, y, z) -> np.ndarray:
        shape = x.shape
        x, y, z = (np.ascontiguousarray(v, dtype=np.uint64).reshape(-1) for v in (x, y, z))
        if self.native:
            from . import native
            try:
                kern = native.function(key, build, widths + (0,), 1, native.ROWS, native.EPILOGUE_WIDTH)
                return native.run_cases(kern, x[None, :], y[None, :], z, None, None, jobs=self.jobs).reshape(shape)
            except native.TooWide:
                pass                            # fp64 epilogue: the NumPy reading below
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
    (``chain_start``, ``chain_step`` per block, ``chain_end``): one kernel per piece and block
    length instead of one per K, so a K = 2048 GEMM compiles a few blocks, not 64.
    Returns (blocks, first, next, last, end): ``blocks`` the (start, stop) ranges of real
    elements; ``last`` pads the last block with zeros (``Model.padded_k``); ``end`` is None
    when ``chain_end`` is the identity."""
    from . import native
    wi, wc, wo = m.widths
    L = m.block(k)
    kp = m.padded_k(k)
    blocks = [(s, min(s + L, k)) for s in range(0, kp, L)]
    tail = blocks[-1][1] - blocks[-1][0]

    def first(a, b, c, *_):
        return m.chain_step(a, b, m.chain_start(c), m.c_fmt)

    def step(a, b, d, *_):
        return m.chain_step(a, b, d, m.out_fmt)

    def last(a, b, d, *_):
        z = a[0].B.const(0, wi)
        return m.chain_step(a + [z] * (L - tail), b + [z] * (L - tail), d, m.out_fmt)

    def end(a, b, c, *_):
        return m.chain_end(a[0], c)

    key = (m, m.id)
    kf = native.function(("first",) + key, first, (wi, wi, wc, 0), L, native.GEMM_ROW)
    kn = native.function(("next",) + key, step, (wi, wi, wo, 0), L, native.GEMM_ROW) if len(blocks) > 1 else None
    kl = (native.function(("last", tail) + key, last, (wi, wi, wo, 0), tail, native.GEMM_ROW)
          if len(blocks) > 1 and tail < L else kn)
    ke = (native.function(("end",) + key, end, (wo, wo, wc, 0), 1, native.ROWS)
          if m.c_entry == "end" or m.flush_outputs else None)
    return blocks, kf, kn, kl, ke


def _too_wide(m: Model, K: int, k_order: str) -> bool:
    """Whether the model is too wide for the compiled reading (``auto`` then uses NumPy)."""
    from . import native
    try:
        for k0, k1 in k_chunks(m, K, k_order):
            _chain_kernels(m, k1 - k0)
    except native.TooWide:
        return True
    except native.NativeError:
        return False
    return False


def _dots_native(m: Model, a, b, c, k0: int, k1: int, jobs) -> np.ndarray:
    """D[i, j] = model(a[i, k0:k1], b[k0:k1, j], c[i, j] or +0): per row of a, the chain's
    kernels one block after the other over all columns (A, B, C read in place)."""
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
