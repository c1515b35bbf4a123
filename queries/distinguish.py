"""Solver queries over the model catalog: distinguishing vectors and equivalence proofs.

:func:`distinguish` asks for inputs (a, b, c) on which two models give different output bits;
:func:`equivalent` asks the same question and reads UNSAT as a proof that the models agree on
every input of the query (for the given K and input constraints).

Encoding. Both models are built once over one set of symbolic inputs with the semantic core
(:meth:`smtmodel.model.Model.build`), and the query asserts ``d_A != d_B``. The formula is pure
QF_BV, so the fast path is bit-blasting: z3 is run with the tactic ``simplify; bit-blast; sat``
(about 20x faster than z3's default ``Solver()`` on these formulas), cvc5 with eager
bit-blasting (``bitblast=eager``, 2-3x faster than its default), and Bitwuzla reads the
SMT-LIB2 text that z3 prints for the same assertions. Input
constraints (:class:`Constraints`) are written over the same core operations, so they are
evaluated concretely by the twin as well (the simple-mode reduction respects them).

Solvers: ``z3``, ``cvc5``, ``bitwuzla`` or ``portfolio`` (the default: Bitwuzla and z3 race
-- cvc5 too where there are >= 3 CPUs, see :func:`default_pool` -- in separate processes, each building its own formula from the picklable model specs; the first
definite answer wins and the others are killed; a solver that crashes is reported in the
result's ``reason``; the per-query timeout gives an honest ``unknown``).

Every satisfying assignment is re-checked by the twin (:meth:`Model.evaluate`): if the twin
does not reproduce the solver's claim that the outputs differ, :class:`TwinDisagreement` is
raised -- a bug in a backend, never a result.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import signal
import threading
import queue as _queue
import time
import traceback
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from smtmodel.solvers import bitwuzla_check, smt2_text
from smtmodel.bv import NUMPY
from smtmodel.bv.core import BV, Bool, all_of, any_of
from smtmodel.catalog import get_model
from smtmodel.formats import Format, get_format
from smtmodel.model import Model, ModelError

SOLVERS = ("z3", "cvc5", "bitwuzla")
SOLVER_CHOICES = SOLVERS + ("portfolio",)


class QueryError(ValueError):
    """A malformed query: unknown solver, models of different formats, bad constraint."""


class TwinDisagreement(RuntimeError):
    """The twin does not confirm a solver's answer: a bug in a backend or in this module."""


# ---- input constraints --------------------------------------------------------------------------

@dataclass(frozen=True)
class Constraints:
    """Restrictions on the inputs of a query (all default to "anything the format encodes").

    finite         no infinities or NaNs among a, b and c.
    no_subnormals  a, b and c are normal numbers or zeros.
    exp_range      (lo, hi): every non-zero a_i, b_i has unbiased exponent in [lo, hi]
                   (subnormals count as the format's emin).
    c_exp_range    the same for c.
    fixed          (("a0", 0x3c00), ("c", 0), ...): entries fixed to raw bit patterns.
    a_signs, b_signs  one character per entry ('+' sign bit 0, '-' sign bit 1, '?' free); a
                   single character applies to every entry.
    c_sign         '+', '-' or '?'.
    c_zero         c = +0.
    """

    finite: bool = False
    no_subnormals: bool = False
    exp_range: tuple | None = None
    c_exp_range: tuple | None = None
    fixed: tuple = ()
    a_signs: str | None = None
    b_signs: str | None = None
    c_sign: str | None = None
    c_zero: bool = False

    def describe(self) -> str:
        parts = []
        for f in ("finite", "no_subnormals", "c_zero"):
            if getattr(self, f):
                parts.append(f)
        for f in ("exp_range", "c_exp_range", "a_signs", "b_signs", "c_sign"):
            if getattr(self, f) is not None:
                parts.append(f"{f}={getattr(self, f)}")
        if self.fixed:
            parts.append("fixed=" + ",".join(f"{n}={v:#x}" for n, v in self.fixed))
        return "; ".join(parts) or "none"


def _field(x: BV, fmt: Format):
    """(sign Bool or None, exponent field, mantissa field or None) of a pattern of ``fmt``."""
    s, m, e = fmt.shift, fmt.mbits, fmt.ebits
    sign = x.bit(s + m + e) if fmt.signed else None
    ef = x.extract(s + m + e - 1, s + m)
    mf = x.extract(s + m - 1, s) if m else None
    return sign, ef, mf


def _special(x: BV, fmt: Format) -> Bool:
    """x encodes an infinity or a NaN."""
    _, ef, mf = _field(x, fmt)
    top = (1 << fmt.ebits) - 1
    if fmt.policy == "ieee":
        return ef.eq(top)
    if fmt.policy == "fn":
        return ef.eq(top) & (mf.eq((1 << fmt.mbits) - 1) if mf is not None else x.B.true())
    if fmt.policy == "fnuz":
        return x.eq(1 << (fmt.width - 1))
    if fmt.policy == "e8m0":
        return x.eq(top)
    return x.B.false()


