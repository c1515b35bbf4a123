"""The query API: :func:`distinguish` and :func:`equivalent`, their results, the formula, and
one query's run on one engine or on the portfolio (twin search first, then the SMT engines
raced by :mod:`smtmodel.solve.portfolio`)."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace

from smtmodel.bv.core import Bool, any_of
from smtmodel.catalog import get_model
from smtmodel.formats import get_format
from smtmodel.model import Model, ModelError
from smtmodel.solve import (SOLVER_CHOICES, SOLVERS, available_solvers, default_pool, make_engine, race,
                            smt2_text)

from .constraints import SIMPLE_LEVELS, Constraints, constraint_terms, level_terms
from .errors import QueryError, TwinDisagreement
from .reduce import readability, reduce_vector, simple_level
from .search import confirm, twin_constraints_ok, twin_search

TWIN = "twin"
"""The twin-search engine's name in a portfolio's pool (it runs first, in the calling process)."""


@dataclass
class Vector:
    """One input case with both models' output bits (raw patterns)."""

    a: list
    b: list
    c: int
    d: dict                      # model id -> output bits
    a_scale: list | None = None
    b_scale: list | None = None
    level: str = ""              # simple mode: the most readable level (SIMPLE_LEVELS) whose constraints
                                 # the (reduced) vector meets; "" outside simple mode


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
    operand_fmts: tuple = ()                  # (A's, B's) format: differ for mixed-operand models
    scales: tuple = ()                        # (scale_fmt, scale_block) of block-scaled models
    cached: str = ""                          # an unsat answer read from the proof cache: which solver
                                              # proved it, its version and the date (smtmodel.solve.cache)

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
    below: int | None = None     # simple mode: ask only for levels below this one (the twin has a vector
                                 # at it), so an unsat there is no proof of equivalence


def _spec(m) -> str:
    return m.id if isinstance(m, Model) else str(m)


def resolve(spec) -> Model:
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
    for attr, fa, fb in zip(("a_fmt", "b_fmt", "c_fmt", "out_fmt"), ma.formats, mb.formats):
        if fa != fb:
            raise QueryError(f"{ma.id} and {mb.id} differ in {attr} ({fa} vs {fb}): "
                             "only models of the same formats can be compared")
    if (ma.scale_fmt or None) != (mb.scale_fmt or None) or (ma.scale_block or None) != (mb.scale_block or None):
        raise QueryError(f"{ma.id} and {mb.id} differ in their block scales")
    for m in (ma, mb):
        check_k(m, k)


# ---- the formula ----------------------------------------------------------------------------------

def input_names(ma: Model, k: int) -> dict:
    """{name: width} of a query's inputs: a0.., b0.., c and the block scales sa0.., sb0.."""
    (wa, wb), wc = ma.operand_widths, get_format(ma.c_fmt).width
    out = {f"a{i}": wa for i in range(k)} | {f"b{i}": wb for i in range(k)} | {"c": wc}
    if ma.scale_fmt:
        ws, n = get_format(ma.scale_fmt).width, k // ma.scale_block
        out |= {f"sa{i}": ws for i in range(n)} | {f"sb{i}": ws for i in range(n)}
    return out


class Formula:
    """Both models built once over one set of symbolic inputs; ``base`` asserts d_A != d_B and
    the constraints, ``level`` adds a simple-mode level, ``block`` excludes an answer."""

    def __init__(self, B, ma: Model, mb: Model, k: int, cons: Constraints):
        self.B, self.k = B, k
        (self.fi, self.fb), self.fc = (get_format(f) for f in ma.operand_fmts), get_format(ma.c_fmt)
        self.v = {n: B.var(n, w) for n, w in input_names(ma, k).items()}
        a = [self.v[f"a{i}"] for i in range(k)]
        b = [self.v[f"b{i}"] for i in range(k)]
        sc = (None, None)
        if ma.scale_fmt:
            n = k // ma.scale_block
            sc = ([self.v[f"sa{i}"] for i in range(n)], [self.v[f"sb{i}"] for i in range(n)])
        self.da, self.db = ma.build(a, b, self.v["c"], *sc), mb.build(a, b, self.v["c"], *sc)
        self.base = [self.da.ne(self.db)] + constraint_terms(self.v, self.fi, self.fc, k, cons, self.fb)
        self.blocks: list[Bool] = []

    def level(self, lv: int | None) -> list[Bool]:
        return [] if lv is None else level_terms(lv, self.v, self.fi, self.fc, self.k, self.fb)

    def block(self, values: dict) -> None:
        self.blocks.append(any_of([x.ne(values[n]) for n, x in self.v.items()]))


