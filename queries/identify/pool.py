"""The pool of candidate probes a round chooses from: the seeds' structured kinds (one large term
and small ones at chosen exponent gaps, ties, carries, cancellation, subnormals, zeros beside tiny
terms, specials -- :func:`queries.distinguish.probes`, seed 000 §3, seed 002 §4) and the
validation mix (random normal, wide, cancelling and raw cases, :func:`smtmodel.sampling.validation_mix`)."""

from __future__ import annotations

import itertools

import numpy as np

from smtmodel.model import Model
from smtmodel.sampling import validation_mix

from ..distinguish import Constraints, probes
from .cases import Cases


def _arrays(batch: dict, k: int) -> Cases:
    a = np.stack([batch[f"a{i}"] for i in range(k)], axis=1)
    b = np.stack([batch[f"b{i}"] for i in range(k)], axis=1)
    return Cases(a, b, batch["c"])


def probe_pool(base: Model, k: int, seed: int, structured: int = 2, random: int = 1024) -> Cases:
    """``structured`` rounds of every structured kind (256 cases each) and ``random`` cases of the
    validation mix, drawn with ``seed``; duplicates removed."""
    gen = probes(base, k, Constraints(), seed)
    parts = [_arrays(batch, k) for batch in itertools.islice(gen, 9 * structured)]
    if random:
        a, b, c, _ = validation_mix(base.in_fmt, base.c_fmt, k, random, seed=seed)
        parts.append(Cases(a, b, c))
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    _, first = np.unique(np.concatenate([out.a, out.b, out.c[:, None]], axis=1), axis=0, return_index=True)
    return out.take(np.sort(first))


def verification_cases(base: Model, k: int, n: int, seed: int) -> Cases:
    """``n`` cases for the final check: half the validation mix, half structured probes."""
    half = n // 2
    a, b, c, _ = validation_mix(base.in_fmt, base.c_fmt, k, n - half, seed=seed + 7919)
    out = Cases(a, b, c)
    gen = probes(base, k, Constraints(), seed + 7919)
    while len(out) < n:
        out = out + _arrays(next(gen), k)
    return out.take(np.arange(n))
