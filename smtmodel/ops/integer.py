"""Integer matrix multiply-accumulate (NVIDIA IMMA, AMD ``v_mfma_i32_*``), one fused block.

d = c + sum_k a_k b_k over integers: every product is exact (an n-bit by n-bit product needs 2n
bits), the block's sum is exact in a register wide enough for it, and only the final 32-bit
result can leave the range of ``.s32``. The PTX ISA (``mma``/``wmma.mma``, integer types,
optional ``.satfinite``) gives two behaviours there:

* wrap-around (no ``.satfinite``): the result modulo 2^32, read as two's complement;
* ``.satfinite``: the result clamped to [MIN_INT32, MAX_INT32].

Chained blocks (K above one instruction's K) feed the 32-bit result back as the next block's c,
so with wrap-around the chain equals the whole sum modulo 2^32, and with saturation each
instruction clamps its own partial sum (a chain can saturate and come back in range).
"""

from __future__ import annotations

from ..bv import BV, sum_all

ACC = 32
"""Accumulator width (``.s32``)."""


def sum_width(n_in: int, k: int) -> int:
    """Bits that hold c (32) plus k products of two n-bit integers exactly, signed."""
    return max(ACC, 2 * n_in + 1) + max(1, k).bit_length() + 1


def widen(x: BV, signed: bool, w: int) -> BV:
    """An n-bit integer pattern as a ``w``-bit two's-complement integer."""
    return x.sext(w - x.w) if signed else x.zext(w - x.w)


def imma_block(a: list[BV], b: list[BV], c: BV, a_signed: bool, b_signed: bool,
               saturate: bool) -> BV:
    """One instruction: the 32-bit d of c + sum a_k b_k, exact inside, wrapped or saturated."""
    if c.w != ACC:
        raise ValueError(f"imma: c must be {ACC} bits, got {c.w}")
    w = sum_width(max(a[0].w, b[0].w), len(a))
    terms = [widen(x, a_signed, w) * widen(y, b_signed, w) for x, y in zip(a, b)]
    s = sum_all([c.sext(w - ACC)] + terms)
    if not saturate:
        return s.extract(ACC - 1, 0)
    hi = (1 << (ACC - 1)) - 1
    big = s.sgt(hi)
    small = s.slt(s.B.const(-(1 << (ACC - 1)), w))
    d = s.extract(ACC - 1, 0)
    return big.ite(d.B.const(hi, ACC), small.ite(d.B.const(1 << (ACC - 1), ACC), d))