def query_smt2(spec_a, spec_b, k: int | None = None, constraints: Constraints | None = None,
               level: int | None = None) -> str:
    """The SMT-LIB2 text of a distinguishing query (``level``: a simple-mode level, or None)."""
    from smtmodel.bv.z3_backend import Z3Backend
    ma, mb = resolve(spec_a), resolve(spec_b)
    k = default_k(ma, mb) if k is None else k
    _check_pair(ma, mb, k)
    cons = constraints or Constraints()
    f = Formula(Z3Backend(), ma, mb, k, cons)
    note = (f"mmaprobe distinguishing query: {ma.id} vs {mb.id}, k={k}\n"
            f"sat: inputs a0..a{k - 1}, b0..b{k - 1}, c on which the outputs differ; unsat: equivalent\n"
            f"constraints: {cons.describe()}" + (f"; simple level {SIMPLE_LEVELS[level][0]}" if level is not None else ""))
    return smt2_text(f.base + f.level(level), note)


# ---- one engine, in this process ------------------------------------------------------------------

def _vector(ma, mb, vals, k, da, db, level) -> Vector:
    vec = Vector([vals[f"a{i}"] for i in range(k)], [vals[f"b{i}"] for i in range(k)], vals["c"],
                 {ma.id: da, mb.id: db}, level=level)
    if ma.scale_fmt:
        n = k // ma.scale_block
        vec.a_scale = [vals[f"sa{i}"] for i in range(n)]
        vec.b_scale = [vals[f"sb{i}"] for i in range(n)]
    return vec


def _values(vec: Vector) -> dict:
    vals = {f"a{i}": x for i, x in enumerate(vec.a)} | {f"b{i}": x for i, x in enumerate(vec.b)} | {"c": vec.c}
    if vec.a_scale is not None:
        vals |= {f"sa{i}": x for i, x in enumerate(vec.a_scale)} | {f"sb{i}": x for i, x in enumerate(vec.b_scale)}
    return vals


def _new_result(job: Job, ma: Model, mb: Model, **kw) -> QueryResult:
    return QueryResult(kw.pop("status", "unknown"), (ma.id, mb.id), job.k, kw.pop("solver", job.solver),
                       constraints=job.constraints, simple=job.simple, formats=(ma.in_fmt, ma.c_fmt, ma.out_fmt),
                       operand_fmts=ma.operand_fmts,
                       scales=(ma.scale_fmt, ma.scale_block) if ma.scale_fmt else (), **kw)


def _solve_single(job: Job) -> QueryResult:
    t0 = time.perf_counter()
    ma, mb = resolve(job.spec_a), resolve(job.spec_b)
    res = _new_result(job, ma, mb)
    eng = make_engine(job.solver)
    f = Formula(eng.B, ma, mb, job.k, job.constraints)
    deadline = t0 + job.timeout
    levels = list(range(len(SIMPLE_LEVELS) if job.below is None else job.below)) if job.simple else [None]
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
            r = eng.check(f.base + f.level(lv) + f.blocks, f.v, budget)
            res.log.append((job.solver, SIMPLE_LEVELS[lv][0] if lv is not None else "", r.status,
                            round(time.perf_counter() - tc, 3)))
            if r.status == "sat":
                found = (lv, r.model)
                break
            if last:
                res.reason = r.reason if r.status == "unknown" else ""
                if r.status == "unsat" and not res.vectors and job.below is not None:
                    res.reason = f"no vector more readable than level {SIMPLE_LEVELS[job.below][0]}"
                elif r.status == "unsat" and not res.vectors:
                    res.status = "unsat"
                    res.cached = r.extra.get("cached", "")
                break
        if found is None:
            break
        lv, vals = found
        confirm(ma, mb, vals, job.k, job.solver)
        f.block(vals)
        seen.add(tuple(sorted(vals.items())))
        if job.simple and job.reduce:
            red = reduce_vector(ma, mb, vals, job.k, job.constraints)
            if tuple(sorted(red.items())) not in seen:   # else keep the solver's own (distinct) answer
                vals = red
                f.block(vals)
                seen.add(tuple(sorted(vals.items())))
        da, db = confirm(ma, mb, vals, job.k, job.solver)
        level = SIMPLE_LEVELS[simple_level(ma, vals, job.k, job.constraints)][0] if job.simple else ""
        res.vectors.append(_vector(ma, mb, vals, job.k, da, db, level))
        res.status = "sat"
    res.seconds = time.perf_counter() - t0
    if res.status == "unknown" and not res.reason:
        res.reason = "timeout"
    if res.status == "unknown" and res.reason in ("timeout", "canceled", "resource limit") and job.below is None:
        res.reason = f"timeout after {job.timeout:g} s"
    elif res.status == "sat" and len(res.vectors) < job.count:
        res.reason = f"{len(res.vectors)} of {job.count} vectors (" + (
            "no further distinct vector exists)" if res.log and res.log[-1][2] == "unsat" else "timeout)")
    return res


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


