"""``mmaprobe gemm``: D = alpha·op(A)·op(B) + beta·C with a model's twin and a dataflow, matrices
in .npy files; ``mmaprobe dataflows``: the named dataflow profiles with their sources.

A, B and C hold values of the model's operand / c formats (NumPy or ml_dtypes arrays, or plain
floats exactly representable), or raw bit patterns (unsigned integers) with ``--bits``. An
ml_dtypes array saved by ``np.save`` loads as raw bytes (dtype ``V1``/``V2``: the file keeps the
bytes, not the type's name); such an array is read as bits of the format the model takes for it
(the width must match), and the sidecar's ``read_as`` and the summary say so. ``--alpha`` and
``--beta`` must be values of the epilogue format; the scales are rounded to their format (fp32)
to nearest even, as torch stores a Python float, and the value used is stated. D is
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
from smtmodel.formats import FormatError, bits_to_numpy, get_format, uint_dtype
from smtmodel.gemm import (epilogue_format, exact_scalar, gemm_bits, output_format, resolve_dataflow, round_scale,
                           scale_result_applies, to_bits)
from smtmodel.io import NpyError, atomic_open, read_npy
from smtmodel.model import INT_OPS, ModelError

from ..args import add_model, add_output, add_twin
from ..errors import CliError
from ..io import check_output
from .catalog import note_unvalidated


def _load(path: str, what: str) -> np.ndarray:
    try:
        x = read_npy(path)
    except NpyError as e:
        raise CliError(f"{e.path}: {what}: {e.reason}") from None
    if x.ndim != 2:
        raise CliError(f"{path}: {what} must be a matrix, got shape {x.shape}")
    return x


def _bits(x: np.ndarray, path: str, fmt: str, what: str) -> np.ndarray:
    """--bits: unsigned integers, or raw bytes (a void array) of the format's width."""
    if x.dtype.kind == "V":
        return _operand(x, path, fmt, what)
    if x.dtype.kind != "u":
        raise CliError(f"{path}: --bits needs unsigned integer raw patterns, got dtype {x.dtype}")
    w = get_format(fmt).width
    if w < 64 and x.size and int(x.max()) >> w:
        raise CliError(f"{path}: {what}: a pattern 0x{int(x.max()):x} does not fit {get_format(fmt).name} ({w} bits)")
    return x.astype(np.uint64)


def _operand(x: np.ndarray, path: str, fmt: str, what: str) -> np.ndarray:
    try:
        return to_bits(x, fmt)
    except (ModelError, FormatError) as e:
        raise CliError(f"{path}: {what}: {e}" + ("" if get_format(fmt).name in str(e) else f" ({fmt})")) from None


def _reading(x: np.ndarray, fmt: str, bits: bool) -> str:
    """How an input file's array was read, as stated in the sidecar and on screen."""
    name = get_format(fmt).name
    if x.dtype.kind == "V":
        return f"raw {name} bits from dtype {x.dtype.str} (np.save keeps an ml_dtypes array's bytes, not its type)"
    if bits:
        return f"raw {name} bits from dtype {x.dtype}"
    return f"{name} values from dtype {x.dtype}"


def _dataflow_arg(text: str | None):
    """``--dataflow``: a profile, ``PROFILE:key=value,...``, ``key=value,...``, a JSON object, or
    ``@FILE`` holding one of these."""
    if text and text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as fh:
                return fh.read()
        except OSError as e:
            raise CliError(f"{text[1:]}: cannot read the dataflow ({e.strerror or e})") from None
        except UnicodeDecodeError:
            raise CliError(f"{text[1:]}: cannot read the dataflow (not UTF-8 text)") from None
    return text


def _scalars(args, m, E: str) -> dict:
    """alpha and beta (exact values of the epilogue format E) and the scales (rounded to their
    format to nearest even, as torch stores a Python float in an fp32 tensor): for each, the
    value given, the value used and its bits. Errors name the option."""
    out = {}
    for name, opt, fmt, exact in (("alpha", "--alpha", E, True), ("beta", "--beta", E, True),
                                  ("scale_a", "--scale-a", "fp32", False), ("scale_b", "--scale-b", "fp32", False),
                                  ("scale_result", "--scale-result", E, False)):
        given = getattr(args, name)
        if given is None:
            continue
        try:
            bits = exact_scalar(given, fmt, opt) if exact else int(round_scale(given, fmt, opt))
        except ModelError as e:
            raise CliError(str(e)) from None
        used = float(bits_to_numpy(np.array([bits], np.uint64), fmt)[0])
        out[name] = {"given": given, "value": used, "fmt": get_format(fmt).name,
                     "bits": f"0x{bits:0{get_format(fmt).width // 4}x}", "_bits": bits,
                     "rounded": not (used == given or (used != used and given != given))}
    return out


def describe(m, df) -> str:
    """What the command computes: the dataflow's description, or the integer path's."""
    if m.op in INT_OPS:
        how = "clamped to the s32 range (.satfinite) per instruction" if m.saturate else "wrapped mod 2^32"
        return (f"integer: C (int32; none: 0) enters the s32 accumulator, one chain over K in blocks of the "
                f"instruction's K={m.L}, products and sums exact, each block's s32 result {how}; "
                f"no epilogue (alpha = beta = 1); D is the s32 accumulator")
    return df.describe()


