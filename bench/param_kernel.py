"""Reading a group of hypotheses that differ only in run-time parameters (F, carry, ρ's rounding
mode, input flushing): NumPy lanes against one compiled kernel whose parameters are its inputs
(``smtmodel.native.param_kernel``), on a hardware capture's cases.

    .venv/bin/python bench/param_kernel.py [--capture b200_fp8e4m3_fp32] [--groups 3] [--points 400]

Per structural group (the largest of the capture's open space): the compile CPU seconds (cold:
run with ``MMAPROBE_CACHE=`` for a figure without the disk cache), the (point, case) lanes per CPU
second of each reading and their ratio; the two readings' bits are compared before the figures
are printed. CPU seconds of this one process are the figures that carry over to a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from queries.identify import FileDevice, batched  # noqa: E402
from smtmodel.catalog.spaces import build_space  # noqa: E402

HWDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "hwdata")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--capture", default="b200_fp8e4m3_fp32")
    p.add_argument("--groups", type=int, default=3)
    p.add_argument("--points", type=int, default=400, help="points per group read compiled")
    p.add_argument("--numpy-points", type=int, default=24, help="points per group read by NumPy")
    a = p.parse_args(argv)
    dev = FileDevice(os.path.join(HWDATA, f"{a.capture}.jsonl.gz"), os.path.join(tempfile.mkdtemp(), "next.jsonl"))
    space = build_space(dev.in_fmt, dev.out_fmt, "open")
    cases = dev.prior()[0]
    groups = sorted(batched.groups(space, np.arange(space.size)), key=lambda g: -len(g[2]))[:a.groups]
    print(f"{a.capture}: open space of {space.size:,} points, {len(cases)} cases, k = {cases.k}")
    print("| group | points | compile CPU s | compiled lanes/CPU s | NumPy lanes/CPU s | ratio |")
    print("|---|---|---|---|---|---|")
    for part, local, pos, _ in groups:
        idx = np.asarray(pos[:a.points], np.int64)       # positions = global indices here
        batched.NATIVE_MIN_WORK, batched._COMPILED = 0, set()
        c0 = time.process_time()
        batched.evaluate(space, idx[:8], cases.take(np.arange(8)))
        c1 = time.process_time()
        got, _ = batched.evaluate(space, idx, cases)
        c2 = time.process_time()
        batched.NATIVE_MIN_WORK, batched._COMPILED = 1 << 62, set()
        ref, _ = batched.evaluate(space, idx[:a.numpy_points], cases)
        c3 = time.process_time()
        if not np.array_equal(ref, got[:a.numpy_points]):
            print(f"the two readings differ on {batched._spec(space, part, local)}", file=sys.stderr)
            return 1
        fast = len(idx) * len(cases) / (c2 - c1)
        slow = a.numpy_points * len(cases) / (c3 - c2)
        print(f"| {batched._spec(space, part, local)} | {len(idx)} | {c1 - c0:.2f} | {fast:.3g} | {slow:.3g} | "
              f"{fast / slow:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
