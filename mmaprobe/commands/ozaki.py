"""``mmaprobe scheme ozaki-gemm|ozaki-prove|ozaki-table``: the Ozaki schemes (FP64 GEMM on
integer tensor cores; docs/schemes.md, "Ozaki schemes")."""

from __future__ import annotations

import time
from dataclasses import replace
from fractions import Fraction

import numpy as np

from queries.schemes.ozaki import (COMPARE, check_bound, comparison, fp64_claim_memory, ozaki1_gamma,
                                   prove_no_overflow, prove_slicing, table_text, worst_witness)
from smtmodel.io import NpyError, atomic_open, read_npy
from smtmodel.limits import check_memory
from smtmodel.schemes.ozaki import OZAKI, gemm, gemm_memory, get_ozaki, with_moduli

from ..args import add_output
from ..errors import EXIT_OTHER, EXIT_UNKNOWN, CliError
from ..io import declare_outputs, write_json


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x]
    except ValueError:
        raise CliError(f"{text!r}: give comma-separated integers") from None


SPREAD_MAX = 1000


def _load(path, what):
    try:
        x = read_npy(path)
    except NpyError as exc:
        raise CliError(f"--{what} {exc}") from None
    if x.ndim != 2:
        raise CliError(f"--{what} {path}: need a matrix, got shape {x.shape}")
    if x.dtype.kind not in "fiub":
        raise CliError(f"--{what} {path}: need real numbers, got dtype {x.dtype}")
    return x.astype(np.float64)


def ozaki_list() -> list[str]:
    return [f"{s.name:<22} [{s.imma}] {s.description}\n{'':<22}   {s.describe()}  ({s.source})" for s in OZAKI.values()]


