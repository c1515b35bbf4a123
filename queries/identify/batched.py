"""Many points of a space read by one twin evaluation: parameters as run-time data.

Points of a family that differ only in parameters the core takes at run time
(:mod:`smtmodel.runtime`: F and carry of T-FDPA and the FP8 halves path) form a *group*; a group
is one NumPy evaluation of :meth:`Model.evaluate` whose lanes are (point, case) pairs, the
parameters a lane value each; a large group is one compiled kernel instead, the parameters its
inputs (:func:`smtmodel.native.param_kernel`, 9-15x the NumPy lanes per CPU second). The
structural parameters (L, ρ's target, normalisation, zero handling, c entry, NaN encoding, TF32
low bits) are enumerated, one evaluation per group. Every output still comes from the one
semantics (``Model.build``); only the lanes are arranged.

Measured (docs/identify.md): one NumPy evaluation of a small batch costs ~4-8 ms whatever its
length up to a few thousand lanes, so reading 30 (F, carry) points of a group on 32 cases costs
about what one point did.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from smtmodel.model import CHUNK, ModelError
from smtmodel.bv import NUMPY
from smtmodel.fp.rounding import MODES
from smtmodel.ops.fdpa import RHO, Rho
from smtmodel.fp.value import FLUSH_CODES
from smtmodel.native import AUTO_MIN_WORK
from smtmodel.runtime import NONE_CODE, WIDTH, Runtime, code

from .cases import Cases
from .hypotheses import model_of, try_outputs

RUNTIME_KEYS = {"tfdpa": ("F", "carry", "rho", "flush_inputs"), "fp8_via_fp16": ("F", "carry", "rho"),
                "stfdpa": ("F", "carry", "rho"), "gstfdpa": ("F", "rho"), "trfdpa": ("F", "F2"),
                "gtrfdpa": ("F", "F2")}
"""Per op, the parameters its core reads at run time: F and carry (smtmodel.ops.fused.truncated_sum),
the rounding mode of ρ (smtmodel.fp.rounding.round_finite; ρ's target format stays structural),
input flushing (smtmodel.fp.value.decode). ST-FDPA is T-FDPA with the scale exponents added to
each product, so it takes the same three; GST-FDPA's aligned sum of group terms takes F and ρ's
mode the same way; TR/GTR-FDPA (smtmodel.ops.amd.tr_fdpa) F and F2 (the open ranges keep F <= F2:
F 21..28, F2 28..40)."""

LANES = CHUNK
"""Lanes per evaluation at most (the NumPy reading's cache-sized batch)."""


def _strides(part) -> dict:
    out, mult = {}, 1
    for key, vals in part.ranges.items():
        out[key] = (mult, len(vals))
        mult *= len(vals)
    return out


def _runtime_keys(part) -> tuple:
    keys = tuple(k for k in RUNTIME_KEYS.get(part.family.op, ()) if k in part.ranges and len(part.ranges[k]) > 1)
    if "F2" in part.ranges and max(part.ranges.get("F", (0,))) > min(part.ranges["F2"]):
        keys = tuple(k for k in keys if k not in ("F", "F2"))     # run-time F and F2 need F <= F2 in every lane
    return keys


def groups(space, idx: np.ndarray):
    """Yield (part, local base index, positions in ``idx``, {key: values per position}) for the
    points ``idx`` (global indices), grouped by their structural parameters; listed points
    (``space.extra``) come one a group with part None."""
    idx = np.asarray(idx, np.int64)
    offset = 0
    pos_all = np.arange(len(idx))
    for part in space.parts:
        sel = (idx >= offset) & (idx < offset + part.size)
        if sel.any():
            local, pos = idx[sel] - offset, pos_all[sel]
            st = _strides(part)
            rkeys = _runtime_keys(part)
            base = local.copy()
            digits = {}
            for key in rkeys:
                mult, n = st[key]
                d = (local // mult) % n
                digits[key] = d
                base -= d * mult
                if key == "rho":             # the target format stays structural: group by it
                    first = _first_same_target(part.ranges["rho"])
                    base += first[d] * mult
            order = np.argsort(base, kind="stable")
            b_sorted = base[order]
            cuts = np.flatnonzero(np.diff(b_sorted)) + 1
            for chunk in np.split(order, cuts):
                vals = {key: [part.ranges[key][int(j)] for j in digits[key][chunk]] for key in rkeys}
                yield part, int(base[chunk[0]]), pos[chunk], vals
        offset += part.size
    for j, spec in enumerate(space.extra):
        sel = np.flatnonzero(idx == offset + j)
        if sel.size:
            yield None, spec, sel, {}


def _first_same_target(rhos) -> np.ndarray:
    """Per ρ of a range, the index of the first ρ with the same target and container."""
    tgt = [(RHO[r].target, RHO[r].container) for r in rhos]
    return np.array([tgt.index(t) for t in tgt], np.int64)


def _codes(key: str, values: list) -> np.ndarray:
    """The lane codes of parameter ``key``'s values (one per point)."""
    if key == "rho":
        return np.array([MODES.index(RHO[v].rm) for v in values], np.uint64)
    if key == "flush_inputs":
        values = [_FLUSH[v] for v in values]
    return np.array([code(v) for v in values], np.uint64)


def _stand_ins(m, choices: dict, bvs: list) -> dict:
    """The model's fields as run-time parameters (:class:`smtmodel.runtime.Runtime`), each read
    from the bitvector of codes at its position in ``bvs`` (NumPy lanes, or a kernel's inputs);
    ρ's target and container are the point's own (structural), its mode a run-time choice."""
    out = {}
    for (key, ch), bv in zip(choices.items(), bvs):
        if key == "rho":
            r = RHO[m.rho]
            out[key] = Rho(r.target, Runtime(bv, tuple(MODES.index(RHO[c].rm) for c in ch)), r.container)
        elif key == "flush_inputs":
            out[key] = Runtime(bv, tuple(_FLUSH[c] for c in ch))
        else:
            out[key] = Runtime(bv, tuple(ch))
    return out


_FLUSH = {k: (None if v == NONE_CODE else v) for k, v in FLUSH_CODES.items()}

NATIVE_MIN_WORK = AUTO_MIN_WORK
"""A group's lanes x K (lanes = points x the cases they may be read on) from which it is read by
a compiled kernel with its run-time parameters as inputs (:func:`smtmodel.native.param_kernel`):
the rule of ``backend="auto"`` (:data:`smtmodel.native.AUTO_MIN_WORK`). Below, and where llvmlite
does not load, NumPy."""
NATIVE_LANES = 1 << 17
"""Lanes per compiled call (the tiled operands of one call stay near 70 MB at K = 32)."""
_COMPILED: set = set()


def _native(m, choices: dict, codes: np.ndarray, cases: Cases, expect: int) -> np.ndarray | None:
    """Outputs (points, N) of the group through a compiled kernel, or None where it is not worth
    compiling for ``expect`` cases per point, or cannot compile (NumPy then reads it)."""
    from smtmodel import native
    h, n = codes.shape[0], len(cases)
    key = (m.id, tuple(choices.items()), cases.k, cases.sa.shape[1] if cases.scaled else 0)
    if not native.available() or (key not in _COMPILED and h * expect * cases.k < NATIVE_MIN_WORK):
        return None
    ns = key[3]
    try:
        kern = native.param_kernel(m, cases.k, ns, key[1], lambda bvs: replace(m, **_stand_ins(m, choices, bvs)))
    except native.NativeError:
        return None
    _COMPILED.add(key)
    wa, wb, wc, wp = kern.widths
    out = np.empty((h, n), np.uint64)
    per = max(1, NATIVE_LANES // n)
    for s in range(0, h, per):
        hh = len(codes[s:s + per])
        t = cases.tile(hh)
        cols = np.repeat(codes[s:s + per], n, axis=0)
        sa = np.ascontiguousarray(np.hstack([t["a_scale"], cols]) if ns else cols, np.uint64)
        sb = np.ascontiguousarray(np.hstack([t["b_scale"], np.zeros_like(cols)]) if ns else np.zeros_like(cols))
        out[s:s + hh] = native.run_rows(kern, t["a"], t["b"], t["c"], sa, sb,
                                        widths=(wa, wc, wp, wb)).reshape(hh, n)
    return out


def _spec(space, part, local) -> str:
    return f"{space.base.id}:{part.overrides(local)}" if part is not None else local


def evaluate(space, idx, cases: Cases, expect: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(outputs (len(idx), N) uint64, ok (len(idx),) bool) of the points ``idx`` on ``cases``;
    ok is False where a point cannot run them (its row is then zeros). ``expect``: on how many
    cases these points may be read in all (a staged caller's remaining cases; default N), which
    decides whether a group is worth compiling."""
    idx = np.asarray(idx, np.int64)
    n = len(cases)
    out = np.zeros((len(idx), n), np.uint64)
    ok = np.zeros(len(idx), bool)
    if n == 0:
        ok[:] = True
        return out, ok
    for part, local, pos, vals in groups(space, idx):
        spec = _spec(space, part, local)
        m = None
        if vals:
            try:
                m = model_of(spec)
            except ModelError:
                continue
            choices = {key: tuple(part.ranges[key]) for key in vals}
            codes = np.stack([_codes(key, vs) for key, vs in vals.items()], axis=1)
            d = _native(m, choices, codes, cases, expect or n)    # a large group, or many cases: compiled
            if d is not None:
                out[pos], ok[pos] = d, True
                continue
        if m is None or n > LANES // 2:
            for p, i in zip(pos, idx[pos]):
                d = try_outputs(space.spec(int(i)), cases)
                if d is not None:
                    out[p], ok[p] = d, True
            continue
        per = max(1, LANES // n)
        for s in range(0, len(pos), per):
            sl = slice(s, s + per)
            h = len(pos[sl])
            bvs = [NUMPY.input(np.repeat(codes[sl, j], n), WIDTH) for j in range(codes.shape[1])]
            try:
                d = replace(m, **_stand_ins(m, choices, bvs)).evaluate(**cases.tile(h), backend="numpy")
            except ModelError:
                continue
            out[pos[sl]] = d.reshape(h, n)
            ok[pos[sl]] = True
    return out, ok


STAGES = (1, 4, 16, 64, 256, 512, 1024, 2048, 4096)
"""Case counts at which :func:`first_mismatches` drops the points already wrong. The first answer
alone, then fourfold up to 256, then doubling. The first answer is the design's best splitter:
on an open space 99.5 % of the points fail it (ada fp8e4m3 -> fp32, 2.4 million points: 10,224
left, in 96 of 460 groups), and reading every point on one case instead of four halves the first
pass (22.3 -> 11.5 CPU s). Doubling after 256: on B200's fp8 e5m2 -> fp32 capture 237,840
open-space points fit the first 256 answers and 97 % of them fail later, two thirds before the
512th (383 -> 199 s)."""
LONG_LIVED = 256
"""From this many answers on, a group is compiled by the cases its points may still be read on,
not by the stage's (``expect``): on fp16 -> fp16 captures 46,200 points fit all 5,000 answers,
and stages of 256-2,048 cases alone would leave each group on NumPy (38 s -> 141 s). Before it,
most points fail within the stage, and compiling every group of the space would cost more."""


def first_mismatches(space, idx, cases: Cases, answers: np.ndarray, stages=STAGES) -> np.ndarray:
    """Per point of ``idx``: -1 where it reproduces every answer, else the index of the first case
    it gets wrong (len(cases) where it cannot run them). Staged: every point sees the first
    ``stages[0]`` cases, only the survivors the next stage, and so on (:data:`STAGES`)."""
    idx = np.asarray(idx, np.int64)
    n = len(cases)
    res = np.full(len(idx), -1, np.int64)
    alive = np.arange(len(idx))
    start = 0
    for stop in tuple(s for s in stages if s < n) + (n,):
        if not alive.size or start >= n:
            break
        part = cases.take(np.arange(start, stop))
        d, ok = evaluate(space, idx[alive], part, expect=n - start if start >= LONG_LIVED else None)
        wrong = d != answers[start:stop][None, :]
        bad = wrong.any(axis=1)
        first = np.where(bad, wrong.argmax(axis=1) + start, -1)
        first = np.where(ok, first, n)
        res[alive] = first
        alive = alive[first < 0]
        start = stop
    return res


def _structural_base(part, local: np.ndarray) -> np.ndarray:
    """Per local index of ``part``, the local index of its group's first point (what
    :func:`groups` groups by: the run-time digits zeroed, ρ's mode moved to its target's first)."""
    st = _strides(part)
    base = local.copy()
    for key in _runtime_keys(part):
        mult, n = st[key]
        d = (local // mult) % n
        base -= d * mult
        if key == "rho":
            base += _first_same_target(part.ranges["rho"])[d] * mult
    return base


def stream_order(space, size: int):
    """Yield index arrays covering every point of the space once, each a union of whole groups
    of about ``size`` points (a group is never cut: one evaluation per group and stage, where
    slices of consecutive indices cut each group into several, since the run-time keys are not
    the fastest-varying digits); listed points come last, a slice of their own."""
    offset = 0
    for part in space.parts:
        n = part.size
        if not _runtime_keys(part):
            for lo in range(0, n, size):
                yield np.arange(offset + lo, offset + min(n, lo + size))
        else:
            base = _structural_base(part, np.arange(n, dtype=np.int64))
            order = np.argsort(base, kind="stable")
            starts = np.flatnonzero(np.r_[True, base[order][1:] != base[order][:-1]])
            lo = 0
            for s in list(starts[1:]) + [n]:
                if s - lo >= size or s == n:
                    yield order[lo:s] + offset
                    lo = s
        offset += n
    if space.extra:
        yield np.arange(offset, offset + len(space.extra))


def group_count(space) -> int:
    """How many evaluations a full pass over the space takes (structural groups)."""
    total = len(space.extra)
    for part in space.parts:
        rk = _runtime_keys(part)
        n = math.prod(len(part.ranges[k]) for k in rk if k != "rho")
        if "rho" in rk:
            n *= len(part.ranges["rho"]) // len(set(_first_same_target(part.ranges["rho"]).tolist()))
        total += part.size // max(1, n)
    return total


__all__ = ["RUNTIME_KEYS", "evaluate", "first_mismatches", "group_count", "groups"]
