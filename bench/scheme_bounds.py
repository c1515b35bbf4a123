"""The composed-bound table of docs/results.md ("Composed bounds"): for each scheme@model the
proved componentwise gamma (queries.schemes.bound.compose, a, b, c exponents in [-15, 14], zeros
allowed) at K = 4 and 16 next to the largest error the twin sees on 24,000 random inputs per row
(queries.schemes.witness.twin_worst_comp: 12,000 per seed, seeds 0 and 1, half of seed 1's at the bottom of the range with
all-ones significands). Prints markdown rows.

    python bench/scheme_bounds.py fp16@cdna3-fp16-fp32 xf32-cdna3@cdna3-tf32-fp32 ...
"""

from __future__ import annotations

import os
import sys
import time

sys.path[0] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")   # bench/queries.py is not the package

from queries.schemes import InputRange  # noqa: E402
from queries.schemes.bound import compose  # noqa: E402
from queries.schemes.witness import twin_worst_comp  # noqa: E402

U32 = 2.0 ** -24


def row(spec: str, n: int = 12000) -> str:
    scheme, _, model = spec.partition("@")
    cells = []
    for k in (4, 16):
        rng = InputRange()
        b = compose(scheme, k, model or None, rng)
        seen = float(twin_worst_comp(scheme, model or None, k, rng, n))
        if seen > b.comp:
            raise SystemExit(f"{spec} K={k}: the twin's {seen} exceeds the proved {b.comp}")
        cells += [f"{b.comp:.4g} ({b.comp / U32:.4g} u)", f"{seen:.4g}"]
    return f"| {spec} | " + " | ".join(cells) + " |"


if __name__ == "__main__":
    for spec in sys.argv[1:]:
        t0 = time.perf_counter()
        print(row(spec), flush=True)
        print(f"  {spec}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
