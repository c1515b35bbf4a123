"""Solver time of the proofs: seed 000 Table 9 by lemmas (per parameter set, per solver) and the
compositional worst-case bounds of the GEMM schemes. Prints figures and ratios; asserts nothing.

    python bench/bounds.py            # a few representative models, Bitwuzla and z3
    python bench/bounds.py --all      # every T-FDPA-family model (about 4-5 minutes with Bitwuzla)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))   # before bench/queries.py

from queries.bounds import lemma_table, table9_models  # noqa: E402
from queries.schemes.bound import compose  # noqa: E402
from smtmodel.catalog import get_model  # noqa: E402

SAMPLE = ["volta-fp16-fp32", "hopper-fp16-fp32", "hopper-fp8e4m3-fp32", "blackwell-fp8e4m3-fp32-mx",
          "blackwell-fp4e2m1-fp32-mxgst", "hopper-fp8e4m3-fp16-mmasync", "cdna3-fp16-fp32", "cdna3-fp8e4m3fnuz-fp32"]
SCHEMES = [("fp32", None), ("fp16", "ampere-fp16-fp32"), ("markidis", "ampere-fp16-fp32"),
           ("oy-fp16", "ampere-fp16-fp32"), ("oy-tf32", "ampere-tf32-fp32"), ("3xtf32", "ampere-tf32-fp32")]


def cpu_seconds() -> float:
    """CPU seconds of this process and its waited children (steadier than wall seconds under load)."""
    import resource
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="every T-FDPA-family catalog model (Bitwuzla only)")
    args = ap.parse_args()
    models = table9_models() if args.all else [get_model(i) for i in SAMPLE]
    solvers = ("bitwuzla",) if args.all else ("bitwuzla", "z3")
    totals = {}
    for solver in solvers:
        t0, c0 = time.perf_counter(), cpu_seconds()
        rows = lemma_table(models, solver, 120)
        totals[solver] = time.perf_counter() - t0
        print(f"Table 9 by lemmas, {solver}: {len(rows)} parameter sets, {sum(r['proved'] for r in rows)} proved, "
              f"{totals[solver]:.1f} s wall, {cpu_seconds() - c0:.1f} s CPU, "
              f"slowest set {max(r['seconds'] for r in rows):.1f} s")
        for r in rows:
            slow = max(r["lemmas"], key=lambda x: x["seconds"])
            print(f"  {r['model']:<32} {r['seconds']:7.2f} s  (slowest lemma {slow['name']} {slow['seconds']:.2f} s, "
                  f"{slow['status']})")
    if len(totals) == 2:
        print(f"z3 / Bitwuzla wall-time ratio: {totals['z3'] / totals['bitwuzla']:.2f}")
    print("Compositional scheme bounds (K = 16, exponents in [-15, 14]):")
    for x, m in SCHEMES:
        t0 = time.perf_counter()
        b = compose(x, 16, m)
        print(f"  {b.scheme:<32} |err| <= {b.comp:.4g} x (|c| + sum |a_k b_k|) = {b.comp / 2 ** -24:8.1f} u32"
              f"   {time.perf_counter() - t0:.1f} s (lemmas {b.lemma_seconds:.1f} s)")


if __name__ == "__main__":
    main()