def _magnitude_zero(x: BV, fmt: Format) -> Bool:
    _, ef, mf = _field(x, fmt)
    z = ef.eq(0)
    return z & mf.eq(0) if mf is not None else z


def _valid(x: BV, fmt: Format) -> Bool:
    """A well-formed stored pattern (TF32: the container's low bits are zero)."""
    if fmt.shift:
        return x.extract(fmt.shift - 1, 0).eq(0)
    return x.B.true()


def _exp_in(x: BV, fmt: Format, lo: int, hi: int) -> Bool:
    _, ef, _ = _field(x, fmt)
    B = x.B
    ok = B.false()
    for efv in range(max(lo + fmt.bias, 0), min(hi + fmt.bias, (1 << fmt.ebits) - 1) + 1):
        ok = ok | ef.eq(efv)
    if lo <= fmt.emin <= hi:
        ok = ok | ef.eq(0)
    return ok | _magnitude_zero(x, fmt)


def _sign_is(x: BV, fmt: Format, ch: str) -> Bool:
    sign, _, _ = _field(x, fmt)
    if ch == "?" or sign is None:
        return x.B.true()
    if ch == "+":
        return ~sign
    if ch == "-":
        return sign
    raise QueryError(f"sign pattern character {ch!r}: use '+', '-' or '?'")


def _signs(pattern: str | None, k: int, what: str) -> str | None:
    if pattern is None:
        return None
    if len(pattern) == 1:
        return pattern * k
    if len(pattern) != k:
        raise QueryError(f"{what}={pattern!r}: give one character or k={k} characters")
    return pattern


def constraint_terms(v: dict, fi: Format, fc: Format, k: int, cons: Constraints) -> list[Bool]:
    """The constraints as core predicates over the inputs ``v`` (names a0.., b0.., c)."""
    out = []
    ab = [v[f"a{i}"] for i in range(k)] + [v[f"b{i}"] for i in range(k)]
    c = v["c"]
    for x in ab:
        out.append(_valid(x, fi))
    out.append(_valid(c, fc))
    if cons.finite:
        out += [~_special(x, fi) for x in ab] + [~_special(c, fc)]
    if cons.no_subnormals:
        for x, f in [(x, fi) for x in ab] + [(c, fc)]:
            _, ef, _ = _field(x, f)
            out.append(~ef.eq(0) | _magnitude_zero(x, f))
    if cons.exp_range is not None:
        lo, hi = cons.exp_range
        out += [_exp_in(x, fi, lo, hi) for x in ab]
    if cons.c_exp_range is not None:
        lo, hi = cons.c_exp_range
        out.append(_exp_in(c, fc, lo, hi))
    for name, pat in (("a", _signs(cons.a_signs, k, "a_signs")), ("b", _signs(cons.b_signs, k, "b_signs"))):
        if pat:
            out += [_sign_is(v[f"{name}{i}"], fi, ch) for i, ch in enumerate(pat)]
    if cons.c_sign:
        out.append(_sign_is(c, fc, cons.c_sign))
    if cons.c_zero:
        out.append(c.eq(0))
    for name, bits in cons.fixed:
        if name not in v:
            raise QueryError(f"fixed entry {name!r}: inputs are a0..a{k - 1}, b0..b{k - 1} and c")
        if int(bits) >> v[name].w:
            raise QueryError(f"fixed entry {name}={int(bits):#x} does not fit {v[name].w} bits")
        out.append(v[name].eq(int(bits)))
    return out


# ---- simple mode: levels of readability ---------------------------------------------------------

def _low_zero(x: BV, fmt: Format, keep: int) -> Bool:
    """Mantissa field has at most its ``keep`` top bits non-zero."""
    drop = fmt.mbits - keep
    if drop <= 0:
        return x.B.true()
    return x.extract(fmt.shift + drop - 1, fmt.shift).eq(0)


def _one(fmt: Format) -> int:
    return fmt.bias << (fmt.mbits + fmt.shift)


SIMPLE_LEVELS = (
    # (name, description) -- the constraints are in _level_terms
    ("b=1,a=2^e", "every b_i = 1.0, every a_i a power of two (or zero), c with <= 3 mantissa bits"),
    ("2^e", "every a_i, b_i a power of two (or zero), c with <= 3 mantissa bits"),
    ("3bit", "a_i, b_i with <= 3 leading mantissa bits, c with <= 8, all finite and normal"),
    ("finite", "all inputs finite and normal"),
    ("any", "only the caller's constraints"),
)


