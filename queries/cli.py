"""``mmaprobe distinguish`` / ``equivalent`` (and ``features`` / ``feature`` / ``suite``).

Exit status: 0 answer found (a vector, or an equivalence proof for ``equivalent``); 1 the
answer is the other one (``distinguish``: the models are equivalent; ``equivalent``: a
counterexample); 2 user error (unknown model id, bad option); 3 no answer (solver timeout:
``unknown: timeout after S s``, or every solver crashed); 4 the twin contradicts a solver
(an internal bug, never a result).
"""

from __future__ import annotations

import sys

from mmaprobe.errors import EXIT_USAGE, INTERNAL_ERROR, USER_ERROR, CliError, catch_errors
from smtmodel.formats import bits_to_numpy, get_format
from smtmodel.vectors import VectorFile, make_header, write_vectors

from .distinguish import (SOLVER_CHOICES, Constraints, QueryError, QueryResult, TwinDisagreement,
                          distinguish, equivalent)

EXIT_OTHER, EXIT_UNKNOWN, EXIT_TWIN = 1, 3, 4


# ---- printing -----------------------------------------------------------------------------------

def value_text(bits: int, fmt) -> str:
    """Decimal value of a raw pattern (exact for the formats NumPy / ml_dtypes know)."""
    fmt = get_format(fmt)
    try:
        x = float(bits_to_numpy([bits], fmt)[0])
    except Exception:  # no NumPy type for this layout: decode by hand
        s = fmt.shift
        m = (bits >> s) & ((1 << fmt.mbits) - 1)
        e = (bits >> (s + fmt.mbits)) & ((1 << fmt.ebits) - 1)
        neg = fmt.signed and bits >> (s + fmt.mbits + fmt.ebits) & 1
        x = (m / (1 << fmt.mbits) + (e != 0)) * 2.0 ** (max(e, 1) - fmt.bias)
        x = -x if neg else x
    return repr(x)


def print_vector(res: QueryResult, i: int, vec, out=None) -> None:
    out = out or sys.stdout
    fi, fc, fo = (get_format(f) for f in res.formats)
    lvl = f"  [simple level {vec.level}]" if vec.level else ""
    print(f"vector {i}:{lvl}", file=out)
    for name, xs in (("a", vec.a), ("b", vec.b)):
        print(f"  {name} = [{', '.join(fi.hex(x) for x in xs)}]", file=out)
        print(f"      = [{', '.join(value_text(x, fi) for x in xs)}]", file=out)
    print(f"  c = {fc.hex(vec.c)} = {value_text(vec.c, fc)}", file=out)
    if vec.a_scale is not None:
        fs = get_format(res.scales[0])
        for name, xs in (("a_scale", vec.a_scale), ("b_scale", vec.b_scale)):
            print(f"  {name} = [{', '.join(fs.hex(x) for x in xs)}] = [{', '.join(value_text(x, fs) for x in xs)}]",
                  file=out)
    for mid, d in vec.d.items():
        print(f"  d[{mid}] = {fo.hex(d)} = {value_text(d, fo)}", file=out)


def vector_file(res: QueryResult, tool: str = "mmaprobe distinguish", note: str = "") -> VectorFile:
    """A vector file (spec/vectors.md) of a query's vectors with both models' outputs."""
    fi, fc, fo = (get_format(f) for f in res.formats)
    a_id, b_id = res.models
    source = {"tool": tool, "query": f"distinguish {a_id} {b_id} k={res.k}", "solver": res.solver,
              "solver_versions": _versions(), "seconds": round(res.seconds, 3),
              "constraints": res.constraints.describe(), "simple": res.simple}
    if note:
        source["note"] = note
    extra = {"models": [a_id, b_id], "source": source}
    scale_fmt, scale_block = res.scales if res.scales else (None, None)
    if scale_fmt:
        extra.update(scale_fmt=get_format(scale_fmt).name, scale_block=scale_block)
    vf = VectorFile(make_header(fi.name, fc.name, fo.name, res.k, **extra))
    for i, vec in enumerate(res.vectors):
        case = {"id": f"{a_id}-vs-{b_id}-{i}", "a": [fi.hex(x) for x in vec.a], "b": [fi.hex(x) for x in vec.b],
                "c": fc.hex(vec.c), "expect": {m: fo.hex(d) for m, d in vec.d.items()}}
        if vec.a_scale is not None:
            fs = get_format(scale_fmt)
            case["a_scale"] = [fs.hex(x) for x in vec.a_scale]
            case["b_scale"] = [fs.hex(x) for x in vec.b_scale]
        if vec.level:
            case["note"] = f"simple level {vec.level}"
        vf.cases.append(case)
    return vf


