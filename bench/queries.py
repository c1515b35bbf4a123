"""Time each named feature query with each solver, beside seed 002 Table 4's figures.

    .venv/bin/python bench/queries.py [--solvers z3 cvc5 bitwuzla portfolio] [--timeout 60]
                                      [--features NAME ...] [--markdown] [--json FILE]

Seed 002 used z3 4.8.9 / cvc5 1.0.2 on an AMD EPYC 7502P with a 6 h timeout, and SMT-LIB
floating-point terms; ours are the semantic core's bitvector formulas (z3 through the
``simplify; bit-blast; sat`` tactic, Bitwuzla reading z3's SMT-LIB2 dump). Every sat answer is
confirmed by the twin (distinguish() raises otherwise). Times are wall-clock seconds of the
whole query (formula building included); 'timeout' = no answer within --timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from queries.distinguish import SOLVER_CHOICES, available_solvers, distinguish  # noqa: E402
from queries.features import FEATURES, feature_pair  # noqa: E402


def run(features, solvers, timeout):
    rows = []
    for name in features:
        f, a, b, k, cons = feature_pair(name)
        row = {"feature": name, "a": a.id, "b": b.id, "expect": f.expect, "table4": f.table4, "ours": {}}
        for s in solvers:
            try:
                res = distinguish(a, b, k=k, solver=s, timeout=timeout, constraints=cons)
                cell = {"status": res.status, "seconds": round(res.seconds, 3), "k": res.k,
                        "winner": res.solver}
            except Exception as exc:  # report and go on
                cell = {"status": "error", "seconds": None, "reason": f"{type(exc).__name__}: {exc}"}
            row["ours"][s] = cell
            print(f"{name:<26} {s:<9} {cell['status']:<8} "
                  f"{'' if cell['seconds'] is None else format(cell['seconds'], '.2f') + ' s'}", file=sys.stderr)
        rows.append(row)
    return rows


def _cell(c, timeout):
    if c["status"] in ("sat", "unsat"):
        return f"{c['seconds']:.2f}s" + ("" if c["status"] == "sat" else " (unsat)")
    if c["status"] == "unknown":
        return f">{timeout:g}s"
    return c["status"]


def table(rows, solvers, timeout, markdown=False) -> str:
    head = ["query", "seed002 z3", "seed002 cvc5"] + [f"ours {s}" for s in solvers]
    body = []
    for r in rows:
        t4 = r["table4"] or ("", "")
        body.append([r["feature"], t4[0] or "", t4[1] or ""] + [_cell(r["ours"][s], timeout) for s in solvers])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(x) + " |" for x in body]
        return "\n".join(out)
    w = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    return "\n".join("  ".join(x[i].ljust(w[i]) for i in range(len(head))) for x in [head] + body)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--solvers", nargs="+", choices=SOLVER_CHOICES, default=list(available_solvers()))
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--features", nargs="+", default=list(FEATURES), choices=list(FEATURES))
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", help="also write the raw results here")
    args = p.parse_args(argv)
    rows = run(args.features, args.solvers, args.timeout)
    print(f"# machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"timeout {args.timeout:g} s per query")
    print(table(rows, args.solvers, args.timeout, args.markdown))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"timeout": args.timeout, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
