"""Hypotheses evaluated by the twin: a point of a space (``ID:overrides``) becomes a catalog model
with overrides (:func:`smtmodel.catalog.get_model`) and is read through :meth:`Model.evaluate`
(the one twin call, so a faster reading of the same semantics is picked up here)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from smtmodel.catalog import get_model
from smtmodel.model import Model, ModelError

from .cases import Cases


@lru_cache(maxsize=8192)
def model_of(spec: str) -> Model:
    return get_model(spec)


# Below this many cases a hypothesis is read by the NumPy twin: identify evaluates most points
# once, on a few thousand probes at most, where compiling a kernel (0.2-1.5 s) costs more than
# the NumPy reading (~20-40 ms); verification (10^5 cases) and large captures use the compiled one.
NATIVE_MIN_CASES = 1 << 15


def outputs(m: Model, cases: Cases) -> np.ndarray:
    """The model's output bits on the cases (the twin)."""
    backend = "auto" if len(cases) >= NATIVE_MIN_CASES else "numpy"
    return np.asarray(m.evaluate(cases.a, cases.b, cases.c, backend=backend), dtype=np.uint64)


def try_outputs(spec: str, cases: Cases) -> np.ndarray | None:
    """Output bits, or None where the hypothesis cannot run these cases (e.g. k not a multiple
    of its block): such a hypothesis is out of the running."""
    try:
        return outputs(model_of(spec), cases)
    except ModelError:
        return None


def matrix(specs: list[str], cases: Cases) -> tuple[np.ndarray, list[int]]:
    """Outputs (H, N) of the hypotheses that run, and the row indices of those that do."""
    rows, ok = [], []
    for j, s in enumerate(specs):
        d = try_outputs(s, cases)
        if d is not None:
            rows.append(d)
            ok.append(j)
    return (np.stack(rows) if rows else np.zeros((0, len(cases)), np.uint64)), ok


def first_mismatch(spec: str, cases: Cases, answers: np.ndarray, stages=(32, 256)) -> int:
    """-1 where the hypothesis reproduces every answer, else the index of the first case it gets
    wrong (len(cases) where it cannot run them). Checked in stages (the first ``stages`` cases,
    then the rest) so that most wrong hypotheses cost one small evaluation."""
    n, start = len(cases), 0
    for stop in tuple(s for s in stages if s < n) + (n,):
        part = cases.take(np.arange(start, stop))
        d = try_outputs(spec, part)
        if d is None:
            return n
        bad = np.flatnonzero(d != answers[start:stop])
        if bad.size:
            return start + int(bad[0])
        start = stop
        if start >= n:
            break
    return -1
