"""Two models' chained GEMMs under one dataflow, for every K: proved equal, or refuted at the
smallest K with a witness the GEMM twin confirms.

A GEMM element under a dataflow (:func:`smtmodel.dataflow.element`) is the model's chains
(:meth:`Model.build` over the dataflow's chunks, each from C or +0 in the c format) and steps that
read no model parameter (fp32 additions, the epilogue, the output rounding). A chain of n
products is one block of n products where n <= L_max (:meth:`Model.block`), else blocks of
L_max (the last zero-padded): ``chain_start``, then ``chain_step`` per block -- the first from a
value of the c format, the others from a value of the output format -- then ``chain_end``.

**The proof** (induction over the chain). Let S be the least common multiple of the two blocks
(L_max where they are equal). Two models of the same formats whose chain start and end are the
same function (same ``c_entry``, ``c_rm``, ``flush_outputs`` and, with c added last,
``specials``) agree on every chain -- every length n, from every start -- when

* for every n = 1 .. S, the chains of n products agree for every c
  (:func:`queries.distinguish.equivalent` at k = n);
* the first S products of a longer chain agree for every block and every accumulator of the c
  format (+0 only, where c is added last): both models end a block at S;
* any later S products agree from every accumulator of the output format;
* where the blocks differ, every tail of r < S products that a model zero-pads to less than S
  (to ceil(r/L) L) agrees from every accumulator of the output format (a tail both pad to S is a
  later stretch with zero products, covered above).

A stretch is proved as an equivalence of *step models*: the model with ``c_entry="align"`` and no
output flush (so that :meth:`Model.build` of S products is exactly its ``chain_step`` calls), and
for a later stretch with c_fmt = out_fmt too; a tail as the same build with each model's own
zero padding, in one formula. Every obligation goes through the query machinery: the twin search
first, then the portfolio of Bitwuzla, z3 and cvc5, the proof cache keeping each proof. Chains
that agree give GEMMs that agree under every dataflow whose chunks are the same for both models
-- all of them where the blocks are equal; where they differ, those with a fixed k-tile or one
chain over K (:func:`covers`) -- which is why a proof names no single dataflow. Models with
identical parameters (:func:`queries.distinguish.api.same_parameters`) compute one function:
proved without a query.

**The refutation.** An obligation that fails is a *step-level* difference: an accumulator and a
block on which one step differs, which a real chain may never reach. The reachable question is
asked of the GEMM itself, under the dataflow, alpha = beta = 1 (C read): for K = 1, 2, ..
``k_max`` (the K the dataflow admits) the twin searches the element reading on batches of probes
(:func:`queries.distinguish.probes`); the first K it separates is the candidate, and every
smaller K is asked of the solvers (the element's SMT reading for both models, d_1 != d_2): unsat
proves that K equal, sat gives a smaller K. The witness -- a, b and c of one real GEMM -- is
confirmed by the batched GEMM twin (:func:`smtmodel.gemm.gemm_bits`, a 1 x K times K x 1 GEMM),
so it is reachable by construction.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from smtmodel.bv import NUMPY
from smtmodel.bv.core import any_of
from smtmodel.dataflow import Dataflow, DataflowError, element, parse_dataflow
from smtmodel.dataflow.plan import chains
from smtmodel.formats import get_format
from smtmodel.fp.classify import is_nan, one_bits
from smtmodel.gemm import epilogue_format, gemm_bits, output_format
from smtmodel.model import INT_OPS, Model, ModelError
from smtmodel.bv.canonical_backend import CanonicalFormula
from smtmodel.solve import SOLVER_CHOICES, available_solvers, default_pool, run_engines

from .distinguish import Constraints, QueryError, TwinDisagreement, equivalent, probes
from .distinguish.api import resolve_model as resolve, same_parameters
from .distinguish.search import KINDS, confirm as confirm_models, fixed_zero_exponents, twin_search

K_MAX_LIMIT = 4096
"""The largest ``k_max`` the search takes (each K is a twin search, and possibly a solver query)."""

TWIN_ROUNDS = 2
"""Rounds of probes (:data:`queries.distinguish.search.KINDS` batches of
:data:`queries.distinguish.search.BATCH` cases each) the twin tries per K."""

ALPHA_BETA = "alpha = beta = 1, C read"
"""The GEMM call of the search (the proof holds for every alpha and beta)."""


@dataclass
class Obligation:
    """One step of the induction: two (step) models equal for every input at k."""
    name: str                     # what it states, in words
    k: int
    status: str = "unknown"       # "proved", "refuted" or "unknown"
    solver: str = ""
    cached: str = ""
    seconds: float = 0.0
    reason: str = ""
    vector: dict | None = None    # refuted: a, b, the accumulator (c) and both outputs (raw bits)


@dataclass
class ChainResult:
    status: str                   # "proved", "refuted" or "unknown"
    models: tuple                 # (id 1, id 2)
    dataflow: str                 # the dataflow's text form
    formats: tuple = ()           # (A's, B's, c's, D's) formats of the GEMM
    how: str = ""                 # proved: "identical parameters" or "induction"; else what was done
    obligations: list = field(default_factory=list)
    k: int | None = None          # refuted: the smallest K
    smallest: bool = False        # refuted: every K below k proved equal (or k is the first K admitted)
    witness: dict | None = None   # refuted: K, a, b, c, alpha, beta, D per model (raw bits)
    step_witness: dict | None = None   # the first refuted obligation's vector (a step-level difference)
    checked: list = field(default_factory=list)   # (K, status, who, seconds) of the search
    k_max: int = 0
    k_first: int = 1              # the smallest K the dataflow admits
    seconds: float = 0.0
    reason: str = ""
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


# ---- inputs -----------------------------------------------------------------------------------------

def block_max(m: Model) -> int:
    """L_max: the products of one block of a long chain (:meth:`Model.block` for large K)."""
    return m.block(1 << 30)


def check_pair(ma: Model, mb: Model) -> None:
    """Same formats and no block scales (the GEMM twin takes none), else a :class:`QueryError`."""
    for attr, fa, fb in zip(("a_fmt", "b_fmt", "c_fmt", "out_fmt"), ma.formats, mb.formats):
        if fa != fb:
            raise QueryError(f"{ma.id} and {mb.id} differ in {attr} ({fa} vs {fb}): "
                             "only models of the same formats run the same GEMM")
    for m in (ma, mb):
        if m.scale_fmt:
            raise QueryError(f"{m.id} reads block scales: the GEMM dataflows take models without block scales")


def check_dataflow(ma: Model, mb: Model, df: Dataflow) -> None:
    """A dataflow that does not apply to the models is a :class:`QueryError` (integer models run
    the ``instruction`` dataflow only; per-block scales are not part of this question)."""
    ints = [m.op in INT_OPS for m in (ma, mb)]
    if any(ints) and df.name != "instruction":
        raise QueryError(f"dataflow {df.text()} does not apply to integer models: they run the 'instruction' "
                         "dataflow only (C in the s32 accumulator, one chain over K)")
    if any(ints) and df != parse_dataflow("instruction"):
        raise QueryError(f"dataflow {df.text()} does not apply to integer models: the 'instruction' profile "
                         "as it is, without changes")
    if df.combine_op == "ffma" or df.scale_a != "tensor" or df.scale_b != "tensor":
        raise QueryError(f"dataflow {df.text()} takes per-block scales: not covered by chain-equal "
                         "(the per-block scale values would be inputs of the question)")


def admitted(df: Dataflow, ma: Model, mb: Model, k_max: int) -> list[int]:
    """The K in 1..k_max that the dataflow admits for both models (K a multiple of k_multiple,
    enough k-tiles for the slices)."""
    out = []
    for K in range(1, k_max + 1):
        try:
            chains(df, ma, K)
            chains(df, mb, K)
        except DataflowError:
            continue
        out.append(K)
    return out


def default_k_max(ma: Model, mb: Model, df: Dataflow) -> int:
    """Four chained blocks of both models, and at least two chunks of the dataflow per slice."""
    blk = math.lcm(block_max(ma), block_max(mb))
    chunk = (df.tile or blk) * max(df.restart, 1) * df.slices
    return max(4 * blk, 2 * chunk, df.k_multiple)


# ---- the GEMM element, one reading for the twin and the solvers --------------------------------------

def _epilogue(m: Model, df: Dataflow) -> str:
    return epilogue_format(m, df)


def element_term(m: Model, df: Dataflow, a: list, b: list, c):
    """D[0, 0] of the GEMM under the dataflow with alpha = beta = 1 and C read, as a term of the
    inputs' backend (NumPy lanes or solver terms). Integer models: the instruction's chain (C in
    the s32 accumulator)."""
    if m.op in INT_OPS:
        return m.build(list(a), list(b), c)
    E = _epilogue(m, df)
    one = one_bits(E)
    return element(m, df, list(a), list(b), c, alpha_bits=one, beta_bits=one, beta_zero=False, has_c=True, E=E)


def _widths(m: Model, K: int) -> dict:
    (wa, wb), wc = m.operand_widths, get_format(m.c_fmt).width
    return {f"a{i}": wa for i in range(K)} | {f"b{i}": wb for i in range(K)} | {"c": wc}


def twin_elements(ma: Model, mb: Model, df: Dataflow, K: int, batch: dict) -> tuple[np.ndarray, np.ndarray]:
    """Both models' elements on a batch of cases (the per-element reading, NumPy lanes)."""
    n = len(batch["c"])
    w = _widths(ma, K)
    v = {nm: NUMPY.input(np.asarray(batch[nm], dtype=np.uint64), w[nm]) for nm in w}
    a, b = [v[f"a{i}"] for i in range(K)], [v[f"b{i}"] for i in range(K)]
    out = []
    for m in (ma, mb):
        d = element_term(m, df, a, b, v["c"])
        out.append(np.broadcast_to(np.asarray(d.v, dtype=np.uint64), (n,)).copy())
    return out[0], out[1]


