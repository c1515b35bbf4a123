"""MFMA register layouts: which lane and register slot of a 64-lane wavefront holds which element.

Every single-block MFMA (``blocks = 1``) of CDNA1-3 distributes its operands the same way; the
layouts below transcribe the AMD CDNA3 ISA reference guide, chapter 7 "Matrix Arithmetic
Instructions" (the same tables as the CDNA1/CDNA2 guides and the AMD Matrix Instruction
Calculator, ``--detail-instruction`` / ``--register-layout``), as also shown with indexing code by
AMD's "Matrix Core programming on CDNA3/CDNA4" article (Figures 5-7: ``32x32x2f32``,
``16x16x16f16``, ``32x32x16_fp8_fp8``) and the ROCm lab-notes article "AMD matrix cores" (CDNA2,
``v_mfma_f64_16x16x4f64``); Composable Kernel's ``mfma_type`` tables (``xdlops_gemm.hpp``:
k-reduction input blocks of ``k_per_blk``, output ``group_size`` 4 for fp32, 1 for fp64) agree.
The xf32 instructions follow the same rule (two fp32 per lane) with no independent code example.

With ``kl = K * M / 64`` input elements per lane (1, 2, 4 or 8):

- A (M x K): lane ``l``, slot ``i`` holds ``A[l % M][kl * (l // M) + i]``;
- B (K x N): lane ``l``, slot ``i`` holds ``B[kl * (l // N) + i][l % N]``;
- C/D (M x N): lanes ``l`` hold column ``l % N``; the rows go in groups of ``g`` consecutive rows
  per lane block ``l // N`` (``g = 4`` for 32-bit results, ``g = 1`` for fp64): slot ``i`` holds
  ``D[(i // g) * (64 // N) * g + (l // N) * g + i % g][l % N]``. So ``32x32`` fp32 (16 registers):
  ``D[8 * (i // 4) + 4 * (l // 32) + i % 4][l % 32]``; ``16x16`` fp32: ``D[4 * (l // 16) + i][l % 16]``;
  ``16x16x4f64``: ``D[4 * i + l // 16][l % 16]`` (the lab-notes kernel: "consecutive registers skip
  4 rows, groups of 16 lanes cover consecutive rows"; Composable Kernel's ``group_size`` 1 vs 4).

Slot ``i`` of a packed operand (``<4 x half>``, ``<2 x i16>``, ``<2 x float>``, the ``i64`` of eight
FP8 values) lives in 32-bit register ``i // per_reg`` at bit ``(i % per_reg) * elem_bits``, as in
:class:`hw_runner.layouts.Fragment` (little-endian vector elements).

gfx950 (CDNA4) keeps the rule for its new MFMAs: the double-K f16/bf16 instructions (8 elements
per lane), and the ``f8f6f4`` ones, 16x16x128 and 32x32x64, with 32 elements per lane -- lane
``l`` holds row ``l % M`` and the K group ``l // M`` of 32 consecutive elements ("lane_row =
lane_id % 16, lane_k_group = lane_id / 16" for 16x16x128: Modular's CDNA4 block-scaled MFMA
documentation, ``BlockScaledMmaOp``, after the CDNA4 ISA guide). The 32 elements of a lane are
packed densely, element ``i`` at bit ``i * bits`` of the lane's registers taken as one
little-endian integer (8, 6 and 4 registers for FP8, FP6, FP4: :class:`DenseFragment`; for FP8
and FP4 this is the ordinary packing). So one lane's elements are exactly one block of 32: its
E8M0 scale (:func:`scale_lanes`) sits in byte 0 of one 32-bit register per lane (``op_sel`` 0).
"""

from __future__ import annotations

import numpy as np

from ..layouts import Fragment

WAVE = 64
SOURCE = "AMD CDNA3 ISA guide ch. 7 / AMD Matrix Instruction Calculator (single-block MFMA)"
SCALE_BLOCK = 32
"""Elements per E8M0 scale of the gfx950 scaled MFMAs (one scale per lane)."""
ELEMENT_BITS_F8F6F4 = {"fp8e4m3": 8, "fp8e5m2": 8, "fp6e2m3": 6, "fp6e3m2": 6, "fp4e2m1": 4}


