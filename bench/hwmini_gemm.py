"""Replay the RTX 4060 cuBLASLt FP8 GEMM recordings (../shared/hwdata/rtx4060_mmaemu, format
mmaemu-hwmini/1) with the Ada catalog models and the Ada cuBLASLt dataflow profiles, each call's
split-K (S, combine) and fast/slow accumulation read from its recording; print how many recorded
outputs are reproduced bit for bit, per group, and the time.

Run: python bench/hwmini_gemm.py [--limit N] [--every K] [--jobs J] [--show 10]
(``--every K`` replays every K-th output only: a quick sample).
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path

import numpy as np

from queries.cublaslt import call_dataflow, replay
from smtmodel.mmaemu import open_hwmini

ROOT = Path(__file__).resolve().parents[1] / ".." / "shared" / "hwdata" / "rtx4060_mmaemu"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=str(ROOT))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--show", type=int, default=10, help="mismatching outputs to print")
    args = ap.parse_args()
    h = open_hwmini(args.dir)
    outs = h.gemm_outputs()[::args.every][:args.limit]
    ok, bad = collections.Counter(), collections.Counter()
    shown = 0
    values = 0
    cache = {}
    t0 = time.perf_counter()
    for n, o in enumerate(outs, 1):
        df = call_dataflow(o)
        key = f"{o.fmt_a}x{o.fmt_b}->{o.out_fmt} {'fast' if o.fast else 'slow'} S={df.slices} {df.combine if df.slices > 1 else ''}"
        if len(cache) > 4000:                 # outputs of one call (and calls on the same inputs) share chains
            cache.clear()
        d = replay(o, jobs=args.jobs, cache=cache)
        if np.array_equal(d, o.expect):
            ok[key] += 1
            values += o.expect.size
        else:
            bad[key] += 1
            if shown < args.show:
                shown += 1
                i = int(np.flatnonzero(d.reshape(-1) != o.expect.reshape(-1))[0])
                print(f"  differs: {o.id} ({df.text()}): output {i} twin {int(d.reshape(-1)[i]):#x} "
                      f"recorded {int(o.expect.reshape(-1)[i]):#x}", flush=True)
        if n % 250 == 0:
            print(f"  {n}/{len(outs)} outputs, {sum(ok.values())} bit-exact, {time.perf_counter() - t0:.0f} s", flush=True)
    secs = time.perf_counter() - t0
    print(f"{sum(ok.values())} of {len(outs)} recorded outputs bit-exact ({values} values), "
          f"{sum(bad.values())} differ; {secs:.0f} s")
    for k in sorted(set(ok) | set(bad)):
        print(f"  {k:<44} {ok[k]:5d} ok {bad[k]:5d} differ")


if __name__ == "__main__":
    main()
