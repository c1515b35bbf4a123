"""``mmaprobe distinguish`` / ``equivalent``: solver queries for inputs on which two models differ,
or a proof that they agree, and the printing and vector files of their answers.

Exit status: 0 answer found (a vector, or an equivalence proof for ``equivalent``); 1 the answer
is the other one (``distinguish``: the models are equivalent; ``equivalent``: a counterexample);
2 user error; 3 no answer (solver timeout: ``unknown: timeout after S s``, or every solver
crashed); 4 the twin contradicts a solver (a bug, never a result).
"""

from __future__ import annotations

import sys

from queries.distinguish import SOLVER_CHOICES, Constraints, QueryResult, distinguish, equivalent
from queries.distinguish.vectors import vector_file
from smtmodel.catalog import unvalidated_ids
from smtmodel.formats import get_format
from smtmodel.fp.classify import value_text
from smtmodel.limits import COUNT_MAX, check_at_most, check_positive, check_solver_k
from smtmodel.vectors import write_vectors

from ..args import add_exp_ranges, add_k, add_output, add_solver
from ..errors import EXIT_OTHER, EXIT_UNKNOWN, CliError, error


# ---- printing -----------------------------------------------------------------------------------

def print_vector(res: QueryResult, i: int, vec, out=None) -> None:
    out = out or sys.stdout
    fi, fc, fo = (get_format(f) for f in res.formats)
    fa, fb = (get_format(f) for f in (res.operand_fmts or (fi.name, fi.name)))
    lvl = f"  [simple level {vec.level}]" if vec.level else ""
    print(f"vector {i}:{lvl}", file=out)
    for name, xs, f in (("a", vec.a, fa), ("b", vec.b, fb)):
        print(f"  {name} = [{', '.join(f.hex(x) for x in xs)}]", file=out)
        print(f"      = [{', '.join(value_text(x, f) for x in xs)}]", file=out)
    print(f"  c = {fc.hex(vec.c)} = {value_text(vec.c, fc)}", file=out)
    if vec.a_scale is not None:
        fs = get_format(res.scales[0])
        for name, xs in (("a_scale", vec.a_scale), ("b_scale", vec.b_scale)):
            print(f"  {name} = [{', '.join(fs.hex(x) for x in xs)}] = [{', '.join(value_text(x, fs) for x in xs)}]",
                  file=out)
    for mid, d in vec.d.items():
        print(f"  d[{mid}] = {fo.hex(d)} = {value_text(d, fo)}", file=out)


# ---- arguments ----------------------------------------------------------------------------------

def add_query_args(s, timeout=60.0) -> None:
    """``k``, solver and time limit, ``--smt2``, and the input constraints of a query."""
    add_k(s, help="products per case (default: the larger block size)")
    add_solver(s, SOLVER_CHOICES, "portfolio", timeout,
               help="solver (default: portfolio, racing bitwuzla and z3 (+cvc5 with >= 3 CPUs))")
    s.add_argument("--smt2", metavar="FILE", help="also write the query as SMT-LIB2 text")
    g = s.add_argument_group("input constraints")
    g.add_argument("--finite", action="store_true", help="no infinities or NaNs among the inputs")
    g.add_argument("--no-subnormals", action="store_true", help="inputs normal or zero")
    add_exp_ranges(g)
    g.add_argument("--fix", action="append", default=[], metavar="NAME=BITS",
                   help="fix an input to a raw pattern, e.g. a0=0x3c00 or c=0 (repeatable)")
    g.add_argument("--a-signs", help="sign pattern of a: one of +-? per entry (or one for all)")
    g.add_argument("--b-signs", help="sign pattern of b")
    g.add_argument("--c-sign", choices=("+", "-", "?"))
    g.add_argument("--c-zero", action="store_true", help="c = +0")


def add_vector_args(s) -> None:
    """How many vectors, how readable, and the vector file they go to."""
    s.add_argument("--simple", action="store_true", help="prefer readable vectors (powers of two, few bits)")
    s.add_argument("--count", type=int, default=1, help="number of distinct vectors (default 1)")
    add_output(s, help="vector file to write (JSON Lines, spec/vectors.md)")