class DenseFragment(Fragment):
    """A fragment whose slots are packed densely across 32-bit registers: slot ``i`` at bit
    ``i * elem_bits`` of the thread's registers read as one little-endian integer (FP6: 32
    elements in 6 registers, an element may straddle two)."""

    @property
    def n_regs(self) -> int:
        return self.slots * self.elem_bits // 32

    def to_regs(self, elems: np.ndarray) -> np.ndarray:
        e = elems.astype(np.uint64) & np.uint64((1 << self.elem_bits) - 1)
        bits = ((e[..., :, None] >> np.arange(self.elem_bits, dtype=np.uint64)) & np.uint64(1)).astype(np.uint8)
        bits = bits.reshape(*elems.shape[:-1], self.n_regs, 32)
        return np.bitwise_or.reduce(bits.astype(np.uint64) << np.arange(32, dtype=np.uint64), axis=-1).astype(np.uint32)

    def from_regs(self, regs: np.ndarray) -> np.ndarray:
        r = regs.astype(np.uint64)
        bits = ((r[..., :, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1))
        bits = bits.reshape(*regs.shape[:-1], self.slots, self.elem_bits)
        return np.bitwise_or.reduce(bits << np.arange(self.elem_bits, dtype=np.uint64), axis=-1)


def _build(operand, rows, cols, elem_bits, slots, fn) -> Fragment:
    idx = np.zeros((WAVE, slots, 3), dtype=np.int64)
    for lane in range(WAVE):
        for i in range(slots):
            idx[lane, i] = (0, *fn(lane, i))
    cls = DenseFragment if elem_bits < 32 and 32 % elem_bits else Fragment
    return cls(operand, rows, cols, 1, elem_bits, idx, SOURCE)


def scale_lanes(m: int, k: int, scales: np.ndarray) -> np.ndarray:
    """E8M0 scales of one operand ``(N, M_or_N, K // 32)`` (row-major A, or B's columns) -> the
    per-lane scale registers ``(N, 64)`` uint32: lane ``l`` takes the scale of row/column
    ``l % m`` and K group ``l // m`` (its 32 elements), in byte 0."""
    lanes = np.arange(WAVE)
    if m * k // WAVE != SCALE_BLOCK:
        raise ValueError(f"no per-lane scale layout for {m}x{m}x{k}")
    return scales[:, lanes % m, lanes // m].astype(np.uint32) & np.uint32(0xFF)


def mfma_fragments(m: int, n: int, k: int, in_bits: int, acc_bits: int) -> tuple[Fragment, Fragment, Fragment]:
    """(A, B, C/D) fragments of a single-block ``m x n x k`` MFMA (``m == n`` in 16, 32)."""
    if m != n or m not in (16, 32) or (m * k) % WAVE:
        raise ValueError(f"no single-block MFMA layout for {m}x{n}x{k}")
    kl = m * k // WAVE
    a = _build("A", m, k, in_bits, kl, lambda l, i: (l % m, kl * (l // m) + i))
    b = _build("B", k, n, in_bits, kl, lambda l, i: (kl * (l // n) + i, l % n))
    g, blocks = (1 if acc_bits == 64 else 4), WAVE // n
    c = _build("C", m, n, acc_bits, m * n // WAVE,
               lambda l, i: ((i // g) * blocks * g + (l // n) * g + i % g, l % n))
    return a, b, c


def scale_buffers(spec, sa: np.ndarray, sb: np.ndarray, k: int, replicate: bool = False):
    """SA, SB buffers ``(N, chunks, 64)`` uint32 of a scaled MFMA kernel for cases whose
    ``(N, k / 32)`` E8M0 scales are ``sa``, ``sb``: the case's row of A (column of B) takes
    them, chunk by chunk (all rows and columns with ``replicate``); every other lane, and the
    blocks of a chunk's +0 padding, take 0x7F (2^0), which leaves a +0 element +0."""
    m, _, kk = spec.shape
    n, ch = sa.shape[0], -(-k // kk)
    per = kk // SCALE_BLOCK
    out = []
    for s in (sa, sb):
        full = np.full((n, ch * per), 0x7F, dtype=np.uint64)
        full[:, :s.shape[1]] = s
        grid = np.full((n, ch, m, per), 0x7F, dtype=np.uint64)
        blocks = full.reshape(n, ch, per)
        if replicate:
            grid[:] = blocks[:, :, None, :]
        else:
            grid[:, :, 0, :] = blocks
        out.append(scale_lanes(m, kk, grid.reshape(n * ch, m, per)).reshape(n, ch, WAVE))
    return tuple(out)
