"""Solver queries over GEMM schemes: witnesses (seed 002 Property 5), worst-case errors by
bisection, and the twin re-check of every answer.

Encoding. Inputs are fp32 bit vectors a_0..a_{K-1}, b_0..b_{K-1}, c. Each scheme's output d is
built with :meth:`smtmodel.schemes.Scheme.build` (catalog models + IEEE fp32 operations), the
exact value c + sum a_k b_k with :mod:`smtmodel.schemes.exact` as a wide two's-complement
fixed-point integer (products from :func:`smtmodel.fp.mul_exact`), and the error d - exact in
the same units, all in the semantic core -- so the twin computes the very same integers. Input
restrictions (:class:`InputRange`, :mod:`queries.schemes.inputs`) are core predicates too. The
formula is QF_BV, decided by an engine of :mod:`smtmodel.solve` (``z3``, ``cvc5``, ``bitwuzla``,
or ``portfolio`` racing Bitwuzla and z3).

Every satisfying assignment is re-checked: the twin re-evaluates both schemes on the inputs,
and the errors are recomputed with Python ``Fraction`` arithmetic (independent of the core);
if either disagrees with the solver's claim, :class:`TwinDisagreement` is raised.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction

import numpy as np

from smtmodel.bv import NUMPY, BV, Bool, sum_all
from smtmodel.formats import get_format
from smtmodel.fp import decode
from smtmodel.schemes import Window, abs_fixed, exact_fixed, narrow, products, to_fixed, ulp_units
from smtmodel.schemes.core import SchemeError
from smtmodel.schemes.exact import scaled_ge

from smtmodel.solve import SolverError, make_engine

from ..bounds.exact import ulp_of
from ..distinguish.errors import TwinDisagreement  # noqa: F401  (re-exported: the one twin-disagreement error)
from .inputs import F32, InputRange, Setup, random_inputs, range_terms, setup  # noqa: F401  (re-exported)

METRICS = ("ulp", "abs", "rel", "comp")
"""Error units of ``worst``: fp32 ulps of the exact value, absolute, relative to |exact|, and
componentwise relative -- |err| / (|c| + sum |a_k b_k|), the quantity classical dot-product error
bounds (gamma_n) are stated in, finite even where cancellation makes the exact value tiny."""


def _narrow_input(x: BV, rng):
    v = decode(x, "fp32")
    return narrow(v, rng[0], rng[1]) if rng else v


# ---- the error formula ----------------------------------------------------------------------------

class ErrorFormula:
    """Inputs, each scheme's d, the exact value and the errors, over one backend."""

    def __init__(self, B, setups: list[Setup], k: int, rng: InputRange, var=None):
        self.B, self.k, self.rng = B, k, rng
        f32 = get_format(F32)
        if var is None and rng.mant_bits is not None and rng.mant_bits < f32.mbits:
            # structural restriction: the low fraction bits are constant zeros, so the formula
            # simplifies (a witness found here is a witness of the unrestricted range too)
            z = f32.mbits - rng.mant_bits
            var = lambda n: B.var(n, f32.width - z).concat(B.const(0, z))
        mk = var or (lambda n: B.var(n, f32.width))
        self.v = {f"a{i}": mk(f"a{i}") for i in range(k)}
        self.v.update({f"b{i}": mk(f"b{i}") for i in range(k)})
        self.v["c"] = mk("c")
        a = [self.v[f"a{i}"] for i in range(k)]
        b = [self.v[f"b{i}"] for i in range(k)]
        c = self.v["c"]
        A = [_narrow_input(x, rng.exp_range) for x in a]
        Bv = [_narrow_input(y, rng.exp_range) for y in b]
        Cv = decode(c, "fp32") if rng.c_zero else _narrow_input(c, rng.c_exp_range)
        self.ds = [su.scheme.build(a, b, c, su.model) for su in setups]
        dvals = [decode(d, "fp32") for d in self.ds]
        terms = products(A, Bv) + [Cv]
        self.win = Window.covering(terms + dvals, extra_terms=1)
        self.exact = exact_fixed(terms, self.win)
        self.abs_terms = sum_all([abs_fixed(to_fixed(t, self.win.lsb0, self.win.W)) for t in terms])
        self.errs = [to_fixed(dv, self.win.lsb0, self.win.W) - self.exact for dv in dvals]
        self.abs_errs = [abs_fixed(e) for e in self.errs]
        self.abs_exact = abs_fixed(self.exact)
        self.ulp = ulp_units(self.abs_exact, self.win)
        self.base = range_terms(self.v, k, rng)
        for dv in dvals:
            self.base.append(~(dv.nan | dv.inf))


