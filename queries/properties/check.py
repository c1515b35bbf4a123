"""Checking a property: rewriting first, the twin search next, the solvers for what neither settles.

:func:`check_property` answers ``proved`` (the formula ``hypothesis and violation`` reduces to
false in the canonical reading, :mod:`smtmodel.bv.canonical_backend`; or the unit's terms are
recognised as an operation of which the property is a theorem, :mod:`.reductions`, the argument
stated; or a solver found it unsatisfiable -- through the proof cache, which names the solver, its version and the date),
``refuted`` (a witness: values of the property's inputs on which the hypothesis holds
and the copies' outputs violate the claim, confirmed by the twin whoever found it, then
simplified by the twin) or ``unknown`` (the time ran out; the reason names the timeout).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from smtmodel.bv import NUMPY, all_of
from smtmodel.formats import get_format
from smtmodel.fp.classify import one_bits
from smtmodel.model import Model, ModelError
from smtmodel.solve import SOLVERS, available_solvers, default_pool, run_engines, smt2_text

from ..distinguish.api import resolve_model as resolve
from ..distinguish.constraints import Constraints
from ..distinguish.errors import QueryError, TwinDisagreement
from ..distinguish.search import KINDS, fixed_zero_exponents, probes
from .copies import Copy
from .defs import Property, get_property

TWIN = "twin"
REWRITING = "rewriting"
REDUCTION = "reduction"
"""Who proved a property by reduction (:mod:`.reductions`): the unit's terms recognised as an
operation of which the property is a theorem; part of the rewriting stage."""
REDUCTION_S = 3.0
"""Solver seconds a reduction's premise may take at most (the catalog's premises take under a
second; a unit that random cases cannot tell from a correctly rounded sum but is not one, such as
an FP8 block with an fp16 output, would otherwise hold the solvers for half the check)."""
CHOICES = ("portfolio", TWIN, REWRITING) + SOLVERS
"""``solver`` values: the portfolio (rewriting, the twin search, then the SMT engines raced), the
twin search alone (refutes or says unknown, never proves), rewriting alone (proves or says
unknown, never refutes), or one SMT engine alone."""

TWIN_ROUNDS = 24
"""Rounds of probes the twin search tries at most (a round is one batch of each probe kind)."""


def twin_budget(timeout: float) -> float:
    """Seconds the twin search may take before the solvers start: a third of the time, at most 2 s
    (over the catalog's property table its refutations come within 1-2 s; a proof needs the
    solvers, and the solvers refute too)."""
    return min(2.0, timeout / 3)


@dataclass
class Witness:
    values: dict                  # variable -> raw bits
    copies: list                  # per copy: label, a, b, c, a_scale, b_scale, d (raw bits)
    notes: list = field(default_factory=list)


@dataclass
class PropertyResult:
    status: str                   # "proved", "refuted" or "unknown"
    property: str
    model: str
    k: int
    claim: str = ""
    solver: str = ""              # who answered: twin, or the SMT engine (portfolio)
    seconds: float = 0.0
    timeout: float = 0.0
    reason: str = ""              # unknown: why (the timeout)
    cached: str = ""              # proved from the proof cache: by whom, when
    argument: str = ""            # proved by reduction: the argument (what the unit was recognised as)
    premise_by: str = ""          # proved by reduction: the solver that proved its premise ("": identical terms)
    witness: Witness | None = None
    log: list = field(default_factory=list)   # (engine, status, seconds)
    formats: tuple = ()           # (A's, B's, c's, d's) formats

    def to_dict(self) -> dict:
        return asdict(self)


# ---- the formula -----------------------------------------------------------------------------------

def formula(prop: Property, m: Model, k: int, B, live: int | None = None):
    """(assertions, variables) of the property on backend ``B``: the hypothesis and the violation,
    every copy's output built by :meth:`Model.build`. Unsat: the property holds. ``live``: the
    restricted question, only the first ``live`` products free, the variables of the others
    (:meth:`Property.restricted`) the constant +0 and not among the variables (sat is still a
    violation; unsat says nothing of the property)."""
    v = {n: B.var(n, w) for n, w in prop.variables(m, k).items()}
    fixed = prop.restricted(m, k, live) if live is not None else {}
    for n, same in fixed.items():
        v[n] = B.const(0, v[n].w) if same is None else v[same]
    cps = prop.copies(m, k, v)
    d = [cp.build(m) for cp in cps]
    return prop.hypothesis(m, k, v, cps) + [prop.violation(m, k, v, cps, d)], \
        {n: x for n, x in v.items() if n not in fixed}


RESTRICTED_LIVE = 2
"""Products the restricted search leaves free (:func:`check_property`): the others are zero."""

RESTRICTED_MIN_S = 10.0
"""The restricted search runs where at least this many seconds are left after the twin (it takes
half of them): at the table's 6 s the whole formula keeps all the solver time."""