def _level_terms(level: int, v: dict, fi: Format, fc: Format, k: int) -> list[Bool]:
    a = [v[f"a{i}"] for i in range(k)]
    b = [v[f"b{i}"] for i in range(k)]
    c = v["c"]
    out = []
    if level <= 3:
        out += [~_special(x, fi) for x in a + b] + [~_special(c, fc)]
        for x, f in [(x, fi) for x in a + b] + [(c, fc)]:
            _, ef, _ = _field(x, f)
            out.append(~ef.eq(0) | _magnitude_zero(x, f))
    if level == 0:
        out += [y.eq(_one(fi)) for y in b] + [_low_zero(x, fi, 0) for x in a] + [_low_zero(c, fc, 3)]
    elif level == 1:
        out += [_low_zero(x, fi, 0) for x in a + b] + [_low_zero(c, fc, 3)]
    elif level == 2:
        out += [_low_zero(x, fi, 3) for x in a + b] + [_low_zero(c, fc, 8)]
    return out


# ---- queries and results ------------------------------------------------------------------------

@dataclass
class Vector:
    """One input case with both models' output bits (raw patterns)."""

    a: list
    b: list
    c: int
    d: dict                      # model id -> output bits
    a_scale: list | None = None
    b_scale: list | None = None
    level: str = ""              # simple-mode level it was found at ("" outside simple mode)


@dataclass
class QueryResult:
    status: str                  # "sat", "unsat", "unknown" or "error" (every solver crashed)
    models: tuple                # (id A, id B)
    k: int
    solver: str = ""             # the solver whose answer this is
    seconds: float = 0.0
    reason: str = ""
    vectors: list = field(default_factory=list)
    constraints: Constraints = field(default_factory=Constraints)
    simple: bool = False
    log: list = field(default_factory=list)   # (solver, level, status, seconds) of each check
    formats: tuple = ()                       # (in_fmt, c_fmt, out_fmt)
    scales: tuple = ()                        # (scale_fmt, scale_block) of block-scaled models

    @property
    def equivalent(self) -> bool | None:
        return {"unsat": True, "sat": False}.get(self.status)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Job:
    """A picklable query: what a portfolio child needs to build and solve its own formula."""

    spec_a: "str | Model"   # catalog id with overrides, or a picklable Model (feature hypotheses)
    spec_b: "str | Model"
    k: int
    solver: str
    timeout: float
    constraints: Constraints
    simple: bool
    count: int
    reduce: bool = True


def _spec(m) -> str:
    return m.id if isinstance(m, Model) else str(m)


def _resolve(spec) -> Model:
    """A catalog id (with overrides) or a :class:`Model` object (e.g. a feature's hypothesis)."""
    if isinstance(spec, Model):
        spec.validate()
        return spec
    return get_model(spec)


def _portable(m: Model):
    """The id where the catalog rebuilds this very model from it, else the (picklable) Model."""
    try:
        if get_model(m.id) == m:
            return m.id
    except ModelError:
        pass
    return m


def default_k(ma: Model, mb: Model) -> int:
    """The larger block size of the two models (their least common multiple, so both chain)."""
    def blk(m):
        L = m.L or 1
        L = 2 * L if m.op == "fp8_via_fp16" else L
        return math.lcm(L, m.scale_block or 1)
    return math.lcm(blk(ma), blk(mb))


def _check_pair(ma: Model, mb: Model, k: int) -> None:
    for attr in ("in_fmt", "c_fmt", "out_fmt"):
        fa, fb = get_format(getattr(ma, attr)).name, get_format(getattr(mb, attr)).name
        if fa != fb:
            raise QueryError(f"{ma.id} and {mb.id} differ in {attr} ({fa} vs {fb}): "
                             "only models of the same formats can be compared")
    if (ma.scale_fmt or None) != (mb.scale_fmt or None) or (ma.scale_block or None) != (mb.scale_block or None):
        raise QueryError(f"{ma.id} and {mb.id} differ in their block scales")
    if not isinstance(k, int) or k < 1:
        raise QueryError(f"k must be a positive integer, got {k!r}")
    for m in (ma, mb):
        try:
            m.block(k)
        except ModelError as exc:
            raise QueryError(str(exc)) from None
        if m.scale_block and k % m.scale_block:
            raise QueryError(f"{m.id}: k={k} is not a multiple of the scale block {m.scale_block}")


# ---- formulas -----------------------------------------------------------------------------------

def _inputs(B, ma: Model, k: int) -> dict:
    fi, fc = get_format(ma.in_fmt), get_format(ma.c_fmt)
    v = {f"a{i}": B.var(f"a{i}", fi.width) for i in range(k)}
    v.update({f"b{i}": B.var(f"b{i}", fi.width) for i in range(k)})
    v["c"] = B.var("c", fc.width)
    if ma.scale_fmt:
        ws = get_format(ma.scale_fmt).width
        n = k // ma.scale_block
        v.update({f"sa{i}": B.var(f"sa{i}", ws) for i in range(n)})
        v.update({f"sb{i}": B.var(f"sb{i}", ws) for i in range(n)})
    return v


class _Names:
    """A stand-in backend that only names the inputs (for building zero assignments)."""

    @staticmethod
    def var(name, width):
        return name


