"""``mmaprobe explain``: the reverse question. Given the outputs several models are reported to
give on one unpublished input (``--observe MODEL=VALUE``), ask the solver for one input (a, b, c)
on which every named model gives its observed value, or prove that none exists at that k.

Seed 003 §I ran one GEMM D = C - A·B on five GPUs and got 0 (V100, A100, MI250X), 255.875 (MI100)
and 191.875 (H100). With d = c + sum a_i b_i (the models' form), D = C - A·B is the same query with
a negated, so the vector found is reported in both forms.

The query: the models built once over one set of symbolic inputs (:meth:`Model.build`), each
output asserted equal to its observed value (a zero matches +0 and -0: a reported "0" does not
say which), solved by :func:`smtmodel.solve.solve` (one engine or the portfolio), and every answer
re-checked by the twin."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from smtmodel.catalog import get_model
from smtmodel.formats import get_format
from smtmodel.fp.classify import is_zero
from smtmodel.model import Model
from smtmodel.sampling import round_to
from smtmodel.solve import solve

from .distinguish import SIMPLE_LEVELS, QueryError, TwinDisagreement, level_terms


@dataclass
class Explanation:
    status: str                       # "sat", "unsat" (no input at this k), "unknown"
    k: int
    models: list
    observed: dict                    # model id -> value (float)
    solver: str = ""
    seconds: float = 0.0
    reason: str = ""
    a: list = field(default_factory=list)
    b: list = field(default_factory=list)
    c: int = 0
    d: dict = field(default_factory=dict)   # model id -> output bits (twin)


def parse_observation(text: str) -> tuple[str, float]:
    """``MODEL=VALUE`` -> (model spec, value)."""
    spec, eq, val = text.rpartition("=")
    if not eq or not spec:
        raise QueryError(f"--observe {text!r}: use MODEL=VALUE, e.g. hopper-fp16-fp32=191.875")
    try:
        return spec, float(val)
    except ValueError:
        raise QueryError(f"--observe {text!r}: {val!r} is not a number") from None


def explain(observations: list[tuple[str, float]], k: int, solver: str = "portfolio",
            timeout: float = 60.0, negate_products: bool = False, level: str | None = None) -> Explanation:
    """One input on which every model gives its observed value, or a proof that none exists.
    ``negate_products``: the observations are of D = C - A·B (the answer's a is given in that
    form; the solver's query is the same with a negated). ``level``: restrict the inputs to a
    simple-mode level of :data:`queries.distinguish.SIMPLE_LEVELS` (e.g. ``2^e``: powers of two),
    a smaller search for the solver; unsat then only rules out inputs of that level."""
    names_lv = [n for n, _ in SIMPLE_LEVELS]
    if level is not None and level not in names_lv:
        raise QueryError(f"unknown level {level!r}; one of {', '.join(names_lv)}")
    models: list[Model] = [get_model(s) for s, _ in observations]
    if not models:
        raise QueryError("explain needs at least one --observe MODEL=VALUE")
    fmts = {m.formats for m in models}
    if any(m.mixed for m in models):
        raise QueryError("explain takes models with one input format (a and b); a mixed-operand model was given")
    if len(fmts) != 1:
        raise QueryError(f"the observed models differ in their formats: {sorted(fmts)}")
    for m in models:
        if m.scale_fmt:
            raise QueryError(f"{m.id}: block-scaled models are not supported by explain")
        m.block(k)            # raises ModelError when k does not chain the model's blocks
    in_fmt, _, c_fmt, out_fmt = next(iter(fmts))      # (A, B, c, d); A and B alike here
    fo = get_format(out_fmt)
    targets = [int(round_to(np.array([v]), out_fmt)[0]) for _, v in observations]
    for (spec, v), t in zip(observations, targets):
        if v != v:
            raise QueryError(f"--observe {spec}=nan: a NaN is not searched for (its encodings differ); "
                             f"give a number")
        if float(_value(t, out_fmt)) != v:
            raise QueryError(f"--observe {spec}={v:g}: not exactly representable in {out_fmt}")
    wi, wc = get_format(in_fmt).width, get_format(c_fmt).width
    names = [f"a{i}" for i in range(k)] + [f"b{i}" for i in range(k)] + ["c"]

    def build(B):
        v = {n: B.var(n, wi if n != "c" else wc) for n in names}
        a = [v[f"a{i}"] for i in range(k)]
        b = [v[f"b{i}"] for i in range(k)]
        terms = []
        for m, t in zip(models, targets):
            d = m.build(a, b, v["c"])
            terms.append(is_zero(d, fo) if (t & ~_sign(fo)) == 0 else d.eq(B.const(t, fo.width)))
        if level is not None:
            terms += level_terms(names_lv.index(level), v, get_format(in_fmt), get_format(c_fmt), k)
        return terms, v

    t0 = time.perf_counter()
    res = solve(build, solver, timeout)
    ex = Explanation(res.status, k, [m.id for m in models], {m.id: v for m, (_, v) in zip(models, observations)},
                     solver=res.solver or solver, seconds=time.perf_counter() - t0, reason=res.reason)
    if res.status == "sat":
        vals = res.model
        a = np.array([[vals[f"a{i}"] for i in range(k)]], np.uint64)
        b = np.array([[vals[f"b{i}"] for i in range(k)]], np.uint64)
        c = np.array([vals["c"]], np.uint64)
        for m, t in zip(models, targets):
            d = int(m.evaluate(a, b, c)[0])
            ex.d[m.id] = d
            ok = (d & ~_sign(fo)) == 0 if (t & ~_sign(fo)) == 0 else d == t
            if not ok:
                raise TwinDisagreement(f"{ex.solver} claims {m.id} gives {fo.hex(t)} on {vals}, the twin "
                                       f"computes {fo.hex(d)} (a bug; please report)")
        sign = _sign(get_format(in_fmt)) if negate_products else 0
        ex.a = [int(x) ^ sign for x in a[0]]
        ex.b = [int(x) for x in b[0]]
        ex.c = int(c[0])
    return ex


def _sign(f) -> int:
    from smtmodel.fp.classify import encode_fields
    return encode_fields(f, 1, 0, 0) if f.signed else 0


def _value(bits: int, fmt: str) -> float:
    from smtmodel.fp.classify import exact_value
    return float(exact_value(bits, get_format(fmt)))


__all__ = ["Explanation", "explain", "parse_observation"]