def gemm_twin(m: Model, df: Dataflow, K: int, vals: dict) -> int:
    """D of the 1 x K times K x 1 GEMM of one case, by the batched GEMM twin (``gemm_bits``)."""
    a = np.array([[vals[f"a{i}"] for i in range(K)]], dtype=np.uint64)
    b = np.array([[vals[f"b{i}"]] for i in range(K)], dtype=np.uint64).reshape(K, 1)
    c = np.array([[vals["c"]]], dtype=np.uint64)
    if m.op in INT_OPS:
        return int(gemm_bits(m, a, b, c, dataflow="instruction", backend="numpy")[0, 0])
    E = _epilogue(m, df)
    one = one_bits(E)
    return int(gemm_bits(m, a, b, c, alpha_bits=one, beta_bits=one, dataflow=df, backend="numpy")[0, 0])


def confirm(ma: Model, mb: Model, df: Dataflow, K: int, vals: dict, who: str) -> tuple[int, int]:
    """Both GEMM outputs of a case by the GEMM twin; a case it does not see differ (or on which it
    disagrees with the element reading) is a bug of a backend."""
    da, db = gemm_twin(ma, df, K, vals), gemm_twin(mb, df, K, vals)
    ea, eb = twin_elements(ma, mb, df, K, {n: np.array([x], dtype=np.uint64) for n, x in vals.items()})
    if da == db or (da, db) != (int(ea[0]), int(eb[0])):
        raise TwinDisagreement(f"{who} claims the GEMMs of {ma.id} and {mb.id} differ at K={K} on {vals}, but the GEMM "
                               f"twin computes {da:#x} and {db:#x} (element reading {int(ea[0]):#x}, {int(eb[0]):#x}): "
                               "a backend disagrees with the twin (a bug; please report)")
    return da, db


