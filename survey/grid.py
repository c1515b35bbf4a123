"""The library part's shape grid: the GEMMs transformer layers run, as torch calls them.

Rows of the grid are batch sizes M; columns are the (N, K) of the projections of 7B-70B-class
models (:data:`PROJECTIONS`: attention q/o, GQA k/v, MLP up/gate and down, the lm-head for small
M only). Formats: fp16 and bf16 ``torch.matmul``, fp32 with TF32 (``torch.matmul``,
``allow_tf32``), and e4m3 ``torch._scaled_mm`` (fast accumulation, bf16 out). Per (format, N, K)
the grid is one sweep (:class:`survey.library.LibGemm` with ``ms``): one A of the largest M and
one B are drawn, and each M takes A's first M rows, so the grid is also a batch-invariance sweep
of every projection. Unaligned shapes (:data:`UNALIGNED`, cuBLAS's fallback kernels) are single
calls.

What bounds the grid is the GPU machine's host, not the GPU: inputs are drawn, rounded and moved
on the host, and every D is read back for its digest. :data:`MAX_OUT` and :data:`MAX_A` cap the
elements of one D and one A; :func:`estimate_seconds` is the plan's estimate per call.

**Held out** (:func:`held_out`): a grid point (format, M, N, K) is held out when the first eight
hex digits of ``sha256("fmt|M|N|K")``, read as an integer, are 0 modulo :data:`HELD_OUT_EVERY`
(about one point in five). Held-out points are captured like the others and flagged
``held_out`` in the journal: the dispatch table and its dataflows are fitted on the rest and
predict these before they are compared.

Inputs (:func:`inputs`): standard normal values drawn in fp32 from
``numpy.random.default_rng([seed, N, K])`` (A of ``max(ms)`` rows first, then B), rounded to the
format (RNE; fp32 inputs stay fp32: TF32 rounding is the GPU's), as raw bits. fp32 draws and
NumPy/ml_dtypes casts keep the host cost at a few seconds per projection.
"""

from __future__ import annotations

import hashlib

import numpy as np

MS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
"""Batch sizes (rows of A) the grid takes, each projection as far as :data:`MAX_OUT` / :data:`MAX_A` allow."""

PROJECTIONS = (
    ("attn-qo-7b", 4096, 4096),
    ("gqa-kv-8b", 1024, 4096),
    ("mlp-up-7b", 11008, 4096),
    ("mlp-down-7b", 4096, 11008),
    ("mlp-up-8b", 14336, 4096),
    ("mlp-down-8b", 4096, 14336),
    ("attn-qo-70b", 8192, 8192),
    ("mlp-up-70b", 28672, 8192),
    ("mlp-down-70b", 8192, 28672),
    ("lm-head-8b", 128256, 4096),
)
"""(name, N, K) of torch's ``x @ W`` (x: M x K activations, W: K x N)."""

FORMATS = {"fp16": tuple(p[0] for p in PROJECTIONS if p[0] != "lm-head-8b"),
           "bf16": tuple(p[0] for p in PROJECTIONS),
           "tf32": ("attn-qo-7b", "gqa-kv-8b", "mlp-down-8b"),
           "fp8e4m3": ("attn-qo-7b", "gqa-kv-8b", "mlp-down-8b")}
"""Which projections each format runs (bf16, the format models are served in, runs every one)."""

SMALL_M_ONLY = {"lm-head-8b": 16}
"""Projections taken at small M only (the largest M)."""

UNALIGNED = ((7, 4095, 4100), (33, 4100, 4095), (1, 4095, 4096), (100, 1000, 4100))
"""(M, N, K) not multiples of 8 (cuBLAS's fallback kernels), fp16, bf16 and TF32."""

MAX_OUT = 1 << 23
"""Largest D of a grid point (elements): its digest is of all of D, read back to the host."""
MAX_A = 1 << 25
"""Largest A of a projection (elements): drawn on the host once per projection and format."""
HELD_OUT_EVERY = 5
VARIANT_MS = (1, 16, 256, 4096)
"""Grid points that also run the variants (smaller workspace, reduced precision off)."""

QUICK = ((("attn-qo", 64, 128), ("down", 32, 256)), (1, 2, 4, 8, 16), ((7, 31, 36),), ("tf32",))
"""Dry-run (``--quick``) projections, batch sizes, unaligned shapes and their formats (TF32 only:
an unaligned fp16/bf16 call is the same search, 30 s each on the twin)."""


