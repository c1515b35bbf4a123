"""``mmaprobe explain``: one input on which every named model gives its observed output, or a
proof that none exists at that k (queries.explain; seed 003 §I's five answers)."""

from __future__ import annotations

from queries.explain import explain, parse_observation
from smtmodel.formats import get_format
from smtmodel.solve import SOLVER_CHOICES
from smtmodel.vectors import VectorFile, make_header, write_vectors

from ..errors import EXIT_OTHER, EXIT_UNKNOWN


def cmd_explain(args) -> int:
    obs = [parse_observation(t) for t in args.observe]
    ks = args.k or [4, 8, 16, 32]
    last = None
    for k in ks:
        ex = explain(obs, k, solver=args.solver, timeout=args.timeout, negate_products=args.c_minus_ab,
                     level=args.level)
        last = ex
        form = "D = C - A·B" if args.c_minus_ab else "d = c + sum a_i b_i"
        print(f"k={k}: {ex.status} ({ex.solver}, {ex.seconds:.1f} s){' ' + ex.reason if ex.reason else ''}")
        if ex.status == "sat":
            from smtmodel.catalog import get_model
            m = get_model(ex.models[0])
            fi, fc, fo = get_format(m.in_fmt), get_format(m.c_fmt), get_format(m.out_fmt)
            print(f"  {form}: a={[fi.hex(x) for x in ex.a]}\n  b={[fi.hex(x) for x in ex.b]}\n  c={fc.hex(ex.c)}")
            for mid, d in ex.d.items():
                print(f"  {mid:<24} {fo.hex(d)}  (observed {ex.observed[mid]:g})")
            if args.output:
                vf = VectorFile(make_header(m.in_fmt, m.c_fmt, m.out_fmt, k, models=list(ex.d),
                                            source={"tool": "mmaprobe explain", "note": form,
                                                    "observed": {x: v for x, v in ex.observed.items()}}),
                                [{"id": "explain-0", "a": [fi.hex(x) for x in ex.a], "b": [fi.hex(x) for x in ex.b],
                                  "c": fc.hex(ex.c), "expect": {mid: fo.hex(d) for mid, d in ex.d.items()},
                                  "note": form}])
                write_vectors(args.output, vf)
            return 0
        if ex.status == "unsat":
            within = f" among inputs of level {args.level}" if args.level else ""
            print(f"  no input of {k} products{within} gives every model its observed value (proof: {ex.solver} unsat)")
    return EXIT_OTHER if last is not None and last.status == "unsat" else EXIT_UNKNOWN


def register(sub) -> None:
    s = sub.add_parser("explain", help="find one input giving each model its observed output (or prove none)")
    s.add_argument("--observe", action="append", required=True, metavar="MODEL=VALUE",
                   help="a model and the output it is reported to give (repeatable)")
    s.add_argument("--k", type=int, action="append", help="products per case (repeatable; default 4, 8, 16, 32)")
    s.add_argument("--c-minus-ab", action="store_true", help="the observations are of D = C - A·B (seed 003 §I)")
    s.add_argument("--level", help="restrict inputs to a simple level (b=1,a=2^e | 2^e | 3bit | finite | any): "
                                   "a smaller search; unsat then rules out that level only")
    s.add_argument("--solver", choices=SOLVER_CHOICES, default="portfolio")
    s.add_argument("--timeout", type=float, default=120.0, help="seconds per k (default 120)")
    s.add_argument("-o", "--output", help="vector file of the input found")
    s.set_defaults(func=cmd_explain)
