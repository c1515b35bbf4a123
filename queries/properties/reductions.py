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

import numpy as np

from smtmodel.bv import NUMPY
from smtmodel.bv.canonical_backend import CanonicalBackend, CanonicalFormula
from smtmodel.formats import get_format
from smtmodel.fp import decode, mul_exact
from smtmodel.fp.classify import is_special
from smtmodel.fp.exact import ieee_sum
from smtmodel.fp.rounding import MODES
from smtmodel.model import Model

MONOTONE_MODES = tuple(rm for rm in ("RNE", "RNA", "RZ", "RU", "RD") if rm in MODES)
"""The core's IEEE rounding modes: each maps a larger exact value to a result no smaller (IEEE
754-2019 §4.3)."""

SAMPLES = 512
"""Random finite cases on which the twin compares a unit with a correctly rounded sum before a
solver is asked to prove them equal."""


def _inputs(m: Model, k: int, B):
    fa, fb = m.operand_fmts
    a = [B.var(f"a{i}", get_format(fa).width) for i in range(k)]
    b = [B.var(f"b{i}", get_format(fb).width) for i in range(k)]
    return a, b, B.var("c", get_format(m.c_fmt).width)


def _summands(m: Model, a, b, c) -> list:
    """The exact products a_i*b_i and c: the same summands as the properties'
    (:func:`queries.properties.predicates.product`)."""
    fa, fb = m.operand_fmts
    return [mul_exact(decode(x, fa), decode(y, fb)) for x, y in zip(a, b)] + [decode(c, m.c_fmt)]


def _reference(m: Model, terms: list, rm: str, flush: bool):
    """The core's correctly rounded sum of ``terms``."""
    return ieee_sum(terms, m.out_fmt, rm, flush_output=flush)


def _finite(m: Model, a, b, c):
    fa, fb = m.operand_fmts
    return [~is_special(x, fa) for x in a] + [~is_special(y, fb) for y in b] + [~is_special(c, m.c_fmt)]


def _random_finite(fmt: str, shape, g) -> np.ndarray:
    """Random patterns of ``fmt``, a quarter with a zero exponent field (zeros, subnormals), the
    specials replaced by zero."""
    f = get_format(fmt)
    x = g.integers(0, 1 << f.width, shape, dtype=np.uint64) if f.width < 64 else \
        g.integers(0, 1 << 63, shape, dtype=np.uint64) * np.uint64(2) + g.integers(0, 2, shape, dtype=np.uint64)
    low = np.uint64((1 << (f.mbits + f.shift)) - 1) | (np.uint64(1 << (f.width - 1)) if f.signed else np.uint64(0))
    x = np.where(g.random(shape) < 0.25, x & low, x)
    special = np.asarray(is_special(NUMPY.input(x, f.width), f).v, dtype=bool)
    return np.where(special, np.uint64(0), x)


class _Samples:
    """Random finite cases and the unit's outputs on them (the twin), to compare with each
    candidate sum: first on a few cases, then on all."""

    def __init__(self, m: Model, k: int):
        g = np.random.default_rng(11)
        fa, fb = m.operand_fmts
        self.m, self.k = m, k
        self.A, self.B = _random_finite(fa, (SAMPLES, k), g), _random_finite(fb, (SAMPLES, k), g)
        self.C = _random_finite(m.c_fmt, SAMPLES, g)
        self._d, self._terms = {}, {}

    def agree(self, rm: str, flush: bool, rows: int) -> bool:
        """Whether the unit and the candidate sum agree on the first ``rows`` cases."""
        m, k = self.m, self.k
        if rows not in self._d:
            self._d[rows] = m.evaluate(self.A[:rows], self.B[:rows], self.C[:rows], backend="numpy")
            fa, fb = m.operand_fmts
            a = [NUMPY.input(self.A[:rows, i], get_format(fa).width) for i in range(k)]
            b = [NUMPY.input(self.B[:rows, i], get_format(fb).width) for i in range(k)]
            self._terms[rows] = _summands(m, a, b, NUMPY.input(self.C[:rows], get_format(m.c_fmt).width))
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