def twin_at(ma: Model, mb: Model, df: Dataflow, K: int, seconds: float, seed: int = 0) -> dict | None:
    """A case at K on which the two GEMMs differ, found by the twin, or None."""
    t0 = time.perf_counter()
    targets = tuple(fixed_zero_exponents(ma, mb))
    limit = TWIN_ROUNDS * (KINDS + (1 if targets and K >= 2 else 0))
    for i, batch in enumerate(probes(ma, K, Constraints(), seed + K, targets)):
        found = _first_hit(ma, mb, df, K, batch)
        if found is None and df.c_entry == "epilogue" and ma.op not in INT_OPS:
            # C added in the epilogue can hide a difference of the chains: the same cases with C = +0
            found = _first_hit(ma, mb, df, K, batch | {"c": np.zeros_like(batch["c"])})
        if found is not None:
            return found
        if i + 1 >= limit or time.perf_counter() - t0 > seconds:
            return None
    return None


def _first_hit(ma: Model, mb: Model, df: Dataflow, K: int, batch: dict) -> dict | None:
    da, db = twin_elements(ma, mb, df, K, batch)
    hit = np.flatnonzero(da != db)
    if not hit.size:
        return None
    j = int(hit[0])
    return {nm: int(x[j]) for nm, x in batch.items()}


def simplify(ma: Model, mb: Model, df: Dataflow, K: int, vals: dict, seconds: float = 2.0) -> dict:
    """A more readable witness: products set to zero (a_i = b_i = 0), b_i set to 1.0, c set to 0, one
    change at a time while the GEMMs still differ (at most ``seconds``)."""
    t0 = time.perf_counter()
    if ma.op in INT_OPS:
        one_b = 1
    else:
        one_b = one_bits(ma.operand_fmts[1])
    while time.perf_counter() - t0 < seconds:
        cands = []
        if vals["c"] != 0:
            cands.append(vals | {"c": 0})
        for i in range(K):
            if vals[f"a{i}"] or vals[f"b{i}"]:
                cands.append(vals | {f"a{i}": 0, f"b{i}": 0})
        for i in range(K):
            if vals[f"b{i}"] != one_b and vals[f"a{i}"]:
                cands.append(vals | {f"b{i}": one_b})
        if not cands:
            return vals
        batch = {nm: np.array([cd[nm] for cd in cands], dtype=np.uint64) for nm in vals}
        da, db = twin_elements(ma, mb, df, K, batch)
        hit = np.flatnonzero(da != db)
        if not hit.size:
            return vals
        vals = cands[int(hit[0])]
    return vals


