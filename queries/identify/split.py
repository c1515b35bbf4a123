"""A class of survivors the pool of probes leaves whole: what computes alike, what the twin
search splits, and what is left, said as the set of parameter values still possible.

Cheapest first:

1. **Identical terms** (:class:`Behaviours`): every member traced once over the same symbolic
   inputs by the recording backend (:class:`smtmodel.bv.trace_backend.TraceBackend`, which
   hash-conses every primitive and folds constants). Members whose outputs are one and the same
   node compute one function at this k: a proof that needs no solver (L = 16, 32 and 64 at
   k = 16; carry bits beyond what the block's terms can fill). A group of such members is a
   *behaviour*; members beyond :data:`TRACE_CAP` are left untraced, each a behaviour of its own.
2. **The twin search between behaviours** (:func:`twin_pool`): the probe kinds of
   :func:`queries.distinguish.probes` aimed at the class (the members' F, the fixed zero exponents
   their zero rules name: what ``mmaprobe distinguish`` tries first), read for one member per
   behaviour in groups (:func:`.batched.evaluate`); the design picks the probes that split them
   and they are launched like any design.
3. The SMT solvers (opt-in, ``Settings.solver_pairs``), in the loop.

Whatever is still whole after that is reported by :func:`possible_values`: per family, per
parameter, the values some member has (``L in {16, 32}, F = 22``), and which parameters were
proved not to matter (:func:`alike_keys`).
"""

from __future__ import annotations

import itertools

import numpy as np

from smtmodel.formats import get_format

from ..distinguish import Constraints, probes
from ..distinguish.api import input_names
from ..distinguish.search import fixed_zero_exponents
from .cases import Cases
from .hypotheses import model_of
from .pool import _arrays

TRACE_CAP = 256
"""Members of a class traced at most (each 5-50 ms and a few hundred new nodes of the shared
trace: a class of 36 fp16 T-FDPA points 0.2 CPU s; FP8 through fp16 halves at k = 32, 47 ms a
member). A count, not a time limit: a resumed run must group alike to design alike."""

TWIN_MODELS = 4
"""Distinct members (by op and F) whose probe kinds make up the twin pool: the kinds aim at a
model's F (the zero-floor kind) and the class's fixed zero exponents."""


class Behaviours:
    """Members of a class grouped by the node their traced output is (:mod:`module docstring
    <.split>`). Traces are kept, so a smaller class later is regrouped without tracing again."""

    def __init__(self, space, k: int, cap: int = TRACE_CAP):
        from smtmodel.bv.trace_backend import TraceBackend
        self.space, self.k, self.cap = space, k, cap
        self.T = TraceBackend()
        self.inputs = None
        self.node: dict = {}          # point -> output node (None: cannot be traced at this k)

    def _trace(self, i: int):
        m = model_of(self.space.spec(i))
        if self.inputs is None:
            v = {n: self.T.input(n, w) for n, w in input_names(m, self.k).items()}
            sc = (None, None)
            if m.scale_fmt:
                n = self.k // m.scale_block
                sc = ([v[f"sa{j}"] for j in range(n)], [v[f"sb{j}"] for j in range(n)])
            self.inputs = ([v[f"a{j}"] for j in range(self.k)], [v[f"b{j}"] for j in range(self.k)], v["c"]) + sc
        try:
            d = m.build(*self.inputs)
        except Exception:             # noqa: BLE001 -- a point that cannot be traced stays on its own
            return None
        return (d.v, d.w)

    def groups(self, members: list[int]) -> list[list[int]]:
        """The members in behaviours, each group in the members' order, the first member's group
        first; members beyond the cap (and any that cannot be traced) alone."""
        todo = [i for i in members if i not in self.node][:max(0, self.cap - len(self.node))]
        for i in todo:
            self.node[i] = self._trace(i)
        out: dict = {}
        for i in members:
            key = self.node.get(i)
            out.setdefault(("point", i) if key is None else key, []).append(i)
        return list(out.values())

    @property
    def traced(self) -> int:
        return sum(1 for v in self.node.values() if v is not None)


def twin_pool(space, reps: list[int], k: int, seed: int, batches: int = 10) -> Cases:
    """Probes aimed at the class whose behaviours ``reps`` stand for: ``batches`` batches (256
    cases each: the structured kinds, the zero-floor kind at the class's fixed zero exponents, then
    random) of :func:`queries.distinguish.probes` per distinct member (op, F), at most
    :data:`TWIN_MODELS` of them; duplicates removed."""
    models = [model_of(space.spec(i)) for i in reps]
    targets = tuple(fixed_zero_exponents(*models))
    seen, parts = set(), []
    for j, m in enumerate(models):
        key = (m.op, m.F)
        if key in seen:
            continue
        seen.add(key)
        gen = probes(m, k, Constraints(), seed + j, targets)
        parts += [_arrays(b, k) for b in itertools.islice(gen, batches)]
        if getattr(get_format(m.in_fmt), "kind", "") != "int":
            parts.append(zero_factor_cases(m, k, seed + j))
        if len(seen) >= TWIN_MODELS:
            break
    return Cases.join_unique(parts)


