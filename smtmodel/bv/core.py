"""The bitvector expression interface every operation is written in, exactly once.

A :class:`BV` is a fixed-width bitvector and a :class:`Bool` a predicate, both wrapping a value
of some backend. The backend decides the reading:

* :class:`~smtmodel.bv.numpy_backend.NumpyBackend` — concrete, vectorised over a batch of cases
  (uint64 lanes up to 64 bits, exact Python integers above);
* :class:`~smtmodel.bv.z3_backend.Z3Backend` and :class:`~smtmodel.bv.cvc5_backend.Cvc5Backend`
  — symbolic terms for the solvers (SMT-LIB2 text comes from either).

Backends implement a handful of primitives (``const add sub mul and or xor not neg shl lshr ashr
eq ult ule slt sle extract concat zext sext ite`` and Boolean connectives). Everything above that
(count-leading-zeros, min/max, abs, clamped shifts) is written here in terms of the primitives, so
all readings share one definition. One of them, :func:`clz`, a backend may also read as a
primitive of its own (:meth:`Backend.clz`: the compiled reading's LLVM ``ctlz``, one vector
instruction); the definition here is the reference it is tested equal to, and the reading of
every backend that has none.

Semantics are SMT-LIB's ``QF_BV``: arithmetic is modulo 2^width, shifts by an amount >= width give
0 (or all sign bits for ``ashr``), and shift amounts are unsigned values of the same width.
"""

from __future__ import annotations

from typing import Union

IntLike = Union[int, "BV"]


class Backend:
    """The primitives every reading implements (NumPy arrays, z3 or cvc5 terms, a traced DAG):
    raw values in, raw values out, SMT-LIB QF_BV semantics (``w``: the operands' width; shifts by
    >= w give 0, or all sign bits for ``ashr``). :class:`BV` and :class:`Bool` wrap them; the
    operations of the project are written once over those wrappers."""

    name = "abstract"

    def _missing(self, *args):
        raise NotImplementedError(f"backend {self.name} lacks this primitive")

    # constants
    def bv_const(self, value: int, width: int): return self._missing()
    def bool_const(self, value: bool): return self._missing()
    # arithmetic and bitwise (a, b: w bits -> w bits), modulo 2^w
    def add(self, a, b, w): return self._missing()
    def sub(self, a, b, w): return self._missing()
    def mul(self, a, b, w): return self._missing()
    def and_(self, a, b, w): return self._missing()
    def or_(self, a, b, w): return self._missing()
    def xor(self, a, b, w): return self._missing()
    def not_(self, a, w): return self._missing()
    def neg(self, a, w): return self._missing()
    # shifts by an unsigned w-bit amount n
    def shl(self, a, n, w): return self._missing()
    def lshr(self, a, n, w): return self._missing()
    def ashr(self, a, n, w): return self._missing()
    # comparisons -> Boolean
    def eq(self, a, b, w): return self._missing()
    def ult(self, a, b, w): return self._missing()
    def ule(self, a, b, w): return self._missing()
    def slt(self, a, b, w): return self._missing()
    def sle(self, a, b, w): return self._missing()
    # structure
    def extract(self, a, hi, lo, w): return self._missing()
    def concat(self, a, b, wa, wb): return self._missing()
    def zext(self, a, n, w): return self._missing()
    def sext(self, a, n, w): return self._missing()
    def ite(self, c, a, b): return self._missing()
    # Booleans
    def b_and(self, a, b): return self._missing()
    def b_or(self, a, b): return self._missing()
    def b_xor(self, a, b): return self._missing()
    def b_not(self, a): return self._missing()
    # count leading zeros (``w`` for 0), w bits -> w bits: optional; None = no reading of its
    # own, the core's definition (:func:`clz`, a binary search over the primitives) is used
    def clz(self, a, w): return None

    # ---- constructors returning wrapped values -------------------------------------------
    def const(self, value: int, width: int) -> "BV":
        return BV(self, self.bv_const(int(value) & ((1 << width) - 1), width), width)

    def true(self) -> "Bool":
        return Bool(self, self.bool_const(True))

    def false(self) -> "Bool":
        return Bool(self, self.bool_const(False))

    def boolean(self, value: bool) -> "Bool":
        return Bool(self, self.bool_const(bool(value)))


class Bool:
    """A predicate of some backend; combine with ``& | ~ ^``."""

    __slots__ = ("B", "v")

    def __init__(self, B: Backend, v):
        self.B, self.v = B, v

    def _other(self, o) -> "Bool":
        return o if isinstance(o, Bool) else self.B.boolean(o)

    def __and__(self, o):
        return Bool(self.B, self.B.b_and(self.v, self._other(o).v))

    __rand__ = __and__

    def __or__(self, o):
        return Bool(self.B, self.B.b_or(self.v, self._other(o).v))

    __ror__ = __or__

    def __xor__(self, o):
        return Bool(self.B, self.B.b_xor(self.v, self._other(o).v))

    def __invert__(self):
        return Bool(self.B, self.B.b_not(self.v))

    def __bool__(self):
        raise TypeError("a Bool of the semantic core has no Python truth value; use ite()")

    def ite(self, then, other):
        """``then`` where this holds, else ``other`` (BVs of one width, or Bools)."""
        return ite(self, then, other)

    def as_bv(self, width: int = 1) -> "BV":
        return ite(self, self.B.const(1, width), self.B.const(0, width))


