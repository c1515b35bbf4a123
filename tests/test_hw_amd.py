"""The AMD MFMA kernels without a GPU: the registry against the catalog, the register layouts
against AMD's published indexing, the ISA of every kernel built here (llvmlite's LLVM, no ROCm),
the linked code objects (with ld.lld), and the HIP launcher against a stand-in runtime."""

from __future__ import annotations

import re
import struct
import sys
import types

import numpy as np
import pytest

from hw_runner.amd import build as amd_build
from hw_runner.amd.kernels import GFX, MFMA_KERNELS
from hw_runner.errors import HarnessError
from hw_runner.kernels import default_kernel, get_kernel, kernels_for
from smtmodel.catalog import all_models, integer_models, model_for_kernel

CDNA_MODELS = [m for m in all_models() + integer_models() if m.gfx]

# The instruction names of the AMD ISA reference guides (CDNA1 "MI100" and CDNA2 "MI200" ISA,
# section "Matrix Arithmetic Instructions"; CDNA3 "MI300" ISA chapter 7, where the names carry an
# underscore before the type and the _1k bf16 instructions are plain _bf16): the 32x32 and 16x16
# single-block MFMA per (gfx, input format, pre-_1k bf16?).
ISA_NAMES = {
    ("gfx908", "fp32", False): {"v_mfma_f32_32x32x2f32", "v_mfma_f32_16x16x4f32"},
    ("gfx908", "fp16", False): {"v_mfma_f32_32x32x8f16", "v_mfma_f32_16x16x16f16"},
    ("gfx908", "bf16", False): {"v_mfma_f32_32x32x4bf16", "v_mfma_f32_16x16x8bf16"},
    ("gfx90a", "fp64", False): {"v_mfma_f64_16x16x4f64"},
    ("gfx90a", "fp32", False): {"v_mfma_f32_32x32x2f32", "v_mfma_f32_16x16x4f32"},
    ("gfx90a", "fp16", False): {"v_mfma_f32_32x32x8f16", "v_mfma_f32_16x16x16f16"},
    ("gfx90a", "bf16", False): {"v_mfma_f32_32x32x8bf16_1k", "v_mfma_f32_16x16x16bf16_1k"},
    ("gfx90a", "bf16", True): {"v_mfma_f32_32x32x4bf16", "v_mfma_f32_16x16x8bf16"},
    ("gfx942", "fp64", False): {"v_mfma_f64_16x16x4_f64"},
    ("gfx942", "fp32", False): {"v_mfma_f32_32x32x2_f32", "v_mfma_f32_16x16x4_f32"},
    ("gfx942", "tf32", False): {"v_mfma_f32_32x32x4_xf32", "v_mfma_f32_16x16x8_xf32"},
    ("gfx942", "fp16", False): {"v_mfma_f32_32x32x8_f16", "v_mfma_f32_16x16x16_f16"},
    ("gfx942", "bf16", False): {"v_mfma_f32_32x32x8_bf16", "v_mfma_f32_16x16x16_bf16"},
    ("gfx942", "fp8e4m3fnuz", False): {"v_mfma_f32_32x32x16_fp8_fp8", "v_mfma_f32_16x16x32_fp8_fp8"},
    ("gfx942", "fp8e5m2fnuz", False): {"v_mfma_f32_32x32x16_bf8_bf8", "v_mfma_f32_16x16x32_bf8_bf8"},
    # the integer MFMAs (i8 x i8 + i32 -> i32): CDNA1/CDNA2 glue the type on, CDNA3 doubles K
    ("gfx908", "int8", False): {"v_mfma_i32_32x32x8i8", "v_mfma_i32_16x16x16i8"},
    ("gfx90a", "int8", False): {"v_mfma_i32_32x32x8i8", "v_mfma_i32_16x16x16i8"},
    ("gfx942", "int8", False): {"v_mfma_i32_32x32x16_i8", "v_mfma_i32_16x16x32_i8"},
    # CDNA4 "MI350" ISA guide: the double-K f16/bf16 MFMAs, gfx942's FP8 ones reading OCP formats,
    # and the f8f6f4 family, unscaled and scaled (True: v_mfma_scale_*)
    ("gfx950", "fp16", False): {"v_mfma_f32_32x32x16_f16", "v_mfma_f32_16x16x32_f16"},
    ("gfx950", "bf16", False): {"v_mfma_f32_32x32x16_bf16", "v_mfma_f32_16x16x32_bf16"},
    ("gfx950", "fp8e4m3", False): {"v_mfma_f32_32x32x16_fp8_fp8", "v_mfma_f32_16x16x32_fp8_fp8",
                                   "v_mfma_f32_32x32x64_f8f6f4", "v_mfma_f32_16x16x128_f8f6f4"},
    ("gfx950", "fp8e5m2", False): {"v_mfma_f32_32x32x16_bf8_bf8", "v_mfma_f32_16x16x32_bf8_bf8",
                                   "v_mfma_f32_32x32x64_f8f6f4", "v_mfma_f32_16x16x128_f8f6f4"},
    **{("gfx950", f, False): {"v_mfma_f32_32x32x64_f8f6f4", "v_mfma_f32_16x16x128_f8f6f4"}
       for f in ("fp6e2m3", "fp6e3m2", "fp4e2m1")},
    **{("gfx950", f, True): {"v_mfma_scale_f32_32x32x64_f8f6f4", "v_mfma_scale_f32_16x16x128_f8f6f4"}
       for f in ("fp8e4m3", "fp8e5m2", "fp6e2m3", "fp6e3m2", "fp4e2m1")},
}


