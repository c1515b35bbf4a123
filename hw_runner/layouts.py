"""Fragment layouts: which lane and register slot holds which matrix element.

Every table here transcribes a PTX ISA section (ISA 8.x/9.x numbering):

- 9.7.14.5.1  mma.m8n8k4, .f16 (Volta): four independent MMAs per warp, one per quad pair
  (lanes 0-3 + 16-19, 4-7 + 20-23, ...); row-major A, column-major B; .f16 and .f32 C/D.
- 9.7.14.5.1  mma.m8n8k4, .f64: one MMA per warp (groupID / threadID_in_group layout).
- 9.7.14.5.6  mma.m16n8k4, .tf32.
- 9.7.14.5.7  mma.m16n8k8, .f16/.bf16 and .tf32 (Figures 71-72 and following).
- 9.7.14.5.8  mma.m16n8k16, .f16/.bf16 (Figure 79 and following).
- 9.7.14.5.4  mma.m8n8k32, .s4/.u4 (eight 4-bit elements per .b32 register).
- 9.7.14.5.10 mma.m16n8k32, .e4m3/.e5m2 and (``.kind::f8f6f4``/``.kind::mxf8f6f4``) .e3m2/.e2m3/.e2m1
  (four 8-bit containers per .b32 register); and .s4/.u4 (eight 4-bit elements per register).
- 9.7.14.5.11 mma.m16n8k64, .s4/.u4 and (``.kind::mxf4``/``.kind::mxf4nvf4``) .e2m1 (eight
  4-bit elements per .b32 register, no padding).
- 9.7.14.5.14 mma, ``.kind::f8f6f4``/``.kind::mxf8f6f4``: a 4-bit or 6-bit element sits in an
  8-bit container, .e2m1 in its central 4 bits (bits 2-5), .e3m2/.e2m3 in its lower 6 bits.
- 9.7.14.3 block scaling (``mma ... .block_scale``): the scale_A / scale_B registers
  (:class:`ScaleFragment`).
- 9.7.15.5.1.1 wgmma.mma_async m64nNk*: accumulator D over a 128-thread warpgroup.
- 9.7.15.5.1.2 wgmma shared-memory operands: K-major, no swizzle ("interleave"): 8-row x 16-byte
  core matrices, LBO = byte distance between core matrices adjacent in K, SBO = adjacent in M/N.
- the FFMA tile (``fma.rn.f32``, :func:`ffma_m8n4k1`): the harness's own layout, no ISA table.

A :class:`Fragment` lists, for each thread and element slot ``i`` (PTX names ``a0, a1, ...``
low to high), the (matrix, row, col) it holds. Registers are 32-bit (64-bit for f64); the slot
``i`` lives in register ``i // per_reg`` at bit ``(i % per_reg) * elem_bits`` (an .f16x2
register holds a0 in its low half); an element narrower than its slot (FP6/FP4 in an 8-bit
container) sits at bit ``shift`` of the slot. Everything is pure NumPy and testable without a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

WARP = 32


@dataclass(frozen=True)
class Fragment:
    """A register fragment: ``index[t, i] = (mat, row, col)`` of slot ``i`` in thread ``t``."""

    operand: str            # "A", "B" or "C" (C and D share a layout)
    rows: int
    cols: int
    n_mats: int             # independent MMAs per warp (4 for m8n8k4 .f16, else 1)
    elem_bits: int          # slot (container) width: 4, 8, 16, 32 or 64
    index: np.ndarray       # int array (threads, slots, 3)
    source: str             # the PTX ISA section it transcribes
    value_bits: int | None = None   # the element's own width where narrower than the slot
    shift: int = 0                  # the element's lowest bit inside its slot

    @property
    def value_mask(self) -> int:
        return (1 << (self.value_bits or self.elem_bits)) - 1 if self.elem_bits < 64 else (1 << 64) - 1

    @property
    def threads(self) -> int:
        return self.index.shape[0]

    @property
    def slots(self) -> int:
        return self.index.shape[1]

    @property
    def reg_bits(self) -> int:
        return 64 if self.elem_bits == 64 else 32

    @property
    def per_reg(self) -> int:
        return self.reg_bits // self.elem_bits

    @property
    def n_regs(self) -> int:
        return self.slots // self.per_reg

    def reg_dtype(self):
        return np.uint64 if self.reg_bits == 64 else np.uint32

    # ---- elements <-> matrices ----------------------------------------------------------
    def gather(self, mats: np.ndarray) -> np.ndarray:
        """Matrices ``(N, n_mats, rows, cols)`` -> per-thread elements ``(N, threads, slots)``."""
        m, r, c = self.index[..., 0], self.index[..., 1], self.index[..., 2]
        return mats[:, m, r, c]

    def scatter(self, elems: np.ndarray) -> np.ndarray:
        """Per-thread elements ``(N, threads, slots)`` -> matrices ``(N, n_mats, rows, cols)``."""
        out = np.zeros((elems.shape[0], self.n_mats, self.rows, self.cols), dtype=elems.dtype)
        m, r, c = self.index[..., 0], self.index[..., 1], self.index[..., 2]
        out[:, m, r, c] = elems
        return out

    # ---- elements <-> registers ---------------------------------------------------------
    def to_regs(self, elems: np.ndarray) -> np.ndarray:
        """Pack ``(N, threads, slots)`` element bits into ``(N, threads, n_regs)`` registers."""
        e = elems.astype(np.uint64).reshape(*elems.shape[:-1], self.n_regs, self.per_reg)
        if self.elem_bits < 64:
            e = (e & np.uint64(self.value_mask)) << np.uint64(self.shift)
        shifts = np.arange(self.per_reg, dtype=np.uint64) * np.uint64(self.elem_bits)
        return np.bitwise_or.reduce(e << shifts, axis=-1).astype(self.reg_dtype())

    def from_regs(self, regs: np.ndarray) -> np.ndarray:
        """Unpack ``(N, threads, n_regs)`` registers into ``(N, threads, slots)`` element bits."""
        r = regs.astype(np.uint64)[..., None]
        shifts = np.arange(self.per_reg, dtype=np.uint64) * np.uint64(self.elem_bits)
        e = r >> shifts
        if self.elem_bits < 64:
            e = (e >> np.uint64(self.shift)) & np.uint64(self.value_mask)
        return e.reshape(*regs.shape[:-1], self.slots)

    def pack(self, mats: np.ndarray) -> np.ndarray:
        """Matrices ``(N, n_mats, rows, cols)`` -> registers ``(N, threads, n_regs)``."""
        return self.to_regs(self.gather(mats))

    def unpack(self, regs: np.ndarray) -> np.ndarray:
        """Registers ``(N, threads, n_regs)`` -> matrices ``(N, n_mats, rows, cols)``."""
        return self.scatter(self.from_regs(regs))


def _build(operand, rows, cols, elem_bits, slots, fn, source, n_mats=1, threads=WARP) -> Fragment:
    idx = np.zeros((threads, slots, 3), dtype=np.int64)
    for t in range(threads):
        for i in range(slots):
            idx[t, i] = fn(t, i)
    return Fragment(operand, rows, cols, n_mats, elem_bits, idx, source)


def _gid(lane):
    return lane >> 2


def _tig(lane):
    return lane % 4


# ---- mma.m16n8kK: C/D is the same for every input type (9.7.14.5.6-10) -------------------

def _m16n8_c(elem_bits, source):
    return _build("C", 16, 8, elem_bits, 4,
                  lambda t, i: (0, _gid(t) + 8 * (i >> 1), _tig(t) * 2 + (i & 1)), source)


def m16n8k16_16bit(acc_bits: int) -> tuple[Fragment, Fragment, Fragment]:
    """mma.m16n8k16 .f16/.bf16 (PTX ISA 9.7.14.5.8, Figure 79 ff.)."""
    src = "PTX ISA 9.7.14.5.8 (mma.m16n8k16, .f16/.bf16)"
    a = _build("A", 16, 16, 16, 8, lambda t, i: (
        0, _gid(t) + 8 * ((i >> 1) & 1), _tig(t) * 2 + (i & 1) + 8 * (i >= 4)), src)
    b = _build("B", 16, 8, 16, 4, lambda t, i: (
        0, _tig(t) * 2 + (i & 1) + 8 * (i >= 2), _gid(t)), src)
    return a, b, _m16n8_c(acc_bits, src)


def m16n8k8_16bit(acc_bits: int) -> tuple[Fragment, Fragment, Fragment]:
    """mma.m16n8k8 .f16/.bf16 (PTX ISA 9.7.14.5.7, Figure 71 ff.)."""
    src = "PTX ISA 9.7.14.5.7 (mma.m16n8k8, .f16/.bf16)"
    a = _build("A", 16, 8, 16, 4, lambda t, i: (0, _gid(t) + 8 * (i >= 2), _tig(t) * 2 + (i & 1)), src)
    b = _build("B", 8, 8, 16, 2, lambda t, i: (0, _tig(t) * 2 + i, _gid(t)), src)
    return a, b, _m16n8_c(acc_bits, src)


def m16n8k8_tf32() -> tuple[Fragment, Fragment, Fragment]:
    """mma.m16n8k8 .tf32 (PTX ISA 9.7.14.5.7, Figure 72 ff.)."""
    src = "PTX ISA 9.7.14.5.7 (mma.m16n8k8, .tf32)"
    a = _build("A", 16, 8, 32, 4, lambda t, i: (0, _gid(t) + 8 * (i & 1), _tig(t) + 4 * (i >= 2)), src)
    b = _build("B", 8, 8, 32, 2, lambda t, i: (0, _tig(t) + 4 * i, _gid(t)), src)
    return a, b, _m16n8_c(32, src)


def m16n8k4_tf32() -> tuple[Fragment, Fragment, Fragment]:
    """mma.m16n8k4 .tf32 (PTX ISA 9.7.14.5.6)."""
    src = "PTX ISA 9.7.14.5.6 (mma.m16n8k4, .tf32)"
    a = _build("A", 16, 4, 32, 2, lambda t, i: (0, _gid(t) + 8 * i, _tig(t)), src)
    b = _build("B", 4, 8, 32, 1, lambda t, i: (0, _tig(t), _gid(t)), src)
    return a, b, _m16n8_c(32, src)


def m16n8k32_fp8(acc_bits: int) -> tuple[Fragment, Fragment, Fragment]:
    """mma.m16n8k32 .e4m3/.e5m2 (PTX ISA 9.7.14.5.10): four 8-bit elements per .b32."""
    src = "PTX ISA 9.7.14.5.10 (mma.m16n8k32, .e4m3/.e5m2)"
    a = _build("A", 16, 32, 8, 16, lambda t, i: (
        0, _gid(t) + 8 * ((i >> 2) & 1), _tig(t) * 4 + (i & 3) + 16 * (i >= 8)), src)
    b = _build("B", 32, 8, 8, 8, lambda t, i: (0, _tig(t) * 4 + (i & 3) + 16 * (i >= 4), _gid(t)), src)
    return a, b, _m16n8_c(acc_bits, src)


def m8n8k16_8bit() -> tuple[Fragment, Fragment, Fragment]:
    """mma.m8n8k16 .s8/.u8 (PTX ISA 9.7.14.5.4): A row gid, k = 4 tig + i; B column gid, k = 4 tig
    + i (four 8-bit elements per .b32); C/D .s32 row gid, column 2 tig + i."""
    src = "PTX ISA 9.7.14.5.4 (mma.m8n8k16, .s8/.u8)"
    a = _build("A", 8, 16, 8, 4, lambda t, i: (0, _gid(t), _tig(t) * 4 + i), src)
    b = _build("B", 16, 8, 8, 4, lambda t, i: (0, _tig(t) * 4 + i, _gid(t)), src)
    c = _build("C", 8, 8, 32, 2, lambda t, i: (0, _gid(t), _tig(t) * 2 + i), src)
    return a, b, c


def in_containers(frag: Fragment, value_bits: int, shift: int) -> Fragment:
    """``frag`` (8-bit slots) holding ``value_bits``-wide elements at bit ``shift`` of each slot:
    ``.kind::f8f6f4`` / ``.kind::mxf8f6f4`` FP6 (``value_bits`` 6, shift 0) and FP4 (4, shift 2),
    PTX ISA 9.7.14.5.14 ("... packed in an 8-bit container")."""
    if value_bits == frag.elem_bits:
        return frag
    return replace(frag, value_bits=value_bits, shift=shift,
                   source=f"{frag.source}; {value_bits}-bit element at bit {shift} of its 8-bit container "
                          "(PTX ISA 9.7.14.5.14)")


def m8n8k32_4bit() -> tuple[Fragment, Fragment, Fragment]:
    """mma.m8n8k32 .s4/.u4 (PTX ISA 9.7.14.5.4): A row groupID, col 8 tig + i; B row 8 tig + i,
    col groupID (eight 4-bit elements per .b32); C/D .s32 row groupID, col 2 tig + i."""
    src = "PTX ISA 9.7.14.5.4 (mma.m8n8k32, .s4/.u4)"
    a = _build("A", 8, 32, 4, 8, lambda t, i: (0, _gid(t), _tig(t) * 8 + i), src)
    b = _build("B", 32, 8, 4, 8, lambda t, i: (0, _tig(t) * 8 + i, _gid(t)), src)
    c = _build("C", 8, 8, 32, 2, lambda t, i: (0, _gid(t), _tig(t) * 2 + i), src)
    return a, b, c


def m16n8k32_4bit() -> tuple[Fragment, Fragment, Fragment]:
    """mma.m16n8k32 .s4/.u4 (PTX ISA 9.7.14.5.10, Figures 87 and 89): A row groupID (+8 for
    i >= 8), col 8 tig + (i & 7); B row 8 tig + i, col groupID; C/D as every m16n8 shape."""
    src = "PTX ISA 9.7.14.5.10 (mma.m16n8k32, .s4/.u4)"
    a = _build("A", 16, 32, 4, 16, lambda t, i: (0, _gid(t) + 8 * (i >= 8), _tig(t) * 8 + (i & 7)), src)
    b = _build("B", 32, 8, 4, 8, lambda t, i: (0, _tig(t) * 8 + i, _gid(t)), src)
    return a, b, _m16n8_c(32, src)


def m16n8k64_4bit() -> tuple[Fragment, Fragment, Fragment]:
    """mma.m16n8k64 .s4/.u4/.e2m1 (PTX ISA 9.7.14.5.11, Figures 93-96): A row groupID for
    0 <= i < 8 and 16 <= i < 24, else groupID + 8; col 8 tig + (i & 7), +32 for i >= 16; B row
    8 tig + (i & 7), +32 for i >= 8, col groupID; eight 4-bit elements per .b32, no padding."""
    src = "PTX ISA 9.7.14.5.11 (mma.m16n8k64, .s4/.u4/.e2m1)"
    a = _build("A", 16, 64, 4, 32, lambda t, i: (
        0, _gid(t) + 8 * ((i >> 3) & 1), _tig(t) * 8 + (i & 7) + 32 * (i >= 16)), src)
    b = _build("B", 64, 8, 4, 16, lambda t, i: (0, _tig(t) * 8 + (i & 7) + 32 * (i >= 8), _gid(t)), src)
    return a, b, _m16n8_c(32, src)


# ---- block scaling: the scale_A / scale_B registers of mma.sync (PTX ISA 9.7.14.3) ----------

@dataclass(frozen=True)
class ScaleFragment:
    """Which byte of which thread's ``.b32`` scale register holds which scale-matrix element.

    scale_A is M x S and scale_B is S x N (S = 1, 2, 4: ``.scale_vec::SX``; PTX ISA 9.7.14.3
    Table 35). ``index[t, j] = (row, col)`` of byte ``j`` (bits 8j..8j+7) of thread ``t``'s
    register, ``(-1, -1)`` where the instruction does not read that byte. A scale sits in the low
    ``value_bits`` of its byte (UE8M0: 8, UE4M3: 7 with bit 7 zero)."""

    operand: str            # "SFA" or "SFB"
    rows: int
    cols: int
    value_bits: int
    index: np.ndarray       # int array (threads, 4, 2)
    source: str

    @property
    def threads(self) -> int:
        return self.index.shape[0]

    def pack(self, mats: np.ndarray) -> np.ndarray:
        """Scale matrices ``(N, rows, cols)`` of raw bits -> registers ``(N, threads)`` uint32."""
        out = np.zeros((mats.shape[0], self.threads), dtype=np.uint64)
        mask = np.uint64((1 << self.value_bits) - 1)
        for t in range(self.threads):
            for j in range(4):
                r, c = self.index[t, j]
                if r >= 0:
                    out[:, t] |= (mats[:, r, c].astype(np.uint64) & mask) << np.uint64(8 * j)
        return out.astype(np.uint32)

    def unpack(self, regs: np.ndarray) -> np.ndarray:
        """Registers ``(N, threads)`` -> scale matrices ``(N, rows, cols)``, each element read from
        the first byte that holds it (every holder carries the same value after :meth:`pack`)."""
        out = np.zeros((regs.shape[0], self.rows, self.cols), dtype=np.uint64)
        seen = np.zeros((self.rows, self.cols), dtype=bool)
        r64 = regs.astype(np.uint64)
        for t in range(self.threads):
            for j in range(4):
                r, c = self.index[t, j]
                if r >= 0 and not seen[r, c]:
                    out[:, r, c] = (r64[:, t] >> np.uint64(8 * j)) & np.uint64((1 << self.value_bits) - 1)
                    seen[r, c] = True
        return out


def mma_scales(vec: int, value_bits: int) -> tuple[ScaleFragment, ScaleFragment]:
    """scale_A (16 x vec) and scale_B (vec x 8) registers of the m16n8 shapes of ``mma.sync ... .block_scale
    .scale_vec::{vec}X`` with every selector 0 (``{byte-id, thread-id} = {0, 0}``), PTX ISA 9.7.14.3:

    - thread-id-a = 0: the thread pair ``%laneid % 4`` in {0, 1} of each quad provides SF_A; the
      lane with ``%laneid % 4 == 0`` the scales of row groupID, the one with ``== 1`` those of row
      groupID + 8 (Figure 43; as NVIDIA CUTLASS's ``SFALayout`` for SM120 writes it:
      ``((2,2,8),K):((8,0,1),16)`` over (M16, K)). thread-id-b = 0: the lane with ``%laneid % 4
      == 0`` provides SF_B of column groupID (Figure 44).
    - byte-id = 0: ``.scale_vec::1X`` reads byte 0, ``2X`` bytes 0-1, ``4X`` bytes 0-3; byte ``j``
      holds the scale of the ``j``-th K block (Figure 45)."""
    src = f"PTX ISA 9.7.14.3 (mma block scaling, .scale_vec::{vec}X, selectors 0)"
    ia = np.full((32, 4, 2), -1, dtype=np.int64)
    ib = np.full((32, 4, 2), -1, dtype=np.int64)
    for t in range(32):
        for j in range(vec):
            if _tig(t) in (0, 1):
                ia[t, j] = (_gid(t) + 8 * _tig(t), j)
            if _tig(t) == 0:
                ib[t, j] = (j, _gid(t))
    return ScaleFragment("SFA", 16, vec, value_bits, ia, src), ScaleFragment("SFB", vec, 8, value_bits, ib, src)


def m8n8k4_f64() -> tuple[Fragment, Fragment, Fragment]:
    """mma.m8n8k4 .f64 (PTX ISA 9.7.14.5.1, .f64): one MMA per warp."""
    src = "PTX ISA 9.7.14.5.1 (mma.m8n8k4, .f64)"
    a = _build("A", 8, 4, 64, 1, lambda t, i: (0, _gid(t), _tig(t)), src)
    b = _build("B", 4, 8, 64, 1, lambda t, i: (0, _tig(t), _gid(t)), src)
    c = _build("C", 8, 8, 64, 2, lambda t, i: (0, _gid(t), _tig(t) * 2 + i), src)
    return a, b, c


def ffma_m8n4k1(elem_bits: int = 32) -> tuple[Fragment, Fragment, Fragment]:
    """The FFMA tile (no PTX ISA layout: the harness's own, as an SGEMM thread tile holds one
    accumulator per thread): a warp computes an 8 x 4 outer product per step, lane t holding
    A[t >> 2][0], B[0][t & 3] and the accumulator D[t >> 2][t & 3], one ``fma.rn.f32`` per step.
    Each element of A is held by the four lanes of its row, each of B by the eight of its column."""
    src = "harness FFMA tile (lane t: row t >> 2, column t & 3)"
    a = _build("A", 8, 1, elem_bits, 1, lambda t, i: (0, _gid(t), 0), src)
    b = _build("B", 1, 4, elem_bits, 1, lambda t, i: (0, 0, _tig(t)), src)
    c = _build("C", 8, 4, elem_bits, 1, lambda t, i: (0, _gid(t), _tig(t)), src)
    return a, b, c


def m8n8k4_f16(acc_bits: int) -> tuple[Fragment, Fragment, Fragment]:
    """mma.m8n8k4 .f16 (PTX ISA 9.7.14.5.1): MMA computation q = (lane >> 2) & 3 runs on
    lanes 4q..4q+3 (low group, rows 0-3) and 4q+16..4q+19 (high group, rows 4-7)."""
    src = "PTX ISA 9.7.14.5.1 (mma.m8n8k4, .f16: quad pairs)"

    def qp(lane):
        return (lane >> 2) & 3, lane % 4 + 4 * (lane >= 16)

    a = _build("A", 8, 4, 16, 4, lambda t, i: (qp(t)[0], qp(t)[1], i), src, n_mats=4)
    b = _build("B", 4, 8, 16, 4, lambda t, i: (qp(t)[0], i, qp(t)[1]), src, n_mats=4)
    if acc_bits == 16:
        c = _build("C", 8, 8, 16, 8, lambda t, i: (qp(t)[0], qp(t)[1], i), src, n_mats=4)
    else:
        c = _build("C", 8, 8, 32, 8, lambda t, i: (
            qp(t)[0], (t & 1) + (i & 2) + 4 * (t >= 16), (i & 4) + (t & 2) + (i & 1)), src, n_mats=4)
    return a, b, c


def wgmma_d(n: int, acc_bits: int) -> Fragment:
    """wgmma.mma_async m64nNk* accumulator D (PTX ISA 9.7.15.5.1.1, Figure 149): warp w of the
    warpgroup holds rows 16w..16w+15; slot i: row += groupID + 8*((i>>1)&1),
    col = threadID_in_group*2 + (i&1) + 8*(i>>2)."""
    src = "PTX ISA 9.7.15.5.1.1 (wgmma accumulator D)"
    return _build("C", 64, n, acc_bits, n // 2, lambda t, i: (
        0, 16 * (t >> 5) + _gid(t % 32) + 8 * ((i >> 1) & 1), _tig(t % 32) * 2 + (i & 1) + 8 * (i >> 2)),
        src, threads=128)


def tcgen05_d(n: int, acc_bits: int) -> Fragment:
    """tcgen05.mma M = 128, ``.cta_group::1`` accumulator D in tensor memory (PTX ISA 9.7.16.10.5.4,
    Layout D: row i in lane i, column j in column j) as ``tcgen05.ld/.st .32x32b.x{n}`` move it:
    thread t of the warpgroup (warp t // 32 may access lanes 32 (t // 32) .. + 31, 9.7.16.8.1)
    holds row t, register i column i. A 16-bit D element sits in the lower half of its 32-bit
    word, unpacked (9.7.16.10.4.1)."""
    src = "PTX ISA 9.7.16.10.5.4 (tcgen05 Layout D, M = 128) with tcgen05.ld .32x32b"
    f = _build("C", 128, n, 32, n, lambda t, i: (0, t, i), src, threads=128)
    return replace(f, value_bits=acc_bits) if acc_bits < 32 else f


@dataclass(frozen=True)
class TmemScales:
    """A tcgen05 block-scale matrix as staged in shared memory for ``tcgen05.cp .32x128b.warpx4``:
    512 bytes, the scale of row (scale_A) or column (scale_B) ``r`` for K block ``j`` at byte
    ``(r % 32) * 16 + (r // 32) * 4 + j``; the copy puts bytes ``16 l .. 16 l + 15`` into the four
    32-bit columns of tensor-memory lane ``l`` of each 32-lane partition ("scale factors ... need
    to be duplicated to all 32 lane partitions", PTX ISA 9.7.16.10.7), so row ``r``'s scales are
    byte ``j`` of column ``r // 32`` (scale factor ID 0, 9.7.16.10.7.2-3). The byte order within
    the 512-byte block is NVIDIA CUTLASS's ``Sm1xxBlockScaledBasicChunk`` (the ISA's Figures
    231-242 are drawings). ``threads``: the image's 128 words, one copied by each thread."""

    operand: str            # "SFA" (rows x vec) or "SFB" (vec x cols)
    rows: int
    cols: int
    value_bits: int
    source: str = "PTX ISA 9.7.16.10.7 (tcgen05 block scaling), tcgen05.cp .32x128b.warpx4"

    threads = 128

    def _offsets(self) -> np.ndarray:
        r = np.arange(self.rows)[:, None] if self.operand == "SFA" else np.arange(self.cols)[None, :]
        j = np.arange(self.cols)[None, :] if self.operand == "SFA" else np.arange(self.rows)[:, None]
        return (r % 32) * 16 + (r // 32) * 4 + j                    # (rows, cols)

    def pack(self, mats: np.ndarray) -> np.ndarray:
        img = np.zeros((mats.shape[0], 512), dtype=np.uint8)
        img[:, self._offsets()] = (mats.astype(np.uint64) & np.uint64((1 << self.value_bits) - 1)).astype(np.uint8)
        return img.view("<u4")

    def unpack(self, words: np.ndarray) -> np.ndarray:
        img = np.ascontiguousarray(words.astype("<u4")).view(np.uint8)
        return (img[:, self._offsets()] & ((1 << self.value_bits) - 1)).astype(np.uint64)


# ---- wgmma shared-memory operands --------------------------------------------------------

@dataclass(frozen=True)
class SmemOperand:
    """A K-major, no-swizzle wgmma / tcgen05 operand in shared memory (PTX ISA 9.7.15.5.1.2 and
    9.7.16.3.3: the canonical K-major layout ``((8,m),(T,2k)):((1T,SBO),(1,LBO))``).

    ``mn`` x ``k`` elements; ``elem_bits`` is the width the layout normalizes to 128-bit rows
    (``T = 128 / elem_bits`` elements per 16-byte core-matrix row), and every row is
    ``k * elem_bits / 8`` = 32 bytes (two 16-byte core-matrix columns). Element ``e`` of a
    16-byte core-matrix row starts at bit ``e * value_bits`` of it: ``value_bits`` =
    ``elem_bits`` for the byte-sized types; tcgen05's ``.kind::f8f6f4``/``.kind::mxf8f6f4``
    FP6/FP4 pack 16 elements into the row's first 12/8 bytes and leave the rest padding
    (``elem_bits`` 8, PTX ISA 9.7.16.10.4.4: the ``.b6x16_p32``/``.b4x16_p64`` formats of
    5.5.1.1.1); ``.kind::mxf4``/``.kind::mxf4nvf4`` pack two FP4 per byte (``elem_bits`` 4,
    9.7.16.10.4.6). Byte offset of a core-matrix row: ``(r // 8) * sbo + (chunk) * lbo + (r % 8) * 16``.
    The descriptor carries start >> 4, lbo >> 4, sbo >> 4, swizzle 0 and, for tcgen05, the
    fixed ``0b001`` of bits 46-48 (``version``; PTX ISA 9.7.15.5.1.2.2, 9.7.16.4.1 Table 40).
    """

    mn: int
    k: int
    elem_bits: int
    lbo: int = 128
    sbo: int = 256
    value_bits: int | None = None
    version: int = 0

    @property
    def nbytes(self) -> int:
        return (self.mn // 8) * self.sbo

    @property
    def words(self) -> int:
        return self.nbytes // 4

    @property
    def vbits(self) -> int:
        return self.value_bits or self.elem_bits

    def bit_offsets(self) -> np.ndarray:
        """Bit offset of each element's lowest bit in the image: int array (mn, k)."""
        per = 128 // self.elem_bits
        r = np.arange(self.mn)[:, None]
        kk = np.arange(self.k)[None, :]
        return 8 * ((r // 8) * self.sbo + (kk // per) * self.lbo + (r % 8) * 16) + (kk % per) * self.vbits

    def offsets(self) -> np.ndarray:
        """Byte offset of each element (byte-sized elements): int array (mn, k)."""
        return self.bit_offsets() // 8

    def pack(self, mats: np.ndarray) -> np.ndarray:
        """Matrices ``(N, mn, k)`` of element bits -> shared-memory images ``(N, words)`` uint32."""
        img = np.zeros((mats.shape[0], self.nbytes), dtype=np.uint8)
        vals = mats.astype(np.uint64)
        if self.vbits % 8 == 0:
            off = self.offsets()
            for byte in range(self.vbits // 8):
                img[:, off + byte] = ((vals >> np.uint64(8 * byte)) & np.uint64(0xFF)).astype(np.uint8)
            return img.view("<u4")
        pos = self.bit_offsets().ravel()
        flat = vals.reshape(vals.shape[0], -1)
        for b in range(self.vbits):               # elements never share a bit: add == or
            bit = ((flat >> np.uint64(b)) & np.uint64(1)) << ((pos + b) % 8).astype(np.uint64)
            np.add.at(img, (slice(None), (pos + b) // 8), bit.astype(np.uint8))
        return img.view("<u4")

    def unpack(self, words: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`pack` (padding bits ignored)."""
        img = np.ascontiguousarray(words.astype("<u4")).view(np.uint8)
        out = np.zeros((words.shape[0], self.mn, self.k), dtype=np.uint64)
        if self.vbits % 8 == 0:
            off = self.offsets()
            for byte in range(self.vbits // 8):
                out |= img[:, off + byte].astype(np.uint64) << np.uint64(8 * byte)
            return out
        pos = self.bit_offsets()
        for b in range(self.vbits):
            p = pos + b
            out |= ((img[:, p // 8] >> (p % 8).astype(np.uint8)) & 1).astype(np.uint64) << np.uint64(b)
        return out

    def descriptor(self, smem_addr: int) -> int:
        """The 64-bit matrix descriptor for an operand starting at shared address ``smem_addr``."""
        enc = lambda x: (x & 0x3FFFF) >> 4  # noqa: E731  (matrix-descriptor-encode)
        return enc(smem_addr) | enc(self.lbo) << 16 | enc(self.sbo) << 32 | self.version << 46
