"""Fragment layouts: coverage, round trips, register packing, and spot checks against the PTX ISA
tables (section numbers as in hw_runner/layouts.py)."""

from __future__ import annotations

import numpy as np
import pytest

from hw_runner import layouts
from hw_runner.kernels import KERNELS

MMA = sorted(k for k, s in KERNELS.items() if s.family == "mma")
WGMMA = sorted(k for k, s in KERNELS.items() if s.family in ("wgmma", "tcgen05"))


def _frags(kid):
    return KERNELS[kid].fragments if KERNELS[kid].family == "mma" else KERNELS[kid].fragments[2:]


@pytest.mark.parametrize("kid", MMA + WGMMA)
def test_every_element_held_exactly_once(kid):
    for f in _frags(kid):
        flat = f.index.reshape(-1, 3)
        keys = flat[:, 0] * f.rows * f.cols + flat[:, 1] * f.cols + flat[:, 2]
        assert sorted(keys.tolist()) == list(range(f.n_mats * f.rows * f.cols)), f.operand
        assert f.threads * f.slots == f.n_mats * f.rows * f.cols


@pytest.mark.parametrize("kid", MMA + WGMMA)
def test_pack_unpack_round_trip(kid):
    rng = np.random.default_rng(1)
    for f in _frags(kid):
        mats = rng.integers(0, 1 << min(f.value_bits or f.elem_bits, 63), (3, f.n_mats, f.rows, f.cols),
                            dtype=np.uint64)
        regs = f.pack(mats)
        assert regs.shape == (3, f.threads, f.n_regs) and regs.dtype == f.reg_dtype()
        assert np.array_equal(f.unpack(regs), mats)


@pytest.mark.parametrize("kid", WGMMA)
def test_smem_image_round_trip_and_bounds(kid):
    sa, sb, _ = KERNELS[kid].fragments
    rng = np.random.default_rng(2)
    for s in (sa, sb):
        off = s.bit_offsets()
        assert len(set(off.ravel().tolist())) == off.size and off.max() < 8 * s.nbytes   # no overlap
        mats = rng.integers(0, 1 << s.vbits, (2, s.mn, s.k), dtype=np.uint64)
        assert np.array_equal(s.unpack(s.pack(mats)), mats)
        assert s.k * s.elem_bits // 8 == 32                   # two 16-byte core-matrix columns


def _where(frag, lane, slot):
    return tuple(int(x) for x in frag.index[lane, slot])


def test_m16n8k16_matches_ptx_9_7_14_5_8():
    # PTX ISA 9.7.14.5.8, Figure 79 (A) and the B and C/D figures after it: groupID = lane >> 2,
    # threadID_in_group = lane % 4.
    a, b, c = KERNELS["mma_m16n8k16_f16_f32"].fragments
    assert [_where(a, 0, i)[1:] for i in range(8)] == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]
    assert _where(a, 5, 0) == (0, 1, 2)
    assert [_where(b, 0, i)[1:] for i in range(4)] == [(0, 0), (1, 0), (8, 0), (9, 0)]
    assert _where(b, 6, 0) == (0, 4, 1)
    assert [_where(c, 0, i)[1:] for i in range(4)] == [(0, 0), (0, 1), (8, 0), (8, 1)]
    assert _where(c, 31, 3) == (0, 15, 7)


def test_m16n8k8_tf32_and_m16n8k4_tf32_match_ptx():
    # PTX ISA 9.7.14.5.7, Figure 72: row = groupID for a0, a2, +8 for a1, a3; col = tig, +4 for a2, a3.
    a, b, _ = KERNELS["mma_m16n8k8_tf32_f32"].fragments
    assert [_where(a, 0, i)[1:] for i in range(4)] == [(0, 0), (8, 0), (0, 4), (8, 4)]
    assert [_where(b, 1, i)[1:] for i in range(2)] == [(1, 0), (5, 0)]
    # PTX ISA 9.7.14.5.6: m16n8k4 .tf32, a0 row groupID, a1 row groupID + 8, col tig.
    a4, b4, _ = KERNELS["mma_m16n8k4_tf32_f32"].fragments
    assert [_where(a4, 9, i)[1:] for i in range(2)] == [(2, 1), (10, 1)]
    assert _where(b4, 9, 0)[1:] == (1, 2)