def cmd_gemm(args) -> int:
    m = get_model(args.model)
    if m.scale_fmt:
        raise CliError(f"{m.id}: gemm takes models without block scales")
    note_unvalidated([m], sys.stderr)
    # integer models have no epilogue: C enters the s32 accumulator (the 'instruction' dataflow)
    df = resolve_dataflow(_dataflow_arg(args.dataflow) if args.dataflow or m.op != "imma" else "instruction",
                          args.k_order)
    check_output(args.output + ".json", "-o (its sidecar)")
    E = epilogue_format(m, df)
    plain = m.op in INT_OPS and args.alpha == 1 and (args.beta == 1 or not args.c)   # integers: no epilogue
    sc = _scalars(args, m, E)
    (fa, fb), fc = m.operand_fmts, m.c_fmt
    A, B = _load(args.a, "A"), _load(args.b, "B")
    C = _load(args.c, "C") if args.c else None
    conv = _bits if args.bits else _operand
    a, b = conv(A, args.a, fa, "A"), conv(B, args.b, fb, "B")
    c = None if C is None else conv(C, args.c, fc, "C")
    t0 = time.perf_counter()

    def bits(name):
        return sc[name]["_bits"] if name in sc else None
    d = gemm_bits(m, a.T if args.transa else a, b.T if args.transb else b, c,
                  alpha_bits=None if plain else bits("alpha"), beta_bits=None if plain else bits("beta"),
                  dataflow=df, scale_a_bits=bits("scale_a"), scale_b_bits=bits("scale_b"),
                  scale_result_bits=bits("scale_result"), backend=args.backend, jobs=args.jobs, info=(ran := {}))
    out = output_format(m, df)
    D = d.astype(uint_dtype(out)) if args.bits else bits_to_numpy(d, out)
    secs = time.perf_counter() - t0
    M, N = D.shape
    K = A.shape[0] if args.transa else A.shape[1]
    scal = {k: {x: y for x, y in v.items() if x != "_bits"} for k, v in sc.items()}
    reads = {"A": (A, fa), "B": (B, fb)} | ({"C": (C, fc)} if C is not None else {})
    side = {"kind": "mmaprobe.gemm", "version": 1, "model": m.id, "dataflow": df.to_json(),
            "dataflow_text": df.text(), "described": describe(m, df),
            "alpha": sc["alpha"]["value"] if "alpha" in sc else None,
            "beta": sc["beta"]["value"] if "beta" in sc else None,
            "scale_a": sc["scale_a"]["value"] if "scale_a" in sc else None,
            "scale_b": sc["scale_b"]["value"] if "scale_b" in sc else None,
            "scale_result": sc["scale_result"]["value"] if "scale_result" in sc else None,
            "scalars": scal, "scale_result_applied": "scale_result" in sc and scale_result_applies(df, out),
            "c_given": C is not None, "M": M, "N": N, "K": K,
            "transa": args.transa, "transb": args.transb, "out_fmt": get_format(out).name,
            "bits": args.bits, "reading": ran.get("reading"), "inputs": {"A": args.a, "B": args.b, "C": args.c},
            "read_as": {k: _reading(x, f, args.bits) for k, (x, f) in reads.items()}}
    text = json.dumps(side, indent=1) + "\n"
    with atomic_open(args.output, "wb", gz=False) as fh:
        np.save(fh, D, allow_pickle=False)
    with atomic_open(args.output + ".json", "w", gz=False) as fh:
        fh.write(text)
    notes = [f"  {k} {v['given']!r} -> {v['value']!r} ({v['fmt']}, {v['bits']}, rounded to nearest even)"
             for k, v in scal.items() if v["rounded"]]
    notes += [f"  {k}: {_reading(x, f, args.bits)}" for k, (x, f) in reads.items() if x.dtype.kind == "V"]
    if "scale_result" in sc and not side["scale_result_applied"]:
        notes.append(f"  scale_result not applied: the dataflow applies it to "
                     f"{'no output' if df.scale_result == 'none' else 'FP8 outputs only'}, D is {side['out_fmt']}")
    what = "" if m.op in INT_OPS else f"dataflow {df.text()}: "
    print(f"{m.id}: D ({M}x{N}, K={K}, {side['out_fmt']}) in {secs:.2f} s "
          f"({M * N * K / max(secs, 1e-9) / 1e6:.0f} M MAC/s, {ran.get('reading', 'no')} reading) -> {args.output} (+ .json)\n"
          f"  {what}{describe(m, df)}" + "".join("\n" + n for n in notes), file=sys.stderr)
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
    p.add_argument("--alpha", type=float, default=1.0, help="scale of A*B, a value of the epilogue format "
                   "(default 1)")
    p.add_argument("--beta", type=float, default=1.0, help="scale of C, a value of the epilogue format (default 1)")
    p.add_argument("--scale-a", type=float, default=None, help="fp32 per-tensor scale of A, rounded to fp32 "
                   "(nearest even, as torch) and stated in the output (dataflows with "
                   "alpha_from_scales, e.g. the cuBLASLt FP8 profiles: alpha = RN(scale_a*scale_b))")
    p.add_argument("--scale-b", type=float, default=None, help="fp32 per-tensor scale of B")
    p.add_argument("--scale-result", type=float, default=None, help="scale of D before FP8 outputs' saturation "
                   "(rounded to the epilogue format, nearest even)")
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
