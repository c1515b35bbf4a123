"""Recording reading of the semantic core: every primitive becomes a node of a shared DAG.

Tracing :meth:`smtmodel.model.Model.build` once with symbolic inputs gives the model as a list of
core primitives (the same ones the NumPy, z3 and cvc5 readings implement), which the native
reading (:mod:`smtmodel.native`) compiles. While recording, the backend

* hash-conses: a primitive applied to the same operands twice is one node (common
  subexpressions shared);
* folds constants: a primitive whose operands are all constants is evaluated by the NumPy
  reading (the reference), so no primitive is written a second time;
* applies identities that need no evaluation (``x & 0``, ``x + 0``, ``ite(true, a, b)``,
  ``ite(c, a, a)``, ``not not x``, ...).

A value of this backend is an ``int``: the node's index in :attr:`TraceBackend.nodes`. Nodes
are created in dependency order, so the list is already topologically sorted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .core import BV, Backend, clz_search
from .numpy_backend import NUMPY


@dataclass(frozen=True)
class Node:
    """One primitive: ``op`` applied to earlier nodes ``args``; ``w`` its width (0: Boolean);
    ``p`` the static parameters (a constant's value, extract bounds, extension amount, an
    input's name)."""

    op: str
    args: tuple
    w: int
    p: tuple = ()


BINARY = ("add", "sub", "mul", "and_", "or_", "xor", "shl", "lshr", "ashr")
COMPARE = ("eq", "ult", "ule", "slt", "sle")
BOOLEAN = ("b_and", "b_or", "b_xor")

CLZ_WIDTH = 64
"""Widest value whose leading-zero count is recorded as one ``clz`` node (a vector ``lzcnt``
where the CPU has one); wider counts are recorded as the core's binary search."""


class TraceBackend(Backend):
    """Records primitives into :attr:`nodes`; see the module docstring."""

    name = "trace"

    def __init__(self):
        self.nodes: list[Node] = []
        self._index: dict[Node, int] = {}

    # ---- node bookkeeping ------------------------------------------------------------------
    def _node(self, op, args, w, p=()) -> int:
        n = Node(op, tuple(args), w, tuple(p))
        i = self._index.get(n)
        if i is None:
            i = self._index[n] = len(self.nodes)
            self.nodes.append(n)
        return i

    def _const_of(self, i):
        n = self.nodes[i]
        return n.p[0] if n.op in ("const", "bconst") else None

    def _all_const(self, *ids):
        vals = [self._const_of(i) for i in ids]
        return None if any(v is None for v in vals) else vals

    def _fold(self, prim: str, args, statics, w_out: int):
        """Evaluate a primitive on constants with the NumPy reading (the reference)."""
        vals = self._all_const(*args)
        if vals is None:
            return None
        ws = [self.nodes[i].w for i in args]
        np_args = [NUMPY.bool_const(v) if wi == 0 else NUMPY.bv_const(v, wi) for v, wi in zip(vals, ws)]
        r = getattr(NUMPY, prim)(*np_args, *statics)
        r = np.asarray(r)
        if w_out == 0:
            return self.bool_const(bool(r))
        return self.bv_const(int(r.item()), w_out)

    # ---- inputs and constants ----------------------------------------------------------------
    def input(self, name: str, width: int) -> BV:
        """A named input of ``width`` bits (e.g. ``("a", 3)``: a[3])."""
        return BV(self, self._node("input", (), width, (name,)), width)

    def bv_const(self, value: int, width: int):
        return self._node("const", (), width, (int(value) & ((1 << width) - 1),))

    def bool_const(self, value: bool):
        return self._node("bconst", (), 0, (bool(value),))

    # ---- primitives ----------------------------------------------------------------------------
    def _bin(self, op, a, b, w):
        r = self._fold(op, (a, b), (w,), w)
        if r is not None:
            return r
        ca, cb = self._const_of(a), self._const_of(b)
        ones = (1 << w) - 1
        if op in ("add", "or_", "xor") and (ca == 0 or cb == 0):
            return b if ca == 0 else a
        if op in ("sub", "shl", "lshr", "ashr") and cb == 0:
            return a
        if op in ("and_", "mul") and (ca == 0 or cb == 0):
            return self.bv_const(0, w)
        if op == "and_" and (ca == ones or cb == ones):
            return b if ca == ones else a
        if op == "mul" and (ca == 1 or cb == 1):
            return b if ca == 1 else a
        if op in ("and_", "or_") and a == b:
            return a
        if op in ("xor", "sub") and a == b:
            return self.bv_const(0, w)
        if op in ("add", "mul", "and_", "or_", "xor") and a > b:
            a, b = b, a                                    # commutative: one canonical order
        return self._node(op, (a, b), w)

    def add(self, a, b, w): return self._bin("add", a, b, w)
    def sub(self, a, b, w): return self._bin("sub", a, b, w)
    def mul(self, a, b, w): return self._bin("mul", a, b, w)
    def and_(self, a, b, w): return self._bin("and_", a, b, w)
    def or_(self, a, b, w): return self._bin("or_", a, b, w)
    def xor(self, a, b, w): return self._bin("xor", a, b, w)
    def shl(self, a, n, w): return self._bin("shl", a, n, w)
    def lshr(self, a, n, w): return self._bin("lshr", a, n, w)
    def ashr(self, a, n, w): return self._bin("ashr", a, n, w)

    def not_(self, a, w):
        r = self._fold("not_", (a,), (w,), w)
        if r is not None:
            return r
        n = self.nodes[a]
        return n.args[0] if n.op == "not_" else self._node("not_", (a,), w)

    def neg(self, a, w):
        r = self._fold("neg", (a,), (w,), w)
        return r if r is not None else self._node("neg", (a,), w)

    def _cmp(self, op, a, b, w):
        r = self._fold(op, (a, b), (w,), 0)
        if r is not None:
            return r
        if a == b:
            return self.bool_const(op in ("eq", "ule", "sle"))
        if op == "eq" and a > b:
            a, b = b, a
        return self._node(op, (a, b), 0)

    def eq(self, a, b, w): return self._cmp("eq", a, b, w)
    def ult(self, a, b, w): return self._cmp("ult", a, b, w)
    def ule(self, a, b, w): return self._cmp("ule", a, b, w)
    def slt(self, a, b, w): return self._cmp("slt", a, b, w)
    def sle(self, a, b, w): return self._cmp("sle", a, b, w)

    def extract(self, a, hi, lo, w):
        r = self._fold("extract", (a,), (hi, lo, w), hi - lo + 1)
        if r is not None:
            return r
        n = self.nodes[a]
        if lo == 0 and hi == w - 1:
            return a
        if n.op == "extract":                               # extract of extract: one extract
            return self.extract(n.args[0], n.p[1] + hi, n.p[1] + lo, self.nodes[n.args[0]].w)
        if n.op == "zext" and lo == 0 and hi < self.nodes[n.args[0]].w:
            return self.extract(n.args[0], hi, lo, self.nodes[n.args[0]].w)
        return self._node("extract", (a,), hi - lo + 1, (hi, lo))

    def concat(self, a, b, wa, wb):
        r = self._fold("concat", (a, b), (wa, wb), wa + wb)
        if r is not None:
            return r
        if self._const_of(a) == 0:
            return self.zext(b, wa, wb)
        return self._node("concat", (a, b), wa + wb)

    def zext(self, a, n, w):
        r = self._fold("zext", (a,), (n, w), w + n)
        if r is not None:
            return r
        if n == 0:
            return a
        return self._node("zext", (a,), w + n, (n,))

    def sext(self, a, n, w):
        r = self._fold("sext", (a,), (n, w), w + n)
        if r is not None:
            return r
        if n == 0:
            return a
        return self._node("sext", (a,), w + n, (n,))

    def ite(self, c, a, b):
        cc = self._const_of(c)
        if cc is not None:
            return a if cc else b
        if a == b:
            return a
        n = self.nodes[c]
        if n.op == "b_not":                                 # ite(~c, a, b) = ite(c, b, a)
            return self.ite(n.args[0], b, a)
        w = self.nodes[a].w
        if w == 0:                                          # Boolean ite with constant arms
            ca, cb = self._const_of(a), self._const_of(b)
            if ca is True and cb is False:
                return c
            if ca is False and cb is True:
                return self.b_not(c)
        return self._node("ite", (c, a, b), w)

    # ---- Booleans ----------------------------------------------------------------------------
    def _bool(self, op, a, b):
        r = self._fold(op, (a, b), (), 0)
        if r is not None:
            return r
        ca, cb = self._const_of(a), self._const_of(b)
        if op == "b_and":
            if ca is False or cb is False:
                return self.bool_const(False)
            if ca is True or cb is True:
                return b if ca is True else a
            if a == b:
                return a
        if op == "b_or":
            if ca is True or cb is True:
                return self.bool_const(True)
            if ca is False or cb is False:
                return b if ca is False else a
            if a == b:
                return a
        if op == "b_xor":
            if ca is False or cb is False:
                return b if ca is False else a
            if a == b:
                return self.bool_const(False)
        if a > b:
            a, b = b, a
        return self._node(op, (a, b), 0)

    def clz(self, a, w):
        """Count leading zeros as one node (the compiled reading's ``ctlz``) up to
        :data:`CLZ_WIDTH` bits; wider, the core's binary search is recorded. A constant is
        folded by that definition on the NumPy reading."""
        c = self._const_of(a)
        if c is not None:
            return self.bv_const(int(np.asarray(clz_search(NUMPY.const(c, w)).v).item()), w)
        return self._node("clz", (a,), w) if w <= CLZ_WIDTH else None

    def b_and(self, a, b): return self._bool("b_and", a, b)
    def b_or(self, a, b): return self._bool("b_or", a, b)
    def b_xor(self, a, b): return self._bool("b_xor", a, b)

    def b_not(self, a):
        r = self._fold("b_not", (a,), (), 0)
        if r is not None:
            return r
        n = self.nodes[a]
        return n.args[0] if n.op == "b_not" else self._node("b_not", (a,), 0)

    # ---- inspection ------------------------------------------------------------------------------
    def live(self, roots) -> list[int]:
        """Indices of the nodes the ``roots`` depend on, in topological order."""
        seen = set()
        stack = list(roots)
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            stack.extend(self.nodes[i].args)
        return sorted(seen)

    def stats(self, roots) -> dict:
        """Live node count per primitive and the widest width, for reports."""
        live = self.live(roots)
        ops: dict[str, int] = {}
        for i in live:
            ops[self.nodes[i].op] = ops.get(self.nodes[i].op, 0) + 1
        return {"nodes": len(live), "ops": ops, "max_width": max(self.nodes[i].w for i in live)}