def cmd_ozaki_gemm(args) -> int:
    s = get_ozaki(args.scheme)
    if args.beta_bits is not None:
        s = replace(s, beta=args.beta_bits, name=f"{s.name}:beta={args.beta_bits}")
    if args.moduli is not None:
        s = with_moduli(s, args.moduli)
    if args.a or args.b:
        if not (args.a and args.b):
            raise CliError("--a and --b go together")
        A, B = _load(args.a, "a"), _load(args.b, "b")
    else:
        for opt in ("m", "n", "k"):
            if getattr(args, opt) < 1:
                raise CliError(f"--{opt} {getattr(args, opt)}: give a size >= 1")
        if not 0 <= args.spread <= SPREAD_MAX:
            raise CliError(f"--spread {args.spread}: give 0..{SPREAD_MAX} (inputs are normal draws times 2^e, "
                           f"|e| <= spread; fp64 ends at 2^1024)")
        s.check(args.k)                    # refuse before drawing the matrices
        check_memory(gemm_memory(s, args.m, args.n, args.k),
                     f"an Ozaki GEMM of {args.m}x{args.k} by {args.k}x{args.n} ({s.name})", "lower --m, --n or --k")
        rng = np.random.default_rng(args.seed)
        A = rng.standard_normal((args.m, args.k)) * np.exp2(rng.integers(-args.spread, args.spread + 1, (args.m, args.k)))
        B = rng.standard_normal((args.k, args.n)) * np.exp2(rng.integers(-args.spread, args.spread + 1, (args.k, args.n)))
    C = _load(args.c, "c") if args.c else None
    if args.a:
        check_memory(gemm_memory(s, A.shape[0], B.shape[-1], A.shape[-1]),
                     f"an Ozaki GEMM of {'x'.join(map(str, A.shape))} by {'x'.join(map(str, B.shape))} ({s.name})",
                     "give smaller matrices")
    if args.sample < 1:
        raise CliError(f"--sample {args.sample}: compare at least 1 entry")
    t0 = time.perf_counter()
    D = gemm(s, A, B, C, alpha=args.alpha, beta=args.beta)
    t_emu = time.perf_counter() - t0
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):         # numpy's product may overflow where the exact one does (refused below)
        R = args.alpha * (A @ B) + (args.beta * C if C is not None and args.beta else 0)
    t_np = time.perf_counter() - t0
    rng = np.random.default_rng(args.seed + 1)
    M, N = D.shape
    idx = [(int(i), int(j)) for i, j in zip(rng.integers(0, M, args.sample), rng.integers(0, N, args.sample))]
    ulp_e, ulp_n, rn_e, rn_n = [], [], 0, 0
    for i, j in idx:
        ex = Fraction(args.alpha) * sum(Fraction(A[i, t]) * Fraction(B[t, j]) for t in range(A.shape[1]))
        if C is not None and args.beta:
            ex += Fraction(args.beta) * Fraction(C[i, j])
        try:
            rn = float(ex)
        except OverflowError:
            raise CliError(f"the exact value of D[{i},{j}] overflows fp64: the inputs are too large for an "
                           f"fp64 GEMM (lower --spread, or scale A and B)") from None
        sp = Fraction(float(np.spacing(abs(rn)))) if rn != 0 else Fraction(2) ** -1074
        ulp_e.append(float(abs(Fraction(D[i, j]) - ex) / sp))
        ulp_n.append(float(abs(Fraction(R[i, j]) - ex) / sp))
        rn_e += D[i, j] == rn
        rn_n += R[i, j] == rn
    with np.errstate(all="ignore"):
        diff = float(np.max(np.abs(D - R)))
    res = {"scheme": s.name, "shape": [M, A.shape[1], N], "alpha": args.alpha, "beta": args.beta,
           "seconds_twin": t_emu, "seconds_numpy": t_np, "max_abs_diff_vs_numpy": diff,
           "equal_to_numpy": float(np.mean(D == R)), "sample": len(idx),
           "max_ulp_vs_exact": max(ulp_e), "numpy_max_ulp_vs_exact": max(ulp_n),
           "correctly_rounded": rn_e / len(idx), "numpy_correctly_rounded": rn_n / len(idx),
           "numpy_order": "numpy.matmul -> the installed BLAS dgemm (blocked FMA order, not specified by numpy)"}
    print(f"{s.name}: {M}x{A.shape[1]}x{N}, twin {t_emu:.2f} s, numpy {t_np:.3f} s")
    print(f"  vs numpy float64 GEMM: equal on {res['equal_to_numpy']:.1%}, max |diff| {res['max_abs_diff_vs_numpy']:.3g}")
    print(f"  vs exact on {len(idx)} sampled entries: max {res['max_ulp_vs_exact']:.3g} ulp, correctly rounded "
          f"{res['correctly_rounded']:.1%} (numpy: max {res['numpy_max_ulp_vs_exact']:.3g} ulp, "
          f"{res['numpy_correctly_rounded']:.1%})")
    if args.save:
        with atomic_open(args.save, "wb", gz=False) as fh:
            np.save(fh, D)
    if args.output:
        write_json(args.output, res)
    return 0


def cmd_ozaki_prove(args) -> int:
    out = {"overflow": [], "slicing": [], "bound": []}
    r = prove_no_overflow(args.rule, args.k_max, args.solver, args.timeout, args.model)
    print("\n".join(r.lines()))
    out["overflow"].append({"rule": r.rule, "k_max": r.k_max, "holds": r.holds, "smallest_k": r.smallest_k,
                            "twin": r.twin_confirms, "lemmas": [vars(x) for x in r.lemmas]})
    decided = all(x.status != "unknown" for x in r.lemmas)
    for sl in _ints(args.slices):
        rep = prove_slicing(sl, args.slice_beta, args.solver, args.timeout)
        print(rep.line())
        out["slicing"].append({"slices": sl, "beta": args.slice_beta, **vars(rep.lemma)})
        decided &= rep.lemma.status != "unknown"
    for sl in _ints(args.slices):
        for k in _ints(args.bound_k):
            b = check_bound(get_ozaki(f"ozaki1-s{sl}"), k)
            print(f"bound ozaki1-s{sl} k={k}: |err| <= {b['gamma']:.3e}·k·U_A·U_B (formula); twin reaches "
                  f"{b['seen']:.3e} ({b['ratio']:.2f} of it){'' if b['holds'] else '  EXCEEDED'}")
            out["bound"].append({k2: (float(v) if isinstance(v, Fraction) else v) for k2, v in b.items()})
    out["worst"] = []
    for sl in _ints(args.slices):
        for k in _ints(args.bound_k):
            w = worst_witness(get_ozaki(f"ozaki1-s{sl}"), k, n=args.search, solver=args.solver, timeout=args.timeout)
            print(w.line())
            out["worst"].append({**{f: getattr(w, f) for f in ("scheme", "k", "a", "b", "d", "ratio_of_gamma",
                                                              "searched")},
                                 "solver": vars(w.solver) if w.solver else None})
            decided &= w.solver is None or w.solver.status != "unknown"
    if args.output:
        write_json(args.output, out)
    if not decided:
        return EXIT_UNKNOWN
    return EXIT_OTHER if r.smallest_k else 0        # a refuted rule: its witness is the answer