def canonical_formula(prop: Property, m: Model, k: int, live: int | None = None):
    """The property's formula in the canonical reading
    (:class:`~smtmodel.bv.canonical_backend.CanonicalFormula`): the copies of a model share every
    term they compute alike (sums and maxima up to order, negation through sums and sign
    fields), so what is left to prove is where they differ; ``.false``: reduced to false, a
    proof by rewriting. Built once per check, in milliseconds."""
    from smtmodel.bv.canonical_backend import CanonicalFormula
    return CanonicalFormula(lambda B: formula(prop, m, k, B, live))


def smt2(prop: Property, m: Model, k: int, canon=None) -> str:
    """The formula the solvers read (``canon``: :func:`canonical_formula`'s, if already built) as
    SMT-LIB2 text."""
    from smtmodel.bv.z3_backend import Z3Backend
    terms, _v = (canon or canonical_formula(prop, m, k)).on(Z3Backend())
    note = (f"mmaprobe property {prop.name} on {m.id}, k={k}\nclaim: {prop.claim}\n"
            "sat: a violation (inputs of the copies); unsat: the property holds")
    return smt2_text(terms, note)


# ---- the twin's reading -------------------------------------------------------------------------

def _lanes(x, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(x.v, dtype=np.uint64), (n,)).copy()


def _copy_arrays(cp: Copy, n: int):
    a = np.stack([_lanes(x, n) for x in cp.a], axis=1)
    b = np.stack([_lanes(y, n) for y in cp.b], axis=1)
    c = _lanes(cp.c, n)
    sc = (None, None)
    if cp.scales:
        sc = tuple(np.stack([_lanes(s, n) for s in side], axis=1) for side in cp.scales)
    return a, b, c, sc


def twin_eval(prop: Property, m: Model, k: int, batch: dict):
    """The property on a batch, by the twin: (violation mask, the copies' concrete inputs, the
    copies' outputs). The hypothesis and violation are the formula's own predicates read on
    NumPy; the outputs come from :meth:`Model.evaluate`."""
    names = prop.variables(m, k)
    n = len(next(iter(batch.values())))
    v = {nm: NUMPY.input(np.asarray(batch[nm], dtype=np.uint64), w) for nm, w in names.items()}
    cps = prop.copies(m, k, v)
    hyp = all_of(prop.hypothesis(m, k, v, cps))
    arrays = [_copy_arrays(cp, n) for cp in cps]
    wo = get_format(m.out_fmt).width
    outs = [m.evaluate(a, b, c, *sc) for a, b, c, sc in arrays]
    d = [NUMPY.input(o, wo) for o in outs]
    bad = hyp & prop.violation(m, k, v, cps, d)
    mask = np.broadcast_to(np.asarray(bad.v, dtype=bool), (n,))
    return mask, [cp.label for cp in cps], arrays, outs


def _row(batch: dict, i: int) -> dict:
    return {nm: int(x[i]) for nm, x in batch.items()}


def _batch(rows: list[dict]) -> dict:
    return {nm: np.array([r[nm] for r in rows], dtype=np.uint64) for nm in rows[0]}


def witness_of(prop: Property, m: Model, k: int, vals: dict, who: str) -> Witness:
    """The witness ``vals`` read by the twin (copies' inputs and outputs); a case on which the
    twin does not see the violation is a bug of a backend (:class:`TwinDisagreement`)."""
    mask, labels, arrays, outs = twin_eval(prop, m, k, _batch([vals]))
    if not mask[0]:
        raise TwinDisagreement(f"{who} claims {vals} violates {prop.name} on {m.id}, but the twin does not see "
                               "the violation (a backend disagrees with the twin: a bug; please report)")
    copies = []
    for label, (a, b, c, sc), d in zip(labels, arrays, outs):
        one = {"label": label, "a": [int(x) for x in a[0]], "b": [int(x) for x in b[0]], "c": int(c[0]),
               "d": int(d[0]), "vals": vals}
        if sc[0] is not None:
            one["a_scale"], one["b_scale"] = [int(x) for x in sc[0][0]], [int(x) for x in sc[1][0]]
        copies.append(one)
    notes = prop.explain(m, k, copies)
    for one in copies:
        one.pop("vals")
    return Witness(dict(vals), copies, notes)


# ---- the twin search ---------------------------------------------------------------------------------

