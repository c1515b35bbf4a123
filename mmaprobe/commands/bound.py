"""``mmaprobe bound ID|all``: seed 000 Table 9's error bound for a T-FDPA-family model, proved by
lemmas (or by one monolithic query)."""

from __future__ import annotations

from queries.bounds import TABLE9_OPS, lemma_table, prove_all, table9_models
from smtmodel.catalog import get_model

from ..args import add_output, add_solver
from ..errors import CliError
from ..io import write_json
from .schemes import SOLVERS


def cmd_bound(args) -> int:
    if args.id == "all":
        models = table9_models()
    else:
        models = [get_model(args.id)]
        if models[0].op not in TABLE9_OPS:
            raise CliError(f"{args.id}: Table 9's fused-summation bound covers ops {', '.join(TABLE9_OPS)}, "
                           f"not {models[0].op}")
    if args.monolithic:
        models = [m for m in models if m.op == "tfdpa"]
        if not models:
            raise CliError("--monolithic covers plain T-FDPA models only")
    if not args.monolithic:
        out = list(lemma_table(models, args.solver, args.timeout, refute=args.refute, log=print))
    else:
        out = [r.to_dict() for r in prove_all(args.solver, args.timeout, args.tight, models,
                                              log=lambda r: print(r.text(), flush=True))]
    if args.output:
        write_json(args.output, out)
    return 0


def register(sub) -> None:
    p = sub.add_parser("bound", help="prove seed 000 Table 9's error bound for a T-FDPA-family model (or 'all')")
    p.add_argument("id", help="model id (T-FDPA, ST-FDPA, GST-FDPA or the FP8 mma.sync path), or 'all'")
    add_solver(p, SOLVERS, "bitwuzla", 120, what="each lemma",
               help="lemma solver (default bitwuzla; lemma D always uses z3's FP theory)")
    p.add_argument("--monolithic", action="store_true",
                   help="one query |Phi - exact| > bound over all inputs (slow) instead of the lemmas")
    p.add_argument("--tight", action="store_true", help="with --monolithic: bisect alpha after a proof")
    p.add_argument("--refute", action="store_true",
                   help="also ask the monolithic formula for a violation of alpha = L (SAT = witness that "
                        "the constant cannot drop to L)")
    add_output(p, help="write the result as JSON")
    p.set_defaults(func=cmd_bound)
