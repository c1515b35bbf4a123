"""The pool of candidate probes a round chooses from: the seeds' structured kinds (one large term
and small ones at chosen exponent gaps, ties, carries, cancellation, subnormals, zeros beside tiny
terms, specials -- :func:`queries.distinguish.probes`, seed 000 §3, seed 002 §4) and the
validation mix (random normal, wide, cancelling and raw cases, :func:`smtmodel.sampling.validation_mix`);
for a block-scaled unit, the same element patterns again with scales varied on their own
(:func:`with_scales`: one block pushed above the others, NaN, extreme and zero scales)."""

from __future__ import annotations

import itertools

import numpy as np

from smtmodel.formats import get_format
from smtmodel.model import Model
from smtmodel.sampling import scale_mix, validation_mix

from ..distinguish import Constraints, probes
from .cases import Cases


def _arrays(batch: dict, k: int) -> Cases:
    a = np.stack([batch[f"a{i}"] for i in range(k)], axis=1)
    b = np.stack([batch[f"b{i}"] for i in range(k)], axis=1)
    if "sa0" in batch:
        n = sum(1 for key in batch if key.startswith("sa"))
        return Cases(a, b, batch["c"], np.stack([batch[f"sa{i}"] for i in range(n)], axis=1),
                     np.stack([batch[f"sb{i}"] for i in range(n)], axis=1))
    return Cases(a, b, batch["c"])


def with_scales(cases: Cases, scale_fmt: str, blocks: int, seed: int) -> Cases:
    """The cases with block scales (raw bits, ``blocks`` per case for a and for b) drawn per case
    from :data:`smtmodel.sampling.SCALE_KINDS` in turn (:func:`smtmodel.sampling.scale_mix`), so
    every element pattern meets every kind of scale."""
    sa, sb = scale_mix(scale_fmt, len(cases), blocks, seed)
    return Cases(cases.a, cases.b, cases.c, sa, sb)


def low_bits(cases: Cases, fmt, seed: int, frac: float = 0.3) -> Cases:
    """A copy of the cases with random bits below a container format's encoding (TF32's 13 low
    bits) set in a fraction of the a and b entries: how such inputs are read is a hypothesis."""
    g = np.random.default_rng(seed)
    mask = np.uint64((1 << fmt.shift) - 1)
    junk = g.integers(1, 1 << fmt.shift, cases.a.shape, dtype=np.uint64)
    half = np.uint64(1 << (fmt.shift - 1))
    junk = np.where(g.random(cases.a.shape) < 0.3, half, junk)          # exact ties (RNE vs RNA)
    pick_a, pick_b = g.random(cases.a.shape) < frac, g.random(cases.b.shape) < frac
    return Cases(np.where(pick_a, (cases.a & ~mask) | junk, cases.a),
                 np.where(pick_b, (cases.b & ~mask) | junk[::-1], cases.b), cases.c.copy())


def probe_pool(base: Model, k: int, seed: int, structured: int = 2, random: int = 1024,
               container_bits: bool = True) -> Cases:
    """``structured`` rounds of every structured kind (256 cases each) and ``random`` cases of the
    validation mix, drawn with ``seed``; for a container format (TF32) with ``container_bits``,
    a copy of 512 of them with low container bits set; duplicates removed."""
    gen = probes(base, k, Constraints(), seed)
    parts = [_arrays(batch, k) for batch in itertools.islice(gen, 9 * structured)]
    if random:
        a, b, c, _ = validation_mix(base.in_fmt, base.c_fmt, k, random, seed=seed, b_fmt=base.operand_fmts[1])
        parts.append(_scaled(base, k, Cases(a, b, c), seed))
    if base.scale_fmt:          # the structured kinds again, their scales varied independently
        parts += [_scaled(base, k, Cases(p.a, p.b, p.c), seed + 1 + j) for j, p in enumerate(parts[:9 * structured])]
    fi = get_format(base.in_fmt)
    if fi.shift and container_bits:
        parts.append(low_bits(parts[0] + parts[-1], fi, seed))
    return Cases.join_unique(parts)


def _scaled(base: Model, k: int, cases: Cases, seed: int) -> Cases:
    """For a block-scaled base, the cases with scales of every kind (:func:`with_scales`)."""
    if not base.scale_fmt:
        return cases
    return with_scales(cases, base.scale_fmt, base.scale_count(k), seed)


def verification_cases(base: Model, k: int, n: int, seed: int) -> Cases:
    """``n`` cases for the final check: half the validation mix, half structured probes."""
    half = n // 2
    a, b, c, _ = validation_mix(base.in_fmt, base.c_fmt, k, n - half, seed=seed + 7919, b_fmt=base.operand_fmts[1])
    out = _scaled(base, k, Cases(a, b, c), seed + 7919)
    gen = probes(base, k, Constraints(), seed + 7919)
    while len(out) < n:
        out = out + _arrays(next(gen), k)
    return out.take(np.arange(n))