def cmd_ozaki_table(args) -> int:
    names = args.schemes or list(COMPARE)
    for nm in names:
        if nm not in ("oy-tf32", "3xtf32", "fp64-fma", "numpy"):
            if nm.partition(":")[0] not in OZAKI:
                raise CliError(f"unknown scheme {nm!r} for the table; Ozaki names (GEMMul8's with ':moduli=N'), "
                               "oy-tf32, 3xtf32, fp64-fma, numpy")
            get_ozaki(nm)
    ks = _ints(args.ks)
    if not ks or any(k < 1 for k in ks) or args.n < 1:
        raise CliError("--ks and --n must be positive")
    check_memory(fp64_claim_memory(None, ks, args.n), f"ozaki-table with {args.n}x{args.n} outputs at K = {max(ks)}",
                 "lower --n or --ks")
    rows = comparison(ks, _ints(args.spreads), args.n, args.seed, names)
    print("max componentwise relative error |D - AB| / (|A||B|), per K and exponent spread ±s:")
    print(table_text(rows, "max"))
    print("\nmedian:")
    print(table_text(rows, "median"))
    print("\nOzaki-I error formula γ (|err| <= γ·k·U_A·U_B), β from ozIMMU's rule:")
    for k in _ints(args.ks):
        print(f"  K={k}: " + ", ".join(f"s={s}: {float(ozaki1_gamma(get_ozaki(f'ozaki1-s{s}'), k)):.2e}"
                                       for s in range(3, 9)))
    if args.output:
        write_json(args.output, {"rows": rows})
    return 0


