"""``mmaprobe gemm``: D = alpha·op(A)·op(B) + beta·C with a model's twin and a dataflow, matrices
in .npy files; ``mmaprobe dataflows``: the named dataflow profiles with their sources.

A, B and C hold values of the model's operand / c formats (NumPy or ml_dtypes arrays, or plain
floats exactly representable), or raw bit patterns (unsigned integers) with ``--bits``. D is
written atomically (a complete file or none, also on Ctrl-C) as values of the output format, or
raw bits with ``--bits``, with a JSON sidecar ``OUTPUT.json`` that states the model, the
dataflow (its text and every field), alpha, beta, the scales and the shapes; the printed summary
names the dataflow too. See :mod:`smtmodel.gemm` and docs/dataflow.md.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from smtmodel.catalog import get_model
from smtmodel.dataflow import PROFILES
from smtmodel.formats import get_format, uint_dtype
from smtmodel.gemm import epilogue_format, gemm, gemm_bits, output_format, resolve_dataflow, to_bits
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


def _dataflow_arg(text: str | None):
    """``--dataflow``: a profile, ``PROFILE:key=value,...``, ``key=value,...``, a JSON object, or
    ``@FILE`` holding one of these."""
    if text and text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as fh:
                return fh.read()
        except OSError as e:
            raise CliError(f"{text[1:]}: cannot read the dataflow ({e.strerror or e})") from None
    return text


def cmd_gemm(args) -> int:
    m = get_model(args.model)
    df = resolve_dataflow(_dataflow_arg(args.dataflow), args.k_order)
    A, B = _load(args.a, "A"), _load(args.b, "B")
    C = _load(args.c, "C") if args.c else None
    t0 = time.perf_counter()
    opts = dict(dataflow=df, backend=args.backend, jobs=args.jobs)
    E = epilogue_format(m, df)
    if args.bits:
        def f32(x):
            return None if x is None else int(to_bits(np.array(x), "fp32"))
        a = _bits(A, args.a)
        b = _bits(B, args.b)
        c = None if C is None else _bits(C, args.c)
        d = gemm_bits(m, a.T if args.transa else a, b.T if args.transb else b, c,
                      alpha_bits=int(to_bits(np.array(args.alpha), E)), beta_bits=int(to_bits(np.array(args.beta), E)),
                      scale_a_bits=f32(args.scale_a), scale_b_bits=f32(args.scale_b),
                      scale_result_bits=None if args.scale_result is None else int(to_bits(np.array(args.scale_result), E)),
                      **opts)
        D = d.astype(uint_dtype(output_format(m, df)))
    else:
        D = gemm(m, A, B, C, alpha=args.alpha, beta=args.beta, transa=args.transa, transb=args.transb,
                 scale_a=args.scale_a, scale_b=args.scale_b, scale_result=args.scale_result, **opts)
    secs = time.perf_counter() - t0
    M, N = D.shape
    K = A.shape[0] if args.transa else A.shape[1]
    side = {"kind": "mmaprobe.gemm", "version": 1, "model": m.id, "dataflow": df.to_json(),
            "dataflow_text": df.text(), "described": df.describe(),
            "alpha": args.alpha, "beta": args.beta, "scale_a": args.scale_a, "scale_b": args.scale_b,
            "scale_result": args.scale_result, "c_given": C is not None, "M": M, "N": N, "K": K,
            "transa": args.transa, "transb": args.transb, "out_fmt": get_format(output_format(m, df)).name,
            "bits": args.bits, "inputs": {"A": args.a, "B": args.b, "C": args.c}}
    text = json.dumps(side, indent=1) + "\n"
    with atomic_open(args.output, "wb", gz=False) as fh:
        np.save(fh, D, allow_pickle=False)
    with atomic_open(args.output + ".json", "w", gz=False) as fh:
        fh.write(text)
    print(f"{m.id}: D ({M}x{N}, K={K}, {side['out_fmt']}) in {secs:.2f} s "
          f"({M * N * K / max(secs, 1e-9) / 1e6:.0f} M MAC/s) -> {args.output} (+ .json)\n"
          f"  dataflow {df.text()}: {df.describe()}", file=sys.stderr)
    return 0


def cmd_dataflows(args) -> int:
    for name, p in PROFILES.items():
        if args.json:
            continue
        print(f"{name:<30} {p.describe()}")
        if args.sources:
            print(f"{'':<30} source: {p.source}")
    if args.json:
        print(json.dumps({n: p.to_json() for n, p in PROFILES.items()}, indent=1))
    return 0


def register(sub) -> None:
    p = sub.add_parser("gemm", help="D = alpha*op(A)*op(B) + beta*C with a model's twin and a dataflow "
                                    "(.npy in, .npy + .json out)")
    p.add_argument("a", help="A (M,K), or (K,M) with --transa (.npy)")
    p.add_argument("b", help="B (K,N), or (N,K) with --transb (.npy)")
    p.add_argument("c", nargs="?", help="C (M,N) (.npy; optional: none means no C)")
    add_model(p, required=True)
    add_output(p, required=True, help="D (.npy), written atomically, with OUTPUT.json stating the dataflow")
    p.add_argument("--dataflow", metavar="DATAFLOW",
                   help="PROFILE[:key=value,...], key=value,..., a JSON object or @FILE (default cutlass2: "
                        "one chain from +0, D = fma(alpha, acc, RN(beta*C)) in fp32); `mmaprobe dataflows` "
                        "lists the profiles, docs/dataflow.md the keys")
    p.add_argument("--alpha", type=float, default=1.0, help="scale of A*B in the epilogue format (default 1)")
    p.add_argument("--beta", type=float, default=1.0, help="scale of C in the epilogue format (default 1)")
    p.add_argument("--scale-a", type=float, default=None, help="fp32 per-tensor scale of A (dataflows with "
                   "alpha_from_scales, e.g. the cuBLASLt FP8 profiles: alpha = RN(scale_a*scale_b))")
    p.add_argument("--scale-b", type=float, default=None, help="fp32 per-tensor scale of B")
    p.add_argument("--scale-result", type=float, default=None, help="scale of D before FP8 outputs' saturation")
    p.add_argument("--transa", action="store_true", help="A is given transposed (K,M)")
    p.add_argument("--transb", action="store_true", help="B is given transposed (N,K)")
    p.add_argument("--k-order", default=None, metavar="ORDER",
                   help="shorthand for the dataflow's chains: plain, split:S (S contiguous slices summed in fp32), "
                        "interval:N (restart every N elements of K; FP8 N_C = 128)")
    p.add_argument("--bits", action="store_true", help="A, B, C and D are raw bit patterns (unsigned integers)")
    add_twin(p)
    p.set_defaults(func=cmd_gemm)
    q = sub.add_parser("dataflows", help="the named GEMM dataflow profiles (docs/dataflow.md)")
    q.add_argument("--sources", action="store_true", help="print each profile's citation")
    q.add_argument("--json", action="store_true", help="every profile's fields as JSON")
    q.set_defaults(func=cmd_dataflows)
