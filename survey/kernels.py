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
from hw_runner.runner import BATCH, ModelVerdict, agree, layout_self_test, run_on_device
from smtmodel.catalog import get_model
from smtmodel.formats import get_format
from smtmodel.model import ModelError
from smtmodel.vectors import case_rows
from smtmodel.workers import default_jobs, process_pool

from .cases import CaseSet


def capture(launcher, spec, sets: list[CaseSet]) -> tuple[dict, dict]:
    """(result, arrays): the layout self-test and each set's outputs (raw bits) on ``launcher``.
    A kernel that fails to load or launch gives ``status: failed`` with the reason."""
    t0 = time.perf_counter()
    arrays, launches = {}, 0
    try:
        probes = layout_self_test(launcher, spec, spec.k, (spec.scale_fmt, spec.k // spec.scale_block)
                                  if spec.block_scaled else None)
        launches += 1
        for s in sets:
            d = run_on_device(launcher, spec, s.a, s.b, s.c, **s.scales).d
            launches += -(-s.n // BATCH)
            arrays[f"{spec.id}/{s.name}"] = d.astype(_dtype(spec.out_fmt))
            if s.ids is not None:              # cases read from files are stored with their outputs
                arrays[f"{spec.id}/{s.name}/a"] = s.a.astype(_dtype(spec.in_fmt))
                arrays[f"{spec.id}/{s.name}/b"] = s.b.astype(_dtype(spec.in_fmt))
                arrays[f"{spec.id}/{s.name}/c"] = s.c.astype(_dtype(spec.c_fmt))
                for x, v in s.scales.items():
                    arrays[f"{spec.id}/{s.name}/{x}"] = v.astype(np.uint8)
    except HarnessError as exc:
        return {"status": "failed", "reason": str(exc), "seconds": round(time.perf_counter() - t0, 3)}, {}
    result = {"status": "captured", "launches": launches, "layout_probes": probes,
              "sets": {s.name: {"cases": s.n, "k": s.k, "source": s.source} for s in sets},
              "seconds": round(time.perf_counter() - t0, 3)}
    return result, arrays


def _dtype(fmt: str):
    w = get_format(fmt).width
    return np.uint8 if w <= 8 else np.uint16 if w <= 16 else np.uint32 if w <= 32 else np.uint64


def _predict(mid: str, sets: list, backend: str) -> dict:
    """One model's outputs on each set (a process-pool task): name -> uint64 array, or the error;
    sets of one K and scale layout read in one call (:meth:`Model.evaluate_batches`)."""
    try:
        model = get_model(mid)
    except (ModelError, KeyError, ValueError) as exc:
        return {"error": str(exc)}
    outs = model.evaluate_batches([(a, b, c, sc.get("a_scale"), sc.get("b_scale")) for _n, a, b, c, sc in sets],
                                  backend=backend, jobs=1)
    return {name: d for (name, *_inputs), d in zip(sets, outs)}


class Predictor:
    """Every hypothesis's outputs on the survey's case sets, computed once: kernels of the same
    formats and K share their sets (the same seeds, the same files), so they share predictions;
    the models of a group are evaluated in parallel processes (``jobs``; spawned, never forked
    beside a CUDA context). NumPy reads the models: a few thousand cases per set cost less than
    compiling each model (docs/native.md)."""

    def __init__(self, jobs: int | None = None, backend: str = "numpy"):
        self.jobs = max(1, jobs or default_jobs())
        self.backend = backend
        self.cache: dict[tuple, dict] = {}
        self._pool = None

    @staticmethod
    def group(spec) -> tuple:
        return (spec.in_key, spec.c_fmt, spec.out_fmt, spec.k, spec.scale_key)

    def predictions(self, spec, sets: list[CaseSet], models: list[str]) -> dict:
        """model id -> {set name -> outputs} (or {"error": ...})."""
        g = self.group(spec)
        todo = [m for m in models if (g, m) not in self.cache]
        payload = [(s.name, s.a, s.b, s.c, s.scales) for s in sets]
        if len(todo) > 1 and self.jobs > 1:
            if self._pool is None:
                self._pool = process_pool(self.jobs)
            futures = {m: self._pool.submit(_predict, m, payload, self.backend) for m in todo}
            for m, f in futures.items():
                self.cache[(g, m)] = f.result()
        else:
            for m in todo:
                self.cache[(g, m)] = _predict(m, payload, self.backend)
        return {m: self.cache[(g, m)] for m in models}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


def judge(spec, sets: list[CaseSet], outputs: dict, models: list[str], predictor: Predictor | None = None) -> dict:
    """Per model: matches per set (bitwise, and with any NaN equal to any NaN), the first
    contradiction, and ``survives`` (every output reproduced bit for bit)."""
    t0 = time.perf_counter()
    fo = get_format(spec.out_fmt)
    preds = (predictor or Predictor(jobs=1)).predictions(spec, sets, models)
    verdicts = {}
    for mid in models:
        if "error" in preds[mid]:
            verdicts[mid] = {"error": preds[mid]["error"]}
            continue
        v = ModelVerdict(mid, kind=get_model(mid).kind)
        for s in sets:
            hw = np.asarray(outputs[f"{spec.id}/{s.name}"], dtype=np.uint64)
            pred = preds[mid][s.name]

            def case(i, s=s, pred=pred, hw=hw):
                one, scaled = slice(i, i + 1), s.sa is not None
                return {"set": s.name, "case": s.ids[i] if s.ids else i,
                        **case_rows((*spec.operand_fmts, spec.c_fmt), s.a[one], s.b[one], s.c[one],
                                    a_scale=s.sa[one] if scaled else None, b_scale=s.sb[one] if scaled else None,
                                    scale_fmt=spec.scale_fmt if scaled else None)[0],
                        "expected": fo.hex(int(pred[i])), "observed": fo.hex(int(hw[i]))}
            v.count(s.name, agree(pred, hw, fo), agree(pred, hw, fo, nan_equal=True), case)
        verdicts[mid] = v.card()
    return {"verdicts": verdicts, "seconds": round(time.perf_counter() - t0, 3)}
