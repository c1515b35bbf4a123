"""``mmaprobe features`` / ``feature NAME``: the named feature queries (the seeds' hypotheses)."""

from __future__ import annotations

import sys

from queries.distinguish import distinguish
from queries.features import FEATURES, feature_pair

from ..args import add_model
from .query import add_query_args, add_vector_args, report_distinguish


def cmd_features(args) -> int:
    for f in FEATURES.values():
        t4 = f"  [seed 002 Table 4: z3 {f.table4[0]}, cvc5 {f.table4[1]}]" if f.table4 else ""
        exp = "" if f.expect == "sat" else "  (expects a proof of equality)"
        print(f"{f.name:<26} {f.title} -- {f.source}; default --model {f.default_model}{exp}{t4}")
    return 0


def cmd_feature(args) -> int:
    f, a, b, k, cons = feature_pair(args.name, args.model)
    res = distinguish(a, b, k=k if args.k is None else args.k, solver=args.solver, timeout=args.timeout,
                      constraints=cons, simple=args.simple, count=args.count, smt2=args.smt2)
    print(f"feature {f.name}: {f.title} ({f.source})")
    print(f"  A = {a.id}: {a.summary()}\n  B = {b.id}: {b.summary()}")
    rc = report_distinguish(res, args.output, tool=f"mmaprobe feature {f.name}",
                            note=f"{f.title}; A={a.id} ({a.summary()}), B={b.id} ({b.summary()})")
    if res.status in ("sat", "unsat") and res.status != f.expect:
        print(f"note: the seeds expect {'a distinguishing vector' if f.expect == 'sat' else 'equivalence'} here",
              file=sys.stderr)
    return 0 if res.status == f.expect else rc


def register(sub) -> None:
    s = sub.add_parser("features", help="list the named feature queries (seeds' hypotheses)")
    s.set_defaults(func=cmd_features)

    s = sub.add_parser("feature", help="run one named feature query")
    s.add_argument("name", help="feature name (`mmaprobe features` lists them)")
    add_model(s, help="base model id[:overrides] (default: the feature's own)")
    add_query_args(s)
    add_vector_args(s)
    s.set_defaults(func=cmd_feature)
