"""The engine interface: ``check(assertions, variables, timeout) -> Sat | Unsat | Unknown``.

After pysmt's ``solvers/solver.py``: an engine owns the backend of the semantic core on which it
wants its terms built (``engine.B``), so a formula is written once with the core operations and
each engine reads it its own way. ``variables`` maps names to core terms whose values a ``Sat``
answer reports as plain integers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SOLVERS = ("z3", "cvc5", "bitwuzla")
"""The SMT engines (``portfolio.default_pool`` orders them by speed)."""


class SolverError(RuntimeError):
    """A solver was asked something it cannot do (unknown name, missing package)."""


@dataclass
class Result:
    status: str = "unknown"          # "sat", "unsat" or "unknown"
    model: dict | None = None        # name -> int (sat only)
    reason: str = ""                 # why unknown
    seconds: float = 0.0
    solver: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def decided(self) -> bool:
        return self.status in ("sat", "unsat")

    def unpack(self) -> tuple:
        """(status, seconds, reason, model)."""
        return self.status, self.seconds, self.reason, self.model


def Sat(model: dict, seconds: float = 0.0, solver: str = "") -> Result:
    return Result("sat", model, "", seconds, solver)


def Unsat(seconds: float = 0.0, solver: str = "") -> Result:
    return Result("unsat", None, "", seconds, solver)


def Unknown(reason: str, seconds: float = 0.0, solver: str = "") -> Result:
    return Result("unknown", None, reason, seconds, solver)


class Engine:
    """One way of deciding core predicates. Subclasses set ``name`` and ``B``."""

    name = "?"
    B = None

    def check(self, assertions: list, variables: dict, timeout: float) -> Result:
        raise NotImplementedError


def cached_check(solver: str, text, run) -> Result:
    """``run()`` unless the proof cache (:mod:`.cache`) already holds an unsat answer of
    ``solver`` for the formula ``text`` (a string, or a function printing it: called only
    where the cache is on); a fresh unsat answer is stored. An answer from the cache
    is ``Unsat`` with ``extra["cached"]`` saying so (the solver, its version and the date)."""
    import time

    from . import cache
    t0 = time.perf_counter()
    k = cache.key(text() if callable(text) else text, solver) if cache.cache_dir() is not None else None
    entry = cache.lookup(k) if k else None
    if entry is not None:
        res = Unsat(time.perf_counter() - t0, solver)
        res.extra["cached"] = cache.label(entry)
        return res
    res = run()
    if k and res.status == "unsat":
        cache.store(k, solver, res.seconds)
    return res


def ms(timeout: float) -> int:
    """A solver time limit in whole milliseconds (at least 1)."""
    return max(1, int(timeout * 1000))