def _versions() -> str:
    out = []
    for mod, attr in (("z3", "get_version_string"), ("cvc5", None), ("bitwuzla", "version")):
        try:
            m = __import__(mod)
            v = getattr(m, attr)() if attr else getattr(m, "__version__", "?")
            out.append(f"{mod} {v}")
        except Exception:
            pass
    return ", ".join(out)


# ---- arguments ----------------------------------------------------------------------------------

def _add_query_args(s, with_simple=True):
    s.add_argument("--k", type=int, help="products per case (default: the larger block size)")
    s.add_argument("--solver", choices=SOLVER_CHOICES, default="portfolio",
                   help="solver (default: portfolio, racing bitwuzla and z3 (+cvc5 with >= 3 CPUs))")
    s.add_argument("--timeout", type=float, default=60.0, help="seconds for the query (default 60)")
    s.add_argument("--smt2", metavar="FILE", help="also write the query as SMT-LIB2 text")
    g = s.add_argument_group("input constraints")
    g.add_argument("--finite", action="store_true", help="no infinities or NaNs among the inputs")
    g.add_argument("--no-subnormals", action="store_true", help="inputs normal or zero")
    g.add_argument("--exp-range", metavar="LO:HI", help="unbiased exponent range of the non-zero a_i, b_i")
    g.add_argument("--c-exp-range", metavar="LO:HI", help="unbiased exponent range of a non-zero c")
    g.add_argument("--fix", action="append", default=[], metavar="NAME=BITS",
                   help="fix an input to a raw pattern, e.g. a0=0x3c00 or c=0 (repeatable)")
    g.add_argument("--a-signs", help="sign pattern of a: one of +-? per entry (or one for all)")
    g.add_argument("--b-signs", help="sign pattern of b")
    g.add_argument("--c-sign", choices=("+", "-", "?"))
    g.add_argument("--c-zero", action="store_true", help="c = +0")


def _range(text):
    if text is None:
        return None
    lo, sep, hi = text.partition(":")
    try:
        return (int(lo), int(hi))
    except ValueError:
        raise CliError(f"exponent range {text!r}: use LO:HI, e.g. -10:10") from None


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
    return Constraints(finite=args.finite, no_subnormals=args.no_subnormals, exp_range=_range(args.exp_range),
                       c_exp_range=_range(args.c_exp_range), fixed=tuple(fixed), a_signs=args.a_signs,
                       b_signs=args.b_signs, c_sign=args.c_sign, c_zero=args.c_zero)


def _no_answer(res: QueryResult) -> int:
    if res.status == "error":
        print(f"mmaprobe: error: no solver answered: {res.reason}", file=sys.stderr)
    else:
        print(f"unknown: {res.reason or 'no answer'}", file=sys.stderr)
    return EXIT_UNKNOWN


_guard = catch_errors((QueryError, USER_ERROR, EXIT_USAGE), (TwinDisagreement, INTERNAL_ERROR, EXIT_TWIN))


# ---- commands -----------------------------------------------------------------------------------

@_guard
def cmd_distinguish(args) -> int:
    res = distinguish(args.model_a, args.model_b, k=args.k, solver=args.solver, timeout=args.timeout,
                      constraints=constraints_from_args(args), simple=args.simple, count=args.count,
                      smt2=args.smt2)
    if args.smt2:
        print(f"wrote SMT-LIB2 query to {args.smt2}", file=sys.stderr)
    return report_distinguish(res, args.output)


def report_distinguish(res: QueryResult, output: str | None, tool="mmaprobe distinguish", note="") -> int:
    a_id, b_id = res.models
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
              f"(proved by {res.solver} in {res.seconds:.2f} s; constraints: {res.constraints.describe()})")
        return EXIT_OTHER
    return _no_answer(res)


@_guard
def cmd_equivalent(args) -> int:
    res = equivalent(args.model_a, args.model_b, k=args.k, solver=args.solver, timeout=args.timeout,
                     constraints=constraints_from_args(args), smt2=args.smt2)
    if res.status == "unsat":
        print(f"equivalent (proved by {res.solver} in {res.seconds:.2f} s; k={res.k}, "
              f"constraints: {res.constraints.describe()})")
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
    _add_query_args(s)
    s.add_argument("--simple", action="store_true", help="prefer readable vectors (powers of two, few bits)")
    s.add_argument("--count", type=int, default=1, help="number of distinct vectors (default 1)")
    s.add_argument("-o", "--output", help="vector file to write (JSON Lines, spec/vectors.md)")
    s.set_defaults(func=cmd_distinguish)

    s = sub.add_parser("equivalent", help="prove two models equal, or give a counterexample")
    s.add_argument("model_a")
    s.add_argument("model_b")
    _add_query_args(s)
    s.add_argument("-o", "--output", help="write a counterexample here")
    s.set_defaults(func=cmd_equivalent)

    try:
        from . import features_cli
    except ImportError:
        return
    features_cli.register(sub)