NUMPY_NAMES = _Names()


def _outputs(ma: Model, mb: Model, v: dict, k: int):
    a = [v[f"a{i}"] for i in range(k)]
    b = [v[f"b{i}"] for i in range(k)]
    sc = (None, None)
    if ma.scale_fmt:
        n = k // ma.scale_block
        sc = ([v[f"sa{i}"] for i in range(n)], [v[f"sb{i}"] for i in range(n)])
    return ma.build(a, b, v["c"], *sc), mb.build(a, b, v["c"], *sc)


class _Formula:
    def __init__(self, B, ma: Model, mb: Model, k: int, cons: Constraints):
        self.B, self.k = B, k
        self.fi, self.fc = get_format(ma.in_fmt), get_format(ma.c_fmt)
        self.v = _inputs(B, ma, k)
        self.da, self.db = _outputs(ma, mb, self.v, k)
        self.base = [self.da.ne(self.db)] + constraint_terms(self.v, self.fi, self.fc, k, cons)
        self.blocks: list[Bool] = []

    def level(self, lv: int | None) -> list[Bool]:
        return [] if lv is None else _level_terms(lv, self.v, self.fi, self.fc, self.k)

    def block(self, values: dict) -> None:
        self.blocks.append(any_of([x.ne(values[n]) for n, x in self.v.items()]))


# ---- engines: one check of a list of assertions ---------------------------------------------------

class _Z3Engine:
    name = "z3"

    def __init__(self):
        from smtmodel.bv.z3_backend import Z3Backend
        self.B = Z3Backend()

    def check(self, f: _Formula, terms: list, timeout: float):
        import z3
        s = z3.Then("simplify", "bit-blast", "sat").solver()
        s.set("timeout", max(1, int(timeout * 1000)))
        s.add([t.v for t in terms])
        r = str(s.check())
        if r == "sat":
            m = s.model()
            return r, "", {n: m.eval(x.v, model_completion=True).as_long() for n, x in f.v.items()}
        return r, (s.reason_unknown() if r == "unknown" else ""), None


class _Cvc5Engine:
    name = "cvc5"

    def __init__(self):
        from smtmodel.bv.cvc5_backend import Cvc5Backend
        self.B = Cvc5Backend()

    def check(self, f: _Formula, terms: list, timeout: float):
        import cvc5
        s = cvc5.Solver(self.B.tm)
        s.setOption("produce-models", "true")
        s.setLogic("QF_BV")
        s.setOption("bitblast", "eager")   # 2-3x faster than lazy bit-blasting on these formulas
        s.setOption("tlimit-per", str(max(1, int(timeout * 1000))))
        for t in terms:
            s.assertFormula(t.v)
        r = s.checkSat()
        if r.isSat():
            return "sat", "", {n: int(s.getValue(x.v).getBitVectorValue(10)) for n, x in f.v.items()}
        if r.isUnsat():
            return "unsat", "", None
        expl = str(r.getUnknownExplanation())
        return "unknown", "timeout" if "TIME" in expl.upper() else expl, None


class _BitwuzlaEngine:
    """Bitwuzla reading the SMT-LIB2 text z3 prints for the same core terms."""

    name = "bitwuzla"

    def __init__(self):
        import bitwuzla  # noqa: F401  (fail early where it is not installed)

        from smtmodel.bv.z3_backend import Z3Backend
        self.B = Z3Backend()

    def check(self, f: _Formula, terms: list, timeout: float):
        status, reason, model = bitwuzla_check(terms, timeout)
        if status == "sat":
            return "sat", "", {n: model[n][0] if n in model else 0 for n in f.v}
        return status, reason, None


ENGINES = {"z3": _Z3Engine, "cvc5": _Cvc5Engine, "bitwuzla": _BitwuzlaEngine}


def query_smt2(spec_a, spec_b, k: int | None = None, constraints: Constraints | None = None,
               level: int | None = None) -> str:
    """The SMT-LIB2 text of a distinguishing query (``level``: a simple-mode level, or None)."""
    from smtmodel.bv.z3_backend import Z3Backend
    ma, mb = _resolve(spec_a), _resolve(spec_b)
    k = default_k(ma, mb) if k is None else k
    _check_pair(ma, mb, k)
    cons = constraints or Constraints()
    f = _Formula(Z3Backend(), ma, mb, k, cons)
    note = (f"mmaprobe distinguishing query: {ma.id} vs {mb.id}, k={k}\n"
            f"sat: inputs a0..a{k - 1}, b0..b{k - 1}, c on which the outputs differ; unsat: equivalent\n"
            f"constraints: {cons.describe()}" + (f"; simple level {SIMPLE_LEVELS[level][0]}" if level is not None else ""))
    return smt2_text(f.base + f.level(level), note)


# ---- the twin --------------------------------------------------------------------------------

