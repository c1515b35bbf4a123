"""Solver queries over the model catalog: distinguishing vectors and equivalence proofs.

:func:`distinguish` asks for inputs (a, b, c) on which two models give different output bits;
:func:`equivalent` asks the same question and reads UNSAT as a proof that the models agree on
every input of the query (for the given K and input constraints).

Encoding. Both models are built once over one set of symbolic inputs with the semantic core
(:meth:`smtmodel.model.Model.build`), and the query asserts ``d_A != d_B``; the engines
(:mod:`smtmodel.solve`: z3's bit-blasting tactic, cvc5 with eager bit-blasting, Bitwuzla on the
SMT-LIB2 text) read the same terms. Input constraints (:class:`Constraints`) are written over
the same core operations, so the twin evaluates them too.

Solvers: ``z3``, ``cvc5``, ``bitwuzla`` or ``portfolio`` (the default): the twin search first
(structured probes and random cases evaluated by the twin in batches, milliseconds), then
Bitwuzla and z3 race -- cvc5 too where there are >= 3 CPUs -- in separate processes; the first
definite answer wins; a crash is reported in the result's ``reason``; the per-query timeout
gives an honest ``unknown``.

Every satisfying assignment is re-checked by the twin (:meth:`Model.evaluate`): if the twin
does not reproduce the claim that the outputs differ, :class:`TwinDisagreement` is raised.

The package by job: ``constraints`` (input constraints, simple-mode levels), ``search`` (the
twin: outputs, concrete constraints, probes and twin search), ``reduce`` (simple mode's
reduction), ``api`` (formula, one engine, portfolio, :func:`distinguish`).
"""

from smtmodel.solve import SOLVER_CHOICES, SOLVERS, available_solvers, default_pool, default_stagger

from .api import (TWIN, Formula, Job, QueryResult, Vector, default_k, distinguish, equivalent, input_names,
                  portfolio_pool, query_smt2, resolve, twin_budget)
from .constraints import SIMPLE_LEVELS, Constraints, constraint_terms, level_terms
from .errors import QueryError, TwinDisagreement
from .reduce import reduce_vector
from .search import confirm, probes, twin_constraints_ok, twin_outputs, twin_search

__all__ = ["Constraints", "QueryResult", "Vector", "QueryError", "TwinDisagreement", "distinguish",
           "equivalent", "query_smt2", "reduce_vector", "default_k", "SOLVERS", "SOLVER_CHOICES",
           "available_solvers", "default_pool", "default_stagger", "portfolio_pool", "twin_search", "probes",
           "twin_outputs", "twin_constraints_ok", "confirm", "constraint_terms", "level_terms", "SIMPLE_LEVELS",
           "Formula", "Job", "input_names", "resolve", "twin_budget", "TWIN"]