def twin_search(prop: Property, m: Model, k: int, timeout: float, seed: int = 0,
                rounds: int = TWIN_ROUNDS) -> dict | None:
    """A violating case found by the twin (the first of a batch), or None after ``rounds`` rounds of
    probes or ``timeout`` seconds."""
    t0 = time.perf_counter()
    g = np.random.default_rng(seed + 1)
    targets = tuple(fixed_zero_exponents(m))
    per_round = KINDS + (1 if targets and k >= 2 else 0)
    for i, base in enumerate(probes(m, k, Constraints(), seed, targets)):
        batch = prop.derive(m, k, base, g)
        mask, _l, _arrays, _outs = twin_eval(prop, m, k, batch)
        hit = np.flatnonzero(mask)
        if hit.size:
            return _row(batch, int(hit[0]))
        if i + 1 >= rounds * per_round or time.perf_counter() - t0 > timeout:
            return None
    return None


SIMPLIFY_S = 3.0
"""Seconds a witness's simplification may take at most (it stops with the simplest case so far)."""


def simplify(prop: Property, m: Model, k: int, vals: dict, passes: int = 64, seconds: float = SIMPLIFY_S) -> dict:
    """A simpler witness: the property's groups of inputs (:meth:`Property.groups`) set to 0, or to
    1.0, one group at a time while the twin still sees the violation (at most ``passes`` changes
    and ``seconds``)."""
    t0 = time.perf_counter()
    names = prop.variables(m, k)
    fa, fb = m.operand_fmts
    fmt_of = {"a": fa, "b": fb, "c": m.c_fmt}
    for _ in range(passes):
        cands = []
        for grp in prop.groups(m, k):
            for target in ("zero", "one"):
                new = dict(vals)
                for nm in grp:
                    f = fmt_of.get(nm[0])
                    if f is None or nm not in names:
                        continue
                    new[nm] = 0 if target == "zero" else one_bits(f)
                if new != vals:
                    cands.append(new)
        if not cands:
            return vals
        mask, _l, _a, _o = twin_eval(prop, m, k, _batch(cands))
        hit = np.flatnonzero(mask)
        if not hit.size:
            return vals
        vals = cands[int(hit[0])]
        if time.perf_counter() - t0 > seconds:
            break
    return vals


# ---- the solvers ------------------------------------------------------------------------------------

# ---- the API ----------------------------------------------------------------------------------------

