"""The survey's identify part: ``identify`` on the GPU's kernels (queries.identify), a format pair
at a time in priority order, from the default hypothesis space (``--space``: another, e.g. ``open``), as
the budget allows.

The GPU machine has no SMT solver, so the solver stage is off (``solver_pairs=0``): a class of
points the probes do not split is reported as the set of points still possible, never as one.
"""

from __future__ import annotations

import time

from hw_runner.identify_device import CudaDevice
from hw_runner.kernels import KERNELS

ORDER = (("fp16", "fp32", "mma"), ("bf16", "fp32", "mma"), ("fp8e4m3", "fp32", "wgmma"), ("tf32", "fp32", "mma"),
         ("fp16", "fp16", "mma"), ("fp8e5m2", "fp32", "wgmma"), ("fp8e4m3", "fp32", "mma"),
         ("fp8e4m3", "fp16", "wgmma"), ("bf16", "fp32", "wgmma"), ("fp16", "fp32", "wgmma"))
"""Format pairs and instruction families in the order the survey identifies them."""


def targets(arch: str) -> list:
    """The kernels identify runs on, in :data:`ORDER`: per pair and family the one with the largest K."""
    out = []
    for fin, fout, fam in ORDER:
        cands = [s for s in KERNELS.values() if (s.in_fmt, s.out_fmt, s.family) == (fin, fout, fam)
                 and s.c_fmt == fout and s.supports(arch) and not s.satfinite and not s.b_fmt
                 and not getattr(s, "block_scaled", False)]
        if cands:
            out.append(max(cands, key=lambda s: s.k))
    return out


def run_identify(launcher, spec, verify: int, seed: int, space: str | None = None) -> dict:
    """Identify the arithmetic behind ``spec`` on ``launcher`` (module docstring)."""
    from queries.identify import Settings, identify
    from smtmodel.catalog.spaces import build_space

    t0 = time.perf_counter()
    device = CudaDevice("cuda", in_fmt=spec.in_fmt, out_fmt=spec.out_fmt, c_fmt=spec.c_fmt, instruction=spec.id,
                        launcher=launcher)
    space = build_space(spec.in_key, spec.out_fmt, space)
    s = Settings(k=spec.k, seed=seed, verify=verify, solver_pairs=0, jobs=1)      # no forks beside CUDA
    out = identify(space, device, s)
    live = [out.spec(i) for i in out.live[:50]]
    cat = sorted({x for i in out.live for x in out.catalog.get(i, ())})
    return {"status": out.status, "space": space.describe(), "points": space.size,
            "identified": out.spec(out.winner) if out.status == "identified" and len(out.live) == 1 else None,
            "live": live, "live_count": len(out.live), "catalog_match": cat, "class_status": out.class_status,
            "launches": out.launches, "verify_launches": out.verify_launches, "verified": out.verified,
            "message": out.message, "solver": "off (no SMT solver on the GPU machine)",
            "seconds": round(time.perf_counter() - t0, 3)}