def _arrays(vals: list[dict], k: int, ma: Model):
    a = np.array([[v[f"a{i}"] for i in range(k)] for v in vals], dtype=np.uint64)
    b = np.array([[v[f"b{i}"] for i in range(k)] for v in vals], dtype=np.uint64)
    c = np.array([v["c"] for v in vals], dtype=np.uint64)
    sc = (None, None)
    if ma.scale_fmt:
        n = k // ma.scale_block
        sc = (np.array([[v[f"sa{i}"] for i in range(n)] for v in vals], dtype=np.uint64),
              np.array([[v[f"sb{i}"] for i in range(n)] for v in vals], dtype=np.uint64))
    return a, b, c, sc


def twin_outputs(ma: Model, mb: Model, vals: list[dict], k: int):
    a, b, c, sc = _arrays(vals, k, ma)
    return ma.evaluate(a, b, c, *sc), mb.evaluate(a, b, c, *sc)


def twin_constraints_ok(ma: Model, vals: list[dict], k: int, cons: Constraints, level: int | None = None):
    """The constraints read by the twin: a bool array, one lane per candidate."""
    a, b, c, sc = _arrays(vals, k, ma)
    fi, fc = get_format(ma.in_fmt), get_format(ma.c_fmt)
    v = {f"a{i}": NUMPY.input(a[:, i], fi.width) for i in range(k)}
    v.update({f"b{i}": NUMPY.input(b[:, i], fi.width) for i in range(k)})
    v["c"] = NUMPY.input(c, fc.width)
    terms = constraint_terms(v, fi, fc, k, cons) + ([] if level is None else _level_terms(level, v, fi, fc, k))
    ok = all_of(terms) if terms else NUMPY.true()
    return np.broadcast_to(np.asarray(ok.v, dtype=bool), (len(vals),))


def _confirm(ma: Model, mb: Model, values: dict, k: int, solver: str) -> tuple[int, int]:
    da, db = twin_outputs(ma, mb, [values], k)
    if int(da[0]) == int(db[0]):
        raise TwinDisagreement(
            f"{solver} claims {ma.id} and {mb.id} differ on {values}, but the twin computes "
            f"{int(da[0]):#x} for both: a backend disagrees with the twin (a bug; please report)")
    return int(da[0]), int(db[0])


# ---- simple mode: twin-guided reduction -------------------------------------------------------------

def reduce_vector(ma: Model, mb: Model, values: dict, k: int, cons: Constraints, max_rounds: int = 200) -> dict:
    """Greedily make a distinguishing vector more readable without losing it (twin only).

    Candidate edits, tried in this order, each kept only if the twin still sees the outputs
    differ and the caller's constraints still hold: drop a product (a_i = b_i = 0, signs kept),
    set b_i = 1.0, set c = 0, then shorten mantissas (keep fewer leading mantissa bits)."""
    fi, fc = get_format(ma.in_fmt), get_format(ma.c_fmt)
    fixed = {n for n, _ in cons.fixed}
    cur = dict(values)

    def sign_only(x, f):
        return x & (((1 << (f.width - 1)) if f.signed else 0))

    def shorten(x, f, keep):
        drop = f.mbits - keep
        return x if drop <= 0 else x & ~(((1 << drop) - 1) << f.shift)

    def candidates(v):
        for i in range(k):
            if not ({f"a{i}", f"b{i}"} & fixed):
                if v[f"a{i}"] or v[f"b{i}"]:
                    yield {**v, f"a{i}": 0, f"b{i}": 0}
                zs = {**v, f"a{i}": sign_only(v[f"a{i}"], fi), f"b{i}": sign_only(v[f"b{i}"], fi)}
                if zs != v:
                    yield zs
        for i in range(k):
            n = f"b{i}"
            if n not in fixed and v[n] != _one(fi):
                yield {**v, n: _one(fi)}
        if "c" not in fixed and v["c"] != 0:
            yield {**v, "c": 0}
        names = [(f"a{i}", fi) for i in range(k)] + [(f"b{i}", fi) for i in range(k)] + [("c", fc)]
        for keep in range(0, max(fi.mbits, fc.mbits)):
            for n, f in names:
                if n not in fixed and keep < f.mbits:
                    y = shorten(v[n], f, keep)
                    if y != v[n]:
                        yield {**v, n: y}

    for _ in range(max_rounds):
        cands = list(candidates(cur))
        if not cands:
            break
        improved = False
        for start in range(0, len(cands), 64):
            chunk = cands[start:start + 64]
            da, db = twin_outputs(ma, mb, chunk, k)
            ok = twin_constraints_ok(ma, chunk, k, cons) & (da != db)
            idx = np.flatnonzero(ok)
            if idx.size:
                cur = chunk[int(idx[0])]
                improved = True
                break
        if not improved:
            break
    return cur


# ---- one solver, in this process ------------------------------------------------------------------