def check_property(name: str, spec, k: int | None = None, timeout: float = 60, solver: str = "portfolio",
                   seed: int = 0, smt2_path: str | None = None, twin_seconds: float | None = None,
                   simplify_seconds: float = SIMPLIFY_S) -> PropertyResult:
    """Prove or refute property ``name`` of model ``spec`` (a catalog id with overrides, or a Model).

    ``k``: products per case (default: the property's, usually the model's instruction K);
    ``solver``: ``portfolio`` (rewriting and the reductions, the twin search, then Bitwuzla and z3
    raced; where :data:`RESTRICTED_MIN_S` or more are left after the twin, they first race for half
    of them on the restricted question: a violation whose products after the first
    :data:`RESTRICTED_LIVE` are zero), ``twin`` (the twin search alone: refuted or unknown), ``rewriting`` (rewriting and the
    reductions alone: proved or unknown) or one of
    ``z3``, ``bitwuzla``, ``cvc5``; ``timeout``: seconds for the whole check; ``smt2_path``: also write the formula as SMT-LIB2 text; ``twin_seconds``: the
    twin search's share of the time (default :func:`twin_budget`); ``simplify_seconds``: at most this
    long simplifying a witness (:func:`simplify`).

    Raises QueryError (unknown property, bad k, timeout or solver) and :class:`NotApplicable` (a
    QueryError: the property says nothing of this model)."""
    t0 = time.perf_counter()
    prop = get_property(name)
    m = resolve(spec)
    k = prop.default_k(m) if k is None else k
    prop.check(m, k)
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise QueryError(f"timeout must be positive, got {timeout!r}")
    if solver not in CHOICES:
        raise QueryError(f"unknown solver {solver!r}; one of {', '.join(CHOICES)}")
    if solver in SOLVERS and solver not in available_solvers():
        raise QueryError(f"solver {solver} is not installed (pip install {solver})")
    res = PropertyResult("unknown", prop.name, m.id, k, prop.claim, timeout=float(timeout), formats=m.formats)
    canon = None
    if smt2_path:
        canon = canonical_formula(prop, m, k)
        text = smt2(prop, m, k, canon)
        from smtmodel.io import atomic_open
        with atomic_open(smt2_path) as fh:
            fh.write(text)

    def done(r: PropertyResult) -> PropertyResult:
        r.seconds = time.perf_counter() - t0
        return r

    if solver in ("portfolio", REWRITING):
        tt = time.perf_counter()
        canon = canon or canonical_formula(prop, m, k)
        proved = canon.false
        res.log.append((REWRITING, "false" if proved else "not reduced", round(time.perf_counter() - tt, 3)))
        if proved:
            res.status, res.solver = "proved", REWRITING
            return done(res)
        tt = time.perf_counter()
        seconds = 0.0 if solver == REWRITING else max(0.0, min(timeout / 2, REDUCTION_S) - (time.perf_counter() - t0))
        red = prop.reduction(m, k, seconds)
        res.log.append((REDUCTION, "recognised" if red else "none", round(time.perf_counter() - tt, 3)))
        if red:
            res.status, res.solver = "proved", REDUCTION
            res.argument, res.premise_by = red.argument, red.premise_by
            return done(res)
        if solver == REWRITING:
            res.reason = "the formula does not reduce to false by rewriting (it cannot refute)"
            return done(res)
    if solver in ("portfolio", TWIN):
        tt = time.perf_counter()
        budget = timeout if solver == TWIN else twin_budget(timeout) if twin_seconds is None else twin_seconds
        found = twin_search(prop, m, k, budget, seed)
        res.log.append((TWIN, "violation" if found else "none found", round(time.perf_counter() - tt, 3)))
        if found is not None:
            found = simplify(prop, m, k, found, seconds=simplify_seconds)
            res.status, res.solver = "refuted", TWIN
            res.witness = witness_of(prop, m, k, found, TWIN)
            return done(res)
        if solver == TWIN:
            res.reason = f"the twin search found no violation in {time.perf_counter() - tt:.1f} s (it cannot prove)"
            return done(res)
    names = default_pool() if solver in ("portfolio", TWIN) else (solver,)

    def refuted(winner: str, r, label: str, fixed: dict | None = None) -> PropertyResult:
        """The solver's case (``fixed``: the variables the restricted question set) as the witness."""
        vals = {nm: int(x) for nm, x in r.model.items()}
        vals |= {nm: 0 if same is None else vals[same] for nm, same in (fixed or {}).items()}
        witness_of(prop, m, k, vals, winner)          # the twin confirms the solver's own case first
        vals = simplify(prop, m, k, vals, seconds=simplify_seconds)
        res.status, res.solver = "refuted", label
        res.witness = witness_of(prop, m, k, vals, winner)
        return done(res)

    left, live = timeout - (time.perf_counter() - t0), RESTRICTED_LIVE
    if solver == "portfolio" and k > live and left >= RESTRICTED_MIN_S:
        # cheap before expensive: a violation with all but the first products zero, for half the time
        ts = time.perf_counter()
        narrow = canonical_formula(prop, m, k, live)
        winner, r, _notes = (None, None, []) if narrow.false else \
            run_engines(narrow.on, tuple(names), left / 2, reraise=(QueryError, ModelError, TwinDisagreement))
        status = "false" if narrow.false else r.status if r is not None and winner else "unknown"
        res.log.append((f"restricted ({live} of {k} products free)", status, round(time.perf_counter() - ts, 3)))
        if winner and r.status == "sat":
            return refuted(winner, r, f"{winner} (portfolio, products {live}..{k - 1} zero)",
                           prop.restricted(m, k, live))
    left = max(0.05, timeout - (time.perf_counter() - t0))
    ts = time.perf_counter()
    if canon is None:
        canon = canonical_formula(prop, m, k)
    winner, r, notes = run_engines(canon.on, tuple(names), left, reraise=(QueryError, ModelError, TwinDisagreement))
    label = winner + (" (portfolio)" if len(names) > 1 else "") if winner else ""
    res.log.append(("+".join(names), r.status if r is not None and winner else "unknown",
                    round(time.perf_counter() - ts, 3)))
    if winner and r.status == "unsat":
        res.status, res.solver = "proved", label
        res.cached = r.extra.get("cached", "")
    elif winner and r.status == "sat":
        return refuted(winner, r, label)
    else:
        crashed = [n for n in notes if "crashed" in n]
        res.reason = f"timeout after {timeout:g} s" + (f" ({'; '.join(crashed)})" if crashed else "")
        if crashed and len(crashed) == len(names):
            res.reason = "every solver crashed: " + "; ".join(crashed)
    return done(res)


__all__ = ["CHOICES", "REDUCTION", "RESTRICTED_LIVE", "RESTRICTED_MIN_S", "REWRITING", "PropertyResult", "Witness", "check_property", "formula", "smt2", "twin_eval", "twin_search",
           "simplify", "witness_of", "canonical_formula"]