class BV:
    """A bitvector of fixed ``width``; operators are modulo 2^width, comparisons are named."""

    __slots__ = ("B", "v", "w")

    def __init__(self, B: Backend, v, w: int):
        self.B, self.v, self.w = B, v, w

    # ---- helpers ---------------------------------------------------------------------------
    def _other(self, o: IntLike) -> "BV":
        if isinstance(o, BV):
            if o.w != self.w:
                raise ValueError(f"width mismatch: {self.w} vs {o.w}")
            return o
        return self.B.const(o, self.w)

    def _bin(self, op: str, o: IntLike) -> "BV":
        return BV(self.B, getattr(self.B, op)(self.v, self._other(o).v, self.w), self.w)

    def _cmp(self, op: str, o: IntLike) -> Bool:
        return Bool(self.B, getattr(self.B, op)(self.v, self._other(o).v, self.w))

    # ---- arithmetic / logic ------------------------------------------------------------------
    def __add__(self, o): return self._bin("add", o)
    def __radd__(self, o): return self._bin("add", o)
    def __sub__(self, o): return self._bin("sub", o)
    def __rsub__(self, o): return self._other(o)._bin("sub", self)
    def __mul__(self, o): return self._bin("mul", o)
    def __rmul__(self, o): return self._bin("mul", o)
    def __and__(self, o): return self._bin("and_", o)
    def __rand__(self, o): return self._bin("and_", o)
    def __or__(self, o): return self._bin("or_", o)
    def __ror__(self, o): return self._bin("or_", o)
    def __xor__(self, o): return self._bin("xor", o)
    def __rxor__(self, o): return self._bin("xor", o)
    def __invert__(self): return BV(self.B, self.B.not_(self.v, self.w), self.w)
    def __neg__(self): return BV(self.B, self.B.neg(self.v, self.w), self.w)

    def __lshift__(self, n: IntLike) -> "BV":
        """Shift left by a constant or a variable amount (an unsigned BV of this width)."""
        if isinstance(n, int):
            if n >= self.w:
                return self.B.const(0, self.w)
            return self._bin("shl", n) if n else self
        return self._bin("shl", n)

    def lshr(self, n: IntLike) -> "BV":
        if isinstance(n, int):
            if n >= self.w:
                return self.B.const(0, self.w)
            return self._bin("lshr", n) if n else self
        return self._bin("lshr", n)

    def ashr(self, n: IntLike) -> "BV":
        if isinstance(n, int):
            n = min(n, self.w - 1)
            return self._bin("ashr", n) if n else self
        return self._bin("ashr", n)

    __rshift__ = lshr

    # ---- comparisons -----------------------------------------------------------------------
    def eq(self, o): return self._cmp("eq", o)
    def ne(self, o): return ~self._cmp("eq", o)
    def ult(self, o): return self._cmp("ult", o)
    def ule(self, o): return self._cmp("ule", o)
    def ugt(self, o): return ~self._cmp("ule", o)
    def uge(self, o): return ~self._cmp("ult", o)
    def slt(self, o): return self._cmp("slt", o)
    def sle(self, o): return self._cmp("sle", o)
    def sgt(self, o): return ~self._cmp("sle", o)
    def sge(self, o): return ~self._cmp("slt", o)

    # ---- structure -------------------------------------------------------------------------
    def extract(self, hi: int, lo: int) -> "BV":
        if not 0 <= lo <= hi < self.w:
            raise ValueError(f"extract [{hi}:{lo}] out of a {self.w}-bit vector")
        if lo == 0 and hi == self.w - 1:
            return self
        return BV(self.B, self.B.extract(self.v, hi, lo, self.w), hi - lo + 1)

    def bit(self, i: int) -> Bool:
        return self.extract(i, i).eq(1)

    def msb(self) -> Bool:
        return self.bit(self.w - 1)

    def concat(self, low: "BV") -> "BV":
        """This vector above ``low``."""
        return BV(self.B, self.B.concat(self.v, low.v, self.w, low.w), self.w + low.w)

    def zext(self, n: int) -> "BV":
        return BV(self.B, self.B.zext(self.v, n, self.w), self.w + n) if n else self

    def sext(self, n: int) -> "BV":
        return BV(self.B, self.B.sext(self.v, n, self.w), self.w + n) if n else self

    def uresize(self, w: int) -> "BV":
        """Zero-extend or keep the low ``w`` bits."""
        return self.zext(w - self.w) if w >= self.w else self.extract(w - 1, 0)

    def sresize(self, w: int) -> "BV":
        """Sign-extend or keep the low ``w`` bits."""
        return self.sext(w - self.w) if w >= self.w else self.extract(w - 1, 0)

    def is_zero(self) -> Bool:
        return self.eq(0)

    def __repr__(self):
        return f"BV<{self.B.name},{self.w}>"


