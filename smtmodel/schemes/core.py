"""Error-compensated GEMM schemes on tensor cores, written once in the semantic core.

A :class:`Scheme` is data: how an fp32 input is split into low-precision pieces (:class:`Split`),
which piece products are computed and where (:class:`Pass`: accumulated *inside* the tensor
core across all of K, or per k-block from zero on the tensor core and added *outside* into an
fp32 register with round-to-nearest on the CUDA cores), where c enters, and how the pass
results are combined. :meth:`Scheme.build` composes catalog models (:meth:`Model.build`) with
IEEE fp32 operations (:func:`smtmodel.fp.fp_add`, :func:`smtmodel.fp.convert`), so one
definition gives both the NumPy twin (:meth:`Scheme.evaluate`) and solver terms.

Inputs: fp32 vectors a, b (K each) and an fp32 scalar c; output: fp32 bits of d ~ c + sum a_k b_k.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..bv import BV, NUMPY
from ..catalog import get_model
from ..formats import get_format
from ..fp import fp_add, convert, decode, fma, round_value
from ..fp.value import FPValue
from ..model import Model, ModelError

F32 = "fp32"
SIGN32 = 0x80000000


class SchemeError(ModelError):
    """Unknown scheme, bad parameter, or a scheme that does not fit its model."""


# ---- elementary fp32 helpers (core, both readings) -----------------------------------------------

def neg32(x: BV) -> BV:
    """-x for fp32 bits (sign flip; exact)."""
    return x ^ SIGN32


def scale_pow2(x: BV, fmt: str, s: int, rm: str = "RNE") -> BV:
    """fl_fmt(x * 2^s) with rounding ``rm`` (exact unless it under/overflows)."""
    if s == 0:
        return x
    v = decode(x, fmt)
    v = FPValue(v.sign, v.exp + s, v.sig, v.frac, v.nan, v.inf, v.zero, v.exp_lo + s, v.exp_hi + s)
    return round_value(v, fmt, rm)


def zero_bits32(B) -> BV:
    return B.const(0, 32)


# ---- data ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Split:
    """How an fp32 value x is split into ``pieces`` values of format ``fmt``.

    piece_0 = conv_rm(x); r_1 = fl32_sub_rm(x - piece_0); piece_1 = conv_lo_rm(fl32_scale_rm(r_1 * 2^scale));
    r_2 = fl32_sub_rm(r_1 - piece_1 * 2^-scale); piece_2 = conv(fl32(r_2 * 2^(2 scale))); ...
    Piece i therefore carries the weight 2^(-i*scale).
    """

    fmt: str = "fp16"
    pieces: int = 2
    rm: str = "RNE"          # rounding of piece_0
    lo_rm: str = "RNE"       # rounding of the later pieces
    scale: int = 0           # O-Y FP16: 11
    sub_rm: str = "RNE"      # fp32 rounding of the residual subtraction
    scale_rm: str = "RNE"    # fp32 rounding of the scaling multiplication

    def describe(self) -> str:
        if self.pieces == 1:
            return f"x -> {self.rm}-{self.fmt}(x)"
        s = f" * 2^{self.scale}" if self.scale else ""
        return (f"x -> {self.pieces} {self.fmt} pieces: hi = {self.rm}-{self.fmt}(x), "
                f"lo = {self.lo_rm}-{self.fmt}(fl32_{self.sub_rm}(x - hi){s})")


@dataclass(frozen=True)
class Pass:
    """One group of piece products.

    ``pairs``: (i, j) = piece i of a times piece j of b; all pairs of a pass must carry the same
    weight (i + j equal when the split is scaled).
    ``where``: ``"inside"`` -- accumulated inside the tensor core across all of K (the model's
    chained FDPAs, one accumulator); ``"outside"`` -- each k-block computed by the tensor core
    from c = +0, its result added into an fp32 register with RN on the CUDA cores.
    ``order`` (inside only): ``"concat"`` -- one chain over the concatenation pair-major
    (pair 0 over all K, then pair 1, ...; Markidis); ``"kblock"`` -- for each k-block, one
    tensor-core call per pair in the listed order (the tcec library's lo pass).
    """

    pairs: tuple
    where: str = "inside"
    order: str = "kblock"


@dataclass(frozen=True)
class Scheme:
    name: str
    description: str
    source: str
    model: str | None             # default catalog model (None: plain fp32 FMA chain)
    split: Split | None = None
    passes: tuple = ()
    block: int | None = None      # k-block of one tensor-core call (tcec: 16 fp16, 8 on sm_75 / tf32)
    block_by_arch: tuple = ()     # ((arch, block), ...) overriding ``block`` for a model's arch
    c_mode: str = "register"      # "register": the first outside register starts at c; "first": c is
                                  # the initial accumulator of the first pass; "final": d = fl32(d' + c)
    combine_rm: str = "RNE"       # rounding of the outside additions (register += block, d = hi + lo)
    unscale_rm: str = "RNE"       # rounding of lo * 2^-(weight) in the combination
    fp32: bool = False            # plain fp32 FMA chain (no tensor core)
    tags: tuple = field(default=(), compare=False)

    # ---- geometry --------------------------------------------------------------------------
    def resolve_model(self, model: "str | Model | None" = None) -> Model | None:
        if self.fp32:
            return None
        m = get_model(model or self.model)
        want = self.split.fmt if self.split else None
        if want and get_format(m.in_fmt).name != get_format(want).name:
            raise SchemeError(f"scheme {self.name} splits into {want} but model {m.id} takes {m.in_fmt}")
        if get_format(m.c_fmt).name != "fp32" or get_format(m.out_fmt).name != "fp32":
            raise SchemeError(f"scheme {self.name} needs a model with fp32 c and d; {m.id} has "
                              f"{m.c_fmt} -> {m.out_fmt}")
        return m

    def kblock(self, k: int, m: Model | None) -> int:
        blk = dict(self.block_by_arch).get(m.arch if m is not None else "", self.block)
        blk = min(blk or k, k)
        if k % blk:
            raise SchemeError(f"scheme {self.name}: K={k} is not a multiple of the k-block {blk}")
        return blk

    def with_params(self, **kw) -> "Scheme":
        return replace(self, **kw)

    # ---- the one semantics ---------------------------------------------------------------
    def split_values(self, x: BV) -> list[BV]:
        """Pieces (raw bits of split.fmt) of fp32 bits x."""
        sp = self.split
        pieces = []
        rem = x
        for i in range(sp.pieces):
            src = scale_pow2(rem, F32, i * sp.scale, sp.scale_rm) if i else rem
            p = convert(src, F32, sp.fmt, sp.rm if i == 0 else sp.lo_rm)
            pieces.append(p)
            if i + 1 < sp.pieces:
                p32 = convert(p, sp.fmt, F32)
                p32 = scale_pow2(p32, F32, -i * sp.scale, sp.scale_rm) if i else p32
                rem = fp_add(rem, neg32(p32), F32, sp.sub_rm)
        return pieces

    def walk(self, k: int, m: Model | None, ops):
        """The scheme's one plan, read by ``ops``: which tensor-core calls run on which piece
        products (``(t, i, j)``: piece i of a_t times piece j of b_t), where c enters, how pass
        results are unscaled and combined (seed 002 §3; tcec's passes). :meth:`build` reads it as
        bits; ``queries.schemes.bound.compose`` reads it as error bounds. ``ops`` provides
        ``c()``, ``start(use_c, w)`` (a pass's initial accumulator), ``call(prods, acc, w)``
        (one ``Model.build``), ``add(x, y, rm, w)`` (an fp32 addition), ``unscale(r, w, rm)``
        (times 2^-w) and, for the plain fp32 scheme, ``fma(t, d)``. Returns d."""
        if self.fp32:
            d = ops.c()
            for t in range(k):
                d = ops.fma(t, d)
            return d
        blk = self.kblock(k, m)
        results = []          # (weight, pass result)
        c_used = False
        for p in self.passes:
            weights = {(i + j) * self.split.scale for i, j in p.pairs}
            if len(weights) != 1:
                raise SchemeError(f"scheme {self.name}: pass {p.pairs} mixes weights {sorted(weights)}")
            wgt = weights.pop()
            if p.where == "outside":
                reg = ops.start(self.c_mode == "register" and not c_used, wgt)
                c_used = c_used or self.c_mode == "register"
                for s in range(0, k, blk):
                    for i, j in p.pairs:
                        r = ops.call([(t, i, j) for t in range(s, s + blk)], ops.start(False, wgt), wgt)
                        reg = ops.add(reg, r, self.combine_rm, wgt)
                results.append((wgt, reg))
            elif p.where == "inside":
                acc = ops.start(self.c_mode == "first" and not c_used, wgt)
                c_used = c_used or self.c_mode == "first"
                if p.order == "concat":
                    acc = ops.call([(t, i, j) for i, j in p.pairs for t in range(k)], acc, wgt)
                elif p.order == "kblock":
                    for s in range(0, k, blk):
                        for i, j in p.pairs:
                            acc = ops.call([(t, i, j) for t in range(s, s + blk)], acc, wgt)
                else:
                    raise SchemeError(f"scheme {self.name}: unknown pass order {p.order!r}")
                results.append((wgt, acc))
            else:
                raise SchemeError(f"scheme {self.name}: pass 'where' must be inside or outside")
        # combine: smallest weight first, d = fl(r_0 + fl(r_1 * 2^-w1 + ...))
        d = None
        for wgt, r in reversed(results):
            r = ops.unscale(r, wgt, self.unscale_rm) if wgt else r
            d = r if d is None else ops.add(r, d, self.combine_rm, 0)
        if self.c_mode == "final" or not c_used:
            d = ops.add(d, ops.c(), self.combine_rm, 0)
        return d

    def build(self, a: list[BV], b: list[BV], c: BV, model: "str | Model | None" = None) -> BV:
        """fp32 bits of the scheme's d for fp32 bits a, b (K each) and c."""
        k = len(a)
        if k == 0 or len(b) != k:
            raise SchemeError(f"scheme {self.name}: a and b need the same positive length")
        m = self.resolve_model(model)
        return self.walk(k, m, _BitsReading(self, m, a, b, c))

    # ---- readings ------------------------------------------------------------------------
    def evaluate(self, a, b, c, model: "str | Model | None" = None) -> np.ndarray:
        """Twin: fp32 output bits (uint64, shape (N,)) for fp32 bits a, b (N, K) and c (N,)."""
        a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
        if a.ndim != 2 or a.shape != b.shape or c.shape != (a.shape[0],):
            raise SchemeError(f"expected a, b of shape (N, K) and c of shape (N,), got {a.shape}, {b.shape}, {c.shape}")
        A = [NUMPY.input(a[:, t], 32) for t in range(a.shape[1])]
        Bv = [NUMPY.input(b[:, t], 32) for t in range(b.shape[1])]
        C = NUMPY.input(c, 32)
        d = self.build(A, Bv, C, model)
        return np.broadcast_to(np.asarray(d.v, dtype=np.uint64), (a.shape[0],)).copy()

    def summary(self, model: "str | Model | None" = None) -> str:
        if self.fp32:
            return "fp32 FMA chain (RNE), c first"
        ps = "; ".join(f"{p.where}{'/' + p.order if p.where == 'inside' else ''}:"
                       f"{','.join(f'{i}{j}' for i, j in p.pairs)}" for p in self.passes)
        return (f"model={model or self.model} block={self.block} c={self.c_mode} split=[{self.split.describe()}] "
                f"passes=[{ps}]")


class _BitsReading:
    """:meth:`Scheme.walk` read as bits: pieces by :meth:`Scheme.split_values`, tensor-core calls
    by :meth:`Model.build`, the CUDA-core steps by the core's IEEE fp32 operations."""

    def __init__(self, scheme: Scheme, m: Model | None, a: list[BV], b: list[BV], c: BV):
        self.m, self.a, self.b, self.cv = m, a, b, c
        self.zero = zero_bits32(c.B)
        if m is not None:
            self.pa = [scheme.split_values(x) for x in a]
            self.pb = [scheme.split_values(y) for y in b]

    def c(self) -> BV:
        return self.cv

    def start(self, use_c: bool, w: int) -> BV:
        return self.cv if use_c else self.zero

    def call(self, prods: list, acc: BV, w: int) -> BV:
        return self.m.build([self.pa[t][i] for t, i, _ in prods], [self.pb[t][j] for t, _, j in prods], acc)

    def add(self, x: BV, y: BV, rm: str, w: int) -> BV:
        return fp_add(x, y, F32, rm)

    def unscale(self, r: BV, w: int, rm: str) -> BV:
        return scale_pow2(r, F32, -w, rm)

    def fma(self, t: int, d: BV) -> BV:
        return fma(self.a[t], self.b[t], d, F32)
