"""Proofs by reduction: a unit recognised, by its terms, as an operation whose property is a theorem.

A two-copy formula of a monotone property is out of the solvers' reach for most units (they do
not relate two multipliers, or an exact sum to its rounding; docs/properties.md). Some units,
though, compute exactly what a textbook operation computes: the correctly rounded sum of their
exact products and c (the CDNA1 E-FDPA blocks, the fp32 and fp64 FMA chains; seed 000
Algorithms 3 and 6). :func:`correctly_rounded_sum` shows, on ONE copy, that the unit's output is
the core's correctly rounded sum :func:`smtmodel.fp.exact.ieee_sum` of the property's own
summands for every finite input: the two terms are identical in the canonical reading
(:mod:`smtmodel.bv.canonical_backend`), or, where they differ only in what the unit does with
NaN and infinite operands, a solver proves them equal on finite inputs (cheap before expensive:
the twin compares them on random finite inputs first). The property then follows from two facts
that hold for every input:

* monotonicity (every form): an exact sum grows (weakly) with each of its summands, and every
  IEEE 754-2019 rounding-direction attribute (§4.3) is a monotone function of the exact result,
  overflow to infinity and a flushed subnormal result included;
* scaling: under the property's hypothesis the exact sum and its 2^s multiple are zero or normal
  in the output format, where rounding depends on the significand alone.

The argument's trusted parts: that ``ieee_sum`` rounds correctly (proved equal to the SMT-LIB
floating-point theory's ``fp.fma`` for two terms, tests/test_ieee_proofs.py, and checked against
Fractions rounded independently for more, tests/test_model_ranges.py), and the canonical reading
itself (tests/test_canonical_backend.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smtmodel.bv import NUMPY
from smtmodel.bv.canonical_backend import CanonicalBackend, CanonicalFormula
from smtmodel.formats import get_format
from smtmodel.fp import decode
from smtmodel.fp.exact import ieee_sum
from smtmodel.fp.rounding import MODES
from smtmodel.model import Model
from smtmodel.sampling import finite_raw

from .copies import Copy, copy_of, finite_inputs, summands, variable_names

MONOTONE_MODES = tuple(rm for rm in ("RNE", "RNA", "RZ", "RU", "RD") if rm in MODES)
"""The core's IEEE rounding modes: each maps a larger exact value to a result no smaller (IEEE
754-2019 §4.3)."""

SAMPLES = 512
"""Random finite cases on which the twin compares a unit with a correctly rounded sum before a
solver is asked to prove them equal."""


def _variables(m: Model, k: int, B) -> dict:
    """One copy's inputs as variables of backend ``B`` (a0.., b0.., c; unscaled)."""
    return {n: B.var(n, w) for n, w in variable_names(m, k).items()}


def _terms(m: Model, cp: Copy) -> list:
    """The properties' summands (:func:`.copies.summands`: the exact products a_i*b_i) and c."""
    return summands(m, cp) + [decode(cp.c, m.c_fmt)]


def _reference(m: Model, terms: list, rm: str, flush: bool):
    """The core's correctly rounded sum of ``terms``."""
    return ieee_sum(terms, m.out_fmt, rm, flush_output=flush)


class _Samples:
    """Random finite cases and the unit's outputs on them (the twin), to compare with each
    candidate sum: first on a few cases, then on all."""

    def __init__(self, m: Model, k: int):
        g = np.random.default_rng(11)
        fa, fb = m.operand_fmts
        self.m, self.k = m, k
        self.A = finite_raw(fa, SAMPLES * k, g).reshape(SAMPLES, k)
        self.B = finite_raw(fb, SAMPLES * k, g).reshape(SAMPLES, k)
        self.C = finite_raw(m.c_fmt, SAMPLES, g)
        self._d, self._terms = {}, {}

    def agree(self, rm: str, flush: bool, rows: int) -> bool:
        """Whether the unit and the candidate sum agree on the first ``rows`` cases."""
        m, k = self.m, self.k
        if rows not in self._d:
            self._d[rows] = m.evaluate(self.A[:rows], self.B[:rows], self.C[:rows], backend="numpy")
            fa, fb = m.operand_fmts
            cp = Copy("d", [NUMPY.input(self.A[:rows, i], get_format(fa).width) for i in range(k)],
                      [NUMPY.input(self.B[:rows, i], get_format(fb).width) for i in range(k)],
                      NUMPY.input(self.C[:rows], get_format(m.c_fmt).width))
            self._terms[rows] = _terms(m, cp)
        got = self._d[rows]
        want = _reference(m, self._terms[rows], rm, flush)
        return bool(np.array_equal(np.broadcast_to(np.asarray(want.v, dtype=np.uint64), got.shape), got))