# ---- solving ---------------------------------------------------------------------------------------

def engine(solver: str):
    """The engine named ``solver`` (one of :data:`SOLVER_CHOICES`; ``portfolio`` races the
    engines that read z3-backend terms); build the formula on its ``.B``."""
    try:
        return make_engine(solver)
    except SolverError as exc:
        raise SchemeError(str(exc)) from None


# ---- exact re-check (independent of the core) --------------------------------------------------------

def f32(bits: int) -> Fraction:
    return Fraction(float(np.array([bits], dtype=np.uint32).view(np.float32)[0]))


def ulp32(x: Fraction) -> Fraction:
    f = get_format(F32)
    return ulp_of(x, f.precision, f.emin)


def exact_value(vals: dict, k: int) -> Fraction:
    return sum((f32(vals[f"a{i}"]) * f32(vals[f"b{i}"]) for i in range(k)), f32(vals["c"]))


@dataclass
class Evaluation:
    """One scheme on one input: d and its error (exact rationals, and in fp32 ulps of exact)."""

    label: str
    d_bits: int
    d: Fraction
    err: Fraction
    err_ulps: float

    def row(self) -> dict:
        return {"scheme": self.label, "d": f"0x{self.d_bits:08x}", "d_value": float(self.d),
                "d_exact": str(self.d), "error": str(self.err), "abs_error": float(abs(self.err)),
                "error_ulps": self.err_ulps}


def evaluate_on(setups: list[Setup], vals: dict, k: int) -> tuple[Fraction, list[Evaluation]]:
    """Twin evaluation of each scheme on one input, errors in exact rational arithmetic."""
    a = np.array([[vals[f"a{i}"] for i in range(k)]], dtype=np.uint64)
    b = np.array([[vals[f"b{i}"] for i in range(k)]], dtype=np.uint64)
    c = np.array([vals["c"]], dtype=np.uint64)
    ex = exact_value(vals, k)
    out = []
    for su in setups:
        d = int(su.scheme.evaluate(a, b, c, su.model)[0])
        dv = f32(d)
        out.append(Evaluation(su.label, d, dv, dv - ex, float(abs(dv - ex) / ulp32(ex))))
    return ex, out


def values_hex(vals: dict, k: int) -> dict:
    return {n: f"0x{vals[n]:08x}" for n in [f"a{i}" for i in range(k)] + [f"b{i}" for i in range(k)] + ["c"]}


# ---- witness: |err_X| > |err_Y| ----------------------------------------------------------------------

@dataclass
class WitnessResult:
    x: str
    y: str
    k: int
    status: str                  # "sat" (witness), "unsat" (proof: X never worse), "unknown"
    seconds: float
    solver: str
    range: str
    reason: str = ""
    inputs: dict | None = None
    exact: str | None = None
    evaluations: list = field(default_factory=list)
    metric: str = "abs"

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        head = f"{self.x} vs {self.y}, K={self.k}, {self.range}: "
        if self.status == "sat":
            lines = [head + f"WITNESS (|err {self.x}| > |err {self.y}|) found by {self.solver} in {self.seconds:.2f} s, "
                            "confirmed by the twin and exact rationals"]
            lines += [f"  {n} = {v}  ({float(f32(int(v, 16))):.10g})" for n, v in self.inputs.items()]
            lines.append(f"  exact = {float(Fraction(self.exact)):.17g}")
            for e in self.evaluations:
                lines.append(f"  {e['scheme']:<34} d = {e['d']} = {e['d_value']:.17g}  |err| = {e['abs_error']:.6g}"
                             f" = {e['error_ulps']:.4f} ulp")
            return "\n".join(lines)
        if self.status == "unsat":
            return head + (f"PROOF: |err {self.x}| <= |err {self.y}| for every input in the range "
                           f"({self.solver}, {self.seconds:.2f} s)")
        return head + f"unknown after {self.seconds:.2f} s ({self.reason})"


def _twin_formula(setups: list[Setup], k: int, rng: InputRange, vals: dict, n: int):
    """The error formula on the twin over ``n`` inputs ``vals`` (fp32 bits by name), and where
    its base constraints (the range) hold."""
    f = ErrorFormula(NUMPY, setups, k, rng, var=lambda name: NUMPY.input(vals[name], 32))
    ok = np.ones(n, bool)
    for t in f.base:
        ok &= np.broadcast_to(np.asarray(t.v, bool), (n,))
    return f, ok


