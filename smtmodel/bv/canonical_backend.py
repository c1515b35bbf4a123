"""Canonical reading of the semantic core: a term is read up to the algebra of its primitives.

:class:`CanonicalBackend` records the core's primitives as :class:`~smtmodel.bv.trace_backend.TraceBackend`
does (shared nodes, constants folded by the NumPy reading, the trace's identities) and in addition
writes every term in a normal form of identities that hold for all inputs in SMT-LIB ``QF_BV``:

* ``add mul and or xor`` (modulo 2^w) and the Boolean ``and or xor`` are associative and
  commutative: a nest of one of them is one node over the sorted multiset of its operands, its
  constants combined into one;
* ``ite(x <s y, y, x)`` is the signed maximum of x and y, ``ite(x <s y, x, y)`` the minimum (the
  same with ``<=`` and with the unsigned comparisons): maxima and minima are associative,
  commutative and idempotent, so a nest of one is one node over the sorted set of its operands.

Two terms that reach the same node are equal for every input: each rewrite replaces a term by
one equal to it in every model of ``QF_BV``. That makes a proof of a relation between two copies
of a model whose inputs are permuted (a fused sum over a block is a sum and a maximum of terms
built alike) instant where a bit-blasting solver must rediscover the algebra. Different nodes
prove nothing: the solvers answer then.

The n-ary nodes are read back by :meth:`CanonicalBackend.evaluate` (the NumPy primitives folded
over the operands), which the tests compare with the NumPy reading of the model.
"""

from __future__ import annotations

import numpy as np

from .numpy_backend import NUMPY
from .trace_backend import TraceBackend

AC = ("add", "mul", "and_", "or_", "xor", "b_and", "b_or", "b_xor")
"""Associative and commutative primitives, flattened into one sorted node per nest."""

EXTREMA = {("slt", False): "smax", ("sle", False): "smax", ("ult", False): "umax", ("ule", False): "umax",
           ("slt", True): "smin", ("sle", True): "smin", ("ult", True): "umin", ("ule", True): "umin"}
"""``ite(x < y, y, x)`` (False: the arms swapped) is a maximum, ``ite(x < y, x, y)`` (True) a minimum."""

_CONST_RULES = {
    "add": lambda w: (None, 0), "mul": lambda w: (0, 1), "and_": lambda w: (0, (1 << w) - 1),
    "or_": lambda w: ((1 << w) - 1, 0), "xor": lambda w: (None, 0),
    "b_and": lambda w: (False, True), "b_or": lambda w: (True, False), "b_xor": lambda w: (None, False),
}
"""(absorbing, neutral) constant of each nest: ``x & 0 = 0``, ``x + 0 = x``; None: none."""

_EXTREMUM_READ = {"smax": ("slt", False), "umax": ("ult", False), "smin": ("slt", True), "umin": ("ult", True)}


