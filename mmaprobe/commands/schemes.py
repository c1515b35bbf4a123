"""``mmaprobe scheme list|compare|worst|bound|stats|table5|ozaki-*``: error-compensated GEMM schemes
(seed 002; see docs/schemes.md)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from queries.schemes.bound import compose
from queries.schemes.stats import compatible_models, stats, stats_memory
from queries.schemes import InputRange, table5, witness, worst
from smtmodel.schemes import SchemeError, all_schemes
from smtmodel.limits import check_memory, check_positive, check_solver_k
from smtmodel.solve import SOLVER_CHOICES

from ..args import add_exp_ranges, add_k, add_model, add_output, add_solver
from ..errors import EXIT_UNKNOWN
from ..io import write_json
from .ozaki import ozaki_list, register_ozaki



def _input_range(args):
    return InputRange(exp_range=args.exp_range, c_exp_range=args.c_exp_range,
                      c_zero=args.c_zero, allow_zero=not args.no_zero, mant_bits=args.mant_bits,
                      nonneg=args.nonneg)


def _write(path, obj) -> None:
    if path:
        write_json(path, obj)


# ---- scheme list / compare / worst / stats / table5 -----------------------------------------------

def cmd_list(args) -> int:
    for s in all_schemes():
        print(f"{s.name:<18} [{s.model or 'no tensor core'}] {s.description}")
        print(f"{'':<18}   {s.summary()}  ({s.source})")
    print("\nOzaki schemes (FP64 GEMM on integer tensor cores; scheme ozaki-gemm|ozaki-prove|ozaki-table):")
    for line in ozaki_list():
        print(line)
    return 0


def cmd_compare(args) -> int:
    refuse_ozaki(args.x, args.y)
    check_solver_k("--k", args.k)
    rng = _input_range(args)
    stages = (InputRange(**{**asdict(rng), "mant_bits": 10}),) if not args.no_stage and rng.mant_bits is None else ()
    res = witness(args.x, args.y, args.k, args.model_x or args.model, args.model_y or args.model, rng,
                  args.solver, args.timeout, twin_first=not args.pure_solver, stages=stages)
    print(res.text())
    _write(args.output, res.to_dict())
    return 0 if res.status != "unknown" else EXIT_UNKNOWN


def cmd_worst(args) -> int:
    refuse_ozaki(args.x)
    check_solver_k("--k", args.k)
    res = worst(args.x, args.k, args.model, _input_range(args), args.solver, args.timeout, args.metric,
                start=args.start, steps=args.steps, budget=args.budget,
                log=lambda s: print(s, file=sys.stderr, flush=True))
    print(res.text())
    _write(args.output, res.to_dict())
    return 0


def cmd_scheme_bound(args) -> int:
    refuse_ozaki(args.x)
    check_solver_k("--k", args.k)
    r = compose(args.x, args.k, args.model, _input_range(args), args.solver, args.timeout)
    print(r.text())
    for name, v in r.parts.items():
        print(f"  {name}: {v}")
    _write(args.output, asdict(r))
    return 0


def cmd_stats(args) -> int:
    refuse_ozaki(args.x)
    for opt in ("k", "m", "n"):
        check_positive(f"--{opt}", getattr(args, opt))
    check_memory(stats_memory(args.m, args.n, args.k), f"scheme stats of {args.m}x{args.k} by {args.k}x{args.n}",
                 "lower --m, --n or --k")
    models = [args.model] if args.model else compatible_models(args.x)
    rows = []
    print(f"{'scheme@model':<40} {'mean ulp':>10} {'median':>8} {'max ulp':>10} {'exact %':>8} {'max rel':>10}")
    for mid in models:
        r = stats(args.x, mid, args.k, args.m, args.n, args.seed, args.dist)
        rows.append(r)
        print(f"{r['scheme']:<40} {r['mean_ulp']:>10.4f} {r['median_ulp']:>8.3f} {r['max_ulp']:>10.3f} "
              f"{100 * r['exact_fraction']:>7.1f}% {r['max_rel']:>10.3e}")
    _write(args.output, rows)
    return 0


def cmd_table5(args) -> int:
    r = table5()
    print(f"seed 002 Table 5 inputs: {r['inputs']}")
    print(f"exact c + sum a_k b_k = {r['exact']} = {r['exact_float']:.17g}  (published 'True': {r['published']['True']})")
    for row in r["rows"]:
        print(f"  {row['scheme']:<42} d = {row['d']} = {row['d_value']:.17g}  err = {row['error']} "
              f"({row['error_ulps']:.4f} ulp)")
    _write(args.output, r)
    return 0


def refuse_ozaki(*names: str, use: str = "scheme ozaki-gemm, ozaki-claim or ozaki-table") -> None:
    """An Ozaki scheme (FP64 emulation on integer tensor cores) named where a tensor-core scheme
    is expected: one line saying which command takes it."""
    from smtmodel.schemes.ozaki import OZAKI
    for name in names:
        if name and name.partition(":")[0] in OZAKI:
            raise SchemeError(f"{name} is an Ozaki scheme (FP64 emulation): use mmaprobe {use.format(name=name)}")


def cmd_claim(args) -> int:
    from queries.schemes.claims import FAMILIES, compare, compare_memory
    refuse_ozaki(args.x, args.y, use="scheme ozaki-claim {name} (as accurate as native FP64)")
    fams = args.family or list(FAMILIES)
    bad = [f for f in fams if f not in FAMILIES]
    if bad:
        raise SchemeError(f"unknown input family {bad[0]!r}; one of {', '.join(FAMILIES)}")
    if any(k < 1 for k in args.ks) or args.n < 1:
        raise SchemeError("--ks and --n must be positive")
    check_memory(compare_memory(args.ks, args.n), f"scheme claim with --n {args.n} rows at K = {max(args.ks)}",
                 "lower --n or --ks")
    r = compare(args.x, args.y, tuple(args.ks), fams, args.n, args.seed, args.model_x, args.model_y)
    print(f"{r['x']} against {r['y']}, per element against the exact result ({args.n} rows per K and family)")
    print(f"{'K':>4} {'family':<8} {'X worse':>8} {'X better':>9} {'max ulp X':>10} {'max ulp Y':>10} "
          f"{'mean X':>8} {'mean Y':>8}")
    for row in r["rows"]:
        print(f"{row['k']:>4} {row['family']:<8} {row['x_worse']:>8} {row['x_better']:>9} {row['max_ulp_x']:>10.4g} "
              f"{row['max_ulp_y']:>10.4g} {row['mean_ulp_x']:>8.3f} {row['mean_ulp_y']:>8.3f}")
    w = r["witness"]
    if w:
        print(f"first witness of X less accurate: K={w['k']} ({w['family']}) a={w['a']} b={w['b']} c={w['c']}: "
              f"{w['err_x_ulp']:.6g} ulp against {w['err_y_ulp']:.6g}")
    else:
        print("no input searched has X less accurate than Y")
    _write(args.output, r)
    return 0


def cmd_table(args) -> int:
    from queries.schemes.claims import table
    names = args.schemes or [s.name for s in all_schemes()]
    if args.k < 1 or args.n < 1:
        raise SchemeError("--k and --n must be positive")
    if args.search_steps < 0:
        raise SchemeError("--search-steps must be >= 0")
    from queries.schemes.claims import compare_memory
    check_memory(compare_memory([args.k], args.n), f"scheme table with --n {args.n} rows at K = {args.k}",
                 "lower --n or --k")
    rows = table(names, args.k, args.n, args.seed, tuple(args.exp_range), args.solver, args.timeout,
                 args.search_steps, log=lambda t: print(t, file=sys.stderr, flush=True))
    print(f"K = {args.k}; proved: composition over exponents in {list(args.exp_range)}; found: largest "
          f"|err| / (|c| + sum |a b|) of the twin on {args.n} rows each of uniform, wide, cancel, ties; "
          f"searched: {args.search_steps} rounds of mutation within the exponent range")
    print("| scheme | TC products | proved bound | proved bits | found | found bits | searched | searched / proved |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        pb = f"{r['proved_comp']:.3g} | {r['proved_bits']:.1f}" if r["proved_comp"] else f"refused: {r['refused']} | -"
        sr = (f"{r['searched_comp']:.3g} | " + (f"{r['searched_over_proved']:.2f}" if r["searched_over_proved"] else "-")
              if r["searched_comp"] is not None else "- | -")
        print(f"| {r['scheme']} | {r['tc_products']} | {pb} | {r['found_comp']:.3g} | {r['found_bits']:.1f} | {sr} |")
    _write(args.output, rows)
    return 0


def mant_bits_arg(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give an integer 0..23") from None
    if not 0 <= n <= 23:
        raise argparse.ArgumentTypeError(f"{n}: fp32 has 23 fraction bits, give 0..23")
    return n


def _range_args(s) -> None:
    add_exp_ranges(s, default=(-15, 14), what=("a_i, b_i", "c"))
    s.add_argument("--c-zero", action="store_true", help="c = +0")
    s.add_argument("--no-zero", action="store_true", help="exclude zero inputs")
    s.add_argument("--mant-bits", type=mant_bits_arg, help="only the top N (0..23) of fp32's 23 fraction bits")
    s.add_argument("--nonneg", action="store_true", help="non-negative inputs")
    add_solver(s, SOLVER_CHOICES, "bitwuzla", 120, what="each query")
    add_output(s, help="write the result as JSON")


def register(sub) -> None:
    p = sub.add_parser("scheme", help="error-compensated GEMM schemes (Markidis, Ootomo-Yokota, ...)")
    ss = p.add_subparsers(dest="scheme_command", required=True)

    s = ss.add_parser("list", help="list the named schemes")
    s.set_defaults(func=cmd_list)

    s = ss.add_parser("compare", help="witness where scheme X's |error| exceeds Y's (seed 002 Property 5)")
    s.add_argument("x")
    s.add_argument("y")
    add_model(s, help="catalog model for both schemes (default: each scheme's own)")
    s.add_argument("--model-x", help="catalog model for scheme X only")
    s.add_argument("--model-y", help="catalog model for scheme Y only")
    add_k(s, default=4)
    s.add_argument("--pure-solver", action="store_true",
                   help="no twin search first (default: a seeded twin search, its hit confirmed by the solver "
                        "with the inputs fixed; then the solver on the query)")
    s.add_argument("--no-stage", action="store_true",
                   help="do not try fp16-precision inputs first (default: that stage, then the full range)")
    _range_args(s)
    s.set_defaults(func=cmd_compare)

    s = ss.add_parser("worst", help="largest error of a scheme by bisection (>= witness, < proved)")
    s.add_argument("x")
    add_model(s, help="catalog model (default: the scheme's own)")
    add_k(s, default=4)
    s.add_argument("--metric", default="ulp", choices=("ulp", "abs", "rel", "comp"),
                   help="error unit: fp32 ulps of the exact value, absolute, relative, or componentwise "
                        "relative |err| / (|c| + sum |a_k b_k|)")
    s.add_argument("--start", type=float, help="first threshold (default 1 for ulp/abs, 2^-24 for rel/comp)")
    s.add_argument("--steps", type=int, default=8, help="bisection steps (default 8)")
    s.add_argument("--budget", type=float, default=600, help="total seconds")
    _range_args(s)
    s.set_defaults(func=cmd_worst)

    s = ss.add_parser("bound", help="proved upper bound on a scheme's error, by composition of Table 9 lemmas and "
                                    "IEEE rounding bounds (componentwise and absolute)")
    s.add_argument("x")
    add_model(s, help="catalog model (default: the scheme's own)")
    add_k(s, default=4)
    _range_args(s)
    s.set_defaults(func=cmd_scheme_bound, solver="bitwuzla")

    s = ss.add_parser("stats", help="twin error statistics on random matrices, per architecture")
    s.add_argument("x")
    add_model(s, help="one model (default: every compatible architecture)")
    add_k(s, default=64)
    s.add_argument("--m", type=int, default=16)
    s.add_argument("--n", type=int, default=16)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--dist", default="uniform", choices=("uniform", "exp"))
    add_output(s, help="write the result as JSON")
    s.set_defaults(func=cmd_stats)

    s = ss.add_parser("claim", help="check 'X is as accurate as Y' element by element on input families "
                                    "(twin, exact errors); prints the first witness of X less accurate")
    s.add_argument("x")
    s.add_argument("y")
    s.add_argument("--model-x", help="catalog model for X (default: its own)")
    s.add_argument("--model-y", help="catalog model for Y (default: its own)")
    s.add_argument("--ks", type=int, nargs="+", default=[1, 4, 16, 64], help="dot-product lengths (default 1 4 16 64)")
    s.add_argument("--family", action="append", help="input family (repeatable; default all: uniform, wide, "
                                                      "cancel, ties, tiny)")
    s.add_argument("--n", type=int, default=128, help="rows per K and family (default 128)")
    s.add_argument("--seed", type=int, default=0)
    add_output(s, help="write the result as JSON")
    s.set_defaults(func=cmd_claim)

    s = ss.add_parser("table", help="one table across schemes: tensor-core products, proved componentwise bound, "
                                    "largest error found by the twin, both in bits")
    s.add_argument("schemes", nargs="*", help="schemes (default: every named scheme)")
    add_k(s, default=64)
    s.add_argument("--n", type=int, default=32, help="rows per input family (default 32)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--search-steps", type=int, default=10,
                   help="rounds of the twin's mutation search for the worst case (default 10; 0: none)")
    s.add_argument("--exp-range", type=int, nargs=2, default=[-20, 20], metavar=("LO", "HI"),
                   help="exponent range of the proved bound (default -20 20)")
    add_solver(s, SOLVER_CHOICES, "bitwuzla", 120, what="each lemma")
    add_output(s, help="write the rows as JSON")
    s.set_defaults(func=cmd_table)

    s = ss.add_parser("table5", help="evaluate seed 002 Table 5's published inputs")
    add_output(s, help="write the result as JSON")
    s.set_defaults(func=cmd_table5)

    register_ozaki(ss)