def twin_search(setups: list[Setup], k: int, rng: InputRange, n: int = 4000, rounds: int = 5, seed: int = 0):
    """Random inputs evaluated by the twin over the same error formula: the first input where
    |err_0| > |err_1|, or None."""
    for r in range(rounds):
        vals = random_inputs(k, rng, n, seed + r)
        f, ok = _twin_formula(setups, k, rng, vals, n)
        e0 = np.broadcast_to(np.asarray(f.abs_errs[0].v), (n,))
        e1 = np.broadcast_to(np.asarray(f.abs_errs[1].v), (n,))
        hit = np.nonzero(ok & (e0 > e1))[0]
        if len(hit):
            i = int(hit[0])
            return {name: int(vals[name][i]) for name in vals}
    return None


def witness(x, y, k: int = 4, model_x=None, model_y=None, rng: InputRange | None = None,
            solver: str = "z3", timeout: float = 60, metric: str = "abs", twin_first: bool = False,
            stages: tuple = ()) -> WitnessResult:
    """Inputs where scheme ``x`` has a strictly larger |error| than scheme ``y`` (seed 002
    Property 5 with x = O-Y, y = Markidis); UNSAT proves x is never worse on the range.

    ``stages``: narrower ranges (e.g. ``InputRange(mant_bits=10)``) tried first, each with the
    timeout; a witness of a narrower range is one of the full range. Only the full range's
    UNSAT is reported as a proof. ``twin_first``: try a seeded random twin search first; its
    candidate is then confirmed by the solver with the inputs fixed (``solver`` names it)."""
    rng = rng or InputRange()
    sx, sy = setup(x, model_x), setup(y, model_y)
    t0 = time.perf_counter()
    if twin_first:
        cand = twin_search([sx, sy], k, rng)
        if cand is not None:
            fixed = InputRange(**{**asdict(rng), "fixed": tuple(sorted(cand.items()))})
            res = witness(x, y, k, model_x, model_y, fixed, solver, timeout, metric)
            if res.status == "sat":
                res.range, res.solver = rng.describe(), f"twin search + {solver} (inputs fixed)"
                res.seconds = time.perf_counter() - t0
                return res
    for st in stages:
        res = witness(x, y, k, model_x, model_y, st, solver, timeout, metric)
        if res.status == "sat":
            res.range = rng.describe() + f" (found in the stage: {st.describe()})"
            res.seconds = time.perf_counter() - t0
            return res
    eng = engine(solver)
    B = eng.B
    f = ErrorFormula(B, [sx, sy], k, rng)
    goal = f.abs_errs[0].ugt(f.abs_errs[1])
    status, dt, reason, vals = eng.check(f.base + [goal], f.v, timeout).unpack()
    res = WitnessResult(sx.label, sy.label, k, status, time.perf_counter() - t0 if stages else dt, solver,
                        rng.describe(), reason, metric=metric)
    if status == "sat":
        ex, evs = evaluate_on([sx, sy], vals, k)
        if not abs(evs[0].err) > abs(evs[1].err):
            raise TwinDisagreement(f"solver claims |err {sx.label}| > |err {sy.label}| on {values_hex(vals, k)} "
                                   f"but the twin gives {evs[0].err} vs {evs[1].err}")
        res.inputs, res.exact = values_hex(vals, k), str(ex)
        res.evaluations = [e.row() for e in evs]
    return res


# ---- worst case by bisection ------------------------------------------------------------------------

DEFAULT_START = {"ulp": 1, "abs": 1, "rel": Fraction(1, 1 << 24), "comp": Fraction(1, 1 << 24)}
"""First threshold per metric (fp32's unit roundoff for the relative ones)."""

@dataclass
class WorstResult:
    scheme: str
    k: int
    metric: str
    range: str
    lower: float                 # an input with error >= lower is known (the witness)
    upper: float | None          # proved: every error < upper (None: nothing proved)
    witness: dict | None
    queries: list = field(default_factory=list)
    seconds: float = 0.0
    upper_composed: float | None = None   # proved by composition (queries.schemes.bound): every error <= it
    composed_note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        unit = {"ulp": " ulp(fp32 of exact)", "abs": "", "rel": " (relative)",
                "comp": " x (|c| + sum |a_k b_k|)"}[self.metric]
        ups = []
        if self.upper is not None:
            ups.append(f"< {self.upper:.6g}{unit} (proved, UNSAT)")
        if self.upper_composed is not None:
            ups.append(f"<= {self.upper_composed:.6g}{unit} (proved by composition of Table 9 lemmas and IEEE "
                       "rounding bounds)")
        up = " and ".join(ups) if ups else "no upper bound proved" + (f" ({self.composed_note})" if self.composed_note else "")
        lines = [f"{self.scheme}, K={self.k}, {self.range}: worst |error| >= {self.lower:.6g}{unit} (witness) and {up}; "
                 f"{len(self.queries)} queries, {self.seconds:.1f} s"]
        if self.witness:
            lines.append("  witness: " + ", ".join(f"{n}={v}" for n, v in self.witness.items()))
        return "\n".join(lines)