def _argument(m: Model, k: int, rm: str, flush: bool, how: str) -> str:
    what = "exact product a*b" if k == 1 else f"{k} exact products"
    return (f"its output is the correctly rounded sum of the {what} and c ({rm} to {m.out_fmt}"
            f"{', subnormal results flushed' if flush else ''}, one rounding: smtmodel.fp.exact.ieee_sum) for "
            f"every finite input ({how})")


MONOTONE = ("an exact sum grows with each summand and {rm} rounding is monotone (IEEE 754-2019 §4.3)")
"""The theorem that makes a correctly rounded sum monotone in each form of the property."""

SCALING = ("the hypothesis puts the exact sum and its 2^s multiple at zero or in the output format's normal "
           "range (a multiple of 2^emin below the overflow threshold), where {rm} rounding depends on the "
           "significand alone and so commutes with scaling by 2^s (IEEE 754-2019 §4.3)")
"""The theorem that makes a correctly rounded sum scale exactly under ``scaling``'s hypothesis."""


@dataclass(frozen=True)
class Reduction:
    """A proof by reduction: the ``argument`` as printed, and ``premise_by``, the solver that proved
    the premise ("" where it is an identity of terms: nothing to certify)."""

    argument: str
    premise_by: str = ""


@dataclass(frozen=True)
class _Found:
    rm: str
    flush: bool
    how: str
    solver: str = ""


def correctly_rounded_sum(m: Model, k: int, seconds: float = 10.0, theorem: str = MONOTONE) -> Reduction | None:
    """The proof that ``m`` (unscaled, k products per case) computes the correctly rounded sum of
    its exact products a_i*b_i and c on every finite input, with the rounding named and who showed
    it, then ``theorem`` (:data:`MONOTONE`, :data:`SCALING`); None where it does not, or where that
    is not shown within ``seconds`` of solver time."""
    f = _recognise(m, k, seconds)
    if f is None:
        return None
    return Reduction(_argument(m, k, f.rm, f.flush, f.how) + "; " + theorem.format(rm=f.rm), f.solver)


def _recognise(m: Model, k: int, seconds: float) -> _Found | None:
    """The correctly rounded sum ``m`` computes (rounding, flushing, how it was shown), or None.
    Cheap before expensive: the candidates (rounding mode, flushing) that the twin does not tell
    apart from the unit on 16 random finite cases are compared term by term, then on
    :data:`SAMPLES` cases, and only then given to a solver."""
    if m.scale_fmt or m.out_fmt is None:
        return None
    samples = _Samples(m, k)
    cands = [(rm, flush) for rm in MONOTONE_MODES for flush in (False, True) if samples.agree(rm, flush, 16)]
    if not cands:
        return None
    cp = copy_of(_variables(m, k, CanonicalBackend()), m, k, "d")
    d, terms = cp.build(m), _terms(m, cp)
    for rm, flush in cands:
        if _reference(m, terms, rm, flush).v == d.v:
            return _Found(rm, flush, "identical terms in the canonical reading")
    if seconds <= 0:
        return None
    from smtmodel.solve import default_pool, run_engines
    for rm, flush in cands:
        if not samples.agree(rm, flush, SAMPLES):
            continue
        canon = CanonicalFormula(_equal_on_finite(m, k, rm, flush))
        if canon.false:
            return _Found(rm, flush, "equal on finite inputs by rewriting")
        winner, r, _notes = run_engines(canon.on, default_pool(), seconds)
        if winner and r.status == "unsat":
            return _Found(rm, flush, f"equal on finite inputs: proved by {winner}", winner)
        return None
    return None


def premise(m: Model, k: int, seconds: float = 10.0):
    """(statement, canonical formula) of the premise of a reduction that a solver proved: "finite
    inputs and the unit's output differs from the correctly rounded sum", unsatisfiable; None where
    the unit is not recognised, or is by identical terms (a premise with nothing to prove). A
    certificate of this formula (:func:`queries.properties.certify.certify`, ``premise=True``) is
    the certificate of the proof by reduction."""
    f = _recognise(m, k, seconds)
    if f is None or not f.solver:
        return None
    return (f"{m.id} at k={k} equals the correctly rounded sum of its exact products and c ({f.rm}"
            f"{', subnormal results flushed' if f.flush else ''}) on every finite input",
            CanonicalFormula(_equal_on_finite(m, k, f.rm, f.flush)))


def _equal_on_finite(m: Model, k: int, rm: str, flush: bool):
    """The solvers' builder of "finite inputs and the unit's output differs from the correctly
    rounded sum" (unsat: equal on every finite input)."""
    def build(Bk):
        v = _variables(m, k, Bk)
        cp = copy_of(v, m, k, "d")
        return finite_inputs(m, cp) + [cp.build(m).ne(_reference(m, _terms(m, cp), rm, flush))], v
    return build


__all__ = ["MONOTONE", "MONOTONE_MODES", "SCALING", "Reduction", "correctly_rounded_sum", "premise"]
