"""Canonical reading of the semantic core: a term is read up to the algebra of its primitives.

:class:`CanonicalBackend` records the core's primitives as :class:`~smtmodel.bv.trace_backend.TraceBackend`
does (shared nodes, constants folded by the NumPy reading, the trace's identities) and in addition
writes every term in a normal form of identities that hold for all inputs in SMT-LIB ``QF_BV``:

* ``add mul and or xor`` (modulo 2^w) and the Boolean ``and or xor`` are associative and
  commutative: a nest of one of them is one node over the sorted multiset of its operands, its
  constants combined into one;
* ``ite(x <s 0, -x, x)`` is |x| (modulo 2^w, so |-x| = |x| for every x, the most negative
  included); ``-(-x) = x``, ``-x + -y = -(x + y)``, ``ite(c, x, -x) = -ite(c, -x, x)``, the low
  bits of -x are -(the low bits of x); a field of a concatenation is a field of its part, and
  adjacent fields of one vector rejoin; ``~x ^ y = ~(x ^ y)``; ``ite(c, k1, k2) = k`` is c, ~c
  or a constant;
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

import operator

from .core import BV, Bool, abs_signed, all_of, balanced, smax, smin, umax, umin
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

_NARY_READ = {"add": operator.add, "mul": operator.mul, "and_": operator.and_, "or_": operator.or_,
              "xor": operator.xor, "b_and": operator.and_, "b_or": operator.or_, "b_xor": operator.xor,
              "smax": smax, "smin": smin, "umax": umax, "umin": umin}
"""How an n-ary node is read back: the core's operation of two values, over a balanced tree."""


