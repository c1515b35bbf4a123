"""Symbolic reading for cvc5 through its base Python API (``cvc5.TermManager``)."""

from __future__ import annotations

import itertools

import cvc5
from cvc5 import Kind

from .core import BV, Backend, Bool

_fresh = itertools.count()


class Cvc5Backend(Backend):
    name = "cvc5"

    def __init__(self, tm: "cvc5.TermManager | None" = None):
        self.tm = tm or cvc5.TermManager()
        self._sorts: dict[int, object] = {}

    def sort(self, width: int):
        s = self._sorts.get(width)
        if s is None:
            s = self._sorts[width] = self.tm.mkBitVectorSort(width)
        return s

    def bv_const(self, value, width):
        return self.tm.mkBitVector(width, str(value), 10)

    def bool_const(self, value):
        return self.tm.mkBoolean(bool(value))

    def var(self, name: str, width: int) -> BV:
        return BV(self, self.tm.mkConst(self.sort(width), name), width)

    def bool_var(self, name: str) -> Bool:
        return Bool(self, self.tm.mkConst(self.tm.getBooleanSort(), name))

    def fresh(self, prefix: str, width: int) -> BV:
        return self.var(f"{prefix}!{next(_fresh)}", width)

    def _t(self, kind, *args):
        return self.tm.mkTerm(kind, *args)

    def add(self, a, b, w): return self._t(Kind.BITVECTOR_ADD, a, b)
    def sub(self, a, b, w): return self._t(Kind.BITVECTOR_SUB, a, b)
    def mul(self, a, b, w): return self._t(Kind.BITVECTOR_MULT, a, b)
    def and_(self, a, b, w): return self._t(Kind.BITVECTOR_AND, a, b)
    def or_(self, a, b, w): return self._t(Kind.BITVECTOR_OR, a, b)
    def xor(self, a, b, w): return self._t(Kind.BITVECTOR_XOR, a, b)
    def not_(self, a, w): return self._t(Kind.BITVECTOR_NOT, a)
    def neg(self, a, w): return self._t(Kind.BITVECTOR_NEG, a)
    def shl(self, a, n, w): return self._t(Kind.BITVECTOR_SHL, a, n)
    def lshr(self, a, n, w): return self._t(Kind.BITVECTOR_LSHR, a, n)
    def ashr(self, a, n, w): return self._t(Kind.BITVECTOR_ASHR, a, n)
    def eq(self, a, b, w): return self._t(Kind.EQUAL, a, b)
    def ult(self, a, b, w): return self._t(Kind.BITVECTOR_ULT, a, b)
    def ule(self, a, b, w): return self._t(Kind.BITVECTOR_ULE, a, b)
    def slt(self, a, b, w): return self._t(Kind.BITVECTOR_SLT, a, b)
    def sle(self, a, b, w): return self._t(Kind.BITVECTOR_SLE, a, b)

    def extract(self, a, hi, lo, w):
        return self.tm.mkTerm(self.tm.mkOp(Kind.BITVECTOR_EXTRACT, hi, lo), a)

    def concat(self, a, b, wa, wb): return self._t(Kind.BITVECTOR_CONCAT, a, b)

    def zext(self, a, n, w):
        return self.tm.mkTerm(self.tm.mkOp(Kind.BITVECTOR_ZERO_EXTEND, n), a)

    def sext(self, a, n, w):
        return self.tm.mkTerm(self.tm.mkOp(Kind.BITVECTOR_SIGN_EXTEND, n), a)

    def ite(self, c, a, b): return self._t(Kind.ITE, c, a, b)
    def b_and(self, a, b): return self._t(Kind.AND, a, b)
    def b_or(self, a, b): return self._t(Kind.OR, a, b)
    def b_xor(self, a, b): return self._t(Kind.XOR, a, b)
    def b_not(self, a): return self._t(Kind.NOT, a)