@pytest.fixture(scope="module")
def isa(tmp_path_factory):
    """gfx -> function -> instructions, every MFMA kernel compiled here to assembly (no linker)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MMAPROBE_CACHE", str(tmp_path_factory.mktemp("amd-kernels")))
    try:
        units = {g: amd_build.build_unit([s for s in MFMA_KERNELS.values() if s.supports(g)], g, want_link=False)
                 for g in GFX}
    finally:
        mp.undo()
    return {g: amd_build.parse_isa(u.asm) for g, u in units.items()}


# ---- the registry and the catalog ----------------------------------------------------------

@pytest.mark.parametrize("m", CDNA_MODELS, ids=lambda m: m.id)
def test_every_cdna_model_has_a_kernel_whose_isa_holds_its_instruction(m, isa):
    legacy = m.instruction.endswith("(no _1k)") or bool(m.scale_fmt)     # the pre-_1k bf16, or gfx950's scaled
    want = ISA_NAMES[(m.gfx, m.in_fmt, legacy)]
    assert m.kernels, m.id
    found = set()
    for kid in m.kernels:
        spec = MFMA_KERNELS[kid]
        assert (spec.in_fmt, spec.c_fmt, spec.out_fmt) == (m.in_fmt, m.c_fmt, m.out_fmt), (m.id, kid)
        assert spec.supports(m.gfx), (m.id, kid)
        mfma = {i.split()[0] for i in isa[m.gfx][spec.function] if i.startswith("v_mfma")}
        assert len(mfma) == 1, (kid, mfma)
        found |= mfma
    assert found == want, (m.id, found, want)


def test_each_kernel_and_gfx_has_one_catalog_model():
    owner = {}
    for m in CDNA_MODELS:
        if m.kind == "catalog":
            for kid in m.kernels:
                assert (kid, m.gfx) not in owner, (kid, m.gfx, owner.get((kid, m.gfx)), m.id)
                owner[(kid, m.gfx)] = m.id
    assert {kid for kid, _ in owner} == set(MFMA_KERNELS)
    assert owner[("mfma_f32_32x32x4_bf16", "gfx90a")] == "cdna2-bf16-fp32-legacy"
    assert owner[("mfma_f32_32x32x8_bf16_1k", "gfx90a")] == "cdna2-bf16-fp32"
    for (kid, g), mid in owner.items():
        assert model_for_kernel(kid, g).id == mid
    assert model_for_kernel("mfma_f32_32x32x16_fp8_fp8", "gfx90a") is None


def test_lookup_by_formats_and_target():
    assert get_kernel("mfma_f64_16x16x4_f64").k == 4
    assert {s.id for s in kernels_for("bf16", "fp32", "fp32", "gfx90a")} == {
        "mfma_f32_32x32x4_bf16", "mfma_f32_16x16x8_bf16", "mfma_f32_32x32x8_bf16_1k", "mfma_f32_16x16x16_bf16_1k"}
    assert default_kernel("fp16", "fp32", "fp32", "gfx942").id == "mfma_f32_32x32x8_f16"
    assert all(s.family != "mfma" for s in kernels_for("fp16", "fp32", "fp32", "sm_90"))
    assert not get_kernel("mma_m16n8k16_f16_f32").supports("gfx942")
    with pytest.raises(HarnessError, match="no kernel computes fp8e4m3 inputs"):
        default_kernel("fp8e4m3", "fp32", "fp32", "gfx942")


# ---- layouts --------------------------------------------------------------------------------

@pytest.mark.parametrize("kid", sorted(MFMA_KERNELS))
def test_layout_covers_every_element_once_and_round_trips(kid):
    rng = np.random.default_rng(1)
    for f in MFMA_KERNELS[kid].fragments:
        flat = f.index.reshape(-1, 3)
        keys = flat[:, 1] * f.cols + flat[:, 2]
        assert sorted(keys.tolist()) == list(range(f.rows * f.cols)), (kid, f.operand)
        mats = rng.integers(0, 1 << min(f.elem_bits, 63), (2, 1, f.rows, f.cols), dtype=np.uint64)
        regs = f.pack(mats)
        assert regs.shape == (2, 64, f.n_regs) and np.array_equal(f.unpack(regs), mats)


def _at(frag, lane, slot):
    return tuple(int(x) for x in frag.index[lane, slot, 1:])


def test_layouts_match_amds_indexing():
    """The row-major offsets of AMD's published kernels, recomputed here lane by lane. "Matrix
    Core programming on CDNA3/CDNA4" (Figures 5-7): 32x32x2f32 loads A[t % 32][t / 32], B[t / 32][t % 32]
    and stores c_reg[4i + j] to C[(t / 32) * 4 + 8i + j][t % 32]; 16x16x16f16 loads
    A[t % 16][4 (t / 16) + i], B[4 (t / 16) + i][t % 16], C[4 (t / 16) + i][t % 16];
    32x32x16 fp8 loads A[t % 32][8 (t / 32) + i]."""
    a, b, c = MFMA_KERNELS["mfma_f32_32x32x2_f32"].fragments
    for t in range(64):
        assert _at(a, t, 0) == (t % 32, t // 32) and _at(b, t, 0) == (t // 32, t % 32)
        for i in range(4):
            for j in range(4):
                off = t % 32 + (t // 32) * 4 * 32 + 32 * j + i * 32 * 8
                assert _at(c, t, 4 * i + j) == divmod(off, 32)
    a, b, c = MFMA_KERNELS["mfma_f32_16x16x16_f16"].fragments
    for t in range(64):
        for i in range(4):
            assert _at(a, t, i) == divmod(4 * (t // 16) + 16 * (t % 16) + i, 16)
            assert _at(b, t, i) == divmod(i * 16 + t % 16 + (t // 16) * 64, 16)
            assert _at(c, t, i) == divmod(i * 16 + t % 16 + (t // 16) * 64, 16)
    # ROCm lab notes "AMD matrix cores", dgemm_16x16x16 on gfx90a (dim3(16, 4): x = t % 16,
    # y = t / 16): a = A[LDA*x + y], b = B[x + LDB*y], d[i] -> D[x + 4*LDD*i + LDD*y]
    a, b, c = MFMA_KERNELS["mfma_f64_16x16x4_f64"].fragments
    for t in range(64):
        x, y = t % 16, t // 16
        assert _at(a, t, 0) == divmod(4 * x + y, 4) and _at(b, t, 0) == divmod(x + 16 * y, 16)
        for i in range(4):
            assert _at(c, t, i) == divmod(x + 4 * 16 * i + 16 * y, 16)
    a, _, _ = MFMA_KERNELS["mfma_f32_32x32x16_fp8_fp8"].fragments
    for t in range(64):
        for i in range(8):
            assert _at(a, t, i) == divmod((t // 32) * 8 + (t % 32) * 16 + i, 16)
    # A/B slot i sits at bits 8i of the i64 (little-endian vector elements)
    assert a.per_reg == 4 and a.n_regs == 2


# The AMD Matrix Instruction Calculator's "Matrix element to register mapping with no modifiers"
# (``--detail-instruction``; -a cdna1 for the CDNA1/CDNA2 instructions, -a cdna3 for the CDNA3
# ones), transcribed: per element, (GPR, lowest bit, lane). A/B: GPR (k // 4) % 2 (CDNA1/2: 0),
# bits 8 * (k % 4); C/D: one i32 per GPR.
_I8_CALC = {
    "mfma_i32_32x32x8_i8": (lambda i, k: (0, 8 * (k % 4), 32 * (k // 4) + i),
                            lambda i, j: (4 * (i // 8) + i % 4, 0, (32 * (i // 4)) % 64 + j)),
    "mfma_i32_16x16x16_i8": (lambda i, k: (0, 8 * (k % 4), 16 * (k // 4) + i),
                             lambda i, j: (i % 4, 0, 16 * (i // 4) + j)),
    "mfma_i32_32x32x16_i8": (lambda i, k: ((k // 4) % 2, 8 * (k % 4), 32 * (k // 8) + i),
                             lambda i, j: (4 * (i // 8) + i % 4, 0, (32 * (i // 4)) % 64 + j)),
    "mfma_i32_16x16x32_i8": (lambda i, k: ((k // 4) % 2, 8 * (k % 4), 16 * (k // 8) + i),
                             lambda i, j: (i % 4, 0, 16 * (i // 4) + j)),
}


@pytest.mark.parametrize("kid", sorted(_I8_CALC))
def test_integer_mfma_layouts_match_the_matrix_instruction_calculator(kid):
    """Every element of A, B and D of the i8 MFMAs sits in the GPR, bits and lane that AMD's
    Matrix Instruction Calculator gives (formulas above); B[k][j] follows A's rule with j for i."""
    ab, cd = _I8_CALC[kid]
    a, b, d = MFMA_KERNELS[kid].fragments
    m, _, k = MFMA_KERNELS[kid].shape

    def where(frag):        # element -> (GPR, lowest bit, lane), from the fragment's own index
        per = 32 // frag.elem_bits
        out = {}
        for lane in range(64):
            for slot in range(frag.slots):
                out[_at(frag, lane, slot)] = (slot // per, (slot % per) * frag.elem_bits, lane)
        return out

    wa, wb, wd = where(a), where(b), where(d)
    for i in range(m):
        for kk in range(k):
            assert wa[(i, kk)] == ab(i, kk) and wb[(kk, i)] == ab(i, kk), (kid, i, kk)
        for j in range(m):
            assert wd[(i, j)] == cd(i, j), (kid, i, j)


# ---- the ISA check and the build ------------------------------------------------------------

def test_isa_check_refuses_a_wrong_instruction():
    spec = MFMA_KERNELS["mfma_f32_32x32x8_f16"]
    ok = amd_build.check_isa(spec, "gfx90a", ["v_mfma_f32_32x32x8f16 a[0:15], v[0:1], v[2:3], a[0:15]"])
    assert ok.ok and ok.found == ["v_mfma_f32_32x32x8f16"]
    bad = amd_build.check_isa(spec, "gfx942", ["v_mfma_f32_32x32x8f16 a[0:15], v[0:1], v[2:3], a[0:15]"])
    assert not bad.ok and "no v_mfma_f32_32x32x8_f16" in bad.problem
    none = amd_build.check_isa(spec, "gfx90a", ["v_fma_f32 v0, v1, v2, v3"])
    assert not none.ok and none.found == []


def test_chaining_loop_is_in_the_isa(isa):
    """The accumulator stays in registers across chunks: one MFMA inside a loop (a backward
    branch), C loaded once before it, D stored once after it."""
    insns = isa["gfx90a"]["mmaprobe_mfma_f64_16x16x4_f64"]
    assert sum(i.startswith("v_mfma") for i in insns) == 1
    assert any(re.match(r"s_cbranch_\w+ \.LBB\d+_\d+", i) for i in insns)


def test_unknown_gfx_and_wrong_target_are_one_line_errors():
    with pytest.raises(HarnessError, match="unknown gfx target 'gfx1100'.*gfx908, gfx90a, gfx942"):
        amd_build.check_gfx("gfx1100")
    assert amd_build.check_gfx("gfx90a:sramecc+:xnack-") == "gfx90a"
    with pytest.raises(HarnessError, match="does not run on gfx908"):
        amd_build.code_object_for(MFMA_KERNELS["mfma_f64_16x16x4_f64"], "gfx908")


def test_missing_linker_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("MMAPROBE_CACHE", str(tmp_path))
    monkeypatch.setenv("MMAPROBE_LLD", str(tmp_path / "no-such-ld.lld"))
    with pytest.raises(HarnessError, match="no ld.lld .*apt-get install lld"):
        amd_build.code_object_for(MFMA_KERNELS["mfma_f32_16x16x4_f32"], "gfx908")
    rows = amd_build.build([MFMA_KERNELS["mfma_f32_16x16x4_f32"]])
    assert [r.status.split(";")[0] for r in rows] == ["checked: ISA ok"] * 3 and all(r.ok for r in rows)
    assert not list(tmp_path.glob("*.hsaco"))


EM_AMDGPU, ET_DYN = 0xE0, 3
MACH = {"gfx908": 0x30, "gfx90a": 0x3F, "gfx942": 0x4C, "gfx950": 0x4F}   # EF_AMDGPU_MACH_AMDGCN_* (LLVM AMDGPUUsage)


@pytest.mark.skipif(amd_build.find_lld() is None, reason="no ld.lld (apt-get install lld)")
@pytest.mark.parametrize("gfx", GFX)
def test_linked_code_object_is_an_amdgpu_shared_object(gfx, tmp_path, monkeypatch):
    """What hipModuleLoadData loads: an ELF64 ET_DYN for EM_AMDGPU, the target's machine in
    e_flags, a kernel descriptor symbol ``<kernel>.kd`` per kernel."""
    monkeypatch.setenv("MMAPROBE_CACHE", str(tmp_path))
    specs = [s for s in MFMA_KERNELS.values() if s.supports(gfx)]
    unit = amd_build.build_unit(specs, gfx)
    data = unit.code_object.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[7] == 64          # ELF64, ELFOSABI_AMDGPU_HSA
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    (e_flags,) = struct.unpack_from("<I", data, 48)
    assert (e_type, e_machine, e_flags & 0xFF) == (ET_DYN, EM_AMDGPU, MACH[gfx])
    for s in specs:
        assert f"{s.function}.kd".encode() in data
    again = amd_build.build_unit(specs, gfx)                                   # cached
    assert again.code_object == unit.code_object


# ---- the HIP launcher against a stand-in runtime --------------------------------------------

class _Err(int):
    pass


def _fake_hip(gcn="gfx90a:sramecc+:xnack-", count=1, reject=False):
    """A stand-in for ``hip.hip``: device memory is a dict of byte arrays; a launch computes D =
    C (the kernel's copy of C), enough to check buffers, arguments and grid."""
    hip = types.SimpleNamespace()
    ok, bad = _Err(0), _Err(200)
    hip.hipError_t = types.SimpleNamespace(hipSuccess=ok)
    hip.hipMemcpyKind = types.SimpleNamespace(hipMemcpyHostToDevice=1, hipMemcpyDeviceToHost=2)
    mem, calls = {}, []
    hip.mem, hip.calls = mem, calls

    class Props:
        name, gcnArchName = b"AMD Instinct MI250X", gcn.encode()

    hip.hipDeviceProp_t = Props
    hip.hipGetDeviceCount = lambda: (ok, count)
    hip.hipGetDeviceProperties = lambda i: (ok, Props())        # hip-python >= 7 (6.x: (props, i) -> (err,))
    hip.hipSetDevice = lambda i: (ok,)
    hip.hipModuleLoadData = lambda data: (bad, None) if reject else (ok, "module")
    hip.hipModuleGetFunction = lambda mod, name: (ok, name)

    def malloc(n):
        mem[len(mem) + 1] = bytearray(n)
        return ok, len(mem)

    def memcpy(dst, src, n, kind):
        if kind == 1:
            mem[dst][:] = np.ascontiguousarray(src).view(np.uint8).reshape(-1).tobytes()
        else:
            np.ascontiguousarray(dst).view(np.uint8).reshape(-1)[:] = np.frombuffer(bytes(mem[src]), np.uint8)
        return (ok,)

    def launch(fn, gx, gy, gz, bx, by, bz, sharedMemBytes, stream, kernelParams, extra):
        calls.append((fn, gx, bx, extra))
        pa, pb, pc, pd, n, ch = extra
        mem[pd][:] = mem[pc]
        return (ok,)

    hip.hipMalloc, hip.hipMemcpy, hip.hipModuleLaunchKernel = malloc, memcpy, launch
    hip.hipDeviceSynchronize = lambda: (ok,)
    hip.hipFree = lambda p: (ok,)
    return hip


def _install(monkeypatch, hip, tmp_path):
    pkg = types.ModuleType("hip")
    pkg.hip = hip
    monkeypatch.setitem(sys.modules, "hip", pkg)
    from hw_runner.amd import launch
    co = tmp_path / "fake.hsaco"
    co.write_bytes(b"\x7fELF")
    monkeypatch.setattr(launch, "code_object_for", lambda spec, gfx, check=True: co)
    return launch


def test_hip_launcher_buffers_arguments_and_grid(monkeypatch, tmp_path):
    hip = _fake_hip()
    launch = _install(monkeypatch, hip, tmp_path)
    gpu = launch.HipLauncher(0)
    assert (gpu.name, gpu.arch) == ("AMD Instinct MI250X", "gfx90a")
    spec = MFMA_KERNELS["mfma_f32_32x32x8_f16"]
    a = np.zeros((9, 2, 64, 2), np.uint32)
    c = np.arange(9 * 64 * 16, dtype=np.uint32).reshape(9, 64, 16)
    d = gpu.launch(spec, a, a, c)
    assert np.array_equal(d, c)
    fn, grid, block, extra = hip.calls[0]
    assert (fn, grid, block) == (b"mmaprobe_mfma_f32_32x32x8_f16", 3, 256)      # 9 cases, 4 waves a group
    assert [x.value for x in extra[4:]] == [9, 2]


def test_hip_errors_are_one_line(monkeypatch, tmp_path):
    launch = _install(monkeypatch, _fake_hip(reject=True), tmp_path)
    gpu = launch.HipLauncher(0)
    spec = MFMA_KERNELS["mfma_f32_16x16x4_f32"]
    z = np.zeros((1, 1, 64, 1), np.uint32)
    with pytest.raises(HarnessError, match="rejected the code object of mfma_f32_16x16x4_f32 for gfx90a"):
        gpu.launch(spec, z, z, np.zeros((1, 64, 4), np.uint32))
    with pytest.raises(HarnessError, match="rocm:3 does not exist"):
        launch.HipLauncher(3)
    _install(monkeypatch, _fake_hip(gcn="gfx1100"), tmp_path)
    with pytest.raises(HarnessError, match="unknown gfx target 'gfx1100'"):
        launch.HipLauncher(0)
    _install(monkeypatch, _fake_hip(count=0), tmp_path)
    with pytest.raises(HarnessError, match="rocm:0 does not exist .0 HIP device"):
        launch.HipLauncher(0)


def test_missing_hip_python_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "hip", None)
    from hw_runner.amd.launch import HipLauncher
    with pytest.raises(HarnessError, match="hip-python is not installed: pip install 'mmaprobe\\[rocm\\]'"):
        HipLauncher(0)