def test_m16n8k8_16bit_matches_ptx_9_7_14_5_7():
    # Figure 71: row = groupID for a0, a1, +8 for a2, a3; col = tig*2 + (i & 1).
    a, b, _ = KERNELS["mma_m16n8k8_bf16_f32"].fragments
    assert [_where(a, 7, i)[1:] for i in range(4)] == [(1, 6), (1, 7), (9, 6), (9, 7)]
    assert [_where(b, 7, i)[1:] for i in range(2)] == [(6, 1), (7, 1)]


def test_m16n8k32_fp8_matches_ptx_9_7_14_5_10():
    # row = groupID for a0..a3 and a8..a11, else +8; col = tig*4 + (i & 3), +16 for i >= 8.
    a, b, _ = KERNELS["mma_m16n8k32_e4m3_f32"].fragments
    got = [_where(a, 0, i)[1:] for i in range(16)]
    assert got[:4] == [(0, 0), (0, 1), (0, 2), (0, 3)] and got[4:8] == [(8, 0), (8, 1), (8, 2), (8, 3)]
    assert got[8] == (0, 16) and got[12] == (8, 16)
    assert _where(a, 1, 0)[1:] == (0, 4)
    assert [_where(b, 1, i)[1:] for i in (0, 3, 4)] == [(4, 0), (7, 0), (20, 0)]


def test_m8n8k4_f16_quad_pairs_match_ptx_9_7_14_5_1():
    # MMA computation q runs on lanes 4q..4q+3 (rows 0-3) and 4q+16..4q+19 (rows 4-7).
    a, b, c = KERNELS["mma_m8n8k4_f16_f32"].fragments
    assert _where(a, 16, 2) == (0, 4, 2) and _where(a, 4, 0) == (1, 0, 0) and _where(a, 21, 3) == (1, 5, 3)
    assert _where(b, 30, 1) == (3, 1, 6)
    # .f32 C/D: row = (lane & 1) + (i & 2) (+4 high group), col = (i & 4) + (lane & 2) + (i & 1).
    assert [_where(c, 0, i)[1:] for i in range(8)] == [(0, 0), (0, 1), (2, 0), (2, 1), (0, 4), (0, 5), (2, 4), (2, 5)]
    assert _where(c, 3, 0) == (0, 1, 2) and _where(c, 16, 0) == (0, 4, 0)
    _, _, c16 = KERNELS["mma_m8n8k4_f16_f16"].fragments           # .f16 C/D: row as A, col = i
    assert [_where(c16, 17, i)[1:] for i in (0, 7)] == [(5, 0), (5, 7)]


def test_m8n8k4_f64_matches_ptx():
    a, b, c = KERNELS["mma_m8n8k4_f64_f64"].fragments
    assert _where(a, 5, 0) == (0, 1, 1) and _where(b, 5, 0) == (0, 1, 1)
    assert [_where(c, 5, i)[1:] for i in range(2)] == [(1, 2), (1, 3)]
    assert a.reg_bits == 64 and a.n_regs == 1 and c.n_regs == 2


def test_wgmma_d_matches_ptx_9_7_15_5_1_1():
    # Figure 149: warp w holds rows 16w..16w+15; slot i: +8 rows for (i >> 1) & 1, cols 8*(i >> 2).
    d = layouts.wgmma_d(16, 32)
    assert [_where(d, 0, i)[1:] for i in range(4)] == [(0, 0), (0, 1), (8, 0), (8, 1)]
    assert _where(d, 0, 4)[1:] == (0, 8) and _where(d, 32, 0)[1:] == (16, 0)
    assert _where(d, 127, 3)[1:] == (63, 7)


def test_register_packing_low_element_in_low_bits():
    # An .f16x2 register holds a0 in bits 0-15 and a1 in bits 16-31; a .b32 of e4m3 holds a0..a3
    # from the low byte up (PTX ISA 9.7.14.5.8 / 9.7.14.5.10: "elements low to high").
    a16 = KERNELS["mma_m16n8k16_f16_f32"].fragments[0]
    m = np.zeros((1, 1, 16, 16), dtype=np.uint64)
    m[0, 0, 0, 0], m[0, 0, 0, 1] = 0x1111, 0x2222
    assert a16.pack(m)[0, 0, 0] == 0x22221111
    a8 = KERNELS["mma_m16n8k32_e5m2_f16"].fragments[0]
    m8 = np.zeros((1, 1, 16, 32), dtype=np.uint64)
    m8[0, 0, 0, :4] = [1, 2, 3, 4]
    assert a8.pack(m8)[0, 0, 0] == 0x04030201