# ---- the solvers on the GEMM element ----------------------------------------------------------------

def same_plan(ma: Model, mb: Model, df: Dataflow, K: int) -> bool:
    """Whether the dataflow cuts K into the same chunks for both models (it reads L_max where the
    k-tile width is the model's block)."""
    pa, pb = chains(df, ma, K), chains(df, mb, K)
    return len(pa) == len(pb) and all(len(x) == len(y) and all(np.array_equal(u, v) for u, v in zip(x, y))
                                      for x, y in zip(pa, pb))


def nan_blind(m: Model, df: Dataflow) -> bool:
    """Whether the element maps every NaN of a chain to one output pattern: NaN is absorbing in every
    step after the chains (additions, the epilogue's multiply and FMA, conversions) and the output
    writes NVIDIA's canonical NaN (``nan="nvidia"``)."""
    return m.op not in INT_OPS and df.nan == "nvidia"


def chain_terms(m: Model, df: Dataflow, K: int, a: list, b: list, c) -> list:
    """The chains of the GEMM element (:func:`smtmodel.dataflow.element`'s ``m.build`` calls, in
    order): the first chunk of slice 0 from ``c`` where C enters the accumulator (any value of the
    c format: the pre-scale is the same function for both models), every other chunk from +0.
    Integer models: the one chain from c."""
    if m.op in INT_OPS:
        return [m.build(list(a), list(b), c)]
    wa, wb = m.operand_widths
    B = c.B
    za, zb = B.const(0, wa), B.const(0, wb)
    zero = B.const(0, get_format(m.c_fmt).width)
    out = []
    for s, chunks in enumerate(chains(df, m, K)):
        for j, idx in enumerate(chunks):
            if len(idx) == 0:
                continue
            start = c if (s == 0 and j == 0 and df.c_entry == "accumulator") else zero
            out.append(m.build([a[k] if k >= 0 else za for k in idx], [b[k] if k >= 0 else zb for k in idx], start))
    return out


def _formula(ma: Model, mb: Model, df: Dataflow, K: int, B, level: str):
    v = {n: B.var(n, w) for n, w in _widths(ma, K).items()}
    a, b = [v[f"a{i}"] for i in range(K)], [v[f"b{i}"] for i in range(K)]
    if level == "chains":          # some chain differs (the rest of the element reads no model parameter)
        diff = []
        for x, y in zip(chain_terms(ma, df, K, a, b, v["c"]), chain_terms(mb, df, K, a, b, v["c"])):
            d = x.ne(y)
            if nan_blind(ma, df):      # two NaNs of different payloads give one output NaN
                d = d & ~(is_nan(x, ma.out_fmt) & is_nan(y, ma.out_fmt))
            diff.append(d)
        return [any_of(diff)], v
    return [element_term(ma, df, a, b, v["c"]).ne(element_term(mb, df, a, b, v["c"]))], v


def decide(formula, solver: str, timeout: float):
    """``formula(B) -> (assertions, variables)`` decided by one solver or the portfolio raced (the
    proof cache keeps every unsat): (status "sat" | "unsat" | "unknown", who, cached label, model
    or None, why unknown). The formula is read in the canonical reading first
    (:class:`~smtmodel.bv.canonical_backend.CanonicalFormula`): reduced to false it is proved by
    rewriting; else the solvers read it with the terms both models compute alike shared."""
    cf = CanonicalFormula(formula)
    if cf.false:
        return "unsat", "rewriting", "", None, ""
    names = default_pool() if solver == "portfolio" else (solver,)
    winner, r, notes = run_engines(cf.on, names, timeout, (QueryError, ModelError, TwinDisagreement))
    if winner is None:
        crashed = len(names) == 1 and r is None
        return "unknown", "+".join(names), "", None, notes[0] if crashed else f"timeout after {timeout:g} s"
    label = winner + (" (portfolio)" if len(names) > 1 else "")
    if r.status == "unsat":
        return "unsat", label, r.extra.get("cached", ""), None, ""
    return "sat", label, "", {n: int(x) for n, x in r.model.items()}, ""


