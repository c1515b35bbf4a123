"""Hypotheses evaluated by the twin: a point of a space (``ID:overrides``) becomes a catalog model
with overrides (:func:`smtmodel.catalog.get_model`) and is read through :meth:`Model.evaluate`
(the one twin call, so a faster reading of the same semantics is picked up here). Many points at
once: :mod:`.batched` (points differing in run-time parameters share one evaluation)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from smtmodel.catalog import get_model
from smtmodel.model import Model, ModelError

from .cases import Cases


@lru_cache(maxsize=8192)
def model_of(spec: str) -> Model:
    return get_model(spec)


def outputs(m: Model, cases: Cases) -> np.ndarray:
    """The model's output bits on the cases (the twin; ``auto``: compiled for a large batch, such
    as a verification of 10^6 cases, NumPy for the few thousand probes of most points)."""
    return np.asarray(m.evaluate(cases.a, cases.b, cases.c, **cases.scales()), dtype=np.uint64)


def try_outputs(spec: str, cases: Cases) -> np.ndarray | None:
    """Output bits, or None where the hypothesis cannot run these cases (e.g. k not a multiple
    of its block): such a hypothesis is out of the running."""
    try:
        return outputs(model_of(spec), cases)
    except ModelError:
        return None