class CanonicalBackend(TraceBackend):
    """A :class:`TraceBackend` whose nodes are normal forms (see the module docstring)."""

    name = "canonical"

    def clz(self, a, w):
        """No node of its own: the core's binary search is recorded, so the rules see inside it."""
        return None

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
        if op == "add":
            na, nb = self.nodes[a], self.nodes[b]
            if na.op == "neg" and nb.op == "neg":            # -x + -y = -(x + y)
                return self.neg(self._flat(op, (na.args[0], nb.args[0]), w), w)
        return self._flat(op, (a, b), w) if op in AC else super()._bin(op, a, b, w)

    def _bool(self, op, a, b):
        if op == "b_xor":                                    # ~x ^ y = ~(x ^ y)
            flips = 0
            args = []
            for x in (a, b):
                n = self.nodes[x]
                if n.op == "b_not":
                    flips, x = flips ^ 1, n.args[0]
                args.append(x)
            r = self._flat(op, tuple(args), 0)
            return self.b_not(r) if flips else r
        return self._flat(op, (a, b), 0)

    # ---- negation and bit fields ---------------------------------------------------------------
    def neg(self, a, w):
        n = self.nodes[a]
        if n.op == "neg":                                    # -(-x) = x
            return n.args[0]
        return super().neg(a, w)

    def extract(self, a, hi, lo, w):
        n = self.nodes[a]
        if n.op == "concat":                                 # a field of one part of a concatenation
            wl = self.nodes[n.args[1]].w
            if hi < wl:
                return self.extract(n.args[1], hi, lo, wl)
            if lo >= wl:
                return self.extract(n.args[0], hi - wl, lo - wl, w - wl)
        if n.op == "neg" and lo == 0:                        # the low bits of -x are -(the low bits of x)
            return self.neg(self.extract(n.args[0], hi, 0, w), hi + 1)
        return super().extract(a, hi, lo, w)

    def concat(self, a, b, wa, wb):
        na, nb = self.nodes[a], self.nodes[b]
        if na.op == nb.op == "extract" and na.args == nb.args and na.p[1] == nb.p[0] + 1:
            x = na.args[0]                                   # adjacent fields of one vector rejoined
            return self.extract(x, na.p[0], nb.p[1], self.nodes[x].w)
        return super().concat(a, b, wa, wb)

    def _cmp(self, op, a, b, w):
        if op == "eq":
            for x, k in ((a, b), (b, a)):
                n, kv = self.nodes[x], self._const_of(k)
                if kv is None:
                    continue
                if n.op == "ite" and self._const_of(n.args[1]) is not None and self._const_of(n.args[2]) is not None:
                    t, f = self._const_of(n.args[1]) == kv, self._const_of(n.args[2]) == kv
                    c = n.args[0]                            # ite(c, k1, k2) = k: c, ~c, or a constant
                    return c if t and not f else self.b_not(c) if f and not t else self.bool_const(t)
                if n.op == "not_":                           # ~x = k: x = ~k
                    return self._cmp("eq", n.args[0], self.bv_const(~kv, w), w)
        return super()._cmp(op, a, b, w)

    def _msb_of(self, c):
        """x where the Boolean ``c`` is ``x``'s sign bit (``extract(x, w-1, w-1) = 1``), else None."""
        n = self.nodes[c]
        if n.op != "eq":
            return None
        one, e = (self.nodes[n.args[0]], self.nodes[n.args[1]])
        if not (one.op == "const" and one.p[0] == 1 and e.op == "extract"):
            return None
        x = e.args[0]
        return x if e.p == (self.nodes[x].w - 1, self.nodes[x].w - 1) else None

    # ---- maxima and minima ---------------------------------------------------------------------
    def ite(self, c, a, b):
        na, nb = self.nodes[a], self.nodes[b]
        x = self._msb_of(c)
        if x is not None and x == b and self.neg(b, nb.w) == a:     # ite(x <s 0, -x, x) = |x|
            xn = self.nodes[x]
            return self._node("abs", (xn.args[0] if xn.op == "neg" else x,), nb.w)   # |-x| = |x|
        if na.op != "neg" and nb.op == "neg" and nb.args[0] == a and self._const_of(c) is None:
            return self.neg(self.ite(c, b, a), na.w)         # ite(c, x, -x) = -ite(c, -x, x)
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
    def replay(self, roots, R, inputs=None) -> list:
        """The values of ``roots`` read by backend ``R`` (its raw values): every node applied as
        ``R``'s primitive (an n-ary node, sum or extremum, as the core's operation over a balanced
        tree of its operands, ``abs`` as :func:`~.core.abs_signed`). ``inputs``: ``{name: R value}``; an input not given becomes ``R.var``. The
        solvers read a formula through this: the two copies' shared terms stay shared."""
        inputs = inputs or {}
        vals: dict[int, object] = {}
        for i in self.live(roots):
            n = self.nodes[i]
            if n.op == "input":
                vals[i] = inputs[n.p[0]] if n.p[0] in inputs else R.var(n.p[0], n.w).v
                continue
            if n.op == "const":
                vals[i] = R.bv_const(n.p[0], n.w)
                continue
            if n.op == "bconst":
                vals[i] = R.bool_const(n.p[0])
                continue
            args = [vals[j] for j in n.args]
            aw = self.nodes[n.args[0]].w
            if n.op in _NARY_READ:
                v = balanced(_NARY_READ[n.op], [Bool(R, x) if n.w == 0 else BV(R, x, n.w) for x in args]).v
            elif n.op in ("not_", "neg"):
                v = getattr(R, n.op)(args[0], n.w)
            elif n.op == "abs":          # |x| modulo 2^w
                v = abs_signed(BV(R, args[0], n.w))[1].v
            elif n.op == "b_not":
                v = R.b_not(args[0])
            elif n.op in ("eq", "ult", "ule", "slt", "sle", "sub", "shl", "lshr", "ashr"):
                v = getattr(R, n.op)(args[0], args[1], aw)
            elif n.op == "extract":
                v = R.extract(args[0], n.p[0], n.p[1], aw)
            elif n.op == "concat":
                v = R.concat(args[0], args[1], aw, self.nodes[n.args[1]].w)
            elif n.op in ("zext", "sext"):
                v = getattr(R, n.op)(args[0], n.p[0], aw)
            elif n.op == "ite":
                v = R.ite(*args)
            else:
                raise ValueError(f"canonical reading: no reading of node {n.op}")
            vals[i] = v
        return [vals[r] for r in roots]

    def evaluate(self, roots, inputs: dict) -> list:
        """The values of ``roots`` on NumPy inputs (``{name: uint64 array}``), read by the NumPy
        primitives (:meth:`replay` on the NumPy reading)."""
        vals = {}
        for i in self.live(roots):
            n = self.nodes[i]
            if n.op == "input":
                x = np.asarray(inputs[n.p[0]], dtype=np.uint64)
                vals[n.p[0]] = x & np.uint64((1 << n.w) - 1) if n.w < 64 else x
        return self.replay(roots, NUMPY, vals)

class CanonicalFormula:
    """A query's assertions (``build(B) -> (assertions, variables)``, the solvers' builder) in the
    canonical reading, built once: :attr:`false` where they reduce to false (unsat, proved by
    rewriting), else :meth:`on` gives them to a solver's backend with the terms the copies or
    models compute alike shared."""

    def __init__(self, build):
        self.B = CanonicalBackend()
        terms, self.v = build(self.B)
        self.root = all_of(terms)

    @property
    def false(self) -> bool:
        return self.B.constant(self.root) is False

    def on(self, R):
        """(assertions, variables) on backend ``R``: one assertion, the canonical conjunction."""
        v = {n: R.var(n, x.w) for n, x in self.v.items()}
        (root,) = self.B.replay([self.root.v], R, {n: x.v for n, x in v.items()})
        return [Bool(R, root)], v


__all__ = ["AC", "CanonicalBackend", "CanonicalFormula"]