def solve_at(ma: Model, mb: Model, df: Dataflow, K: int, solver: str, timeout: float):
    """(status "sat" | "unsat" | "unknown", who, cached label, case or None, why unknown) at K.

    Cheap before expensive: where both models' chunks line up, the chains alone are asked first
    (no epilogue in the formula; NaNs of different payloads count as equal where the output
    writes one canonical NaN, :func:`nan_blind`); no chain that differs proves K equal. A case on
    which a chain differs is tried on the element (and with C = +0 where C enters in the
    epilogue); otherwise the whole element is asked (the epilogue and the output rounding may
    hide a chain's difference)."""
    t0 = time.perf_counter()
    if same_plan(ma, mb, df, K):
        st, who, cached, vals, why = decide(lambda B: _formula(ma, mb, df, K, B, "chains"), solver, timeout)
        if st == "unsat":
            return st, who + " on the chains", cached, None, ""
        if st == "sat":                 # the chains differ there: does the element (with C = +0 too)?
            cands = [vals] + ([vals | {"c": 0}] if df.c_entry == "epilogue" and ma.op not in INT_OPS else [])
            hit = _first_hit(ma, mb, df, K, {nm: np.array([cd[nm] for cd in cands], dtype=np.uint64)
                                             for nm in vals})
            if hit is not None:
                return "sat", who + " on the chains", "", hit, ""
    left = max(0.05, timeout - (time.perf_counter() - t0))
    return decide(lambda B: _formula(ma, mb, df, K, B, "element"), solver, left)


# ---- the induction ----------------------------------------------------------------------------------

def same_ends(ma: Model, mb: Model) -> str:
    """"" where the two chains start and end with the same function, else why not."""
    for attr in ("c_entry", "flush_outputs"):
        if getattr(ma, attr) != getattr(mb, attr):
            return f"{attr} differs ({getattr(ma, attr)} vs {getattr(mb, attr)})"
    if ma.c_entry == "end":
        for attr in ("c_rm", "specials"):
            if getattr(ma, attr) != getattr(mb, attr):
                return f"c is added last with a different {attr} ({getattr(ma, attr)} vs {getattr(mb, attr)})"
    return ""


def first_step_model(m: Model) -> Model:
    """One ``chain_step`` from an accumulator of the c format: ``build`` of L_max products."""
    if m.c_entry == "align" and not m.flush_outputs:
        return m
    return replace(m, id=f"{m.id}[first block]", c_entry="align", flush_outputs=None)


def later_step_model(m: Model) -> Model:
    """One ``chain_step`` from an accumulator of the output format: ``build`` of L_max products."""
    if m.c_entry == "align" and not m.flush_outputs and get_format(m.c_fmt).name == get_format(m.out_fmt).name:
        return m
    return replace(m, id=f"{m.id}[later block]", c_fmt=m.out_fmt, c_entry="align", flush_outputs=None)


def super_block(ma: Model, mb: Model) -> int:
    """The least common multiple of the two blocks: a stretch of K both chains end a block at."""
    return math.lcm(block_max(ma), block_max(mb))