def constraints_from_args(args) -> Constraints:
    fixed = []
    for item in args.fix:
        name, eq, val = item.partition("=")
        try:
            fixed.append((name.strip(), int(val, 0)))
        except ValueError:
            raise CliError(f"--fix {item!r}: use NAME=BITS, e.g. a0=0x3c00") from None
        if not eq:
            raise CliError(f"--fix {item!r}: use NAME=BITS, e.g. a0=0x3c00")
    return Constraints(finite=args.finite, no_subnormals=args.no_subnormals, exp_range=args.exp_range,
                       c_exp_range=args.c_exp_range, fixed=tuple(fixed), a_signs=args.a_signs,
                       b_signs=args.b_signs, c_sign=args.c_sign, c_zero=args.c_zero)


def proof_note(res: QueryResult) -> str:
    """Who proved an unsat answer: the solver now, or the proof cache (``--no-cache`` re-proves)."""
    if res.cached:
        return f"{res.cached}; query answered in {res.seconds:.2f} s from the proof cache (--no-cache proves it again)"
    return f"proved by {res.solver} in {res.seconds:.2f} s"


def _no_answer(res: QueryResult) -> int:
    if res.status == "error":
        error(f"no solver answered: {res.reason}")
    else:
        print(f"unknown: {res.reason or 'no answer'}", file=sys.stderr)
    return EXIT_UNKNOWN


# ---- commands -----------------------------------------------------------------------------------

def cmd_distinguish(args) -> int:
    if args.k is not None:
        check_solver_k("--k", args.k)
    check_positive("--count", args.count)
    check_at_most("--count", args.count, COUNT_MAX, "one solver call per vector")
    res = distinguish(args.model_a, args.model_b, k=args.k, solver=args.solver, timeout=args.timeout,
                      constraints=constraints_from_args(args), simple=args.simple, count=args.count,
                      smt2=args.smt2)
    if args.smt2:
        print(f"wrote SMT-LIB2 query to {args.smt2}", file=sys.stderr)
    return report_distinguish(res, args.output)


def report_distinguish(res: QueryResult, output: str | None, tool="mmaprobe distinguish", note="") -> int:
    a_id, b_id = res.models
    from .catalog import note_unvalidated
    note_unvalidated(unvalidated_ids([a_id, b_id]), sys.stderr)
    if res.status == "sat":
        print(f"{a_id} vs {b_id}, k={res.k}: {len(res.vectors)} distinguishing vector(s) "
              f"found by {res.solver} in {res.seconds:.2f} s (confirmed by the twin)")
        for i, vec in enumerate(res.vectors):
            print_vector(res, i, vec)
        if res.reason:
            print(f"note: {res.reason}", file=sys.stderr)
        if output:
            write_vectors(output, vector_file(res, tool, note))
            print(f"wrote {output}", file=sys.stderr)
        return 0
    if res.status == "unsat":
        print(f"no distinguishing vector: {a_id} and {b_id} are equivalent for k={res.k} "
              f"({proof_note(res)}; constraints: {res.constraints.describe()})")
        return EXIT_OTHER
    return _no_answer(res)


def cmd_equivalent(args) -> int:
    if args.k is not None:
        check_solver_k("--k", args.k)
    res = equivalent(args.model_a, args.model_b, k=args.k, solver=args.solver, timeout=args.timeout,
                     constraints=constraints_from_args(args), smt2=args.smt2)
    if res.status == "unsat":
        print(f"equivalent ({proof_note(res)}; k={res.k}, constraints: {res.constraints.describe()})")
        return 0
    if res.status == "sat":
        print(f"not equivalent: counterexample found by {res.solver} in {res.seconds:.2f} s (confirmed by the twin)")
        print_vector(res, 0, res.vectors[0])
        if args.output:
            write_vectors(args.output, vector_file(res, "mmaprobe equivalent"))
            print(f"wrote {args.output}", file=sys.stderr)
        return EXIT_OTHER
    return _no_answer(res)


def register(sub) -> None:
    s = sub.add_parser("distinguish", help="find inputs on which two models differ (solver query)")
    s.add_argument("model_a")
    s.add_argument("model_b")
    add_query_args(s)
    add_vector_args(s)
    s.set_defaults(func=cmd_distinguish)

    s = sub.add_parser("equivalent", help="prove two models equal, or give a counterexample")
    s.add_argument("model_a")
    s.add_argument("model_b")
    add_query_args(s)
    add_output(s, help="write a counterexample here")
    s.set_defaults(func=cmd_equivalent)