def test_smem_offsets_and_descriptor_match_ptx_9_7_15_5_1_2():
    s = layouts.SmemOperand(64, 16, 16)             # f16 A of m64nNk16, K-major, no swizzle
    off = s.offsets()
    assert off[0, 0] == 0 and off[0, 1] == 2 and off[1, 0] == 16      # rows 16 B apart in a core matrix
    assert off[0, 8] == s.lbo and off[8, 0] == s.sbo                  # next core matrix in K / in M
    # descriptor: bits 0-13 start >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 62-63 swizzle 0
    assert s.descriptor(0x400) == 0x40 | (128 >> 4) << 16 | (256 >> 4) << 32
    t = layouts.SmemOperand(8, 32, 8)               # e4m3 B of m64n8k32: 32 one-byte elements per row
    assert t.offsets()[3, 17] == 1 * t.lbo + 3 * 16 + 1


# ---- 4-bit, FP6/FP4 and block-scale layouts, against the PTX ISA's row/col formulas ----------
# Each ``_isa_*`` below transcribes the ISA's pseudo-code literally (groupID = %laneid >> 2,
# threadID_in_group = %laneid % 4; "row = ... for ai where ..."); the harness builds its tables
# with other arithmetic (hw_runner.layouts), and the two must agree lane by lane, slot by slot.

def _gt(lane):
    return lane >> 2, lane % 4


def _isa_16832_a8(lane, i):          # 9.7.14.5.10, Figure 88: .e4m3/.e5m2/.e3m2/.e2m3/.e2m1 A
    g, t = _gt(lane)
    row = g if (0 <= i < 4 or 8 <= i < 12) else g + 8
    col = t * 4 + (i & 0x3) if i < 8 else t * 4 + (i & 0x3) + 16
    return row, col


def _isa_16832_b8(lane, i):          # 9.7.14.5.10, Figures 90-91
    g, t = _gt(lane)
    return (t * 4 + (i & 0x3) if i < 4 else t * 4 + (i & 0x3) + 16), g


def _isa_16832_a4(lane, i):          # 9.7.14.5.10, Figure 87: .s4/.u4 A
    g, t = _gt(lane)
    return (g if i < 8 else g + 8), t * 8 + (i & 0x7)


def _isa_16832_b4(lane, i):          # 9.7.14.5.10, Figure 89
    g, t = _gt(lane)
    return t * 8 + (i & 0x7), g


def _isa_16864_a(lane, i):           # 9.7.14.5.11, Figure 93: .s4/.u4/.e2m1 A
    g, t = _gt(lane)
    row = g if (0 <= i < 8 or 16 <= i < 24) else g + 8
    col = t * 8 + (i & 0x7) if i < 16 else t * 8 + (i & 0x7) + 32
    return row, col


def _isa_16864_b(lane, i):           # 9.7.14.5.11, Figures 94-95
    g, t = _gt(lane)
    return (t * 8 + (i & 0x7) if i < 8 else t * 8 + (i & 0x7) + 32), g


def _isa_8832_a(lane, i):            # 9.7.14.5.4, Figure 59
    g, t = _gt(lane)
    return g, t * 8 + i


def _isa_8832_b(lane, i):            # 9.7.14.5.4, Figure 60
    g, t = _gt(lane)
    return t * 8 + i, g


def _isa_m16n8_c(lane, i):           # the C/D layout of every m16n8 shape
    g, t = _gt(lane)
    return (g if i < 2 else g + 8), t * 2 + (i & 0x1)


def _isa_8832_c(lane, i):            # 9.7.14.5.4, Figure 61
    g, t = _gt(lane)
    return g, t * 2 + i