# ---- derived operations, written once ------------------------------------------------------

def ite(c: Bool, a, b):
    """If-then-else over BVs (equal widths) or Bools; ints are taken at the other's width."""
    B = c.B
    if isinstance(a, Bool) or isinstance(b, Bool):
        a = a if isinstance(a, Bool) else B.boolean(a)
        b = b if isinstance(b, Bool) else B.boolean(b)
        return Bool(B, B.ite(c.v, a.v, b.v))
    if isinstance(a, int) and isinstance(b, int):
        raise TypeError("ite of two ints needs a width: wrap one with B.const")
    if isinstance(a, int):
        a = b._other(a)
    if isinstance(b, int):
        b = a._other(b)
    if a.w != b.w:
        raise ValueError(f"ite width mismatch: {a.w} vs {b.w}")
    return BV(B, B.ite(c.v, a.v, b.v), a.w)


def all_of(bools) -> Bool:
    bools = list(bools)
    out = bools[0]
    for b in bools[1:]:
        out = out & b
    return out


def any_of(bools) -> Bool:
    bools = list(bools)
    out = bools[0]
    for b in bools[1:]:
        out = out | b
    return out


def umax(a: BV, b: BV) -> BV:
    return ite(a.ult(b), b, a)


def umin(a: BV, b: BV) -> BV:
    return ite(a.ult(b), a, b)


def smax(a: BV, b: BV) -> BV:
    return ite(a.slt(b), b, a)


def smin(a: BV, b: BV) -> BV:
    return ite(a.slt(b), a, b)


def balanced(f, xs):
    """``f`` (an associative operation of two values) over a non-empty list, as a balanced tree
    (shallow for solvers)."""
    xs = list(xs)
    while len(xs) > 1:
        xs = [f(xs[i], xs[i + 1]) if i + 1 < len(xs) else xs[i] for i in range(0, len(xs), 2)]
    return xs[0]


def smax_all(xs) -> BV:
    """Signed maximum of a non-empty list, as a balanced tree (shallow for solvers)."""
    return balanced(smax, xs)


def sum_all(xs) -> BV:
    """Sum of a non-empty list of equal-width BVs, as a balanced tree (modulo 2^width)."""
    return balanced(lambda x, y: x + y, xs)


def abs_signed(x: BV) -> tuple[Bool, BV]:
    """(sign, magnitude) of a two's-complement value; the magnitude is unsigned, same width."""
    neg = x.msb()
    return neg, ite(neg, -x, x)


def clz(x: BV) -> BV:
    """Number of leading zero bits (``width`` for zero), same width as ``x``: the backend's own
    reading of the primitive where it has one (:meth:`Backend.clz`), else :func:`clz_search`."""
    r = x.B.clz(x.v, x.w)
    return clz_search(x) if r is None else BV(x.B, r, x.w)


def clz_search(x: BV) -> BV:
    """Number of leading zero bits (``width`` for zero), same width as ``x``, by binary search over
    the primitives: the definition every reading of :func:`clz` is tested equal to."""
    w = x.w
    n = x.B.const(0, w)
    y = x
    s = 1
    while s * 2 < w:
        s *= 2
    while s >= 1:
        if s < w:
            hi = y.lshr(w - s)           # top s bits
            z = hi.eq(0)
            n = ite(z, n + s, n)
            y = ite(z, y << s, y)
        s //= 2
    return ite(x.eq(0), x.B.const(w, w) if w > 1 else x.B.const(1, 1), n)


def clamp_shift(amount: BV, limit: int, width: int) -> BV:
    """An unsigned shift amount (given in any width) clamped to ``limit`` and sized to ``width``.

    Negative amounts (as signed values) clamp to 0. ``limit`` must fit ``width`` bits.
    """
    if limit >= (1 << width):
        raise ValueError(f"shift limit {limit} does not fit {width} bits")
    lim = amount.B.const(limit, amount.w) if limit < (1 << (amount.w - 1)) else None
    a = ite(amount.slt(0), amount.B.const(0, amount.w), amount)
    if lim is not None:
        a = ite(a.sgt(lim), lim, a)
    return a.uresize(width) if a.w <= width else a.extract(width - 1, 0)


def lshr_sticky(x: BV, amount: BV) -> tuple[BV, Bool]:
    """``x >> amount`` and whether any 1 bit was shifted out (amount unsigned, same width)."""
    shifted = x.lshr(amount)
    return shifted, x.ne(shifted << amount)
