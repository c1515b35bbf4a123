"""identify --gemm on hidden twin-gemm devices: every named profile that applies (no scales)
and random grid points, over a model's full default space. Prints one row per run: hidden pair,
recovered or not (the hidden pair among the survivors when the run ends identified or
narrowed), the verdict, survivors, launches, output elements read, seconds (docs/explain.md).

    python bench/identify_gemm.py [--models M1,M2,...] [--grid N] [--seed S] [--hidden-model M]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))   # before bench/queries.py

from queries.gemm.devices import TwinGemmDevice  # noqa: E402
from queries.gemm.explain import default_dataflows, default_models  # noqa: E402
from queries.gemm.identify import INTERVALS, identify_gemm  # noqa: E402
from smtmodel.catalog import get_model  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", help="space models (default: every fp16 -> fp32 catalog model and rival)")
    ap.add_argument("--hidden-model", action="append", help="hidden models (default: hopper, volta, cdna3)")
    ap.add_argument("--grid", type=int, default=4, help="random grid points per hidden model")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    models = ([get_model(x) for x in args.models.split(",")] if args.models else default_models("fp16", "fp32"))
    dfs = default_dataflows(INTERVALS)
    named = [d for d in dfs if d.name]
    grid = [d for d in dfs if not d.name]
    rng = random.Random(args.seed)
    hidden_models = args.hidden_model or ["hopper-fp16-fp32", "volta-fp16-fp32", "cdna3-fp16-fp32"]
    print(f"space: {len(models)} models x {len(dfs)} dataflows = {len(models) * len(dfs)} hypotheses, K = 128 (extra 256)")
    print(f"{'hidden model':<24} {'hidden dataflow':<46} {'ok':<3} {'verdict':<10} {'live':>4} {'launches':>8} "
          f"{'elements':>8} {'s':>6}")
    for hm in hidden_models:
        for df in named + rng.sample(grid, min(args.grid, len(grid))):
            text = df.text()
            dev = TwinGemmDevice(f"{hm}:{text}")
            t0 = time.perf_counter()
            out = identify_gemm(dev, models, dfs)
            ok = "yes" if out.recovered(dev.hidden) and out.verdict in ("identified", "narrowed") else "NO"
            print(f"{hm:<24} {text:<46} {ok:<3} {out.verdict:<10} {len(out.live):>4} {out.launches:>8} "
                  f"{out.matrices + out.verify_elements:>8} {time.perf_counter() - t0:>6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