def held_out(fmt: str, M: int, N: int, K: int) -> bool:
    """Whether the grid point is held out (module docstring)."""
    h = hashlib.sha256(f"{fmt}|{M}|{N}|{K}".encode()).hexdigest()
    return int(h[:8], 16) % HELD_OUT_EVERY == 0


def grid_ms(name: str, N: int, K: int, quick: bool = False) -> tuple:
    if quick:
        return QUICK[1]
    top = SMALL_M_ONLY.get(name, MS[-1])
    return tuple(m for m in MS if m <= top and m * N <= MAX_OUT and m * K <= MAX_A)


def grid(LibGemm, quick: bool = False) -> list:
    """The grid's library calls as ``LibGemm`` (:class:`survey.library.LibGemm`) objects (module
    docstring), sweeps first, unaligned calls after."""
    projections = QUICK[0] if quick else PROJECTIONS
    out = []
    seed = 100
    for fmt, names in FORMATS.items():
        for name, N, K in projections:
            if not quick and name not in names:
                continue
            ms = grid_ms(name, N, K, quick)
            if fmt == "fp8e4m3":           # torch._scaled_mm: M a multiple of 16
                ms = tuple(m for m in ms if m % 16 == 0) or (16,)
            seed += 1
            fin = "fp32" if fmt == "tf32" else fmt
            kw = dict(in_fmt=fin, out_fmt="bf16" if fmt == "fp8e4m3" else fin, M=ms[-1], N=N, K=K, ms=ms,
                      rows=2, cols=64, seed=seed, draw="grid",
                      held_out=tuple(m for m in ms if held_out(fmt, m, N, K)),
                      variant_ms=tuple(m for m in ms if m in (VARIANT_MS if not quick else (1, 16))))
            if fmt == "tf32":
                kw["tf32"] = True
            if fmt == "fp8e4m3":
                out.append(LibGemm(f"grid-{fmt}-{name}", "scaled_mm", fast_accum=True, **kw))
            else:
                out.append(LibGemm(f"grid-{fmt}-{name}", "matmul", **kw))
    for M, N, K in (QUICK[2] if quick else UNALIGNED):
        for fmt in (QUICK[3] if quick else ("fp16", "bf16", "tf32")):
            seed += 1
            fin = "fp32" if fmt == "tf32" else fmt
            out.append(LibGemm(f"grid-{fmt}-unaligned-{M}x{N}x{K}", "matmul", fin, fin, M, N, K,
                               tf32=True if fmt == "tf32" else None, rows=2, cols=64, seed=seed, draw="grid",
                               held_out=(M,) if held_out(fmt, M, N, K) else ()))
    return out


def fmt_key(g) -> str:
    """The grid's format name of a call (tf32 for fp32 inputs with TF32 on)."""
    return "tf32" if g.in_fmt == "fp32" and g.tf32 else g.in_fmt


def inputs(g):
    """(a (max M, K), b (K, N), None) raw bits of a grid call (module docstring)."""
    from smtmodel.formats import get_format, numpy_dtype
    rng = np.random.default_rng([g.seed, g.N, g.K])
    a = rng.standard_normal((g.M, g.K), dtype=np.float32)
    b = rng.standard_normal((g.K, g.N), dtype=np.float32)
    f = get_format(g.in_fmt)
    dt = numpy_dtype(f)
    view = {8: np.uint8, 16: np.uint16, 32: np.uint32}[f.width]
    return tuple(np.ascontiguousarray(x.astype(dt)).view(view) for x in (a, b)) + (None,)


def estimate_seconds(g) -> float:
    """Seconds of the GPU machine for one library call of the survey (all its M, variants
    included): host drawing and rounding (~25 ns per input element), moving to the GPU and the
    digest of D read back (~10 ns per element), the GEMM at 200 TFLOP/s (fp32: 20), and the
    profiler and launch (~30 ms per launch, as the H100's 0.01-0.3 s per call shows)."""
    ms = g.ms or (g.M,)
    vms = ms if g.variant_ms is None else g.variant_ms
    host = 25e-9 * (g.M * g.K + g.K * g.N)
    outs = g.N * (sum(ms) + 2 * sum(vms))
    flops = 2 * g.K * outs
    rate = 2e13 if g.in_fmt == "fp32" and not g.tf32 else 2e14
    return host + 10e-9 * outs + flops / rate + 0.03 * (len(ms) + 2 * len(vms))
