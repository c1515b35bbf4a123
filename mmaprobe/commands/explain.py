"""``mmaprobe explain``, two modes.

* GEMM mode (``--gemm SPEC`` or ``--a/--b[/--c]``): the inputs of a GEMM and each device's
  outputs (``--observe DEVICE=VALUE`` or ``DEVICE=OUT.npy``) -> every (model, dataflow) of the
  space that reproduces each device, what is ruled out, the conflicts (queries.gemm.explain;
  seed 003 §V is ``--gemm seed003``).
* Input search (``--observe MODEL=VALUE`` alone): one input on which every named model gives its
  observed output, or a proof that none exists at that k (queries.explain)."""

from __future__ import annotations

from queries.explain import explain, parse_observation
from smtmodel.formats import get_format
from smtmodel.limits import check_solver_k
from smtmodel.solve import SOLVER_CHOICES
from smtmodel.vectors import VectorFile, make_header, write_vectors

from ..errors import EXIT_OTHER, EXIT_UNKNOWN, CliError
from ..io import declare_outputs


def cmd_explain(args) -> int:
    if args.gemm or args.a or args.b:
        return cmd_explain_gemm(args)
    for opt in ("c", "models", "dataflow"):
        if getattr(args, opt):
            raise CliError(f"--{opt} belongs to the GEMM mode: give the inputs with --gemm SPEC or --a/--b")
    obs = [parse_observation(t) for t in args.observe]
    ks = args.k or [4, 8, 16, 32]
    for k in ks:
        check_solver_k("--k", k)
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
                h = make_header(m.in_fmt, m.c_fmt, m.out_fmt, k, models=list(ex.d),
                                source={"tool": "mmaprobe explain", "note": form,
                                        "observed": {x: v for x, v in ex.observed.items()}})
                vf = VectorFile.from_arrays(h, [list(ex.a)], [list(ex.b)], [ex.c], ids=["explain-0"],
                                            expect={mid: [d] for mid, d in ex.d.items()}, extra=[{"note": form}])
                write_vectors(args.output, vf)
            return 0
        if ex.status == "unsat":
            within = f" among inputs of level {args.level}" if args.level else ""
            print(f"  no input of {k} products{within} gives every model its observed value (proof: {ex.solver} unsat)")
    return EXIT_OTHER if last is not None and last.status == "unsat" else EXIT_UNKNOWN


def cmd_explain_gemm(args) -> int:
    """The GEMM mode (module docstring): inputs, observations and the space are all checked
    before anything is evaluated; the JSON is written atomically once the answer is complete."""
    import json
    import sys

    from queries.gemm.explain import (default_dataflows, default_models, explain_gemm, global_conflicts,
                                      parse_observation as parse_gemm_observation, table)
    from queries.gemm.spec import from_npy, from_spec
    from smtmodel.catalog import get_model
    from smtmodel.dataflow import DataflowError, parse_dataflow
    from smtmodel.io import atomic_open

    for opt in ("k", "level"):
        if getattr(args, opt):
            raise CliError(f"--{opt} belongs to the input search; the GEMM mode takes the GEMM's own K")
    if args.c_minus_ab:
        raise CliError("--c-minus-ab belongs to the input search; in the GEMM mode give --alpha -1 --beta 1")
    if args.gemm and (args.a or args.b or args.c):
        raise CliError("give the GEMM either as --gemm SPEC or as --a/--b[/--c] files, not both")
    if args.gemm:
        if args.alpha is not None or args.beta is not None:
            raise CliError("--alpha/--beta come with the generator spec (seed003: alpha=-1, beta=1)")
        problem = from_spec(args.gemm)
    else:
        if not (args.a and args.b):
            raise CliError("the GEMM mode needs --a A.npy and --b B.npy (or --gemm SPEC)")
        if not args.in_fmt:
            raise CliError("--a/--b need --in FORMAT (the format of A and B)")
        problem = from_npy(args.a, args.b, args.c, args.in_fmt, args.c_fmt or "fp32",
                           1.0 if args.alpha is None else args.alpha, 1.0 if args.beta is None else args.beta)
    M, N, _ = problem.shape
    models = default_models(problem.in_fmt, problem.c_fmt)
    if args.models:
        models = [get_model(x.strip()) for x in args.models.split(",") if x.strip()]
    try:
        dataflows = [parse_dataflow(x) for x in args.dataflow] if args.dataflow else default_dataflows()
    except DataflowError as exc:
        raise CliError(str(exc)) from None
    out_fmt = models[0].out_fmt if models else "fp32"
    obs = [parse_gemm_observation(t, (M, N), out_fmt) for t in args.observe]
    progress = None if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    res = explain_gemm(problem, obs, models, dataflows, progress=progress)
    print(table(res))
    glob = global_conflicts(res)
    for line in glob:
        print(f"CONFLICT: {line}")
    if args.output:
        obj = res.to_json()
        obj["conflicts"] = glob
        with atomic_open(args.output) as fh:
            json.dump(obj, fh, indent=1)
            fh.write("\n")
        print(f"wrote {args.output}", file=sys.stderr)
    return EXIT_OTHER if any(not d["fits"] for d in res.devices) else 0


def register(sub) -> None:
    s = sub.add_parser("explain", help="which (model, dataflow) explains a GEMM's outputs; or find one input "
                                       "giving each model its observed output (or prove none)")
    s.add_argument("--observe", action="append", required=True, metavar="NAME=VALUE",
                   help="GEMM mode: DEVICE[@ARCH]=VALUE (every element) or DEVICE=OUT.npy; input search: "
                        "MODEL=VALUE (repeatable)")
    g = s.add_argument_group("GEMM mode")
    g.add_argument("--gemm", metavar="SPEC", help="a generator of the inputs: seed003[:m=,n=,k=] (seed 003 §V)")
    g.add_argument("--a", metavar="A.npy", help="A (M x K): values of --in, or raw bits (unsigned)")
    g.add_argument("--b", metavar="B.npy", help="B (K x N)")
    g.add_argument("--c", metavar="C.npy", help="C (M x N) of --c-fmt (default: no C)")
    g.add_argument("--in", dest="in_fmt", help="format of A and B (with --a/--b)")
    g.add_argument("--c-fmt", help="format of C (default fp32)")
    g.add_argument("--alpha", type=float, help="alpha (with --a/--b; default 1)")
    g.add_argument("--beta", type=float, help="beta (with --a/--b; default 1)")
    g.add_argument("--models", help="comma list of models (default: every catalog model and rival of the formats)")
    g.add_argument("--dataflow", action="append", metavar="DATAFLOW",
                   help="a dataflow to try (repeatable; default: the named profiles that apply and a grid of "
                        "C entry, split-K and restart intervals)")
    g.add_argument("--quiet", action="store_true", help="no progress on stderr")
    s.add_argument("--k", type=int, action="append", help="products per case (repeatable; default 4, 8, 16, 32)")
    s.add_argument("--c-minus-ab", action="store_true", help="the observations are of D = C - A·B (seed 003 §I)")
    s.add_argument("--level", help="restrict inputs to a simple level (b=1,a=2^e | 2^e | 3bit | finite | any): "
                                   "a smaller search; unsat then rules out that level only")
    s.add_argument("--solver", choices=SOLVER_CHOICES, default="portfolio")
    s.add_argument("--timeout", type=float, default=120.0, help="seconds per k (default 120)")
    s.add_argument("-o", "--output", help="GEMM mode: the JSON answer; input search: vector file of the input found "
                                          "(written atomically)")
    declare_outputs(s, output="file")
    s.set_defaults(func=cmd_explain)
