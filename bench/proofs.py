"""Equivalence proofs: wall and CPU seconds of `distinguish` on pairs expected to be unsat (by
default the pairwise suite's two slowest -- Volta carry3 vs carry4 and normalized vs carry4, k = 4
-- and feature carry3-suffices). Prints figures; asserts nothing. Run with the proof cache off to
time the proofs themselves:

    MMAPROBE_PROOF_CACHE=0 python bench/proofs.py [--repeat 3] [--before GIT_REF]
                                                  [--pair A B K ...] [--json FILE]

CPU seconds are this process's plus those of the solver processes it waited for (the portfolio's
children): steadier than wall seconds on a loaded machine. ``--before REF`` also runs this script
on the code as committed at REF (extracted with ``git archive``; this script's own code, that
commit's modules) and prints both.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

PAIRS = [("volta-fp16-fp32-carry3", "volta-fp16-fp32-carry4", 4),
         ("volta-fp16-fp32-normalized", "volta-fp16-fp32-carry4", 4),
         ("volta-fp16-fp32:normalize=true,carry=3", "volta-fp16-fp32:normalize=true,carry=4", 4)]


def cpu_seconds() -> float:
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def run(pairs, repeat: int, timeout: float) -> list[dict]:
    from queries.distinguish import distinguish
    distinguish("volta-fp16-fp32-carry2", "volta-fp16-fp32-carry3", k=4)      # imports and forks warm
    rows = []
    for a, b, k in pairs:
        runs = []
        for _ in range(max(1, repeat)):
            c0, t0 = cpu_seconds(), time.perf_counter()
            res = distinguish(a, b, k=k, timeout=timeout)
            runs.append({"status": res.status, "solver": res.solver, "wall": time.perf_counter() - t0,
                         "cpu": cpu_seconds() - c0})
        rows.append({"a": a, "b": b, "k": k, "runs": runs})
    return rows


def show(rows, label: str) -> None:
    print(f"# {label}")
    for r in rows:
        w = sorted(x["wall"] for x in r["runs"])
        c = sorted(x["cpu"] for x in r["runs"])
        print(f"  {r['a']} vs {r['b']} (k={r['k']}): {r['runs'][0]['status']} by {r['runs'][0]['solver']}, "
              f"wall {w[0]:.2f}-{w[-1]:.2f} s, CPU {c[0]:.2f}-{c[-1]:.2f} s ({len(c)} runs)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pair", nargs=3, action="append", metavar=("A", "B", "K"), help="a pair and k (repeatable)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--before", metavar="REF")
    p.add_argument("--json")
    p.add_argument("--root", help=argparse.SUPPRESS)      # the code to time (used by --before)
    args = p.parse_args(argv)
    root = args.root or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    sys.path.insert(0, root)
    pairs = [(a, b, int(k)) for a, b, k in args.pair] if args.pair else PAIRS
    old = None
    if args.before:
        with tempfile.TemporaryDirectory(prefix="mmaprobe-before-") as tmp:
            tar = subprocess.run(["git", "-C", root, "archive", "--format=tar", args.before],
                                 capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=tar, check=True)
            out = os.path.join(tmp, "before.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--root", tmp, "--json", out,
                   "--repeat", str(args.repeat), "--timeout", str(args.timeout)]
            for a, b, k in pairs:
                cmd += ["--pair", a, b, str(k)]
            subprocess.run(cmd, cwd=tmp, check=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, "PYTHONPATH": tmp})
            with open(out) as fh:
                old = json.load(fh)
    rows = run(pairs, args.repeat, args.timeout)
    if old is not None:
        show(old, f"before ({args.before})")
    show(rows, "now")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
