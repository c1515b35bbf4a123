"""Symbolic reading for z3: every primitive becomes a z3 bitvector or Boolean term."""

from __future__ import annotations

import itertools

import z3

from .core import BV, Backend, Bool

_fresh = itertools.count()


class Z3Backend(Backend):
    name = "z3"

    def __init__(self, ctx: z3.Context | None = None):
        self.ctx = ctx

    def bv_const(self, value, width):
        return z3.BitVecVal(value, width, self.ctx)

    def bool_const(self, value):
        return z3.BoolVal(value, self.ctx)

    def var(self, name: str, width: int) -> BV:
        return BV(self, z3.BitVec(name, width, self.ctx), width)

    def bool_var(self, name: str) -> Bool:
        return Bool(self, z3.Bool(name, self.ctx))

    def fresh(self, prefix: str, width: int) -> BV:
        return self.var(f"{prefix}!{next(_fresh)}", width)

    def add(self, a, b, w): return a + b
    def sub(self, a, b, w): return a - b
    def mul(self, a, b, w): return a * b
    def and_(self, a, b, w): return a & b
    def or_(self, a, b, w): return a | b
    def xor(self, a, b, w): return a ^ b
    def not_(self, a, w): return ~a
    def neg(self, a, w): return -a
    def shl(self, a, n, w): return a << n
    def lshr(self, a, n, w): return z3.LShR(a, n)
    def ashr(self, a, n, w): return a >> n
    def eq(self, a, b, w): return a == b
    def ult(self, a, b, w): return z3.ULT(a, b)
    def ule(self, a, b, w): return z3.ULE(a, b)
    def slt(self, a, b, w): return a < b
    def sle(self, a, b, w): return a <= b
    def extract(self, a, hi, lo, w): return z3.Extract(hi, lo, a)
    def concat(self, a, b, wa, wb): return z3.Concat(a, b)
    def zext(self, a, n, w): return z3.ZeroExt(n, a)
    def sext(self, a, n, w): return z3.SignExt(n, a)
    def ite(self, c, a, b): return z3.If(c, a, b)
    def b_and(self, a, b): return z3.And(a, b)
    def b_or(self, a, b): return z3.Or(a, b)
    def b_xor(self, a, b): return z3.Xor(a, b)
    def b_not(self, a): return z3.Not(a)
