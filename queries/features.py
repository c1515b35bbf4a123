"""Named feature queries: each a pair of hypotheses from the seeds, asked as a solver query.

A feature turns a base model (``--model``, default per feature) into two hypotheses A (the
seeds' finding, usually the base itself) and B (the rival) plus a K and input constraints, and
asks :func:`queries.distinguish.distinguish` for a vector that tells them apart (or, for
``carry3-suffices``, proves they are the same). Every hypothesis is a catalog model with
overrides (``L``, ``F``, ``carry``, ``normalize``, ``zero_align``, ``flush_inputs``, ``rho``,
``op``, and the variants ``round_products``, ``flush_outputs``, ``c_entry``/``c_rm`` that
:class:`smtmodel.model.Model` reads in its one ``build``), so its id rebuilds it. Each
feature's doc says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from smtmodel.catalog import get_model
from smtmodel.model import Model
from smtmodel.ops.fdpa import RHO

from .distinguish import Constraints, QueryError, QueryResult, distinguish


# ---- named hypotheses as overrides --------------------------------------------------------------

def _c_late(base: Model) -> str:
    return f"c_entry=end,c_rm={RHO[base.rho].rm if base.rho else 'RNE'}"


HYPOTHESES: dict[str, Callable[[Model], str]] = {
    "round-products": lambda base: "round_products=RNE",
    "flush-outputs": lambda base: "flush_outputs=positive",
    "c-late": _c_late,
}
"""Named variants and their overrides. ``round-products``: each a_i b_i first rounded to the
input format (IEEE RNE multiply), then the base semantics on (p_i, 1.0). ``flush-outputs``:
results that are subnormal (or zero) in the output format become +0. ``c-late``: the products
accumulated from +0 by the base semantics, c added at the end by one IEEE addition in the output
format with the rounding mode of ``rho``."""


def over(base: Model, text: str) -> Model:
    """``base`` with overrides ``text`` added to its own (later keys win)."""
    root, _, own = base.id.partition(":")
    return get_model(f"{root}:{own},{text}" if own else f"{root}:{text}")


def hypothesis(base: Model, hyp: str) -> Model:
    """The named variant ``hyp`` of ``base`` (:data:`HYPOTHESES`), as overrides of its id."""
    if hyp not in HYPOTHESES:
        raise QueryError(f"{base.id}: unknown hypothesis {hyp!r}; one of {', '.join(HYPOTHESES)}")
    return over(base, HYPOTHESES[hyp](base))


# ---- the features -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Feature:
    name: str
    title: str
    source: str
    default_model: str
    expect: str                    # "sat" (the hypotheses differ) or "unsat" (proved equal)
    make: Callable                 # base Model -> (A, B, k or None, Constraints)
    table4: tuple | None = None    # seed 002 Table 4: (z3, cvc5) seconds as printed
    doc: str = ""


FEATURES: dict[str, Feature] = {}


def feature(name, title, source, default_model, expect="sat", table4=None, doc=None):
    """Register ``fn`` as feature ``name``; its doc is ``doc`` if given, else ``fn``'s docstring (so
    one maker can serve several features, each with its own doc)."""
    def deco(fn):
        text = (fn.__doc__ if doc is None else doc) or ""
        FEATURES[name] = Feature(name, title, source, default_model, expect, fn, table4, text.strip())
        return fn
    return deco


@feature("exact-multiplication", "products exact vs products rounded to fp16", "seed 002 §4.1 Property 1",
         "volta-fp16-fp16", table4=("0.55s", "0.027s"))
def _exact_mul(m):
    """A = base (exact products); B = hypothesis round-products (override ``round_products=RNE``:
    each product rounded to the input format first). k=2, c=0, finite inputs."""
    return m, hypothesis(m, "round-products"), 2, Constraints(finite=True, c_zero=True)


@feature("exact-addition-fp16", "fused accumulation vs a chain of fp16 FMAs", "seed 002 §4.1 Property 1",
         "volta-fp16-fp16", table4=("27.59s", "0.12s"))
def _exact_add(m):
    """A = base (fused T-FDPA, rounding to fp16 once); B = override ``op=fma,L=1``: a chain of
    IEEE FMAs, accumulation in the output format. k=2, c=0, finite."""
    return m, over(m, "op=fma,L=1"), 2, Constraints(finite=True, c_zero=True)


@feature("rounding-final-result", "final conversion RNE vs RZ", "seed 002 §4.2 Property 2", "volta-fp16-fp16",
         table4=("0.52s", "0.008s"))
def _round_final(m):
    """A = base (rho=RNE-FP16); B = override ``rho=RZ-FP16``. k=1, c=0 (one product, as the seed)."""
    return m, over(m, "rho=RZ-FP16"), 1, Constraints(c_zero=True, finite=True)


@feature("rounding-accumulator", "truncated alignment vs IEEE round-to-zero", "seed 002 §4.2 Table 3",
         "volta-fp16-fp32", table4=("0.34s", "0.017s"))
def _round_acc(m):
    """A = base (bits shifted out in the alignment are lost); B = override ``F=300`` (every bit
    kept: the exact sum truncated once = IEEE RZ). k=1 (a*b + c, two inputs as the seed)."""
    return m, over(m, "F=300"), 1, Constraints(finite=True)


@feature("accumulation-order", "fused sum vs sequential additions", "seed 002 §4.3 Property 3", "volta-fp16-fp32",
         table4=("9.87s", "0.25s"))
def _order(m):
    """A = base (one fused block); B = override ``L=1`` (products added one by one, each partial
    sum normalised and truncated, i.e. an order). k=3, c=0."""
    return m, over(m, "L=1"), 3, Constraints(finite=True, c_zero=True)


@feature("normalisation", "no intermediate normalisation vs normalised partial sums",
         "seed 002 §4.3 Property 4", "volta-fp16-fp32", table4=("9.63s", "0.25s"))
def _normalisation(m):
    """A = base (terms aligned to the maximum exponent, no normalisation); B = override ``L=1``
    (each partial sum normalised and rounded). k=2, all of a, b, c positive (as Property 4)."""
    return m, over(m, "L=1"), 2, Constraints(finite=True, a_signs="+", b_signs="+", c_sign="+")


@feature("subnormal-inputs", "subnormal fp16 inputs kept vs flushed", "seed 002 §4.4", "volta-fp16-fp32",
         table4=("0.117s", "0.016s"))
def _sub_in(m):
    """A = base (subnormals kept); B = override ``flush_inputs=signed``. k=1, c=0."""
    return m, over(m, "flush_inputs=signed"), 1, Constraints(finite=True, c_zero=True)


@feature("subnormal-outputs", "subnormal fp16 outputs kept vs flushed", "seed 002 §4.4", "volta-fp16-fp16",
         table4=("0.682s", "0.024s"))
def _sub_out(m):
    """A = base; B = hypothesis flush-outputs (override ``flush_outputs=positive``). k=1, c=0,
    normal inputs (normal inputs whose product is subnormal, as the seed asks)."""
    return m, hypothesis(m, "flush-outputs"), 1, Constraints(finite=True, no_subnormals=True, c_zero=True)


@feature("carry3", "2 vs 3 carry-out bits", "seed 002 §4.3", "volta-fp16-fp32", table4=("410.25s", "72.793s"))
def _carry3(m):
    """A = overrides ``normalize=true,carry=3``; B = ``normalize=true,carry=2`` (the catalog's
    volta-fp16-fp32-carry3 / -carry2). k = the block size."""
    return over(m, "normalize=true,carry=3"), over(m, "normalize=true,carry=2"), None, Constraints()


@feature("carry3-suffices", "3 vs 4 carry-out bits (proved equal)", "seed 002 §4.3", "volta-fp16-fp32",
         expect="unsat")
def _carry3_eq(m):
    """A = ``normalize=true,carry=3``; B = ``normalize=true,carry=4``: UNSAT proves a 4th bit is
    never used on a 5-term accumulator."""
    return over(m, "normalize=true,carry=3"), over(m, "normalize=true,carry=4"), None, Constraints()


@feature("carry4-ampere", "3 vs 4 carry-out bits on Ampere", "seed 002 §4.3", "ampere-fp16-fp32",
         table4=("-", "-"))
def _carry4(m):
    """A = ``normalize=true,carry=4``; B = ``normalize=true,carry=3`` (the catalog's
    ampere-fp16-fp32-carry4 / -carry3). k = 8."""
    return over(m, "normalize=true,carry=4"), over(m, "normalize=true,carry=3"), None, Constraints()


@feature("hopper-carry5", "4 vs 5 carry bits on Hopper", "seed 001 §IV-A5", "hopper-fp16-fp32")
def _hopper_carry(m):
    """A = override ``carry=5``; B = ``carry=4`` (the catalog's hopper-fp16-fp32-carry5 / -carry4)."""
    return over(m, "carry=5"), over(m, "carry=4"), None, Constraints()


def _half_blocks(m):
    """A = base (L); B = override ``L=L/2``. k = L."""
    return m, over(m, f"L={max(1, (m.L or 2) // 2)}"), m.L, Constraints()


feature("hopper-16-product-blocks", "16-product blocks vs 8-product blocks", "seed 000 Table 4", "hopper-fp16-fp32",
        doc="A = base (L=16); B = override ``L=8``. k=16.")(_half_blocks)


@feature("alignment-bits-F", "F vs F-1 fraction bits kept in the alignment", "seed 004 §III, seed 003 §III",
         "turing-fp16-fp32")
def _F(m):
    """A = base (F); B = override ``F=F-1``."""
    return m, over(m, f"F={m.F - 1}"), None, Constraints()


feature("block-size-L", "L vs L/2 products per fused block", "seed 004 §III, seed 003 §III",
        "ampere-fp16-fp32")(_half_blocks)


@feature("c-early-vs-late", "c in the first fused block vs c added at the end", "seed 004 §III, seed 003 §III",
         "ampere-fp16-fp32")
def _c_late(m):
    """A = base (c aligned with the first block's products); B = hypothesis c-late (override
    ``c_entry=end,c_rm=<rho's mode>``: products from +0, then one IEEE addition of c)."""
    return m, hypothesis(m, "c-late"), None, Constraints(finite=True)


@feature("rz-vs-truncation", "truncation vs IEEE RZ under effective subtraction", "seed 004 §III, seed 002 §4.2",
         "volta-fp16-fp32")
def _rz(m):
    """A = base (truncation); B = override ``F=300`` (exact alignment, one RZ). k=1, a, b > 0 and
    c < 0: an effective subtraction, where the two differ (seed 002 Table 3)."""
    return m, over(m, "F=300"), 1, Constraints(finite=True, a_signs="+", b_signs="+", c_sign="-")


@feature("product-normalisation", "unnormalised vs normalised products", "seed 002 Algorithm 1, seed 000",
         "volta-fp16-fp32")
def _prodnorm(m):
    """A = base; B = override ``normalize=true`` (the catalog's *-normalized)."""
    return m, over(m, "normalize=true"), None, Constraints()


@feature("zero-product-alignment", "zeros in the alignment maximum vs left out", "seed 000 (simulator), rival",
         "ampere-bf16-fp32")
def _zero_align(m):
    """A = base (its catalog zero rules, docs/zeros.md); B = override ``zero_align=ignore`` (the catalog's *-zeroignore)."""
    return m, over(m, "zero_align=ignore"), None, Constraints()


@feature("ftz", "subnormal inputs kept vs flushed to zero", "seed 002 §4.4, rival", "ampere-bf16-fp32")
def _ftz(m):
    """A = base; B = override ``flush_inputs=signed`` (the catalog's *-ftz)."""
    return m, over(m, "flush_inputs=signed"), None, Constraints()


def feature_pair(name: str, model: str | None = None):
    """(feature, A, B, k, constraints) for a feature name and an optional base model id."""
    if name not in FEATURES:
        raise QueryError(f"unknown feature {name!r}; `mmaprobe features` lists them")
    f = FEATURES[name]
    base = get_model(model or f.default_model)
    try:
        a, b, k, cons = f.make(base)
    except (TypeError, ValueError) as exc:
        raise QueryError(f"feature {name} does not apply to {base.id}: {exc}") from None
    return f, a, b, k, cons


def run_feature(name: str, model: str | None = None, solver: str = "portfolio", timeout: float = 60,
                simple: bool = False, count: int = 1, smt2: str | None = None) -> QueryResult:
    """Run one named feature query."""
    _f, a, b, k, cons = feature_pair(name, model)
    return distinguish(a, b, k=k, solver=solver, timeout=timeout, constraints=cons, simple=simple,
                       count=count, smt2=smt2)
