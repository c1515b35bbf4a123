"""Every floating-point model of the catalog x every property: proved / refuted / unknown, with
the time of each check and the solver that answered, at a stated timeout. Writes a journal (one
JSON line per check, so a run can be resumed) and the markdown table of docs/properties.md:

    python bench/properties.py [--props monotonicity,...] [--models GLOB,...] [--timeout 6]
                               [--twin-seconds 1] [--journal FILE.jsonl] [--table FILE.md] [--resume]
                               [--rerun unknown,...] [--order shared] [--max-k K] [--limit N]

Models whose parameters are the same (they differ only in the architecture's name, e.g. hopper-
and blackwell-fp16-fp32) compute the same bits: the first is checked and the others reuse its
answer (the table says which). ``--resume --rerun unknown --timeout 120`` escalates: the cells whose last
answer (at any timeout) is unknown are checked again at the longer timeout and the new row, proved,
refuted or unknown at 120 s, is the cell's answer; ``--order shared`` takes the parameter sets shared
by most models first, ``--max-k`` only cells whose k is at most K (the formula grows with k),
``--limit`` at most N checks. Each check is :func:`queries.properties.check_property` with the
portfolio: rewriting and the reductions, the twin search for ``--twin-seconds``, then Bitwuzla and z3
raced for the rest of ``--timeout`` (for half of it first on the restricted question, all but two
products zero, where 10 s or more are left); an unknown names that timeout. The proof cache answers a proof done before (run
with ``MMAPROBE_PROOF_CACHE=0`` to prove again). Prints a summary: counts per property, the
unknowns by name, seed 003's monotonicity claim model by model (NVIDIA units vs AMD units), the
CPU seconds and the machine's load.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from queries.properties import PROPERTIES, NotApplicable, check_property  # noqa: E402
from queries.properties.catalog import cell, counts, parameter_groups, read_journal, seed003, table  # noqa: E402
from smtmodel.catalog import all_models  # noqa: E402

JOURNAL = Path(__file__).resolve().parent / "results" / "properties.jsonl"


def cpu_seconds() -> float:
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def run_one(prop: str, model_id: str, timeout: float, twin_seconds: float) -> dict:
    t0, c0 = time.perf_counter(), cpu_seconds()
    row = {"model": model_id, "property": prop, "timeout": timeout, "twin_seconds": twin_seconds}
    try:
        r = check_property(prop, model_id, timeout=timeout, twin_seconds=twin_seconds, simplify_seconds=0.5)
    except NotApplicable as exc:
        return row | {"status": "n/a", "reason": str(exc), "seconds": 0.0}
    row |= {"status": r.status, "k": r.k, "solver": r.solver, "reason": r.reason, "cached": r.cached,
            "seconds": round(time.perf_counter() - t0, 2), "cpu": round(cpu_seconds() - c0, 2),
            "notes": r.witness.notes if r.witness else []}
    return row


def _default_k(prop: str, m) -> int:
    """The k a check of ``prop`` on ``m`` takes (0 where the property does not apply)."""
    try:
        return PROPERTIES[prop].default_k(m)
    except Exception:   # noqa: BLE001  (the check itself reports what does not apply)
        return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--props", default=",".join(PROPERTIES), help="comma-separated properties (default all)")
    ap.add_argument("--models", default="*", help="comma-separated globs of model ids (default every FP model)")
    ap.add_argument("--timeout", type=float, default=6.0, help="seconds per check (default 6)")
    ap.add_argument("--twin-seconds", type=float, default=1.0, help="the twin search's share (default 1)")
    ap.add_argument("--journal", default=str(JOURNAL), help="one JSON line per check (resumable; default the "
                    "committed journal that docs/properties.md's table is generated from)")
    ap.add_argument("--table", help="write the markdown table here")
    ap.add_argument("--resume", action="store_true", help="skip the checks already in the journal")
    ap.add_argument("--rerun", default="", metavar="STATUS,...",
                    help="with --resume: check again the cells whose journal answer is one of these (e.g. unknown)")
    ap.add_argument("--order", choices=("catalog", "shared"), default="catalog",
                    help="shared: the parameter sets shared by most models first (default: catalog order)")
    ap.add_argument("--max-k", type=int, default=0, help="only cells whose k is at most this (0: any)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many checks (0: no limit)")
    args = ap.parse_args(argv)
    props = [p for p in args.props.split(",") if p]
    for p in props:
        if p not in PROPERTIES:
            ap.error(f"unknown property {p!r}; one of {', '.join(PROPERTIES)}")
    rerun = {x for x in args.rerun.split(",") if x}
    pats = args.models.split(",")
    models = [m for m in all_models() if any(fnmatch.fnmatch(m.id, p) for p in pats)]
    rows: dict = {}
    if args.resume and os.path.exists(args.journal):
        # the last answer of each cell at any timeout: a cell settled at one timeout stays settled,
        # and --rerun unknown with a longer --timeout escalates the open ones
        rows = read_journal(args.journal, None if rerun else args.timeout)
    elif os.path.exists(args.journal):
        os.remove(args.journal)
    load0 = os.getloadavg()
    t0, c0 = time.perf_counter(), cpu_seconds()
    grs = parameter_groups(models)
    order = sorted(grs, key=lambda g: -len(g)) if args.order == "shared" else grs
    done = 0
    with open(args.journal, "a", encoding="utf-8") as jf:
        for p in props:                      # property by property: the first ones finish whole
            for grp in order:
                first = grp[0].id
                if args.limit and done >= args.limit:
                    break
                if args.max_k and _default_k(p, grp[0]) > args.max_k:
                    continue
                if (first, p) not in rows or rows[(first, p)]["status"] in rerun:
                    done += 1
                    r = run_one(p, first, args.timeout, args.twin_seconds)
                    rows[(first, p)] = r
                    jf.write(json.dumps(r) + "\n")
                    jf.flush()
                    print(f"{p:20} {first:40} {cell(r)}", file=sys.stderr, flush=True)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    text = table(rows, grs, props) + "\n"
    summary = [f"{len(models)} models ({len(grs)} distinct parameter sets) x {len(props)} properties; "
               f"timeout {args.timeout:g} s per check (rewriting, twin search {args.twin_seconds:g} s, then bitwuzla and z3)",
               f"this run: wall {wall:.0f} s, CPU {cpu:.0f} s; load average {load0[0]:.1f} at the start, "
               f"{os.getloadavg()[0]:.1f} at the end ({os.cpu_count()} CPUs); the checks in the table took "
               f"{sum(r.get('seconds', 0) for r in rows.values()):.0f} s wall, "
               f"{sum(r.get('cpu', 0) for r in rows.values()):.0f} s CPU (this process and its solver children)"]
    for p, st in counts(rows, grs, props).items():
        summary.append(f"{p}: " + ", ".join(f"{k} {v}" for k, v in sorted(st.items())) + " (models)")
    unknown = [f"{r['model']} {r['property']}" for r in rows.values() if r["status"] == "unknown"
               and r["property"] in props]
    summary.append(f"unknown ({len(unknown)}, each at the timeout; models sharing parameters count once): "
                   + (", ".join(unknown) or "none"))
    summary += seed003(rows, grs, props)
    print("\n".join(summary))
    if args.table:
        with open(args.table, "w", encoding="utf-8") as fh:
            fh.write("\n".join(f"<!-- {s} -->" for s in summary[:2]) + "\n\n" + text)
        print(f"wrote {args.table}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