def cmd_ozaki_claim(args) -> int:
    from queries.schemes.ozaki import FP64_FAMILIES, fp64_claim, fp64_claim_memory
    from smtmodel.schemes.ozaki import Dynamic, mantissa_bits_to_slices
    name, dyn = args.scheme, None
    if args.mode == "dynamic":
        if name or args.mantissa_bits is not None:
            raise CliError("--mode dynamic takes no scheme and no --mantissa-bits (DYNAMIC picks the slices)")
        dflt = Dynamic()
        pick = lambda v, d: d if v is None else v  # noqa: E731
        dyn = Dynamic(pad=pick(args.esc_pad_given, dflt.pad), block=pick(args.esc_block_given, dflt.block),
                      offset=pick(args.offset_given, dflt.offset), max_bits=pick(args.max_bits_given, dflt.max_bits),
                      strategy=pick(args.strategy_given, dflt.strategy))
        dyn.check()
    else:
        if any(v is not None for v in (args.esc_pad_given, args.esc_block_given, args.offset_given,
                                       args.max_bits_given, args.strategy_given)):
            raise CliError("--esc-pad, --esc-block, --offset, --max-bits and --strategy belong to --mode dynamic "
                           "(a non-zero mantissa bit offset requires DYNAMIC mantissa control, as cuSOLVER's "
                           "documentation of the same setting states)")
        if args.mantissa_bits is not None:
            if name:
                raise CliError("give a scheme or --mantissa-bits, not both")
            name = f"ozaki-unsigned-s{mantissa_bits_to_slices(args.mantissa_bits)}"
        if not name:
            raise CliError("give a scheme, --mantissa-bits N or --mode dynamic")
        get_ozaki(name)
    ks = _ints(args.ks)
    fams = args.family or list(FP64_FAMILIES)
    if not ks or any(k < 1 for k in ks) or args.n < 1:
        raise CliError("--ks and --n must be positive")
    for f in fams:
        if f not in FP64_FAMILIES:
            raise CliError(f"unknown family {f!r}; one of {', '.join(FP64_FAMILIES)}")
    from smtmodel.schemes.ozaki import unsigned_k_max
    for k in ks:
        if dyn is None:
            get_ozaki(name).check(k)
        elif k > unsigned_k_max(8):
            raise CliError(f"K={k} exceeds the exactness limit {unsigned_k_max(8)} of 8 unsigned slices")
    check_memory(fp64_claim_memory(name, ks, args.n), f"ozaki-claim with {args.n}x{args.n} outputs at K = {max(ks)}",
                 "lower --n or --ks")
    r = fp64_claim(name, ks, fams, args.n, args.seed, dynamic=dyn)
    what = (f"DYNAMIC (ESC block {dyn.block}, pad {dyn.pad}, offset {dyn.offset}, maximum {dyn.max_bits} bits)"
            if dyn else name)
    print(f"{what} against native FP64 (fp64 FMA chain in K order; blocked: k-blocks of 32 from +0 added RN; "
          f"NumPy BLAS dgemm), per element against the exact product ({args.n}x{args.n} outputs per K and family)")
    print(f"{'K':>4} {'family':<9} {'path':<8} {'ESC':>4} {'S':>2} {'worse':>6} {'better':>7} {'worse/blk':>9} "
          f"{'worse/BLAS':>10} {'max rel emul':>13} {'max rel FMA':>12}")
    for row in r["rows"]:
        esc = "-" if row["esc"] is None else row["esc"]
        sl = "-" if row["slices"] is None else row["slices"]
        print(f"{row['k']:>4} {row['family']:<9} {row['path']:<8} {esc:>4} {sl:>2} {row['worse_than_fma']:>6} "
              f"{row['better_than_fma']:>7} {row['worse_than_blocked']:>9} {row['worse_than_numpy']:>10} "
              f"{row['max_rel_emulated']:>13.3g} {row['max_rel_fma']:>12.3g}")
    for key, label in (("witness", "less accurate than the FMA chain"),
                       ("witness_both", "less accurate than the chain and the blocked order")):
        w = r[key]
        if w:
            print(f"first witness {label}: K={w['k']} ({w['family']}) a={w['a']} b={w['b']}: {w['emulated']} "
                  f"against {w['fma_chain']} / {w['blocked']} (errors {w['err_emulated']:.4g}, "
                  f"{w['err_fma_chain']:.4g}, {w['err_blocked']:.4g})")
        else:
            print(f"no element searched is {label}")
    if args.output:
        write_json(args.output, r)
    return 0