def _threshold(f: ErrorFormula, i: int, metric: str, t: Fraction) -> Bool:
    """|err_i| >= t (in the metric's unit)."""
    q = 0
    while t.denominator > 1 << q:
        q += 1
    num = int(t * (1 << q))
    if Fraction(num, 1 << q) != t:
        raise SchemeError("threshold must be dyadic")
    if metric == "ulp":
        ref = f.ulp
    elif metric == "rel":
        ref = f.abs_exact
    elif metric == "comp":
        ref = f.abs_terms
    elif metric == "abs":
        # t * 1: express 1 in window units
        e = -f.win.lsb0
        ref = f.B.const(1, f.win.W) << e if e < f.win.W else None
        if ref is None:
            raise SchemeError("window too small for the absolute unit")
    else:
        raise SchemeError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    # a zero error never reaches a threshold t > 0 (the reference may itself be 0: exact = 0, all terms 0)
    return scaled_ge(f.abs_errs[i], ref, q, num) & f.abs_errs[i].ne(0)


def _measure(ev: Evaluation, ex: Fraction, metric: str, vals: dict, k: int) -> Fraction:
    if metric == "ulp":
        return abs(ev.err) / ulp32(ex)
    if metric == "rel":
        return abs(ev.err) / abs(ex) if ex else Fraction(0)
    if metric == "comp":
        mag = sum((abs(f32(vals[f"a{i}"]) * f32(vals[f"b{i}"])) for i in range(k)), abs(f32(vals["c"])))
        return abs(ev.err) / mag if mag else Fraction(0)
    return abs(ev.err)


def _dyadic(x: Fraction, bits: int = 12) -> Fraction:
    """A dyadic rational close to x (within a relative 2^-bits), rounded up."""
    if x <= 0:
        return Fraction(0)
    e = math.floor(math.log2(x)) - bits
    return Fraction(math.ceil(x / Fraction(2) ** e)) * Fraction(2) ** e


def worst(x, k: int = 4, model=None, rng: InputRange | None = None, solver: str = "z3",
          timeout: float = 60, metric: str = "ulp", start: float | None = None, steps: int = 8,
          budget: float = 300, rel_gap: float = 0.05, log=None, compose_bound: bool = True) -> WorstResult:
    """Largest |error| of scheme ``x`` over the range, by bisection on a threshold t with
    SAT (an input with error >= t) / UNSAT (every error < t) queries. Each witness is measured
    exactly; the result is "error >= lower (witness) and < upper (proved)". For the comp and abs
    metrics the bound proved by composition (queries.schemes.bound) is added, and a witness above it
    raises TwinDisagreement (the two halves check each other)."""
    rng = rng or InputRange()
    su = setup(x, model)
    eng = engine(solver)
    B = eng.B
    f = ErrorFormula(B, [su], k, rng)
    t_start = time.perf_counter()
    lower, upper, wit = Fraction(0), None, None
    queries = []

    def ask(t: Fraction):
        nonlocal lower, wit, upper
        st, dt, reason, vals = eng.check(f.base + [_threshold(f, 0, metric, t)], f.v, timeout).unpack()
        queries.append({"threshold": float(t), "status": st, "seconds": round(dt, 3)})
        if st == "sat":
            ex, (ev,) = evaluate_on([su], vals, k)
            got = _measure(ev, ex, metric, vals, k)
            if got < t:
                raise TwinDisagreement(f"solver claims {su.label} error >= {float(t)} {metric} on "
                                       f"{values_hex(vals, k)}; exact arithmetic gives {float(got)}")
            if got > lower:
                lower, wit = got, values_hex(vals, k)
        elif st == "unsat":
            upper = t if upper is None else min(upper, t)
        return st

    if start is None:
        start = DEFAULT_START[metric]
    t = _dyadic(Fraction(start)) or Fraction(1)
    # grow until UNSAT (or unknown / budget)
    for _ in range(40):
        if time.perf_counter() - t_start > budget:
            break
        st = ask(t)
        if log:
            log(f"  error >= {float(t):.6g}: {st} ({queries[-1]['seconds']:.1f} s)")
        if st != "sat":
            break
        t = _dyadic(max(lower * 8, t * 8))
    # bisect between the best witness and the proved bound (geometrically while far apart)
    for _ in range(steps):
        if upper is None or time.perf_counter() - t_start > budget:
            break
        if upper - lower <= Fraction(rel_gap) * upper:
            break
        if lower == 0 or upper > 4 * lower:
            lo_ = lower if lower else upper / (1 << 16)
            mid = _dyadic(Fraction(math.sqrt(float(lo_) * float(upper))), 10)
        else:
            mid = _dyadic((lower + upper) / 2, 10)
        if not lower < mid < upper:
            break
        st = ask(mid)
        if log:
            log(f"  error >= {float(mid):.6g}: {st} ({queries[-1]['seconds']:.1f} s)")
        if st == "unknown":
            break
    res = WorstResult(su.label, k, metric, rng.describe(), float(lower), None if upper is None else float(upper),
                      wit, queries, time.perf_counter() - t_start)
    if compose_bound and metric in ("comp", "abs"):
        from .bound import compose
        try:
            cb = compose(x, k, model, rng)
        except SchemeError as e:
            res.composed_note = f"composition: {e}"
        else:
            res.upper_composed = cb.comp if metric == "comp" else cb.abs
            if lower > Fraction(res.upper_composed):
                raise TwinDisagreement(f"{su.label}: a re-checked witness has error {float(lower)} {metric}, above the "
                                       f"bound {res.upper_composed} proved by composition")
        res.seconds = time.perf_counter() - t_start
    return res


