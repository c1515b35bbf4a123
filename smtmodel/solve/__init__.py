"""One solver layer: the engines (z3, cvc5, Bitwuzla, the twin search), the portfolio that races
them, and the FP-theory proof sessions.

``solve(build, solver, timeout)`` is the one entry for a QF_BV query: ``build(B)`` returns
``(assertions, variables)`` over the backend ``B`` the engine wants, so the same builder runs on
any engine or on a portfolio of them.
"""

from __future__ import annotations

from .bitwuzla import BitwuzlaEngine, bitwuzla_check, smt2_text
from .cvc5 import Cvc5Engine
from .fp import FP_SESSIONS, Session, make_session
from .portfolio import Portfolio, available_solvers, default_pool, default_stagger, race, race_notes, run_engines, solve_task
from .result import SOLVERS, Engine, Result, Sat, SolverError, Unknown, Unsat
from .twin import TwinSearch
from .z3 import Z3Engine

ENGINES = {"z3": Z3Engine, "cvc5": Cvc5Engine, "bitwuzla": BitwuzlaEngine}
SOLVER_CHOICES = SOLVERS + ("portfolio",)


def make_engine(name: str) -> Engine:
    """An engine by name; ``portfolio`` races the engines that share the z3 backend's terms."""
    if name == "portfolio":
        return Portfolio()
    if name not in ENGINES:
        raise SolverError(f"unknown solver {name!r}; one of {', '.join(SOLVER_CHOICES)}")
    return ENGINES[name]()


def solve(build, solver: str = "z3", timeout: float = 60, pool: tuple | None = None,
          stagger: float | None = None) -> Result:
    """Decide the assertions ``build(B)`` returns with one engine or a ``portfolio``."""
    if solver == "portfolio":
        return Portfolio(pool, stagger).solve(build, timeout)
    eng = make_engine(solver)
    assertions, variables = build(eng.B)
    return eng.check(assertions, variables, timeout)


__all__ = ["race_notes", "SOLVERS", "SOLVER_CHOICES", "ENGINES", "Engine", "Result", "Sat", "Unsat", "Unknown", "SolverError",
           "Z3Engine", "Cvc5Engine", "BitwuzlaEngine", "TwinSearch", "Portfolio", "make_engine", "solve",
           "race", "solve_task", "run_engines", "default_pool", "default_stagger", "available_solvers", "smt2_text", "bitwuzla_check",
           "make_session", "Session", "FP_SESSIONS"]