def register_ozaki(ss) -> None:
    s = ss.add_parser("ozaki-gemm", help="emulate an FP64 GEMM with an Ozaki scheme (the twin); compare with "
                                         "numpy float64 and the exact product")
    s.add_argument("scheme", help="an Ozaki scheme (mmaprobe scheme list)")
    s.add_argument("--m", type=int, default=64)
    s.add_argument("--n", type=int, default=64)
    s.add_argument("--k", type=int, default=256)
    s.add_argument("--spread", type=int, default=4, help="random inputs: exponents in ±spread (default 4)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--a", help="A from a .npy file (float64)")
    s.add_argument("--b", help="B from a .npy file")
    s.add_argument("--c", help="C from a .npy file")
    s.add_argument("--alpha", type=float, default=1.0)
    s.add_argument("--beta", type=float, default=0.0)
    s.add_argument("--beta-bits", type=int, help="override the bits per slice (β) -- refused where int32 overflows")
    s.add_argument("--moduli", type=int, help="GEMMul8 schemes: the number of moduli (2..20; also "
                                              "'ozaki2-gemmul8-fast:moduli=N')")
    s.add_argument("--sample", type=int, default=64, help="entries compared with the exact product (default 64)")
    s.add_argument("--save", help="write D as .npy")
    declare_outputs(s, save="file")
    add_output(s, help="write the figures as JSON")
    s.set_defaults(func=cmd_ozaki_gemm)

    s = ss.add_parser("ozaki-prove", help="prove int32 no-overflow for a β rule (or find the smallest k that "
                                          "overflows), the slicing lemma, and check the error formula")
    s.add_argument("--rule", default="ozimmu", help="ozimmu (min(7, (31 - ceil(log2 k)) // 2)) or a fixed β 1..7")
    s.add_argument("--k-max", type=int, default=(1 << 29) - 1)
    s.add_argument("--model", default="ampere-s8-s32", help="integer MMA model of lemma (C)")
    s.add_argument("--slices", default="3,8,18", help="slice counts for the slicing lemma and the bound check")
    s.add_argument("--slice-beta", type=int, default=7)
    s.add_argument("--bound-k", default="16", help="K values of the bound check and the worst-case search")
    s.add_argument("--search", type=int, default=128, help="dot products per input kind in the worst-case search")
    s.add_argument("--solver", default="bitwuzla", choices=("bitwuzla", "z3", "cvc5"))
    s.add_argument("--timeout", type=float, default=60)
    add_output(s, help="write the results as JSON")
    s.set_defaults(func=cmd_ozaki_prove)

    s = ss.add_parser("ozaki-claim", help="check 'as accurate as native FP64' element by element (an Ozaki scheme, "
                                          "or cuBLAS's FIXED mantissa control with --mantissa-bits N)")
    s.add_argument("scheme", nargs="?", help="an Ozaki scheme (mmaprobe scheme list)")
    s.add_argument("--mantissa-bits", type=int, help="FIXED mode with N mantissa bits: unsigned slicing with "
                                                     "ceil((N+1)/8) slices (1..63)")
    s.add_argument("--mode", choices=("fixed", "dynamic"), default="fixed",
                   help="dynamic: cuBLAS's DYNAMIC mantissa control (ESC estimator, fallback to native FP64)")
    s.add_argument("--esc-pad", dest="esc_pad_given", type=int,
                   help="dynamic: bits beyond 53 + ESC (0: NVIDIA's count as the blog quotes it, 1: the Z3/Lean "
                        "model's width; default 1)")
    s.add_argument("--esc-block", dest="esc_block_given", type=int,
                   help="dynamic: k-block of the coarsened ESC estimate (default 1: the exact ESC)")
    s.add_argument("--offset", dest="offset_given", type=int, help="dynamic: mantissa bit offset (default 0)")
    s.add_argument("--max-bits", dest="max_bits_given", type=int,
                   help="dynamic: maximum mantissa bit count before native FP64 (1..63, default 63)")
    s.add_argument("--strategy", dest="strategy_given", choices=("eager", "performant"),
                   help="dynamic: CUBLAS_EMULATION_STRATEGY (default eager, the one modelled; performant's heuristic "
                        "is not public and is refused)")
    s.add_argument("--ks", default="1,2,4,16,64")
    s.add_argument("--family", action="append", help="input family (repeatable; default all: uniform, wide, span, "
                                                      "cancel, threshold, trunc)")
    s.add_argument("--n", type=int, default=8, help="n x n outputs per K and family (default 8)")
    s.add_argument("--seed", type=int, default=0)
    add_output(s, help="write the result as JSON")
    s.set_defaults(func=cmd_ozaki_claim)

    s = ss.add_parser("ozaki-table", help="error of Ozaki I/II vs O-Y tf32, 3xTF32, fp64 FMA chain per K and spread")
    s.add_argument("--ks", default="16,64,256")
    s.add_argument("--spreads", default="0,8,16")
    s.add_argument("--n", type=int, default=8, help="n x n outputs per point (default 8)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--schemes", nargs="+", help=f"default: {' '.join(COMPARE)}")
    add_output(s, help="write the rows as JSON")
    s.set_defaults(func=cmd_ozaki_table)


__all__ = ["register_ozaki", "ozaki_list"]