def _solve_single(job: Job) -> QueryResult:
    t0 = time.perf_counter()
    ma, mb = _resolve(job.spec_a), _resolve(job.spec_b)
    fmts = (ma.in_fmt, ma.c_fmt, ma.out_fmt)
    res = QueryResult("unknown", (ma.id, mb.id), job.k, job.solver, constraints=job.constraints,
                      simple=job.simple, formats=fmts,
                      scales=(ma.scale_fmt, ma.scale_block) if ma.scale_fmt else ())
    eng = ENGINES[job.solver]()
    f = _Formula(eng.B, ma, mb, job.k, job.constraints)
    deadline = t0 + job.timeout
    levels = list(range(len(SIMPLE_LEVELS))) if job.simple else [None]
    seen: set = set()
    for _n in range(job.count):
        found = None
        for j, lv in enumerate(levels):
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                break
            last = j == len(levels) - 1
            budget = remaining if last else max(min(remaining, 1.0), remaining * 0.2)
            tc = time.perf_counter()
            status, reason, vals = eng.check(f, f.base + f.level(lv) + f.blocks, budget)
            res.log.append((job.solver, SIMPLE_LEVELS[lv][0] if lv is not None else "", status,
                            round(time.perf_counter() - tc, 3)))
            if status == "sat":
                found = (lv, vals)
                break
            if last:
                res.reason = reason if status == "unknown" else ""
                if status == "unsat" and not res.vectors:
                    res.status = "unsat"
                break
        if found is None:
            break
        lv, vals = found
        _confirm(ma, mb, vals, job.k, job.solver)
        f.block(vals)
        seen.add(tuple(sorted(vals.items())))
        if job.simple and job.reduce:
            red = reduce_vector(ma, mb, vals, job.k, job.constraints)
            if tuple(sorted(red.items())) not in seen:   # else keep the solver's own (distinct) answer
                vals = red
                f.block(vals)
                seen.add(tuple(sorted(vals.items())))
        da, db = _confirm(ma, mb, vals, job.k, job.solver)
        res.vectors.append(_vector(ma, mb, vals, job.k, da, db, SIMPLE_LEVELS[lv][0] if lv is not None else ""))
        res.status = "sat"
    res.seconds = time.perf_counter() - t0
    if res.status == "unknown" and not res.reason:
        res.reason = "timeout"
    if res.status == "unknown" and res.reason in ("timeout", "canceled", "resource limit"):
        res.reason = f"timeout after {job.timeout:g} s"
    elif res.status == "sat" and len(res.vectors) < job.count:
        res.reason = f"{len(res.vectors)} of {job.count} vectors (" + (
            "no further distinct vector exists)" if res.log and res.log[-1][2] == "unsat" else "timeout)")
    return res


def _vector(ma, mb, vals, k, da, db, level) -> Vector:
    vec = Vector([vals[f"a{i}"] for i in range(k)], [vals[f"b{i}"] for i in range(k)], vals["c"],
                 {ma.id: da, mb.id: db}, level=level)
    if ma.scale_fmt:
        n = k // ma.scale_block
        vec.a_scale = [vals[f"sa{i}"] for i in range(n)]
        vec.b_scale = [vals[f"sb{i}"] for i in range(n)]
    return vec


def _run_guarded(job: Job) -> QueryResult:
    """One solver in this process; a crash becomes an ``error`` result naming the solver."""
    try:
        return _solve_single(job)
    except (TwinDisagreement, QueryError, ModelError):
        raise
    except Exception as exc:  # a solver or binding failure: report, do not dump a traceback
        return QueryResult("error", (_spec(job.spec_a), _spec(job.spec_b)), job.k, job.solver,
                           reason=f"{job.solver} crashed: {type(exc).__name__}: {exc}",
                           constraints=job.constraints, simple=job.simple)


# ---- portfolio ----------------------------------------------------------------------------------

def _child(job: Job, q) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)       # the parent's handler (below) is not ours
    try:
        q.put(("done", job.solver, _run_guarded(job)))
    except BaseException as exc:  # noqa: BLE001  (TwinDisagreement and friends go to the parent)
        q.put(("raise", job.solver, (type(exc).__name__, str(exc), traceback.format_exc(limit=3))))


def default_stagger(n: int) -> float:
    """Seconds between portfolio starts: 0 where every solver has a CPU to itself, else 1 s, so
    that an easy query answered by the first solver never shares its CPUs with the others."""
    return 0.0 if (os.cpu_count() or 1) >= 2 * n else 1.0


