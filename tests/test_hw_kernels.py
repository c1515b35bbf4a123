"""The kernel registry and its generated CUDA source (no toolchain needed)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from hw_runner.errors import HarnessError
from hw_runner.kernels import KERNELS, arch_num, default_kernel, get_kernel, kernels_for, translation_unit

BRIEF = {  # instructions the harness must cover, with the arch and SASS family they target
    "mma_m8n8k4_f16_f32": ("sm_70", "HMMA.884"), "mma_m16n8k8_f16_f32": ("sm_75", "HMMA.1688"),
    "mma_m16n8k16_f16_f32": ("sm_80", "HMMA.16816"), "mma_m16n8k16_bf16_f32": ("sm_80", "HMMA.16816"),
    "mma_m16n8k8_bf16_f32": ("sm_80", "HMMA.1688"), "mma_m16n8k8_tf32_f32": ("sm_80", "HMMA.1688"),
    "mma_m16n8k4_tf32_f32": ("sm_80", "HMMA.1684"), "mma_m16n8k32_e4m3_f32": ("sm_89", "QMMA"),
    "mma_m16n8k32_e5m2_f16": ("sm_89", "QMMA"), "mma_m8n8k4_f64_f64": ("sm_80", "DMMA"),
    "wgmma_m64n8k16_f16_f32": ("sm_90a", "HGMMA"), "wgmma_m64n8k16_f16_f16": ("sm_90a", "HGMMA"),
    "wgmma_m64n8k16_bf16_f32": ("sm_90a", "HGMMA"), "wgmma_m64n8k8_tf32_f32": ("sm_90a", "HGMMA"),
    "wgmma_m64n8k32_e4m3_f32": ("sm_90a", "QGMMA"), "wgmma_m64n8k32_e5m2_f16": ("sm_90a", "QGMMA"),
    "mma_m8n8k16_s8_s32": ("sm_75", "IMMA.8816"), "mma_m16n8k32_s8_s32": ("sm_80", "IMMA.16832"),
    "mma_m16n8k32_u8_s32_sat": ("sm_80", "IMMA.16832.U8.U8.SAT"),
}
FORMATS = {"fp16", "bf16", "tf32", "fp8e4m3", "fp8e5m2", "fp6e2m3", "fp6e3m2", "fp4e2m1", "fp32", "fp64", "int8",
           "uint8", "int4", "uint4", "int32"}


@pytest.mark.parametrize("kid", sorted(BRIEF))
def test_required_kernels_present(kid):
    arch, sass = BRIEF[kid]
    spec = get_kernel(kid)
    assert spec.arch == arch
    assert sass.replace(".", r"\.") in spec.sass[0][1]


@pytest.mark.parametrize("kid", sorted(KERNELS))
def test_spec_consistency(kid):
    s = KERNELS[kid]
    assert {s.in_fmt, s.c_fmt, s.out_fmt} <= FORMATS
    m, n, k = s.shape
    start = {"mma": "mma.sync.aligned", "wgmma": "wgmma.mma_async", "tcgen05": "tcgen05.mma.cta_group::1",
             "ffma": "fma.rn.f32"}[s.family]
    assert (s.family == "ffma" or f"m{m}n{n}k{k}" in s.ptx) and s.ptx.startswith(start)
    assert (s.b_fmt or s.in_fmt) in FORMATS and (s.scale_fmt in (None, "e8m0", "ue4m3"))
    assert bool(s.block_scaled) == (s.kind in ("mxf8f6f4", "mxf4", "mxf4nvf4")) and s.k % (s.scale_block or 1) == 0
    assert s.supports(s.arch) and re.fullmatch(r"mmaprobe_\w+", s.function)
    assert [arch_num(a) for a, _ in s.sass] == sorted(arch_num(a) for a, _ in s.sass)
    src = s.source()
    assert f"{s.function}(" in src and s.ptx in src and src.count("{") == src.count("}")


def test_fp8_mma_sync_lowering_per_arch():
    s = get_kernel("mma_m16n8k32_e4m3_f32")
    assert s.expected_sass("sm_89").startswith(r"QMMA\.16832")
    assert s.expected_sass("sm_90").startswith(r"HMMA\.16816")      # seed 001 §IV-A5/A6
    assert s.expected_sass("sm_100").startswith(r"HMMA\.16816")
    assert s.expected_sass("sm_103").startswith(r"HMMA\.16816")     # B300: the SASS nvcc 13 gives (test_hw_build)
    assert s.expected_sass("sm_120").startswith(r"QMMA\.16832")
    with pytest.raises(HarnessError):
        s.expected_sass("sm_80")


def test_fp8_mma_sync_emulation_parts_hold_only_where_the_hmma_entry_does():
    """On sm_90, sm_100 and sm_103 the SASS check also requires the emulation's other parts, as
    ptxas 13 writes them: an F2FP fp8->fp16 unpack per operand format, an HMMA from a zero
    accumulator (RZ) and c added after it (FADD for an f32 D, HADD2 for f16); on sm_89 and sm_120
    (a native QMMA) none of them."""
    mixed = get_kernel("mma_m16n8k32_e5m2e4m3_f16")
    for arch in ("sm_90", "sm_100", "sm_103"):
        want = mixed.also_expected(arch)
        assert sorted(want) == sorted([r"^F2FP\.F16\.E4M3\.UNPACK_B ", r"^F2FP\.F16\.E5M2\.UNPACK_B ",
                                       r"^HMMA\.16816\.\S+ .*, RZ$", r"^HADD2 "]), (arch, want)
    assert get_kernel("mma_m16n8k32_e4m3_f32").also_expected("sm_103")[-1] == r"^FADD "
    for arch in ("sm_89", "sm_120", "sm_121"):
        assert mixed.also_expected(arch) == [], arch
    s4 = get_kernel("mma_m16n8k64_s4_s32_sat")        # the Hopper 4-bit emulation keeps its parts on sm_90
    assert len(s4.also_expected("sm_90")) == 3 and s4.also_expected("sm_89") == []


def test_arch_support_rules():
    assert get_kernel("mma_m8n8k4_f16_f32").supports("sm_75")
    assert not get_kernel("mma_m8n8k4_f16_f32").supports("sm_80")     # FMA fallback there
    w = get_kernel("wgmma_m64n8k16_f16_f32")
    assert w.supports("sm_90") and not w.supports("sm_100") and w.compile_target("sm_90") == "sm_90a"
    assert get_kernel("mma_m16n8k16_f16_f32").compile_target("sm_86") == "sm_86"
    with pytest.raises(HarnessError):
        arch_num("ampere")


def test_default_kernel_prefers_largest_mma_sync():
    assert default_kernel("fp16", "fp32", "fp32", "sm_90").id == "mma_m16n8k16_f16_f32"
    assert default_kernel("fp16", "fp32", "fp32", "sm_75").id == "mma_m16n8k8_f16_f32"
    assert default_kernel("fp8e4m3", "fp32", "fp32", "sm_90").id == "mma_m16n8k32_e4m3_f32"
    assert default_kernel("tf32", "fp32", "fp32", "sm_80").id == "mma_m16n8k8_tf32_f32"
    assert {s.id for s in kernels_for("fp8e5m2", "fp16", "fp16", "sm_90")} == {
        "mma_m16n8k32_e5m2_f16", "wgmma_m64n8k32_e5m2_f16"}
    with pytest.raises(HarnessError, match="no kernel"):
        default_kernel("fp8e4m3", "fp32", "fp32", "sm_80")
    with pytest.raises(HarnessError, match="unknown kernel"):
        get_kernel("mma_nope")


def test_generated_asm_operands():
    src = get_kernel("mma_m16n8k16_f16_f32").source()
    assert "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3}" in src
    f64 = get_kernel("mma_m8n8k4_f64_f64").source()
    assert '"+d"(d0)' in f64 and '"d"(a0)' in f64
    w = get_kernel("wgmma_m64n8k32_e4m3_f16").source()
    assert '"+r"(d1)' in w and "p, 1, 1;" in w and "fence.proxy.async" in w          # no trans args for fp8
    assert "p, 1, 1, 0, 0;" in get_kernel("wgmma_m64n8k16_bf16_f32").source()       # K-major A and B
    assert translation_unit(KERNELS.values()).startswith("#include <cstdint>")


def test_integer_kernels_satfinite_apart():
    """.satfinite kernels are chosen only when asked for; the PTX carries the qualifier and the
    SASS check wants .SAT (nvcc 13: IMMA.16832.S8.S8.SAT)."""
    plain = {s.id for s in kernels_for("int8", "int32", "int32", "sm_80")}
    sat = {s.id for s in kernels_for("int8", "int32", "int32", "sm_80", satfinite=True)}
    assert plain == {"mma_m8n8k16_s8_s32", "mma_m16n8k32_s8_s32"}
    assert sat == {"mma_m8n8k16_s8_s32_sat", "mma_m16n8k32_s8_s32_sat"}
    s = get_kernel("mma_m16n8k32_s8_s32_sat")
    assert ".satfinite.s32.s8.s8.s32" in s.ptx and s.expected_sass("sm_90").endswith(r"\.SAT\b")
    assert default_kernel("uint8", "int32", "int32", "sm_89").id == "mma_m16n8k32_u8_s32"
    assert get_kernel("mma_m8n8k16_s8_s32").expected_sass("sm_100").startswith(r"IMMA\.16816")


def test_tcgen05_instruction_descriptors_match_ptx_9_7_16_4_2():
    """Hand-assembled from PTX ISA Tables 42-44: kind::f16 f16 x f16 -> f32, M = 128, N = 8:
    dtype F32 (1) at bit 4, atype/btype F16 (0), N >> 3 = 1 at bit 17, M >> 4 = 8 at bit 24."""
    assert get_kernel("tcgen05_m128n8k16_f16_f32").instr_descriptor == 1 << 4 | 1 << 17 | 8 << 24
    assert get_kernel("tcgen05_m128n8k16_bf16_f32").instr_descriptor == 1 << 4 | 1 << 7 | 1 << 10 | 1 << 17 | 8 << 24
    assert get_kernel("tcgen05_m128n8k8_tf32_f32").instr_descriptor == 1 << 4 | 2 << 7 | 2 << 10 | 1 << 17 | 8 << 24
    assert get_kernel("tcgen05_m128n8k16_f16_f16").instr_descriptor == 1 << 17 | 8 << 24         # dtype F16 = 0
    # f8f6f4: E4M3 0, E5M2 1, E2M3 3, E3M2 4, E2M1 5
    assert get_kernel("tcgen05_m128n8k32_e3m2e2m1_f32").instr_descriptor == 1 << 4 | 4 << 7 | 5 << 10 | 1 << 17 | 8 << 24
    # Table 43 (mxf8f6f4): no dtype field; scale type UE8M0 = 1 at bit 23; M >> 7 = 1 at bit 27
    assert get_kernel("tcgen05_m128n8k32_mxf8f6f4_e5m2e2m3_f32").instr_descriptor == \
        1 << 7 | 3 << 10 | 1 << 17 | 1 << 23 | 1 << 27
    # Table 44 (mxf4 / mxf4nvf4): E2M1 = 1 in both type fields; UE4M3 = 0 at bit 23
    assert get_kernel("tcgen05_m128n8k64_mxf4_e2m1_f32").instr_descriptor == 1 << 7 | 1 << 10 | 1 << 17 | 1 << 23 | 1 << 27
    assert get_kernel("tcgen05_m128n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32").instr_descriptor == \
        1 << 7 | 1 << 10 | 1 << 17 | 1 << 27
    # kind::i8 (Table 42): saturate at bit 3, dtype S32 = 2, unsigned 8b = 0 / signed 8b = 1
    assert get_kernel("tcgen05_m128n8k32_s8_s32").instr_descriptor == 2 << 4 | 1 << 7 | 1 << 10 | 1 << 17 | 8 << 24
    assert get_kernel("tcgen05_m128n8k32_u8_s32_sat").instr_descriptor == 1 << 3 | 2 << 4 | 1 << 17 | 8 << 24
    with pytest.raises(HarnessError, match="not a tcgen05 kernel"):
        get_kernel("mma_m16n8k16_f16_f32").instr_descriptor


def test_tcgen05_source_runs_the_whole_protocol():
    """Allocation, C into tensor memory, per chunk the MMA with its commit and mbarrier wait, D read
    back, deallocation; the block-scaled kinds copy their scales with tcgen05.cp first."""
    src = get_kernel("tcgen05_m128n8k16_f16_f32").source()
    steps = ["tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32", "tcgen05.relinquish_alloc_permit",
             "mbarrier.init.shared::cta.b64", "tcgen05.st.sync.aligned.32x32b.x8.b32",
             "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;", "tcgen05.commit.cta_group::1.mbarrier::arrive::one",
             "mbarrier.try_wait.parity.shared::cta.b64", "tcgen05.ld.sync.aligned.32x32b.x8.b32",
             "tcgen05.wait::ld.sync.aligned", "tcgen05.dealloc.cta_group::1.sync.aligned.b32"]
    pos = [src.index(x) for x in steps]
    assert pos == sorted(pos)
    assert f"idesc = {get_kernel('tcgen05_m128n8k16_f16_f32').instr_descriptor}u" in src
    assert "(1 << 46)" not in src and str(1 << 46 | 16 << 32 | 8 << 16) + "ull" in src     # desc version 0b001
    mx = get_kernel("tcgen05_m128n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32").source()
    assert mx.index("tcgen05.cp.cta_group::1.32x128b.warpx4") < mx.index(
        "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.scale_vec::4X [%0], %1, %2, %3, [%4], [%5], p;")
    assert mx.count("tcgen05.cp.") == 2 and "const uint32_t* __restrict__ SA" in mx
    assert get_kernel("tcgen05_m128n8k16_f16_f16").source().count("& 0xFFFFu") == 1     # f16 D: low half only
    i8 = get_kernel("tcgen05_m128n8k32_s8_s32_sat")
    src = i8.source()                                               # s32 D: all 32 bits, types in the descriptor
    assert "& 0xFFFFu" not in src and "tcgen05.mma.cta_group::1.kind::i8 [%0], %1, %2, %3, p;" in src
    assert f"idesc = {i8.instr_descriptor}u" in src


def test_ffma_kernel_and_its_model():
    """The CUDA-core kernel (fma.rn.f32 chained over k, SASS FFMA) runs on every arch nvcc 13
    builds; the catalog's model of it on sm_90 is hopper-fp32-fp32 (K = 1: no override), and no
    other arch has one. Lane t holds A[t >> 2][0], B[0][t & 3] and D[t >> 2][t & 3]."""
    from smtmodel.catalog import get_model, model_for_kernel
    s = get_kernel("ffma_m8n4k1_f32_f32")
    assert (s.family, s.shape, s.in_fmt, s.c_fmt, s.out_fmt) == ("ffma", (8, 4, 1), "fp32", "fp32", "fp32")
    assert s.expected_sass("sm_90") == r"^FFMA$" and s.compile_target("sm_90") == "sm_90"
    assert s.supports("sm_75") and s.supports("sm_120") and not s.supports("sm_70")
    assert "fma.rn.f32 %0, %1, %2, %0;" in s.source() and '"+f"(d0)' in s.source()
    m = model_for_kernel(s.id, 90, s.k)
    assert m.id == "hopper-fp32-fp32" and s.id in get_model("hopper-fp32-fp32").kernels
    assert model_for_kernel(s.id, 80, s.k) is None and model_for_kernel(s.id, 100, s.k) is None
    assert default_kernel("fp32", "fp32", "fp32", "sm_90").id == s.id
    a, b, c = s.fragments
    lanes = range(32)
    assert [tuple(a.index[t, 0]) for t in lanes] == [(0, t >> 2, 0) for t in lanes]
    assert [tuple(b.index[t, 0]) for t in lanes] == [(0, 0, t & 3) for t in lanes]
    assert [tuple(c.index[t, 0]) for t in lanes] == [(0, t >> 2, t & 3) for t in lanes]
    assert (a.rows, a.cols, b.rows, b.cols, c.rows, c.cols) == (8, 1, 1, 4, 8, 4) and c.n_regs == 1


@pytest.mark.parametrize("replicate", [False, True])
def test_ffma_kernel_round_trip_through_the_twin_launcher(replicate):
    """Packed as the kernel reads its buffers (one chunk per product), answered by the catalog's
    sm_90 model and unpacked: D[0][0] is hopper-fp32-fp32 on the case (specials and subnormals
    from the validation mix; k = 7)."""
    from hw_runner.runner import run_on_device
    from hw_runner.twin_launcher import TwinLauncher, catalog_answer
    from smtmodel.catalog import get_model
    from smtmodel.sampling import validation_mix
    s = get_kernel("ffma_m8n4k1_f32_f32")
    a, b, c, _ = validation_mix("fp32", "fp32", 7, 40, 9)
    want = get_model("hopper-fp32-fp32").evaluate(a, b, c, jobs=1)
    out = run_on_device(TwinLauncher("sm_90", catalog_answer("sm_90"), jobs=1), s, a, b, c, replicate=replicate)
    assert np.array_equal(out.d, want)
    if replicate:
        assert out.uniform.all()
