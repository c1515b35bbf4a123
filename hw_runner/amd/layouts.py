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
"""

from __future__ import annotations

import numpy as np

from ..layouts import Fragment

WAVE = 64
SOURCE = "AMD CDNA3 ISA guide ch. 7 / AMD Matrix Instruction Calculator (single-block MFMA)"


def _build(operand, rows, cols, elem_bits, slots, fn) -> Fragment:
    idx = np.zeros((WAVE, slots, 3), dtype=np.int64)
    for lane in range(WAVE):
        for i in range(slots):
            idx[lane, i] = (0, *fn(lane, i))
    return Fragment(operand, rows, cols, 1, elem_bits, idx, SOURCE)


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
