"""The readings of a GEMM behind one factory (:func:`readings`): the dot products by one file per
backend — :mod:`.dots_native` (compiled), :mod:`.dots_numpy` (the reference), :mod:`.dots_tabulated`
— and the elementwise steps around them (:class:`.elementwise.Elementwise`); all bit-equal."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..model import INT_OPS, Model
from . import dots_native, dots_numpy, dots_tabulated
from .elementwise import Elementwise

BACKENDS = ("auto", "native", "numpy", "tabulated")
"""Readings of a GEMM: ``native`` compiled, ``numpy`` the reference, ``auto`` native where it
compiles, ``tabulated`` the NumPy reading element by element with repeated blocks' steps
tabulated (:mod:`smtmodel.tabulate`: GEMMs of few distinct elements and long chains, e.g.
seed 003 §V's K = 8192); all bit-equal."""



@dataclass(frozen=True)
class Readings:
    """What a call runs: ``dots(m, a, b, c, k0, k1, jobs)`` the model's chains over K[k0:k1] of
    every element (c: the (M, N) start, None: +0); ``ew`` the elementwise steps (None for
    integer models, which have none); ``fused``: a slice's restarted chunks may be added inside
    the compiled GEMM reading's loop."""
    dots: Callable
    ew: Elementwise | None
    fused: bool

    @property
    def name(self) -> str:
        """``compiled``, ``numpy`` or ``tabulated``: the reading of the chains."""
        return {dots_native.dots: "compiled", dots_numpy.dots: "numpy"}.get(self.dots, "tabulated")


def readings(m: Model, backend: str, plan: list, n: int, jobs, native_min: int) -> Readings:
    """The readings of a GEMM of ``n`` elements under ``plan`` (:func:`smtmodel.dataflow.plan.chains`)
    with ``backend`` (:data:`BACKENDS`). ``auto`` runs the compiled reading where the plan's chains
    compile, else NumPy with a :class:`~.dots_native.NativeFallback` warning; ``native_min``:
    elements from which an elementwise step is compiled."""
    if m.op in INT_OPS:                # the chain only: C in the s32 accumulator, no elementwise step
        native = dots_native.available(m, backend, n) and (backend == "native" or dots_native.compiles(m, plan))
        return Readings(dots_native.dots if native else dots_numpy.dots, None, False)
    native = backend != "tabulated" and dots_native.available(m, backend, n)
    if native and backend == "auto" and not dots_native.compiles(m, plan):
        native = False
    if backend == "tabulated":
        # the elementwise steps compiled where llvmlite loads (a chain of 256 restarts is 256
        # one-element additions: ~6 ms each in NumPy, microseconds compiled); narrow steps only
        # (an fp32 FMA epilogue takes LLVM seconds to compile, and runs once)
        from ..native import VECTOR_WIDTH
        ew = Elementwise(dots_native.available(m, "auto", n), jobs, max_width=VECTOR_WIDTH, memo=True,
                         native_min=native_min)
        return Readings(dots_tabulated.dots, ew, False)
    return Readings(dots_native.dots if native else dots_numpy.dots, Elementwise(native, jobs, native_min=native_min),
                    native)