# ---- the twin search, first -------------------------------------------------------------------------

TWIN_ROUNDS = 2
"""Rounds of probes the twin search tries before the solvers start (each of the suite's 457
distinguished pairs is found within 1,536 cases, a round is 2,304)."""


def twin_budget(timeout: float) -> float:
    """Seconds the twin search may take before the solvers start: a quarter of the query's time,
    at most 1 s (it answers in milliseconds or not at all: every pair of the pairwise suite it
    separates falls within its first round of probes; the case limit is :data:`TWIN_ROUNDS`)."""
    return min(1.0, timeout / 4)


def _twin_first(job: Job, ma: Model, mb: Model) -> QueryResult | None:
    """Vectors found by the twin search (each confirmed), or None. Simple mode searches readable
    probes first, takes the most readable cases found and reduces them (:func:`reduce_vector`);
    each vector's ``level`` is the most readable simple level it meets."""
    t0 = time.perf_counter()
    want = max(job.count, 8) if job.simple else job.count
    r = twin_search(ma, mb, job.k, job.constraints, twin_budget(job.timeout), want=want, simple=job.simple,
                    rounds=TWIN_ROUNDS)
    if r.status != "sat":
        return None
    res = _new_result(job, ma, mb, status="sat", solver=f"{TWIN} (portfolio)")
    found = r.extra["models"]
    if job.simple:
        found = sorted(found, key=lambda v: readability(v, ma, job.k))
    seen: set = set()
    for vals in found:
        if len(res.vectors) >= job.count:
            break
        if job.simple and job.reduce:
            vals = reduce_vector(ma, mb, vals, job.k, job.constraints)
        key = tuple(sorted(vals.items()))
        if key in seen:           # two cases reduced to one
            continue
        seen.add(key)
        da, db = confirm(ma, mb, vals, job.k, TWIN)
        level = SIMPLE_LEVELS[simple_level(ma, vals, job.k, job.constraints)][0] if job.simple else ""
        res.vectors.append(_vector(ma, mb, vals, job.k, da, db, level))
    res.log.append((TWIN, "", "sat", round(time.perf_counter() - t0, 3)))
    return res


IMPROVE_S = 10.0
"""Simple mode: seconds the solvers may spend looking for a vector more readable than the twin's
(which stands if they find none)."""


def _level_index(name: str) -> int:
    return [n for n, _ in SIMPLE_LEVELS].index(name)


def _readable(res: QueryResult, ma: Model) -> tuple:
    """How readable a result's vectors are (the worst of them): level, then :func:`readability`."""
    return max(((_level_index(v.level),) + readability(_values(v), ma, res.k) for v in res.vectors), default=())


# ---- identical formulas ---------------------------------------------------------------------------

DESCRIPTIVE = ("id", "description", "source", "instruction", "kind", "rival_of", "arch", "sm", "gfx", "kernels",
               "validated")
"""Model fields that name or place a model (where it runs, where it comes from, whether a capture
backs it) and do not enter ``Model.build``."""

_BLANK = dict(id="", description="", source="", instruction="", kind="catalog", rival_of=None, arch="", sm=None,
              gfx=None, kernels=(), validated=True)


def check_k(m: Model, k) -> None:
    """QueryError unless ``m`` takes dot products of ``k`` terms: a positive integer its blocks
    admit, whole scale blocks for a block-scaled model."""
    if not isinstance(k, int) or k < 1:
        raise QueryError(f"k must be a positive integer, got {k!r}")
    try:
        m.block(k)
    except ModelError as exc:
        raise QueryError(str(exc)) from None
    if m.scale_block and k % m.scale_block:
        raise QueryError(f"{m.id}: k={k} is not a multiple of the scale block {m.scale_block}")


def resolve_model(spec: "str | Model") -> Model:
    """A model from its id (overrides included) or a Model object, checked (``Model.validate``)."""
    if isinstance(spec, Model):
        spec.validate()
        return spec
    return get_model(spec)


def parameters(m: Model) -> Model:
    """The model with its descriptive fields (:data:`DESCRIPTIVE`) blanked: two models compute the
    same function wherever their ``parameters`` are equal (a hashable key)."""
    return replace(m, **_BLANK)