def zero_factor_cases(m, k: int, seed: int, n: int = 256) -> Cases:
    """Zero products whose other factor spans its format's whole exponent range, beside a tiny c
    (a subnormal, the smallest one, or a normal at the bottom of c's range) and, in some cases, tiny
    non-zero products. Where a zero product aligns by its other factor (``seed000``:
    -126 + Exp(other)) and where a fixed or ignored e_zero leaves it out, c is cut at different
    bits only when that factor is large; the twin search's zeros kind draws it near 1 (found by
    bitwuzla in 35 s for blackwell-fp8e4m3-fp32:F=27 against its ``zero_align=seed000`` reading
    at k = 32, a case with a = -32 beside b = 0 and c = -2^-149)."""
    from ..distinguish.search import _Draw
    from .pool import _scaled
    g = np.random.default_rng(seed)
    (fa, fb), fc = (get_format(f) for f in m.operand_fmts), get_format(m.c_fmt)
    DA, DB, DC = _Draw(fa, g), _Draw(fb, g), _Draw(fc, g)
    zero = g.random((n, k)) < np.array([1.0, 0.9, 0.75])[g.integers(0, 3, (n, 1))]
    a_zero = g.random((n, k)) < 0.5                  # which factor of a zero product is the zero
    a = DA.normal(DA.exps((n, k), fa.emin, fa.emax))
    b = DB.normal(DB.exps((n, k), fb.emin, fb.emax))
    ta = DA.normal(DA.exps((n, k), fa.emin, fa.emin + fa.precision))
    tb = DB.normal(DB.exps((n, k), fb.emin, fb.emin + fb.precision))
    a = np.where(zero, np.where(a_zero, a & DA.sign, a), ta)
    b = np.where(zero, np.where(a_zero, b, b & DB.sign), tb)
    kind = g.integers(0, 3, n)
    smallest = np.where(g.random(n) < 0.5, DC.unit | DC.sign, DC.unit) if fc.mbits else DC.subnormal(n)
    c = np.where(kind == 0, DC.subnormal(n), np.where(kind == 1, smallest,
                                                       DC.normal(DC.exps(n, fc.emin, fc.emin + 2 * fc.precision))))
    return _scaled(m, k, Cases(a, b, c), seed)


def _params(spec: str) -> tuple[str, dict]:
    base, _, over = spec.partition(":")
    kv = dict(item.split("=", 1) for item in over.split(",") if "=" in item)
    return kv.get("op", base), kv


def possible_values(specs: list[str]) -> dict:
    """Per op (family), per parameter, the values the points take (numbers in order, then
    names): ``{"tfdpa": {"L": ["16", "32"], "F": ["22"], ...}}``."""
    out: dict = {}
    for s in specs:
        op, kv = _params(s)
        fam = out.setdefault(op, {})
        for key, v in kv.items():
            if key == "op":
                continue
            vals = fam.setdefault(key, [])
            if v not in vals:
                vals.append(v)
    for fam in out.values():
        for key, vals in fam.items():
            vals.sort(key=lambda v: (0, int(v), "") if v.lstrip("-").isdigit() else (1, 0, v))
    return out


def alike_keys(groups: list[list[str]]) -> tuple[list[str], list[str]]:
    """(undecided, alike): parameters whose values differ between behaviours (the answers do not
    decide them), and those that differ only within behaviours (proved not to matter here)."""
    reps = [_params(g[0])[1] for g in groups]
    undecided = sorted({key for a, b in itertools.combinations(reps, 2) for key in set(a) | set(b)
                        if a.get(key) != b.get(key)})
    alike = set()
    for g in groups:
        kvs = [_params(s)[1] for s in g]
        alike |= {key for a in kvs[1:] for key in set(a) | set(kvs[0]) if a.get(key) != kvs[0].get(key)}
    return undecided, sorted(alike - set(undecided))


def describe_values(values: dict) -> str:
    """``t-fdpa: L in {16, 32}, F = 22, ...``: one family per clause."""
    parts = []
    for op, fam in values.items():
        kv = ", ".join(f"{key} = {vals[0]}" if len(vals) == 1 else f"{key} in {{{', '.join(vals)}}}"
                       for key, vals in fam.items())
        parts.append(f"{op}: {kv}" if kv else op)
    return "; ".join(parts)


__all__ = ["Behaviours", "TRACE_CAP", "alike_keys", "describe_values", "possible_values", "twin_pool"]