def correctly_rounded_sum(m: Model, k: int, seconds: float = 10.0, theorem: str = MONOTONE) -> str | None:
    """The argument that ``m`` (unscaled, k products per case) computes the correctly rounded sum of
    its exact products a_i*b_i and c on every finite input, with the rounding named and who showed
    it, then ``theorem`` (:data:`MONOTONE`, :data:`SCALING`); None where it does not, or where that
    is not shown within ``seconds`` of solver time."""
    found = _recognise(m, k, seconds)
    if found is None:
        return None
    rm, flush, how = found
    return _argument(m, k, rm, flush, how) + "; " + theorem.format(rm=rm)


def _recognise(m: Model, k: int, seconds: float):
    """(rounding, flushed, how it was shown) of the correctly rounded sum ``m`` computes, or None.
    Cheap before expensive: the candidates (rounding mode, flushing) that the twin does not tell
    apart from the unit on 16 random finite cases are compared term by term, then on
    :data:`SAMPLES` cases, and only then given to a solver."""
    if m.scale_fmt or m.out_fmt is None:
        return None
    samples = _Samples(m, k)
    try:
        cands = [(rm, flush) for rm in MONOTONE_MODES for flush in (False, True) if samples.agree(rm, flush, 16)]
    except (ValueError, TypeError, NotImplementedError):
        return None
    if not cands:
        return None
    B = CanonicalBackend()
    a, b, c = _inputs(m, k, B)
    d, terms = m.build(a, b, c, None, None), _summands(m, a, b, c)
    for rm, flush in cands:
        if _reference(m, terms, rm, flush).v == d.v:
            return rm, flush, "identical terms in the canonical reading"
    if seconds <= 0:
        return None
    from smtmodel.solve import default_pool, run_engines
    for rm, flush in cands:
        if not samples.agree(rm, flush, SAMPLES):
            continue
        canon = CanonicalFormula(_equal_on_finite(m, k, rm, flush))
        if canon.false:
            return rm, flush, "equal on finite inputs by rewriting"
        winner, r, _notes = run_engines(canon.on, default_pool(), seconds)
        if winner and r.status == "unsat":
            return rm, flush, SOLVED + winner
        return None
    return None


SOLVED = "equal on finite inputs: proved by "
"""How a premise shown by a solver is named (the solver's name follows)."""


def premise(m: Model, k: int, seconds: float = 10.0):
    """(statement, canonical formula) of the premise of a reduction that a solver proved: "finite
    inputs and the unit's output differs from the correctly rounded sum", unsatisfiable; None where
    the unit is not recognised, or is by identical terms (a premise with nothing to prove). A
    certificate of this formula (:func:`queries.properties.certify.certify`, ``premise=True``) is
    the certificate of the proof by reduction."""
    found = _recognise(m, k, seconds)
    if found is None or not found[2].startswith(SOLVED):
        return None
    rm, flush, _how = found
    return (f"{m.id} at k={k} equals the correctly rounded sum of its exact products and c ({rm}"
            f"{', subnormal results flushed' if flush else ''}) on every finite input",
            CanonicalFormula(_equal_on_finite(m, k, rm, flush)))


def _equal_on_finite(m: Model, k: int, rm: str, flush: bool):
    """The solvers' builder of "finite inputs and the unit's output differs from the correctly
    rounded sum" (unsat: equal on every finite input)."""
    def build(Bk):
        a, b, c = _inputs(m, k, Bk)
        d = m.build(a, b, c, None, None)
        names = [f"a{i}" for i in range(k)] + [f"b{i}" for i in range(k)] + ["c"]
        return (_finite(m, a, b, c) + [d.ne(_reference(m, _summands(m, a, b, c), rm, flush))],
                dict(zip(names, a + b + [c])))
    return build


__all__ = ["MONOTONE", "MONOTONE_MODES", "SCALING", "correctly_rounded_sum", "premise"]