class CanonicalBackend(TraceBackend):
    """A :class:`TraceBackend` whose nodes are normal forms (see the module docstring)."""

    name = "canonical"

    def var(self, name: str, width: int):
        return self.input(name, width)

    def constant(self, x):
        """The constant a BV or Bool of this backend reduced to (int or bool), else None."""
        return self._const_of(x.v)

    # ---- associative-commutative nests ---------------------------------------------------------
    def _flat(self, op, args, w):
        """One node ``op`` over the flattened, sorted operands, its constants combined into one
        and the constant's identities applied to the whole nest (``x + 0``, ``x & 0``, ...)."""
        ops = []
        for a in args:
            n = self.nodes[a]
            ops.extend(n.args if n.op == op and n.w == w else (a,))
        consts = [a for a in ops if self._const_of(a) is not None]
        rest = sorted(a for a in ops if self._const_of(a) is None)
        if consts:
            c = consts[0]
            for x in consts[1:]:                # folded by the NumPy reading, as the trace folds
                c = super()._bool(op, c, x) if w == 0 else super()._bin(op, c, x, w)
            if not rest:
                return c
            absorbing, neutral = _CONST_RULES[op](w)
            if self._const_of(c) == absorbing:
                return c
            if self._const_of(c) != neutral:
                rest = sorted(rest + [c])
        if op in ("b_xor", "xor"):            # x ^ x = 0: pairs cancel
            out = []
            for a in rest:
                if out and out[-1] == a:
                    out.pop()
                else:
                    out.append(a)
            if not out:
                return self.bool_const(False) if w == 0 else self.bv_const(0, w)
            rest = out
        if op in ("and_", "or_", "b_and", "b_or"):     # idempotent
            rest = sorted(set(rest))
        if len(rest) == 1:
            return rest[0]
        return self._node(op, tuple(rest), w)

    def _bin(self, op, a, b, w):
        return self._flat(op, (a, b), w) if op in AC else super()._bin(op, a, b, w)

    def _bool(self, op, a, b):
        return self._flat(op, (a, b), 0)

    # ---- maxima and minima ---------------------------------------------------------------------
    def ite(self, c, a, b):
        n = self.nodes[c]
        if n.op in ("slt", "sle", "ult", "ule") and self.nodes[a].w:
            x, y = n.args
            kind = EXTREMA[(n.op, True)] if (a, b) == (x, y) else EXTREMA[(n.op, False)] if (a, b) == (y, x) else None
            if kind is not None:
                ops = []
                for t in (x, y):
                    tn = self.nodes[t]
                    ops.extend(tn.args if tn.op == kind else (t,))
                ops = sorted(set(ops))
                return ops[0] if len(ops) == 1 else self._node(kind, tuple(ops), self.nodes[a].w)
        return super().ite(c, a, b)

    # ---- reading the nodes back ----------------------------------------------------------------
    def evaluate(self, roots, inputs: dict) -> list:
        """The values of ``roots`` on NumPy inputs (``{name: uint64 array}``), every node read by the
        NumPy primitives (an n-ary node folded over its operands, an extremum as the ``ite`` it
        stands for)."""
        vals: dict[int, object] = {}
        for i in self.live(roots):
            n = self.nodes[i]
            if n.op == "input":
                vals[i] = NUMPY.bv_const(0, n.w) if n.p[0] not in inputs else \
                    np.asarray(inputs[n.p[0]], dtype=np.uint64) & np.uint64((1 << n.w) - 1 if n.w < 64 else ~0 & (2**64 - 1))
                continue
            if n.op == "const":
                vals[i] = NUMPY.bv_const(n.p[0], n.w)
                continue
            if n.op == "bconst":
                vals[i] = NUMPY.bool_const(n.p[0])
                continue
            args = [vals[j] for j in n.args]
            aw = self.nodes[n.args[0]].w
            if n.op in AC:
                v = args[0]
                for x in args[1:]:
                    v = getattr(NUMPY, n.op)(v, x) if n.w == 0 else getattr(NUMPY, n.op)(v, x, n.w)
            elif n.op in _EXTREMUM_READ:
                cmp, least = _EXTREMUM_READ[n.op]
                v = args[0]
                for x in args[1:]:
                    lt = getattr(NUMPY, cmp)(v, x, n.w)
                    v = NUMPY.ite(lt, v, x) if least else NUMPY.ite(lt, x, v)
            elif n.op in ("not_", "neg"):
                v = getattr(NUMPY, n.op)(args[0], n.w)
            elif n.op in ("b_not",):
                v = NUMPY.b_not(args[0])
            elif n.op in ("eq", "ult", "ule", "slt", "sle", "sub", "shl", "lshr", "ashr"):
                v = getattr(NUMPY, n.op)(args[0], args[1], aw)
            elif n.op == "extract":
                v = NUMPY.extract(args[0], n.p[0], n.p[1], aw)
            elif n.op == "concat":
                v = NUMPY.concat(args[0], args[1], aw, self.nodes[n.args[1]].w)
            elif n.op in ("zext", "sext"):
                v = getattr(NUMPY, n.op)(args[0], n.p[0], aw)
            elif n.op == "ite":
                v = NUMPY.ite(*args)
            else:
                raise ValueError(f"canonical reading: no NumPy reading of node {n.op}")
            vals[i] = v
        return [vals[r] for r in roots]


__all__ = ["AC", "CanonicalBackend"]