def obligations(ma: Model, mb: Model) -> list[tuple]:
    """The induction's queries, duplicates removed: (statement, model 1, model 2, k, constraints,
    pads). ``pads`` is None for an equivalence of the two (step) models at k, or, for a tail,
    the lengths (n1, n2) each model zero-pads the k products of the chain's last blocks to."""
    La, Lb = block_max(ma), block_max(mb)
    S = math.lcm(La, Lb)
    cf, of = ma.c_fmt, ma.out_fmt
    unit = f"{S}" if La == Lb else f"{S} (lcm of {La} and {Lb})"
    out = [(f"K = {n}: the chain of {n} product{'s' if n > 1 else ''} from any c ({cf})", ma, mb, n, Constraints(),
            None) for n in range(1, S + 1)]
    zero = ma.c_entry == "end"
    out.append((f"the first {unit} products of a longer chain, from any accumulator of {cf}"
                + (" (+0: c is added last)" if zero else ""),
                first_step_model(ma), first_step_model(mb), S, Constraints(c_zero=zero), None))
    out.append((f"a later {unit} products, from any accumulator of {of}",
                later_step_model(ma), later_step_model(mb), S, Constraints(), None))
    for r in range(1, S):
        pads = (-(-r // La) * La, -(-r // Lb) * Lb)
        if pads != (S, S):              # a tail both pad to S is a later stretch with zeros: proved above
            out.append((f"a last {r} product{'s' if r > 1 else ''} (zero-padded to {pads[0]} and {pads[1]}), "
                        f"from any accumulator of {of}", later_step_model(ma), later_step_model(mb), r,
                        Constraints(), pads))
    seen, uniq = set(), []
    for o in out:
        key = (o[1], o[2], o[3], o[4], o[5])
        if key not in seen:
            seen.add(key)
            uniq.append(o)
    return uniq


def _tail_terms(xa: Model, xb: Model, r: int, pads: tuple, v: dict) -> tuple:
    a, b = [v[f"a{i}"] for i in range(r)], [v[f"b{i}"] for i in range(r)]
    B = v["c"].B
    out = []
    for x, n in zip((xa, xb), pads):
        wa, wb = x.operand_widths
        out.append(x.build(a + [B.const(0, wa)] * (n - r), b + [B.const(0, wb)] * (n - r), v["c"]))
    return tuple(out)


def _tail_twin(xa: Model, xb: Model, r: int, pads: tuple, seconds: float):
    """A tail case on which the two differ, found by the twin on probes: (case, (d1, d2)) or None."""
    t0 = time.perf_counter()
    w = _widths(xa, r)
    targets = tuple(fixed_zero_exponents(xa, xb))
    for i, batch in enumerate(probes(xa, r, Constraints(), r, targets)):
        v = {nm: NUMPY.input(np.asarray(batch[nm], dtype=np.uint64), w[nm]) for nm in w}
        da, db = (np.broadcast_to(np.asarray(d.v, dtype=np.uint64), (len(batch["c"]),)) for d in
                  _tail_terms(xa, xb, r, pads, v))
        hit = np.flatnonzero(da != db)
        if hit.size:
            j = int(hit[0])
            return {nm: int(x[j]) for nm, x in batch.items()}, (int(da[j]), int(db[j]))
        if i + 1 >= TWIN_ROUNDS * (KINDS + (1 if targets and r >= 2 else 0)) or time.perf_counter() - t0 > seconds:
            return None
    return None


def _tail_solve(xa: Model, xb: Model, r: int, pads: tuple, solver: str, timeout: float):
    """A tail obligation asked of the solvers: (status, who, cached, case, (d1, d2) or None)."""
    w = _widths(xa, r)

    def formula(B):
        v = {n: B.var(n, wd) for n, wd in w.items()}
        ta, tb = _tail_terms(xa, xb, r, pads, v)
        return [ta.ne(tb)], v
    st, who, cached, vals, why = decide(formula, solver, timeout)
    d = None
    if st == "sat":
        v = {nm: NUMPY.input(np.array([vals[nm]], dtype=np.uint64), w[nm]) for nm in w}
        d = tuple(int(np.asarray(t.v).reshape(-1)[0]) for t in _tail_terms(xa, xb, r, pads, v))
        if d[0] == d[1]:
            raise TwinDisagreement(f"{who} claims the tails of {xa.id} and {xb.id} differ on {vals}, but the twin "
                                   "computes the same bits (a backend disagrees with the twin: a bug; please report)")
    return st, who, cached, vals, d


def _vector(xa: Model, k: int, vals: dict, d) -> dict:
    return {"a": [vals[f"a{i}"] for i in range(k)], "b": [vals[f"b{i}"] for i in range(k)], "c": vals["c"],
            "d": [int(x) for x in d], "acc_fmt": xa.c_fmt}


def prove(ma: Model, mb: Model, solver: str, timeout: float, twin_seconds: float = 2.0) -> tuple[str, list, str]:
    """The induction: ("proved" | "refuted" | "unknown" | "n/a", obligations, why n/a).

    Cheap before expensive: the twin searches every obligation first (a refuted one ends the
    proof with a step-level difference); then the solvers take the obligations in order, and the
    first one they do not settle ends the proof (unknown)."""
    why = same_ends(ma, mb)
    if why:
        return "n/a", [], f"the chains start or end differently: {why}"
    obs = obligations(ma, mb)
    for name, xa, xb, k, cons, pads in obs:            # the twin, on every obligation
        t0 = time.perf_counter()
        if pads is None:
            r = twin_search(xa, xb, k, cons, twin_seconds, rounds=TWIN_ROUNDS)
            hit = None
            if r.status == "sat":
                vals = r.extra["models"][0]
                hit = (vals, confirm_models(xa, xb, vals, k, "twin"))
        else:
            hit = _tail_twin(xa, xb, k, pads, twin_seconds)
        if hit is not None:
            ob = Obligation(name, k, "refuted", "twin", seconds=round(time.perf_counter() - t0, 3),
                            vector=_vector(xa, k, *hit))
            return "refuted", [ob], ""
    done = []
    for name, xa, xb, k, cons, pads in obs:            # the solvers, in order
        t0 = time.perf_counter()
        ob = Obligation(name, k)
        if pads is None:
            r = equivalent(xa, xb, k=k, solver=solver, timeout=timeout, constraints=cons)
            ob.solver, ob.cached, st, reason = r.solver, r.cached, r.status, r.reason
            if st == "sat":
                vec = r.vectors[0]
                ob.vector = {"a": vec.a, "b": vec.b, "c": vec.c, "d": [vec.d[xa.id], vec.d[xb.id]],
                             "acc_fmt": xa.c_fmt}
        else:
            st, ob.solver, ob.cached, vals, d = _tail_solve(xa, xb, k, pads, solver, timeout)
            reason = "" if st != "unknown" else f"timeout after {timeout:g} s"
            if st == "sat":
                ob.vector = _vector(xa, k, vals, d)
        ob.seconds = round(time.perf_counter() - t0, 3)
        done.append(ob)
        if st == "sat":
            ob.status = "refuted"
            return "refuted", done, ""
        if st != "unsat":
            ob.reason = reason
            return "unknown", done, ""
        ob.status = "proved"
    return "proved", done, ""


def covers(ma: Model, mb: Model, df: Dataflow) -> str:
    """"" where chains that agree for every length and start give GEMMs that agree under ``df`` (both
    models' chunks are the same), else why not: with k-tiles of the model's block, slices or
    restarts cut K at the block, which differs."""
    if block_max(ma) == block_max(mb) or df.tile or (df.slices == 1 and not df.restart):
        return ""
    return (f"dataflow {df.text()} cuts K at each model's block (tile=0 with slices or restarts) and the blocks "
            f"differ ({block_max(ma)} vs {block_max(mb)})")


# ---- the API ----------------------------------------------------------------------------------------

def chain_equal(spec_a, spec_b, dataflow=None, k_max: int | None = None, solver: str = "portfolio",
                timeout: float = 60.0, twin_seconds: float = 2.0) -> ChainResult:
    """Whether the two models' GEMMs under ``dataflow`` (text, dict or :class:`Dataflow`; None: the
    default, cutlass2) give the same bits for every K and every input.

    ``proved``: identical parameters, or the induction (module docstring) with every obligation
    unsat (``obligations`` name the solver, or the proof cache). ``refuted``: a GEMM witness at
    ``k`` confirmed by the GEMM twin; ``smallest`` says whether every admitted K below it was proved
    equal. ``unknown``: neither within ``k_max`` and the time. ``timeout``: seconds per solver
    query; ``twin_seconds``: at most this long for the twin per K. Raises :class:`QueryError` for
    bad input (unknown model, other formats, a dataflow that does not apply, a bad k_max)."""
    t0 = time.perf_counter()
    try:
        ma, mb = resolve(spec_a), resolve(spec_b)
        df = parse_dataflow(dataflow)
    except ModelError as exc:
        raise QueryError(str(exc)) from None
    check_pair(ma, mb)
    check_dataflow(ma, mb, df)
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise QueryError(f"timeout must be positive, got {timeout!r}")
    if not (isinstance(twin_seconds, (int, float)) and twin_seconds >= 0):
        raise QueryError(f"twin_seconds must be >= 0, got {twin_seconds!r}")
    if solver not in SOLVER_CHOICES:
        raise QueryError(f"unknown solver {solver!r}; one of {', '.join(SOLVER_CHOICES)}")
    if solver != "portfolio" and solver not in available_solvers():
        raise QueryError(f"solver {solver} is not installed (pip install {solver})")
    k_max = default_k_max(ma, mb, df) if k_max is None else k_max
    if not isinstance(k_max, int) or isinstance(k_max, bool) or not 1 <= k_max <= K_MAX_LIMIT:
        raise QueryError(f"k_max must be an integer in 1..{K_MAX_LIMIT}, got {k_max!r}")
    ks = admitted(df, ma, mb, k_max)
    if not ks:
        raise QueryError(f"dataflow {df.text()} admits no K in 1..{k_max} for these models "
                         f"(k_multiple={df.k_multiple}, {df.slices} slice(s)): raise --k-max")
    try:                                   # the GEMM twin takes the dataflow and the models
        gemm_twin(ma, df, ks[0], dict.fromkeys(_widths(ma, ks[0]), 0))
        gemm_twin(mb, df, ks[0], dict.fromkeys(_widths(mb, ks[0]), 0))
    except ModelError as exc:
        raise QueryError(f"dataflow {df.text()} does not apply: {exc}") from None
    res = ChainResult("unknown", (ma.id, mb.id), df.text(), ma.formats, k_max=k_max, k_first=ks[0])
    res.notes += [f"{m.id}: UNVALIDATED ({m.source.split(';')[0]})" for m in (ma, mb) if not m.validated]

    def done(r: ChainResult) -> ChainResult:
        r.seconds = round(time.perf_counter() - t0, 3)
        return r

    if same_parameters(ma, mb):
        res.status, res.how = "proved", "identical parameters"
        res.reason = ("every field that enters Model.build is equal: one function, for every K, every input and "
                      "every dataflow")
        return done(res)
    why = covers(ma, mb, df)
    status, obs = "n/a", []
    if not why:
        status, obs, why = prove(ma, mb, solver, timeout, twin_seconds)
    res.obligations = obs
    if status == "proved":
        res.status, res.how = "proved", "induction"
        res.reason = ("the chains agree for every length and every start, so the GEMMs agree under every "
                      "dataflow the models take" + ("" if block_max(ma) == block_max(mb) else
                                                    " whose chunks do not depend on the block"))
        return done(res)
    if status == "refuted":
        ob = obs[-1]
        res.step_witness = {"obligation": ob.name, "k": ob.k} | ob.vector
    res.how = "search" if status == "n/a" else f"induction {status}, then search"
    if why:
        res.notes.append(f"no proof by induction: {why}")
    return done(_search(res, ma, mb, df, ks, solver, timeout, twin_seconds))


def _search(res: ChainResult, ma: Model, mb: Model, df: Dataflow, ks: list[int], solver: str, timeout: float,
            twin_seconds: float) -> ChainResult:
    """The smallest K at which the GEMMs differ: the twin up the admitted K, then the solvers below."""
    found = None
    for K in ks:
        tt = time.perf_counter()
        vals = twin_at(ma, mb, df, K, twin_seconds)
        res.checked.append((K, "differ" if vals else "none found", "twin", round(time.perf_counter() - tt, 3)))
        if vals is not None:
            found = (K, vals, "twin")
            break
    below = [K for K in ks if found is None or K < found[0]]
    unknown = []
    if solver != "twin":
        for K in below:
            tt = time.perf_counter()
            st, who, cached, vals, why = solve_at(ma, mb, df, K, solver, timeout)
            res.checked.append((K, {"unsat": "equal", "sat": "differ"}.get(st, "unknown"), cached or who,
                                round(time.perf_counter() - tt, 3)))
            if st == "sat":
                found = (K, vals, who)
                break
            if st == "unknown":        # the first K the solvers do not settle ends the search below
                unknown = [k for k in below if k >= K]
                break
    if found is None:
        res.status = "unknown"
        proved = [c[0] for c in res.checked if c[1] == "equal"]
        res.reason = (f"no difference found for K <= {ks[-1]} by the twin"
                      + (f"; proved equal for K in {_ranges(proved)}" if proved else "")
                      + (f"; K = {unknown[0]}: solver timeout, larger K not asked" if unknown else ""))
        return res
    K, vals, who = found
    confirm(ma, mb, df, K, vals, who)
    vals = simplify(ma, mb, df, K, vals)
    da, db = confirm(ma, mb, df, K, vals, who)
    res.status, res.k, res.smallest = "refuted", K, not unknown
    E = "int32" if ma.op in INT_OPS else _epilogue(ma, df)
    res.witness = {"K": K, "a": [vals[f"a{i}"] for i in range(K)], "b": [vals[f"b{i}"] for i in range(K)],
                   "c": vals["c"], "call": ALPHA_BETA if ma.op not in INT_OPS else "C in the s32 accumulator",
                   "found_by": who, "d": [da, db],
                   "out_fmt": ma.out_fmt if ma.op in INT_OPS else output_format(ma, df), "epilogue_fmt": E}
    if unknown:
        res.reason = f"K in {_ranges(unknown)} below it not settled (solver timeout at K = {unknown[0]})"
    return res


def _ranges(ks: list[int]) -> str:
    out, i = [], 0
    while i < len(ks):
        j = i
        while j + 1 < len(ks) and ks[j + 1] == ks[j] + 1:
            j += 1
        out.append(f"{ks[i]}" if i == j else f"{ks[i]}..{ks[j]}")
        i = j + 1
    return ", ".join(out)


__all__ = ["ChainResult", "Obligation", "chain_equal", "obligations", "prove", "element_term", "gemm_twin",
           "first_step_model", "later_step_model", "twin_at", "solve_at", "block_max", "K_MAX_LIMIT"]
