"""Properties of one unit, proved or refuted: "will my bits change?"

A property is a statement about ONE model, checked on two or more copies of that model's
semantics (:meth:`smtmodel.model.Model.build`, never a second implementation): monotonicity in
the summands (seed 003 §I-A, after Mikaitis), invariance under permutations within a block and
across chained blocks, sign symmetry, power-of-two scaling away from overflow and underflow, and
zero padding. :mod:`.defs` states them, :mod:`.predicates` holds the exact comparisons they use,
:mod:`.check` checks one: the twin search first, the solvers (through the proof cache) for what
it cannot settle.
"""

from .check import CHOICES, PropertyResult, Witness, check_property, formula, smt2, twin_eval, twin_search
from .defs import PROPERTIES, NotApplicable, Property, get_property, instruction_k

__all__ = ["CHOICES", "PROPERTIES", "NotApplicable", "Property", "PropertyResult", "Witness", "check_property",
           "formula", "get_property", "instruction_k", "smt2", "twin_eval", "twin_search"]
