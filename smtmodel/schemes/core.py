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

from ..bv import BV, NUMPY, ite
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


def scale_pow2(x: BV, fmt: str, s: "int | BV", rm: str = "RNE", s_range: tuple | None = None) -> BV:
    """fl_fmt(x * 2^s) with rounding ``rm`` (exact unless it under/overflows); ``s`` an int, or a
    signed BV of the exponent width (``EXP_W``) whose values lie in ``s_range`` = (lo, hi)."""
    if isinstance(s, int):
        if s == 0:
            return x
        s_range = (s, s)
    lo, hi = s_range
    v = decode(x, fmt)
    v = FPValue(v.sign, v.exp + s, v.sig, v.frac, v.nan, v.inf, v.zero, v.exp_lo + lo, v.exp_hi + hi)
    return round_value(v, fmt, rm)


def mask32(x: BV, kind: str) -> BV:
    """+0 where fp32 x is NaN (``kind="nan"``, Triton's replaceNansWithZeros) or not finite
    (``"nonfinite"``, XLA's ZeroNaNs: |x| < inf), else x."""
    v = decode(x, F32)
    bad = v.nan if kind == "nan" else (v.nan | v.inf)
    if kind not in ("nan", "nonfinite"):
        raise SchemeError(f"mask kind must be nan or nonfinite, not {kind!r}")
    return ite(bad, x.B.const(0, 32), x)


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
    rms: tuple = ()          # rounding of each piece, overriding rm / lo_rm (XLA: RZ, RZ, RNE)
    residual: str = "unscaled"   # "scaled": the residual is kept times 2^(i scale) (CUTLASS SM100:
                                 # r_(i+1) = fl32(r_i - p_i) * 2^scale), so nothing underflows

    def __post_init__(self):
        p = get_format(self.fmt).precision
        most = -(-get_format(F32).precision // p) + 1
        if not 1 <= self.pieces <= most:
            raise SchemeError(f"a split into {self.pieces} {self.fmt} pieces is out of range: {self.fmt} carries "
                              f"{p} bits, so 1..{most} pieces cover fp32's {get_format(F32).precision}")
        if self.residual not in ("unscaled", "scaled"):
            raise SchemeError(f"split residual must be unscaled or scaled, not {self.residual!r}")
        if self.rms and len(self.rms) != self.pieces:
            raise SchemeError(f"split rms {self.rms} must name one rounding per piece ({self.pieces})")

    def piece_rm(self, i: int) -> str:
        if self.rms:
            return self.rms[i]
        return self.rm if i == 0 else self.lo_rm

    def describe(self) -> str:
        if self.pieces == 1:
            return f"x -> {self.rm}-{self.fmt}(x)"
        s = f" * 2^{self.scale}" if self.scale else ""
        rms = "/".join(self.piece_rm(i) for i in range(self.pieces))
        return (f"x -> {self.pieces} {self.fmt} pieces ({rms}): p0 = {self.piece_rm(0)}-{self.fmt}(x), "
                f"p_i = {self.piece_rm(1)}-{self.fmt}(fl32_{self.sub_rm}(r_i){s})")


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

    ``where="tile"``: the K loop of a tiled GEMM whose accumulator lives in an fp32 register.
    Per tile of ``group`` k-blocks (all of K when None) one tensor-core accumulator starts at +0,
    runs the pairs (``order="pair"``: each pair over the tile's k-blocks, pair after pair -- one
    Triton ``tt.dot`` per pair; ``order="band"``: consecutive pairs of one weight form a band,
    bands in the listed order, inside a band k-block after k-block and pair after pair --
    CUTLASS's SM100 emulated mainloop), and is added into the register with RN on the CUDA
    cores. Pairs may mix weights: where the weight drops from w to w', the accumulator is
    multiplied by 2^(w' - w) inside the tensor core (tcgen05's scale-input-d); the tile's result
    carries its last pair's weight. ``mask`` = (kind, i): before pair i of a tile, an accumulator
    that is NaN (kind "nan", Triton) or not finite (kind "nonfinite", XLA) is replaced by +0.
    """

    pairs: tuple
    where: str = "inside"
    order: str = "kblock"
    group: int | None = None
    mask: tuple | None = None


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
    combine_mask: str | None = None   # "nan" / "nonfinite": before the first pass's result is added
                                  # last, the sum of the others is replaced by +0 where it is NaN / not finite
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
            if sp.residual == "scaled":
                src = rem
            else:
                src = scale_pow2(rem, F32, i * sp.scale, sp.scale_rm) if i else rem
            p = convert(src, F32, sp.fmt, sp.piece_rm(i))
            pieces.append(p)
            if i + 1 < sp.pieces:
                p32 = convert(p, sp.fmt, F32)
                if sp.residual == "scaled":
                    rem = scale_pow2(fp_add(rem, neg32(p32), F32, sp.sub_rm), F32, sp.scale, sp.scale_rm)
                else:
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
            if not self.block:
                d = ops.c()
                for t in range(k):
                    d = ops.fma(t, d)
                return d
            blk = self.kblock(k, m)             # blocked: per k-block an FMA chain from +0, added RN into c
            d = ops.c()
            for s0 in range(0, k, blk):
                p = ops.start(False, 0)
                for t in range(s0, s0 + blk):
                    p = ops.fma(t, p)
                d = ops.add(d, p, self.combine_rm, 0)
            return d
        blk = self.kblock(k, m)
        results = []          # (weight, pass result)
        c_used = False
        for p in self.passes:
            weights = [(i + j) * self.split.scale for i, j in p.pairs]
            if p.where == "tile":
                reg = ops.start(self.c_mode == "register" and not c_used, weights[-1])
                c_used = c_used or self.c_mode == "register"
                tb = dict(self.block_by_arch).get(m.arch if m is not None else "", self.block) or k
                grp = (p.group or max(1, k // tb)) * tb
                if k % grp:
                    raise SchemeError(f"scheme {self.name}: K={k} is not a multiple of the tile of {grp} "
                                      f"({p.group or k // tb} k-blocks of {tb}); a kernel pads K with zeros")
                for s0 in range(0, k, grp):
                    acc, w_acc = self._tile(p, list(range(s0, s0 + grp, tb)), tb, ops)
                    reg = ops.add(reg, acc, self.combine_rm, w_acc)
                results.append((weights[-1], reg))
                continue
            if len(set(weights)) != 1:
                raise SchemeError(f"scheme {self.name}: pass {p.pairs} mixes weights {sorted(set(weights))}")
            wgt = weights[0]
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
        for n, (wgt, r) in enumerate(reversed(results)):
            r = ops.unscale(r, wgt, self.unscale_rm) if wgt else r
            if d is not None and self.combine_mask and n == len(results) - 1:
                d = ops.mask(d, self.combine_mask, 0)
            d = r if d is None else ops.add(r, d, self.combine_rm, 0)
        if self.c_mode == "final" or not c_used:
            d = ops.add(d, ops.c(), self.combine_rm, 0)
        return d

    def _tile(self, p: Pass, blocks: list, blk: int, ops):
        """One tile of a ``where="tile"`` pass (see :class:`Pass`): the tensor-core accumulator
        from +0 through the pairs in the pass's order; returns (accumulator, its weight)."""
        sc = self.split.scale
        if p.order == "pair":
            groups = [[(n, pr)] for n, pr in enumerate(p.pairs)]
        elif p.order == "band":
            groups = []
            for n, pr in enumerate(p.pairs):
                if groups and sum(groups[-1][0][1]) == sum(pr):
                    groups[-1].append((n, pr))
                else:
                    groups.append([(n, pr)])
        else:
            raise SchemeError(f"scheme {self.name}: a tile pass's order must be pair or band, not {p.order!r}")
        if p.mask is not None:
            if p.mask[0] not in ("nan", "nonfinite") or p.mask[1] not in [g[0][0] for g in groups]:
                raise SchemeError(f"scheme {self.name}: mask {p.mask} must be (nan|nonfinite, index of a band's first pair)")
        w_acc = sum(p.pairs[0]) * sc
        acc = ops.start(False, w_acc)
        for g in groups:
            w = sum(g[0][1]) * sc
            if p.mask is not None and g[0][0] == p.mask[1]:
                acc = ops.mask(acc, p.mask[0], w_acc)
            if w != w_acc:
                acc, w_acc = ops.rescale(acc, w_acc, w), w
            for b in blocks:
                for _, (i, j) in g:
                    acc = ops.call([(t, i, j) for t in range(b, b + blk)], acc, w)
        return acc, w_acc

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

    def rescale(self, r: BV, w_from: int, w_to: int) -> BV:
        return scale_pow2(r, F32, w_to - w_from, "RNE")

    def mask(self, r: BV, kind: str, w: int) -> BV:
        return mask32(r, kind)

    def fma(self, t: int, d: BV) -> BV:
        return fma(self.a[t], self.b[t], d, F32)