def same_parameters(ma: Model, mb: Model) -> bool:
    """Whether the two models differ only in descriptive fields (:data:`DESCRIPTIVE`)."""
    try:
        return parameters(ma) == parameters(mb)
    except TypeError:
        return False


def parameter_groups(models) -> list[list[Model]]:
    """``models`` grouped by their parameters (:func:`parameters`), in their order: the models of one
    group compute the same bits (e.g. hopper- and blackwell-fp16-fp32)."""
    out: dict = {}
    for m in models:
        out.setdefault(parameters(m), []).append(m)
    return list(out.values())


def _identical(job: Job, ma: Model, mb: Model) -> QueryResult | None:
    """Models with the same parameters (two GPUs that compute alike): both traced over the same
    inputs by the recording backend (:class:`smtmodel.bv.trace_backend.TraceBackend`, which
    hash-conses every primitive), the two outputs are one and the same node, so d_A != d_B is
    false on every input -- an unsat answer that needs no solver. None where the parameters or
    the nodes differ (the query goes on as usual)."""
    if not same_parameters(ma, mb):
        return None
    from smtmodel.bv.trace_backend import TraceBackend
    t0 = time.perf_counter()
    T, k = TraceBackend(), job.k
    v = {n: T.input(n, w) for n, w in input_names(ma, k).items()}
    a, b = [v[f"a{i}"] for i in range(k)], [v[f"b{i}"] for i in range(k)]
    sc = (None, None)
    if ma.scale_fmt:
        n = k // ma.scale_block
        sc = ([v[f"sa{i}"] for i in range(n)], [v[f"sb{i}"] for i in range(n)])
    if ma.build(a, b, v["c"], *sc).v != mb.build(a, b, v["c"], *sc).v:
        return None
    dt = time.perf_counter() - t0
    res = _new_result(job, ma, mb, status="unsat", solver="identical terms (traced, hash-consed)", seconds=dt)
    res.log.append(("identical", "", "unsat", round(dt, 3)))
    return res


# ---- portfolio ----------------------------------------------------------------------------------

def _job_task(job: Job):
    def task(name: str, left: float) -> QueryResult:
        return _run_guarded(replace(job, solver=name, timeout=left))
    return task


def _portfolio(job: Job, solvers: tuple, stagger: float | None = None) -> QueryResult:
    t0 = time.perf_counter()
    ma, mb = resolve(job.spec_a), resolve(job.spec_b)
    total = job.timeout
    same = _identical(job, ma, mb)
    if same is not None:
        return same
    twin = None
    if TWIN in solvers:
        solvers = tuple(s for s in solvers if s != TWIN)
        twin = _twin_first(job, ma, mb)
        worst = max((_level_index(v.level) for v in twin.vectors), default=0) if twin and job.simple else 0
        if twin is not None and len(twin.vectors) >= job.count and worst == 0:
            twin.seconds = time.perf_counter() - t0     # simple mode: already at the most readable level
            return twin
        if not solvers:
            res = twin or _new_result(job, ma, mb, solver="portfolio", reason=f"timeout after {total:g} s")
            res.seconds = time.perf_counter() - t0
            return res
        # the SMT engines get the rest of the time; under --simple they are asked only for the levels
        # more readable than the twin's vectors reach
        below = worst if twin is not None and len(twin.vectors) >= job.count and job.simple else None
        left = max(0.05, job.timeout - (time.perf_counter() - t0))
        job = replace(job, timeout=left if below is None else min(left, IMPROVE_S), below=below)
    winner_name, answers = race(_job_task(job), solvers, job.timeout, stagger)
    winner = answers[winner_name][1] if winner_name else None
    notes: list = []
    for s in solvers:
        kind, payload = answers[s]
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
    if winner is not None:
        res = winner
        # the parent trusts no child: every vector is re-checked by the twin here
        for vec in res.vectors:
            da, db = confirm(ma, mb, _values(vec), job.k, res.solver)
            if (da, db) != (vec.d[ma.id], vec.d[mb.id]):
                raise TwinDisagreement(f"{res.solver}'s child reports outputs {vec.d} but the twin computes "
                                       f"{da:#x}, {db:#x}")
        res.solver = f"{res.solver} (portfolio)"
        if twin is not None and len(res.vectors) < len(twin.vectors):
            res = twin        # the twin found more of the vectors asked for
        elif twin is not None and job.simple and _readable(twin, ma) < _readable(res, ma):
            res = twin        # the twin's reduced vectors read more easily
    elif twin is not None:
        res = twin            # the solvers did not answer: the twin's vectors stand
        if len(res.vectors) < job.count:
            res.reason = f"{len(res.vectors)} of {job.count} vectors (timeout)"
    else:
        crashed = [n for n in notes if "crashed" in n]
        status = "error" if len(crashed) == len(solvers) else "unknown"
        timeouts = [n for n in notes if "crashed" not in n]
        reason = f"timeout after {total:g} s" if status == "unknown" else "every solver crashed"
        res = _new_result(job, ma, mb, status=status, solver="portfolio", reason=reason)
        res.scales = ()
        if timeouts and status == "unknown" and any("timeout" not in n and "no answer" not in n for n in timeouts):
            res.reason += " (" + "; ".join(timeouts) + ")"
    if notes:
        res.log.append(("portfolio", "", "notes: " + "; ".join(notes), 0.0))
        if any("crashed" in n for n in notes) and res.status != "error":
            res.reason = (res.reason + "; " if res.reason else "") + "; ".join(n for n in notes if "crashed" in n)
    res.seconds = time.perf_counter() - t0
    return res