def _portfolio(job: Job, solvers: tuple, stagger: float | None = None) -> QueryResult:
    t0 = time.perf_counter()
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    q = ctx.Queue()
    procs = {}
    pending = list(solvers)
    stagger = default_stagger(len(solvers)) if stagger is None else stagger

    def launch():
        s = pending.pop(0)
        left = max(0.05, job.timeout - (time.perf_counter() - t0))
        p = ctx.Process(target=_child, args=(replace(job, solver=s, timeout=left), q), daemon=True)
        p.start()
        procs[s] = p

    prev_term = None
    if threading.current_thread() is threading.main_thread():
        # SIGTERM to the parent unwinds through the finally below, which stops the children
        def _on_term(signum, frame):
            raise SystemExit(128 + signum)
        prev_term = signal.signal(signal.SIGTERM, _on_term)
    answers: dict = {}
    notes: list = []
    winner = None
    hard = t0 + job.timeout + 5.0
    try:
        launch()
        while winner is None and len(answers) < len(solvers):
            if pending and (time.perf_counter() - t0 >= stagger * len(procs) or all(x in answers for x in procs)):
                if time.perf_counter() < t0 + job.timeout:
                    launch()
                else:
                    answers.update({x: ("timeout", None) for x in pending})
                    pending.clear()
            try:
                kind, s, payload = q.get(timeout=0.05)
            except _queue.Empty:
                if time.perf_counter() > hard:
                    break
                for s, p in procs.items():
                    if s not in answers and not p.is_alive():
                        try:   # its message may still be in the pipe
                            kind, s2, payload = q.get(timeout=0.5)
                            answers[s2] = (kind, payload)
                            if kind == "done" and payload.status in ("sat", "unsat"):
                                winner = payload
                        except _queue.Empty:
                            answers[s] = ("died", f"{s} crashed (exit code {p.exitcode})")
                        break
                continue
            answers[s] = (kind, payload)
            if kind == "done" and payload.status in ("sat", "unsat"):
                winner = payload
    finally:
        for p in procs.values():
            if p.is_alive():
                p.terminate()
        for p in procs.values():
            p.join(1.0)
            if p.is_alive():
                p.kill()
                p.join(1.0)
        if prev_term is not None:
            signal.signal(signal.SIGTERM, prev_term)
    for s in solvers:
        kind, payload = answers.get(s, ("timeout", None))
        if kind == "raise":
            name, msg, _tb = payload
            if name == "TwinDisagreement":
                raise TwinDisagreement(msg)
            if name in ("QueryError", "ModelError"):
                raise QueryError(msg)
            notes.append(f"{s} crashed: {name}: {msg}")
        elif kind == "died":
            notes.append(payload)
        elif kind == "done" and payload is not winner:
            if payload.status == "error":
                notes.append(payload.reason)
            elif payload.status == "unknown":
                notes.append(f"{s}: {payload.reason or 'unknown'}")
        elif kind == "timeout" and winner is None:
            notes.append(f"{s}: no answer in {job.timeout:g} s")
    ma, mb = _resolve(job.spec_a), _resolve(job.spec_b)
    if winner is not None:
        res = winner
        # the parent trusts no child: every vector is re-checked by the twin here
        for vec in res.vectors:
            vals = {f"a{i}": x for i, x in enumerate(vec.a)} | {f"b{i}": x for i, x in enumerate(vec.b)} | {"c": vec.c}
            if vec.a_scale is not None:
                vals |= {f"sa{i}": x for i, x in enumerate(vec.a_scale)} | {f"sb{i}": x for i, x in enumerate(vec.b_scale)}
            da, db = _confirm(ma, mb, vals, job.k, res.solver)
            if (da, db) != (vec.d[ma.id], vec.d[mb.id]):
                raise TwinDisagreement(f"{res.solver}'s child reports outputs {vec.d} but the twin computes "
                                       f"{da:#x}, {db:#x}")
        res.solver = f"{res.solver} (portfolio)"
    else:
        crashed = [n for n in notes if "crashed" in n]
        status = "error" if len(crashed) == len(solvers) else "unknown"
        timeouts = [n for n in notes if "crashed" not in n]
        reason = f"timeout after {job.timeout:g} s" if status == "unknown" else "every solver crashed"
        res = QueryResult(status, (ma.id, mb.id), job.k, "portfolio", reason=reason,
                          constraints=job.constraints, simple=job.simple,
                          formats=(ma.in_fmt, ma.c_fmt, ma.out_fmt))
        if timeouts and status == "unknown" and any("timeout" not in n and "no answer" not in n for n in timeouts):
            res.reason += " (" + "; ".join(timeouts) + ")"
    if notes:
        res.log.append(("portfolio", "", "notes: " + "; ".join(notes), 0.0))
        if any("crashed" in n for n in notes) and res.status != "error":
            res.reason = (res.reason + "; " if res.reason else "") + "; ".join(n for n in notes if "crashed" in n)
    res.seconds = time.perf_counter() - t0
    return res


def default_pool() -> tuple:
    """The portfolio's solvers: all available ones where there are >= 3 CPUs, else Bitwuzla and
    z3 (cvc5 is the slowest on these formulas, and racing more solvers than cores only slows the
    winner down)."""
    order = {"bitwuzla": 0, "z3": 1, "cvc5": 2}      # fastest first on these formulas (bench/queries.py)
    av = tuple(sorted(available_solvers(), key=order.get))
    if (os.cpu_count() or 1) >= 3:
        return av
    return tuple(s for s in av if s != "cvc5") or av