@pytest.mark.parametrize("kid, refs", [
    ("mma_m16n8k32_e3m2e2m1_f32", (_isa_16832_a8, _isa_16832_b8, _isa_m16n8_c)),
    ("mma_m16n8k32_mxf8f6f4_e2m3_f32", (_isa_16832_a8, _isa_16832_b8, _isa_m16n8_c)),
    ("mma_m16n8k32_s4_s32", (_isa_16832_a4, _isa_16832_b4, _isa_m16n8_c)),
    ("mma_m16n8k64_u4_s32_sat", (_isa_16864_a, _isa_16864_b, _isa_m16n8_c)),
    ("mma_m16n8k64_mxf4_e2m1_f32", (_isa_16864_a, _isa_16864_b, _isa_m16n8_c)),
    ("mma_m8n8k32_s4_s32", (_isa_8832_a, _isa_8832_b, _isa_8832_c)),
])
def test_narrow_layouts_match_the_isa_formulas(kid, refs):
    for frag, ref in zip(KERNELS[kid].fragments, refs):
        for lane in range(32):
            for i in range(frag.slots):
                assert _where(frag, lane, i) == (0, *ref(lane, i)), (kid, frag.operand, lane, i)


def test_fp6_fp4_containers_match_ptx_9_7_14_5_14():
    # "The matrix element of type .e2m1 resides in central 4 bits of the 8-bit container with
    # padding in the upper 2 bits and lower 2 bits ... .e3m2 or .e2m3 ... in the lower 6 bits."
    a, b, _ = KERNELS["mma_m16n8k32_e2m1e3m2_f32"].fragments
    m = np.zeros((1, 1, 16, 32), dtype=np.uint64)
    m[0, 0, 0, :4] = [0xB, 0x5, 0xF, 0x1]
    assert a.pack(m)[0, 0, 0] == (0x1 << 2) << 24 | (0xF << 2) << 16 | (0x5 << 2) << 8 | (0xB << 2)
    mb = np.zeros((1, 1, 32, 8), dtype=np.uint64)
    mb[0, 0, :4, 0] = [0x3F, 0x21, 0x00, 0x15]
    assert b.pack(mb)[0, 0, 0] == 0x1500213F
    # padding bits are not part of the element
    assert a.from_regs(np.array([[[0xFFFFFFFF] * 4]], dtype=np.uint32)).max() == 0xF
    assert b.from_regs(np.array([[[0xC0C0C0C0] * 2]], dtype=np.uint32)).max() == 0
    e4, _, _ = KERNELS["mma_m16n8k32_e4m3e2m1_f32"].fragments       # 8-bit operands fill the byte
    assert e4.value_bits is None and e4.shift == 0


def test_4bit_registers_hold_eight_elements_low_to_high():
    # "each register containing eight .s4 / .u4 / .e2m1 elements" (9.7.14.5.4, .11), a0 lowest
    a, _, _ = KERNELS["mma_m16n8k64_mxf4_e2m1_f32"].fragments
    m = np.zeros((1, 1, 16, 64), dtype=np.uint64)
    m[0, 0, 0, :8] = np.arange(1, 9)
    assert a.n_regs == 4 and a.pack(m)[0, 0, 0] == 0x87654321
    a8, b8, c8 = KERNELS["mma_m8n8k32_u4_s32"].fragments
    assert (a8.n_regs, b8.n_regs, c8.n_regs) == (1, 1, 2)


def test_scale_registers_match_ptx_9_7_14_3():
    """thread-id-a = 0: lanes %4 in {0, 1} provide SF_A (lane 4g: row g, lane 4g+1: row g+8);
    thread-id-b = 0: lane 4g provides SF_B of column g; byte-id 0: .scale_vec::NX reads bytes
    0..N-1, byte j the j-th K block (Table 35-37, Figures 43-45)."""
    from hw_runner.layouts import mma_scales
    for vec in (1, 2, 4):
        sfa, sfb = mma_scales(vec, 8)
        for lane in range(32):
            g, t = _gt(lane)
            for j in range(4):
                ra, rb = tuple(int(x) for x in sfa.index[lane, j]), tuple(int(x) for x in sfb.index[lane, j])
                assert ra == ((g + 8 * t, j) if t < 2 and j < vec else (-1, -1)), (vec, lane, j)
                assert rb == ((j, g) if t == 0 and j < vec else (-1, -1)), (vec, lane, j)
        held = [tuple(x) for x in sfa.index.reshape(-1, 2).tolist() if x[0] >= 0]
        assert sorted(held) == sorted((r, j) for r in range(16) for j in range(vec))     # each once
    sfa, sfb = KERNELS["mma_m16n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32"].scale_fragments
    m = np.arange(64, dtype=np.uint64).reshape(1, 16, 4) | np.uint64(0x80)
    regs = sfa.pack(m)
    assert regs[0, 1] == 0x23222120 and regs[0, 2] == 0            # lane 1: row 8, 7-bit UE4M3 bytes
    assert np.array_equal(sfa.unpack(regs), m & np.uint64(0x7F))
    mb = np.arange(32, dtype=np.uint64).reshape(1, 4, 8)
    assert sfb.pack(mb)[0, 4] == 0x19110901 and np.array_equal(sfb.unpack(sfb.pack(mb)), mb)


