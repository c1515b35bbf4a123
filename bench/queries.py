"""Time each named feature query with each solver, beside seed 002 Table 4's figures.

    .venv/bin/python bench/queries.py [--solvers z3 cvc5 bitwuzla portfolio] [--timeout 60]
                                      [--features NAME ...] [--markdown] [--json FILE]
                                      [--repeat N] [--before GIT_REF]

``--before REF`` also runs this benchmark as committed at REF (extracted with ``git archive``
into a temporary folder, so that code's own modules are timed) and prints both times per query,
marking any query slower now than before (beyond 20 % + 0.1 s of noise). ``--repeat N`` keeps
the fastest of N runs of each query.

Seed 002 used z3 4.8.9 / cvc5 1.0.2 on an AMD EPYC 7502P with a 6 h timeout, and SMT-LIB
floating-point terms; ours are the semantic core's bitvector formulas (z3 through the
``simplify; bit-blast; sat`` tactic, Bitwuzla reading z3's SMT-LIB2 dump). Every sat answer is
confirmed by the twin (distinguish() raises otherwise). Times are wall-clock seconds of the
whole query (formula building included), and CPU seconds (this process and the solver processes
it waited for) on stderr and in --json; 'timeout' = no answer within --timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from queries.distinguish import SOLVER_CHOICES, available_solvers, distinguish  # noqa: E402
from queries.features import FEATURES, feature_pair  # noqa: E402


def cpu_seconds() -> float:
    """CPU seconds of this process and its waited children (the portfolio's solver processes):
    steadier than wall seconds on a loaded machine."""
    import resource
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def _faster(prev, c) -> bool:
    """Whether cell ``c`` beats ``prev`` (an answer in fewer seconds; any answer beats none)."""
    return prev is None or (c["seconds"] is not None and (prev["seconds"] is None or c["seconds"] < prev["seconds"]))


def run(features, solvers, timeout, repeat=1):
    rows = []
    for name in features:
        f, a, b, k, cons = feature_pair(name)
        row = {"feature": name, "a": a.id, "b": b.id, "expect": f.expect, "table4": f.table4, "ours": {}}
        for s in solvers:
            cell = None
            for _ in range(max(1, repeat)):
                try:
                    cpu0 = cpu_seconds()
                    res = distinguish(a, b, k=k, solver=s, timeout=timeout, constraints=cons)
                    c = {"status": res.status, "seconds": round(res.seconds, 3), "k": res.k, "winner": res.solver,
                         "cpu": round(cpu_seconds() - cpu0, 3)}
                except Exception as exc:  # report and go on
                    c = {"status": "error", "seconds": None, "reason": f"{type(exc).__name__}: {exc}"}
                if _faster(cell, c):
                    cell = c
            row["ours"][s] = cell
            print(f"{name:<26} {s:<9} {cell['status']:<8} "
                  f"{'' if cell['seconds'] is None else format(cell['seconds'], '.2f') + ' s'}"
                  f"{'' if cell.get('cpu') is None else ', ' + format(cell['cpu'], '.2f') + ' s CPU'}", file=sys.stderr)
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


def before(ref: str, features, solvers, timeout, repeat) -> dict:
    """{(feature, solver): cell} of this benchmark as committed at ``ref`` (run in a temporary copy)."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    cells: dict = {}
    with tempfile.TemporaryDirectory(prefix="mmaprobe-before-") as tmp:
        tar = subprocess.run(["git", "-C", root, "archive", "--format=tar", ref], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=tar, check=True)
        out = os.path.join(tmp, "before.json")
        cmd = [sys.executable, os.path.join(tmp, "bench", "queries.py"), "--timeout", str(timeout), "--json", out,
               "--solvers", *solvers, "--features", *features]
        for _ in range(max(1, repeat)):
            subprocess.run(cmd, cwd=tmp, check=True, stdout=subprocess.DEVNULL)
            with open(out) as fh:
                for r in json.load(fh)["rows"]:
                    for s, c in r["ours"].items():
                        if _faster(cells.get((r["feature"], s)), c):
                            cells[(r["feature"], s)] = c
    return cells


def compare(rows, old: dict, solvers, timeout, ref: str) -> tuple[str, int]:
    """A before/after table and the number of queries slower now."""
    head = ["query", "solver", f"before ({ref})", "now", "ratio", ""]
    body, slower = [], 0
    for r in rows:
        for s in solvers:
            new, prev = r["ours"][s], old.get((r["feature"], s))
            t_new = new["seconds"] if new["status"] in ("sat", "unsat") else None
            t_old = prev["seconds"] if prev and prev["status"] in ("sat", "unsat") else None
            flag = ""
            if t_new is None and t_old is not None:
                flag, slower = "SLOWER (no answer now)", slower + 1
            elif t_new is not None and t_old is not None and t_new > 1.2 * t_old + 0.1:
                flag, slower = "SLOWER", slower + 1
            ratio = f"{t_new / t_old:.2f}" if t_new and t_old else ""
            body.append([r["feature"], s, _cell(prev, timeout) if prev else "-", _cell(new, timeout), ratio, flag])
    w = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    return "\n".join("  ".join(x[i].ljust(w[i]) for i in range(len(head))) for x in [head] + body), slower


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--solvers", nargs="+", choices=SOLVER_CHOICES, default=list(available_solvers()))
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--features", nargs="+", default=list(FEATURES), choices=list(FEATURES))
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--json", help="also write the raw results here")
    p.add_argument("--repeat", type=int, default=1, help="keep the fastest of N runs of each query")
    p.add_argument("--before", metavar="REF", help="also time the benchmark as committed at git REF")
    args = p.parse_args(argv)
    old = before(args.before, args.features, args.solvers, args.timeout, args.repeat) if args.before else None
    rows = run(args.features, args.solvers, args.timeout, args.repeat)
    print(f"# machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"timeout {args.timeout:g} s per query")
    print(table(rows, args.solvers, args.timeout, args.markdown))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"timeout": args.timeout, "rows": rows}, fh, indent=1)
    if old is not None:
        text, slower = compare(rows, old, args.solvers, args.timeout, args.before)
        print(f"\n# before/after: {slower} queries slower now\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