def portfolio_pool() -> tuple:
    """The default portfolio: the twin search first, then :func:`smtmodel.solve.default_pool`."""
    return (TWIN,) + default_pool()


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
    ``simple``: prefer readable vectors, by the levels ``b=1,a=2^e`` (b_i = 1.0, a_i powers of
    two, c <= 3 mantissa bits), ``2^e`` (a_i, b_i powers of two), ``3bit`` (<= 3 leading
    mantissa bits in a, b and <= 8 in c, finite, normal), ``finite`` and ``any``. The twin
    search tries readable probes first and reduces what it finds (:func:`reduce_vector`: fewer
    products, b_i -> 1.0, c -> 0, shorter mantissas, closer exponents, while the outputs still
    differ and the constraints hold); a vector at the first level answers at once. Otherwise
    a solver is asked only for the levels more readable than the twin's vector, for at most
    :data:`IMPROVE_S` seconds (all levels, for the whole time, where the twin found none),
    level by level (a non-final level gets 20 % of the remaining time, at least 1 s); its
    answer is reduced the same way, and the more readable of the two vectors stands. Each vector's ``level`` is the most readable level it meets.
    ``count``: up to N distinct vectors, each later one found with the earlier ones blocked.
    ``smt2``: also write the SMT-LIB2 text of the query to this path.
    ``solvers``, ``stagger``: the portfolio's pool (default :func:`portfolio_pool`: the twin
    search, then Bitwuzla, z3 and, with >= 3 CPUs, cvc5) and the seconds between the solvers'
    starts (default :func:`smtmodel.solve.default_stagger`). The twin search (``"twin"`` in the
    pool) runs first in this process, for at most :func:`twin_budget`; a vector it finds answers
    the query (under ``simple``, see above).

    Status ``sat`` (``vectors`` holds the cases with both outputs), ``unsat`` (no input of the
    query distinguishes the models), ``unknown`` (``reason`` says why: usually the timeout) or
    ``error`` (every solver crashed; ``reason`` says how). Each vector was re-evaluated by the
    twin; :class:`TwinDisagreement` is raised if the twin does not see the outputs differ.
    """
    ma, mb = resolve(spec_a), resolve(spec_b)
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
    pool = tuple(solvers) if solvers else portfolio_pool()
    if solver == "portfolio" and any(s not in SOLVERS + (TWIN,) for s in pool):
        raise QueryError(f"portfolio pool {pool}: each one of {', '.join(SOLVERS + (TWIN,))}")
    # validate the constraints once here so that a mistake is a QueryError, not a child crash
    twin_constraints_ok(ma, [dict.fromkeys(input_names(ma, k), 0)], k, cons)
    if smt2:
        text = query_smt2(ma, mb, k, cons)
        from smtmodel.io import atomic_open
        with atomic_open(smt2) as fh:           # whole or not at all; an error names the user's path
            fh.write(text)
    job = Job(_portable(ma), _portable(mb), k, solver, float(timeout), cons, bool(simple), int(count))
    if solver == "portfolio":
        return _portfolio(job, pool, stagger)
    return _run_guarded(job)


def equivalent(spec_a, spec_b, k: int | None = None, solver: str = "portfolio", timeout: float = 60,
               constraints: Constraints | None = None, smt2: str | None = None) -> QueryResult:
    """Prove the two models equal on every input of the query (status ``unsat``, ``.equivalent``
    True) or return a counterexample (status ``sat``, one vector)."""
    return distinguish(spec_a, spec_b, k=k, solver=solver, timeout=timeout, constraints=constraints,
                       simple=False, count=1, smt2=smt2)