def test_tcgen05_smem_packing_matches_ptx_9_7_16_10_4():
    """kind::f8f6f4 / mxf8f6f4 FP4 and FP6: sixteen elements packed into the first 8 / 12 bytes of
    each 16-byte core-matrix row, the rest padding (9.7.16.10.4.4; the .b4x16_p64 / .b6x16_p32
    formats of 5.5.1.1.1); mxf4 / mxf4nvf4: two FP4 per byte, no padding (9.7.16.10.4.6)."""
    a4, b4, _ = KERNELS["tcgen05_m128n8k32_e2m1e3m2_f32"].fragments
    m = np.zeros((1, 128, 32), dtype=np.uint64)
    m[0, 0, :16] = np.arange(16) & 0xF
    m[0, 0, 16] = 0x9                                    # first element of the next core-matrix column
    img = a4.pack(m).view(np.uint8)[0]
    assert img[:8].tolist() == [0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE] and not img[8:16].any()
    assert img[a4.lbo] == 0x9 and a4.elem_bits == 8 and a4.vbits == 4
    mb = np.zeros((1, 8, 32), dtype=np.uint64)
    mb[0, 1, :4] = [0x3F, 0x00, 0x15, 0x2A]              # row 1: bytes 16.. ; 6-bit elements bit-contiguous
    row = b4.pack(mb).view(np.uint8)[0, 16:32]
    assert int.from_bytes(row[:3].tobytes(), "little") == 0x3F | 0x00 << 6 | 0x15 << 12 | 0x2A << 18
    assert not row[12:].any() and b4.vbits == 6
    f4, _, _ = KERNELS["tcgen05_m128n8k64_mxf4_e2m1_f32"].fragments
    assert (f4.elem_bits, f4.vbits, f4.k) == (4, 4, 64)
    m4 = np.zeros((1, 128, 64), dtype=np.uint64)
    m4[0, 0, 31], m4[0, 0, 32] = 0x7, 0x5               # end of chunk 0, start of chunk 1
    img4 = f4.pack(m4).view(np.uint8)[0]
    assert img4[15] == 0x70 and img4[f4.lbo] == 0x05
    e4, _, _ = KERNELS["tcgen05_m128n8k32_e4m3_f32"].fragments
    assert e4.value_bits is None and e4.descriptor(0x400) >> 46 == 1           # tcgen05 descriptor: 0b001


def test_tcgen05_d_and_scale_images():
    """D (Layout D, M = 128): thread t holds row t, its register i column i (one 32-bit word per
    element, f16 in the low half: 9.7.16.10.4.1). Scales: row r, block j at byte
    (r % 32) * 16 + (r // 32) * 4 + j of the 512-byte image tcgen05.cp .32x128b.warpx4 copies."""
    d = layouts.tcgen05_d(8, 16)
    assert _where(d, 77, 5) == (0, 77, 5) and d.per_reg == 1 and d.value_bits == 16
    regs = d.pack(np.full((1, 1, 128, 8), 0x3C00, dtype=np.uint64))
    assert regs.dtype == np.uint32 and (regs == 0x3C00).all()
    sfa, sfb = KERNELS["tcgen05_m128n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32"].scale_fragments
    m = np.zeros((1, 128, 4), dtype=np.uint64)
    m[0, 70, 3] = 0x45                                   # row 70 = 2 * 32 + 6
    img = sfa.pack(m).view(np.uint8)[0]
    assert img[6 * 16 + 2 * 4 + 3] == 0x45 and img.sum() == 0x45 and sfa.threads == 128
    mb = np.zeros((1, 4, 8), dtype=np.uint64)
    mb[0, 2, 5] = 0xFF                                   # column 5, block 2; UE4M3: 7 bits
    assert sfb.pack(mb).view(np.uint8)[0, 5 * 16 + 2] == 0x7F
    assert np.array_equal(sfb.unpack(sfb.pack(mb)), mb & np.uint64(0x7F))
