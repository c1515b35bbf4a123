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
from smtmodel.sampling import validation_mix

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


SCALE_KINDS = ("one", "near", "push", "nan", "extreme", "zero", "raw")
"""How :func:`with_scales` sets a case's block scales, independently of its elements: all 1.0;
each block within 2^+-8 of 1; one block pushed 2^1..2^40 above the others (its group decides the
alignment, the rest is cut by F); a NaN scale in one block (E8M0 0xFF, UE4M3 0x7F); the extreme
scales (smallest and largest encodings) in one block; a zero scale (UE4M3 0x00, E8M0 has none:
its smallest, 2^-127, instead); random encodings."""


def with_scales(cases: Cases, scale_fmt: str, blocks: int, seed: int) -> Cases:
    """The cases with block scales (raw bits, ``blocks`` per case for a and for b) drawn per case
    from :data:`SCALE_KINDS` in turn, so every element pattern meets every kind of scale."""
    fs = get_format(scale_fmt)
    g = np.random.default_rng(seed)
    n = len(cases)
    e8 = fs.policy == "e8m0"
    # 1.0 and the encoding of 2^e: E8M0 is the biased exponent; UE4M3 (bias 7, 3 fraction bits) 0bEEEE000
    one = fs.bias if e8 else fs.bias << fs.mbits
    nan = (1 << fs.width) - 1 if e8 else (1 << (fs.width - 1)) - 1 if fs.signed else (1 << fs.width) - 1
    top = nan - 1                             # the largest finite encoding
    smallest = 0 if e8 else 1                 # 2^-127 / the smallest subnormal

    def enc(e):                               # 2^e, clipped into the finite normal range
        if e8:
            return np.clip(fs.bias + e, 0, top)
        return np.clip(fs.bias + e, 1, (top >> fs.mbits)) << fs.mbits

    sa = np.full((n, blocks), one, np.int64)
    sb = np.full((n, blocks), one, np.int64)
    kind = np.arange(n) % len(SCALE_KINDS)
    blk = g.integers(0, blocks, n)
    side = g.random(n) < 0.5
    rows = np.arange(n)
    for name_i, name in enumerate(SCALE_KINDS):
        r = rows[kind == name_i]
        if not r.size:
            continue
        if name == "near":
            sa[r] = enc(g.integers(-8, 9, (r.size, blocks)))
            sb[r] = enc(g.integers(-8, 9, (r.size, blocks)))
        elif name == "push":
            up = g.integers(1, 41, r.size)
            tgt = np.where(side[r], 0, 1)
            for j, i in enumerate(r):
                (sa if tgt[j] == 0 else sb)[i, blk[i]] = enc(min(up[j], 120 if e8 else 8))
        elif name in ("nan", "extreme", "zero"):
            val = {"nan": [nan], "extreme": [smallest, top], "zero": [0]}[name]
            pick = g.choice(val, r.size)
            for j, i in enumerate(r):
                (sa if side[i] else sb)[i, blk[i]] = pick[j]
        elif name == "raw":
            sa[r] = g.integers(0, nan + 1, (r.size, blocks))
            sb[r] = g.integers(0, nan + 1, (r.size, blocks))
    return Cases(cases.a, cases.b, cases.c, sa.astype(np.uint64), sb.astype(np.uint64))


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
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    cols = [out.a, out.b, out.c[:, None]] + ([out.sa, out.sb] if out.scaled else [])
    _, first = np.unique(np.concatenate(cols, axis=1), axis=0, return_index=True)
    return out.take(np.sort(first))


def _scaled(base: Model, k: int, cases: Cases, seed: int) -> Cases:
    """For a block-scaled base, the cases with scales of every kind (:func:`with_scales`)."""
    if not base.scale_fmt:
        return cases
    return with_scales(cases, base.scale_fmt, k // base.scale_block, seed)


def verification_cases(base: Model, k: int, n: int, seed: int) -> Cases:
    """``n`` cases for the final check: half the validation mix, half structured probes."""
    half = n // 2
    a, b, c, _ = validation_mix(base.in_fmt, base.c_fmt, k, n - half, seed=seed + 7919, b_fmt=base.operand_fmts[1])
    out = _scaled(base, k, Cases(a, b, c), seed + 7919)
    gen = probes(base, k, Constraints(), seed + 7919)
    while len(out) < n:
        out = out + _arrays(next(gen), k)
    return out.take(np.arange(n))