def available_solvers() -> tuple:
    out = []
    for s in SOLVERS:
        try:
            __import__({"z3": "z3", "cvc5": "cvc5", "bitwuzla": "bitwuzla"}[s])
            out.append(s)
        except ImportError:
            pass
    return tuple(out)


# ---- the API --------------------------------------------------------------------------------

def distinguish(spec_a, spec_b, k: int | None = None, solver: str = "portfolio", timeout: float = 60,
                constraints: Constraints | None = None, simple: bool = False, count: int = 1,
                smt2: str | None = None, solvers: tuple | None = None,
                stagger: float | None = None) -> QueryResult:
    """Find inputs on which models ``spec_a`` and ``spec_b`` give different output bits.

    ``spec_a``/``spec_b``: catalog ids, optionally with overrides (``volta-fp16-fp32:carry=3``).
    ``k``: products per case (default: the larger block size of the two models).
    ``solver``: ``z3``, ``cvc5``, ``bitwuzla`` or ``portfolio`` (race all of ``solvers``).
    ``timeout``: seconds for the whole query; running out gives status ``unknown``.
    ``constraints``: :class:`Constraints` on the inputs.
    ``simple``: prefer readable vectors. The solver is asked level by level, each level adding
    readability constraints to the caller's, the first satisfiable one wins (a non-final level
    gets 20 % of the remaining time, at least 1 s):
    ``b=1,a=2^e`` (b_i = 1.0, a_i powers of two, c <= 3 mantissa bits), ``2^e`` (a_i, b_i powers
    of two), ``3bit`` (<= 3 leading mantissa bits in a, b and <= 8 in c, finite, normal),
    ``finite`` and ``any``. The answer is then reduced with the twin alone
    (:func:`reduce_vector`: drop products, b_i -> 1.0, c -> 0, shorten mantissas) while the
    outputs still differ and the constraints hold.
    ``count``: up to N distinct vectors, each later one found with the earlier ones blocked.
    ``smt2``: also write the SMT-LIB2 text of the query to this path.
    ``solvers``, ``stagger``: the portfolio's solvers (default :func:`default_pool`, Bitwuzla
    first) and the seconds between their starts (default :func:`default_stagger`).

    Status ``sat`` (``vectors`` holds the cases with both outputs), ``unsat`` (no input of the
    query distinguishes the models), ``unknown`` (``reason`` says why: usually the timeout) or
    ``error`` (every solver crashed; ``reason`` says how). Each vector was re-evaluated by the
    twin; :class:`TwinDisagreement` is raised if the twin does not see the outputs differ.
    """
    ma, mb = _resolve(spec_a), _resolve(spec_b)
    k = default_k(ma, mb) if k is None else k
    _check_pair(ma, mb, k)
    cons = constraints or Constraints()
    if not isinstance(count, int) or count < 1:
        raise QueryError(f"count must be a positive integer, got {count!r}")
    if not (timeout and timeout > 0):
        raise QueryError(f"timeout must be positive, got {timeout!r}")
    if solver not in SOLVER_CHOICES:
        raise QueryError(f"unknown solver {solver!r}; one of {', '.join(SOLVER_CHOICES)}")
    if solver != "portfolio" and solver not in available_solvers():
        raise QueryError(f"solver {solver} is not installed (pip install {solver})")
    # validate the constraints once here so that a mistake is a QueryError, not a child crash
    zero = {n: 0 for n in _inputs(NUMPY_NAMES, ma, k)}
    twin_constraints_ok(ma, [zero], k, cons)
    if smt2:
        text = query_smt2(ma, mb, k, cons)
        with open(smt2, "w", encoding="utf-8") as fh:
            fh.write(text)
    job = Job(_portable(ma), _portable(mb), k, solver, float(timeout), cons, bool(simple), int(count))
    if solver == "portfolio":
        pool = tuple(solvers) if solvers else default_pool()
        return _portfolio(job, pool, stagger)
    return _run_guarded(job)


def equivalent(spec_a, spec_b, k: int | None = None, solver: str = "portfolio", timeout: float = 60,
               constraints: Constraints | None = None, smt2: str | None = None) -> QueryResult:
    """Prove the two models equal on every input of the query (status ``unsat``, ``.equivalent``
    True) or return a counterexample (status ``sat``, one vector)."""
    return distinguish(spec_a, spec_b, k=k, solver=solver, timeout=timeout, constraints=constraints,
                       simple=False, count=1, smt2=smt2)


__all__ = ["Constraints", "QueryResult", "Vector", "QueryError", "TwinDisagreement", "distinguish",
           "equivalent", "query_smt2", "reduce_vector", "default_k", "SOLVERS", "SOLVER_CHOICES"]