# ---- Table 5 of seed 002 ------------------------------------------------------------------------------

def _bits32(x: float) -> int:
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


TABLE5 = {
    "a": [1.0009765625 * 2.0 ** -8, 1.326171875 * 2.0 ** -14, 2.0 ** -12, 2.0 ** -12],
    "b": [1.998046875 * 2.0 ** -7, 1.4443359375 * 2.0 ** -7, 2.0 ** -12, 2.0 ** -12],
    "c": 2.0 ** -24,
    "published": {"True": "1 + 2^-23", "M": "1 + 2^-23", "O-Y": "1.0"},
}


def table5_inputs() -> dict:
    v = {f"a{i}": _bits32(x) for i, x in enumerate(TABLE5["a"])}
    v.update({f"b{i}": _bits32(x) for i, x in enumerate(TABLE5["b"])})
    v["c"] = _bits32(TABLE5["c"])
    return v


def table5(pairs=(("markidis-seed002", None), ("oy-seed002", None), ("markidis", "volta-fp16-fp32"),
                  ("oy-fp16", "volta-fp16-fp32"))) -> dict:
    """Seed 002 Table 5's published inputs evaluated by the twin under each (scheme, model)."""
    vals = table5_inputs()
    setups = [setup(s, m) for s, m in pairs]
    ex, evs = evaluate_on(setups, vals, 4)
    return {"inputs": values_hex(vals, 4), "exact": str(ex), "exact_float": float(ex),
            "rows": [e.row() for e in evs], "published": TABLE5["published"]}


def twin_worst_comp(scheme, model, k: int, rng: InputRange, n: int = 3000, seeds=(0, 1)) -> Fraction:
    """The largest |err| / (|c| + sum |a_k b_k|) the twin reaches on random inputs of the range:
    ``n`` per seed, and for odd seeds half of them replaced by values at the bottom of the range
    with all-ones significands; exact integers from the error formula. The "seen" column next to
    :func:`queries.schemes.bound.compose`'s proved bound."""
    su = setup(scheme, model)
    worst = Fraction(0)
    for seed in seeds:
        vals = random_inputs(k, rng, n, seed)
        g = np.random.default_rng(100 + seed)
        if seed % 2:
            lo = rng.exp_range[0]
            for key in vals:
                e = g.integers(lo + 127, lo + 130, n)
                edge = (g.integers(0, 2, n) << 31) | (e << 23) | 0x7FFFFF
                vals[key] = np.where(g.random(n) < 0.5, edge, vals[key]).astype(np.uint64)
        f, ok = _twin_formula([su], k, rng, vals, n)
        e = np.broadcast_to(np.asarray(f.abs_errs[0].v, dtype=object), (n,))
        d = np.broadcast_to(np.asarray(f.abs_terms.v, dtype=object), (n,))
        for i in np.nonzero(ok)[0]:
            if d[i]:
                worst = max(worst, Fraction(int(e[i]), int(d[i])))
    return worst
