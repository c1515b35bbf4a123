"""The survey's identify part: ``identify`` on the GPU's kernels (queries.identify), a format pair
at a time in priority order, from the default hypothesis space (``--space``: another, e.g. ``open``), as
the budget allows.

The GPU machine has no SMT solver, so the solver stage is off (``solver_pairs=0``): a class of
points the probes do not split is reported as the set of points still possible, never as one.

Beside the kernels, the torch path (:data:`GEMM_TARGETS`): ``identify --gemm`` through torch's
own GEMM (:class:`hw_runner.gemm_device.TorchGemmDevice`: ``torch.addmm`` with an fp32 C, the aten
path ``torch.matmul`` takes), the (model, dataflow) and the split per GEMM shape
(:mod:`queries.gemm.identify`); then one probe with alpha = 1, beta = 0 through plain
``torch.matmul`` (D in the input format), judged by the survivors with the output rounded to that
format. In a dry run the device is the GEMM twin of the GPU's catalog model under
``cutlass3-sm90`` (the library part's stand-in).
"""

from __future__ import annotations

import time

import numpy as np

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
                 and not s.block_scaled]
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


GEMM_TARGETS = ("bf16", "fp16")
"""Input formats of the torch-path ``identify --gemm`` runs (fp32 C and D), in order."""


def gemm_targets(arch: str, quick: bool = False) -> list[str]:
    """The torch-path targets of a GPU (NVIDIA sm_70 and later: fp16/bf16 GEMMs through cuBLAS)."""
    sm = int("".join(ch for ch in arch.split("_")[1] if ch.isdigit()))
    if sm < 70:
        return []
    return list(GEMM_TARGETS[:1] if quick else GEMM_TARGETS)


class _TwinTorch:
    """Dry runs: the GEMM twin standing in for torch (the addmm path), and its torch.matmul: the
    same pair with D rounded to the input format."""

    def __init__(self, model, dataflow: str):
        from queries.gemm.devices import TwinGemmDevice
        self.twin = TwinGemmDevice(f"{model.id}:{dataflow}")
        self.name = f"twin torch-gemm ({model.id} | {dataflow})"
        self.in_fmt, self.c_fmt, self.out_fmt = self.twin.in_fmt, self.twin.c_fmt, self.twin.out_fmt

    def launch(self, p):
        return self.twin.launch(p)

    def matmul(self, p):
        from dataclasses import replace

        from queries.gemm.explain import Hypothesis
        from queries.gemm.identify import simulate
        h = self.twin.hidden
        return simulate(Hypothesis(h.model, replace(h.dataflow, out=self.in_fmt)), p)


def gemm_device(target, in_fmt: str):
    """The torch-path device of a survey target (dry: :class:`_TwinTorch`)."""
    if target.dry:
        from .library import LibGemm, _gemm_model
        m = _gemm_model(LibGemm("identify", "addmm", in_fmt, "fp32", 1, 1, 1), target.arch)
        return _TwinTorch(m, "cutlass3-sm90")
    from hw_runner.gemm_device import TorchGemmDevice
    return TorchGemmDevice(f"torch-gemm:{target.index}", in_fmt=in_fmt, out_fmt="fp32")


def run_identify_gemm(target, in_fmt: str, seed: int = 0, quick: bool = False, device=None) -> dict:
    """``identify --gemm`` through torch (module docstring): status, survivors, the split per shape,
    and the torch.matmul check. ``quick``: the GPU's catalog model, one rival and three dataflows
    (dry runs)."""
    from dataclasses import replace

    from hw_runner.errors import HarnessError
    from queries.gemm.explain import Hypothesis, default_dataflows, default_models
    from queries.gemm.identify import (
        INTERVALS,
        GemmOutcome,
        identify_gemm,
        simulate,
        split_search,
    )
    from queries.gemm.probes import Probe, extra
    from queries.identify.errors import IdentifyError
    from smtmodel.dataflow import parse_dataflow

    t0 = time.perf_counter()
    try:
        dev = device or gemm_device(target, in_fmt)
    except HarnessError as exc:
        return {"status": "failed", "reason": str(exc), "seconds": round(time.perf_counter() - t0, 3)}
    models = default_models(in_fmt, "fp32")
    dataflows = default_dataflows(INTERVALS)
    if quick:
        models = sorted(models, key=lambda m: (m.kind != "catalog", "hopper" not in m.id, m.id))[:2]
        dataflows = [parse_dataflow(x) for x in ("cutlass2", "cutlass3-sm90", "tensile")]
    try:
        out = identify_gemm(dev, models, dataflows, seed=seed)
    except (IdentifyError, HarnessError) as exc:
        return {"status": "failed", "reason": str(exc), "seconds": round(time.perf_counter() - t0, 3)}
    rec = {"status": out.verdict, "device": dev.name, "call": "torch.addmm(C, A, B, beta, alpha, out_dtype=float32)",
           "space": f"{len(models)} models x {len(dataflows)} dataflows", "launches": out.launches,
           "verified": out.verified, "live": out.labels()[:20], "live_count": len(out.live),
           "splits": out.splits, "named_shapes": out.named_shapes}
    # one probe through plain torch.matmul: alpha = 1, beta = 0, D in the input format
    q = extra(in_fmt, "fp32", 128, 7_919 + seed)
    q = Probe("matmul", q.a, q.b, q.c, 1.0, 0.0)
    try:
        d = np.asarray(dev.matmul(q), np.uint64)
        rounded = [Hypothesis(h.model, replace(h.dataflow, out=in_fmt)) for h in out.live]
        fit = [h.label for h in rounded if _same(simulate(h, q), d)]
        split = None
        if rounded and not fit:              # the library's split for this shape (queries.gemm.identify)
            probe_out = GemmOutcome("", [])
            fit = [h.label for h in split_search(rounded, q, d, probe_out)]
            split = probe_out.splits[0]["fits"]
        rec["matmul"] = {"call": "torch.matmul(A, B)", "shape": list(q.shape), "out": in_fmt,
                         "reproduced_by": len(fit), "of": len(out.live), "fit": fit[:20], "split": split}
    except (HarnessError, IdentifyError) as exc:
        rec["matmul"] = {"call": "torch.matmul(A, B)", "status": "failed", "reason": str(exc)}
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    return rec


def _same(sim, d) -> bool:
    return sim is not None and sim.shape == d.shape and bool(np.array_equal(sim, d))


def gemm_line(rec: dict) -> str:
    """One line of a torch-path identify record (the card, the progress)."""
    if rec.get("status") == "failed":
        return f"failed: {rec.get('reason')}"
    head = (f"{rec['status']}: {rec['live_count']} (model, dataflow) pair(s), e.g. {rec['live'][0]}"
            if rec.get("live") else f"{rec['status']}: no pair fits")
    sp = "; ".join(f"{'x'.join(map(str, r['shape']))}: {', '.join(r['fits']) or 'no common split'}"
                   for r in rec.get("splits", []))
    mm = rec.get("matmul") or {}
    mm_t = (f"; torch.matmul probe reproduced by {mm['reproduced_by']} of {mm['of']}" if "of" in mm
            else f"; torch.matmul probe: {mm.get('reason')}" if mm else "")
    return head + (f"; split per shape: {sp}" if sp else "") + mm_t + f" ({rec['launches']} launches, {rec['seconds']:.0f} s)"
