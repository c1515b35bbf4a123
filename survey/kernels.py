"""The survey's first part: every instruction kernel of the GPU, captured and judged.

:func:`capture` runs a kernel's layout self-test (exact probes whose result no arithmetic model
changes: a wrong fragment layout shows at once) and then each case set on the GPU;
:func:`judge` evaluates every hypothesis of the kernel's formats on the same (padded) cases and
counts, per set, the outputs it reproduces bit for bit (seed 001 Algorithm 1: one mismatch
refutes a model), and separately those equal up to the NaN payload.
"""

from __future__ import annotations

import time

import numpy as np

from hw_runner.errors import HarnessError
from hw_runner.mix import layout_probe
from hw_runner.runner import agree, run_on_device
from smtmodel.catalog import get_model
from smtmodel.formats import get_format
from smtmodel.model import ModelError

from .cases import CaseSet


def capture(launcher, spec, sets: list[CaseSet]) -> tuple[dict, dict]:
    """(result, arrays): the layout self-test and each set's outputs (raw bits) on ``launcher``.
    A kernel that fails to load or launch gives ``status: failed`` with the reason."""
    t0 = time.perf_counter()
    arrays, launches = {}, 0
    try:
        pa, pb, pc, pd = layout_probe(spec.in_fmt, spec.c_fmt, spec.out_fmt, spec.k, b_fmt=spec.b_fmt)
        probe = run_on_device(launcher, spec, pa, pb, pc)
        launches += 1
        bad = int(np.count_nonzero(probe.d != pd))
        if bad:
            return ({"status": "failed", "reason": f"layout self-test: {bad}/{len(pd)} exact probes wrong "
                     "(the kernel packs its operands wrongly; its outputs would be meaningless)",
                     "seconds": round(time.perf_counter() - t0, 3)}, {})
        for s in sets:
            d = run_on_device(launcher, spec, s.a, s.b, s.c).d
            launches += -(-s.n // 8192)
            arrays[f"{spec.id}/{s.name}"] = d.astype(_dtype(spec.out_fmt))
            if s.ids is not None:              # cases read from files are stored with their outputs
                arrays[f"{spec.id}/{s.name}/a"] = s.a.astype(_dtype(spec.in_fmt))
                arrays[f"{spec.id}/{s.name}/b"] = s.b.astype(_dtype(spec.in_fmt))
                arrays[f"{spec.id}/{s.name}/c"] = s.c.astype(_dtype(spec.c_fmt))
    except HarnessError as exc:
        return {"status": "failed", "reason": str(exc), "seconds": round(time.perf_counter() - t0, 3)}, {}
    result = {"status": "captured", "launches": launches, "layout_probes": len(pd),
              "sets": {s.name: {"cases": s.n, "k": s.k, "source": s.source} for s in sets},
              "seconds": round(time.perf_counter() - t0, 3)}
    return result, arrays


def _dtype(fmt: str):
    w = get_format(fmt).width
    return np.uint8 if w <= 8 else np.uint16 if w <= 16 else np.uint32 if w <= 32 else np.uint64


def judge(spec, sets: list[CaseSet], outputs: dict, models: list[str], jobs: int | None = None) -> dict:
    """Per model: matches per set (bitwise, and with any NaN equal to any NaN), the first
    contradiction, and ``survives`` (every output reproduced bit for bit)."""
    t0 = time.perf_counter()
    fo = get_format(spec.out_fmt)
    verdicts = {}
    for mid in models:
        try:
            model = get_model(mid)
        except (ModelError, KeyError, ValueError) as exc:
            verdicts[mid] = {"error": str(exc)}
            continue
        per, first, total, match = {}, None, 0, 0
        for s in sets:
            hw = np.asarray(outputs[f"{spec.id}/{s.name}"], dtype=np.uint64)
            pred = np.asarray(model.evaluate(s.a, s.b, s.c, jobs=jobs), dtype=np.uint64)
            ok = agree(pred, hw, fo)
            ok_nan = agree(pred, hw, fo, nan_equal=True)
            per[s.name] = [int(ok.sum()), int(ok_nan.sum()), s.n]
            total += s.n
            match += int(ok.sum())
            if first is None and not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                fi, fb, fc = (get_format(f) for f in (*spec.operand_fmts, spec.c_fmt))
                first = {"set": s.name, "case": s.ids[i] if s.ids else i,
                         "a": [fi.hex(int(x)) for x in s.a[i]], "b": [fb.hex(int(x)) for x in s.b[i]],
                         "c": fc.hex(int(s.c[i])), "expected": fo.hex(int(pred[i])), "observed": fo.hex(int(hw[i]))}
        verdicts[mid] = {"matches": match, "total": total, "survives": match == total, "sets": per,
                         "first_contradiction": first, "kind": model.kind}
    return {"verdicts": verdicts, "seconds": round(time.perf_counter() - t0, 3)}
