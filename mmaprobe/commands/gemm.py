"""``mmaprobe gemm``: D = alpha·op(A)·op(B) + beta·C with a model's twin, matrices in .npy files.

A, B and C hold values of the model's input / c formats (NumPy or ml_dtypes arrays, or plain
floats exactly representable), or raw bit patterns (unsigned integers) with ``--bits``. D is
written atomically (a complete file or none, also on Ctrl-C) as values of the output format,
or raw bits with ``--bits``. See :mod:`smtmodel.gemm` for the epilogue and the K orders.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from smtmodel.catalog import get_model
from smtmodel.formats import get_format, uint_dtype
from smtmodel.gemm import epilogue_format, gemm, gemm_bits, parse_k_order, to_bits
from smtmodel.io import atomic_open

from ..args import add_model, add_output, add_twin
from ..errors import CliError


def _load(path: str, what: str) -> np.ndarray:
    try:
        x = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise CliError(f"{path}: cannot read {what} as a .npy array ({e})") from None
    if x.ndim != 2:
        raise CliError(f"{path}: {what} must be a matrix, got shape {x.shape}")
    return x


def _bits(x: np.ndarray, path: str) -> np.ndarray:
    if x.dtype.kind != "u":
        raise CliError(f"{path}: --bits needs unsigned integer raw patterns, got dtype {x.dtype}")
    return x.astype(np.uint64)


def cmd_gemm(args) -> int:
    m = get_model(args.model)
    parse_k_order(args.k_order)
    A, B = _load(args.a, "A"), _load(args.b, "B")
    C = _load(args.c, "C") if args.c else None
    t0 = time.perf_counter()
    opts = dict(k_order=args.k_order, backend=args.backend, jobs=args.jobs)
    if args.bits:
        E = epilogue_format(m)
        a = _bits(A, args.a)
        b = _bits(B, args.b)
        c = None if C is None else _bits(C, args.c)
        plain = m.op == "imma" and args.alpha == 1 and args.beta == 1     # integer models: no epilogue
        d = gemm_bits(m, a.T if args.transa else a, b.T if args.transb else b, c,
                      alpha_bits=None if plain else int(to_bits(np.array(args.alpha), E)),
                      beta_bits=None if plain else int(to_bits(np.array(args.beta), E)), **opts)
        D = d.astype(uint_dtype(m.out_fmt))
    else:
        D = gemm(m, A, B, C, alpha=args.alpha, beta=args.beta, transa=args.transa, transb=args.transb, **opts)
    secs = time.perf_counter() - t0
    with atomic_open(args.output, "wb", gz=False) as fh:
        np.save(fh, D, allow_pickle=False)
    M, N = D.shape
    K = A.shape[0] if args.transa else A.shape[1]
    print(f"{m.id}: D ({M}x{N}, K={K}, {get_format(m.out_fmt).name}) in {secs:.2f} s "
          f"({M * N * K / max(secs, 1e-9) / 1e6:.0f} M MAC/s) -> {args.output}", file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser("gemm", help="D = alpha*op(A)*op(B) + beta*C with a model's twin (.npy in, .npy out)")
    p.add_argument("a", help="A (M,K), or (K,M) with --transa (.npy)")
    p.add_argument("b", help="B (K,N), or (N,K) with --transb (.npy)")
    p.add_argument("c", nargs="?", help="C (M,N) (.npy; optional: none means beta*C = 0)")
    add_model(p, required=True)
    add_output(p, required=True, help="D (.npy), written atomically")
    p.add_argument("--alpha", type=float, default=1.0, help="fp32 scale of A*B (default 1)")
    p.add_argument("--beta", type=float, default=1.0, help="fp32 scale of C (default 1)")
    p.add_argument("--transa", action="store_true", help="A is given transposed (K,M)")
    p.add_argument("--transb", action="store_true", help="B is given transposed (N,K)")
    p.add_argument("--k-order", default="plain", metavar="ORDER",
                   help="plain (one chain over K, default), split:S (split-K, S slices summed in fp32), "
                        "interval:N (restart every N elements of K, partials added in fp32; FP8 N_C = 128)")
    p.add_argument("--bits", action="store_true", help="A, B, C and D are raw bit patterns (unsigned integers)")
    add_twin(p)
    p.set_defaults(func=cmd_gemm)
