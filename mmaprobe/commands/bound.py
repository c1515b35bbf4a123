"""``mmaprobe bound ID|all``: seed 000 Table 9's error bound for a T-FDPA-family model, proved by
lemmas (or by one monolithic query). ``bound all`` is a campaign (:mod:`mmaprobe.campaign`): one
task per lemma-B formula, planned by :func:`queries.bounds.lemma_plan`."""

from __future__ import annotations

from queries.bounds import check_table9, lemma_batch_task, lemma_plan, prove_all, table9_models
from smtmodel.catalog import get_model
from smtmodel.solve import SOLVER_CHOICES

from ..args import add_campaign, add_output, add_solver
from ..campaign import Options, Task, journal_path, run_campaign
from ..errors import EXIT_UNKNOWN, CliError
from ..io import write_json


def cmd_bound(args) -> int:
    if args.id == "all":
        models = table9_models()
    else:
        models = [check_table9(get_model(args.id))]
    if args.monolithic:
        models = [m for m in models if m.op == "tfdpa"]
        if not models:
            raise CliError("--monolithic covers plain T-FDPA models only")
    rc = 0
    if not args.monolithic:
        # one task per lemma-B formula: the parameter sets that share it are proved by one worker,
        # which proves the shared lemma once (queries.bounds.lemma_plan)
        plan = lemma_plan(models)
        tasks = [Task(key, lemma_batch_task, (ids, args.solver, args.timeout, args.refute)) for key, ids in plan.tasks()]
        params = {"solver": args.solver, "timeout": args.timeout, "refute": args.refute, "tasks": "by lemma B"}

        def log(key, res):
            if res.get("status") == "done":
                print(res["line"], flush=True)
            else:
                print(f"{key:<32} {res['status'].upper()}: {res.get('reason', '')}", flush=True)

        res = run_campaign("bound", params, tasks, journal_path(args.output) if args.output else None,
                           Options.from_args(args), log=log)
        out, complete = plan.rows(res)
        if not complete:
            rc = EXIT_UNKNOWN
    else:
        out = [r.to_dict() for r in prove_all(args.solver, args.timeout, args.tight, models,
                                              log=lambda r: print(r.text(), flush=True))]
    if args.output:
        write_json(args.output, out)
    return rc


def register(sub) -> None:
    p = sub.add_parser("bound", help="prove seed 000 Table 9's error bound for a T-FDPA-family model (or 'all')")
    p.add_argument("id", help="model id (T-FDPA, ST-FDPA, GST-FDPA or the FP8 mma.sync path), or 'all'")
    add_solver(p, SOLVER_CHOICES, "bitwuzla", 120, what="each lemma",
               help="lemma solver (default bitwuzla; lemma D always uses z3's FP theory)")
    p.add_argument("--monolithic", action="store_true",
                   help="one query |Phi - exact| > bound over all inputs (slow) instead of the lemmas")
    p.add_argument("--tight", action="store_true", help="with --monolithic: bisect alpha after a proof")
    p.add_argument("--refute", action="store_true",
                   help="also ask the monolithic formula for a violation of alpha = L (SAT = witness that "
                        "the constant cannot drop to L)")
    add_output(p, help="write the result as JSON (its journal: OUTPUT.journal)")
    add_campaign(p)
    p.set_defaults(func=cmd_bound)
