"""Building kernels with nvcc and checking their SASS. Tests that compile skip without nvcc;
the SASS checks also need cuobjdump or nvdisasm (PyPI: nvidia-cuda-cuobjdump)."""

from __future__ import annotations

import os
import re
import stat
from collections import Counter

import pytest

from hw_runner import build
from hw_runner.errors import HarnessError
from hw_runner.kernels import KERNELS, get_kernel

HAVE_NVCC = build.find_tool("nvcc") is not None
HAVE_DISASM = bool(build.find_tool("cuobjdump") or build.find_tool("nvdisasm"))
needs_nvcc = pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not found")
needs_sass = pytest.mark.skipif(not (HAVE_NVCC and HAVE_DISASM), reason="nvcc or cuobjdump/nvdisasm not found")

CUOBJDUMP = """
	code for sm_90
		Function : mmaprobe_mma_m16n8k16_f16_f32
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;          /* 0x00000a00ff017b82 */
        /*0010*/               @P0 EXIT ;                             /* 0x000000000000094d */
        /*0160*/                   HMMA.16816.F32 R16, R4, R14, R16 ;   /* 0x0000000e0410723c */
		Function : other
        /*0000*/                   FFMA R0, R1, R2, R3 ;
"""
NVDISASM = """
	.section	.text.mmaprobe_wgmma_m64n8k16_f16_f32,"ax",@progbits
.text.mmaprobe_wgmma_m64n8k16_f16_f32:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0200*/                   HGMMA.64x8x16.F32 R24, gdesc[UR4], RZ, !UPT ;
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    d = tmp_path_factory.mktemp("kernels")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MMAPROBE_CACHE", str(d))
        yield d


def test_parse_sass_both_disassemblers():
    f = build.parse_sass(CUOBJDUMP)
    assert f["mmaprobe_mma_m16n8k16_f16_f32"] == ["LDC R1, c[0x0][0x28]", "EXIT", "HMMA.16816.F32 R16, R4, R14, R16"]
    assert f["other"] == ["FFMA R0, R1, R2, R3"]
    g = build.parse_sass(NVDISASM)
    assert g["mmaprobe_wgmma_m64n8k16_f16_f32"][-1].startswith("HGMMA.64x8x16.F32")


def test_check_sass_accepts_tensor_core_and_rejects_fallback():
    spec = get_kernel("mma_m16n8k16_f16_f32")
    ok = build.check_sass(spec, "sm_90", ["LDC R1", "HMMA.16816.F32 R16, R4, R14, R16"])
    assert ok.ok and ok.found == ["HMMA.16816.F32"]
    wrong = build.check_sass(spec, "sm_90", ["HMMA.1688.F32 R1, R2, R3, R4"])
    assert not wrong.ok and "no instruction matches" in wrong.problem
    mixed = build.check_sass(spec, "sm_90", ["HMMA.16816.F32 R1, R2, R3, R4", "FFMA R0, R1, R2, R3"])
    assert not mixed.ok and "FFMA" in mixed.problem
    bf = build.check_sass(get_kernel("mma_m16n8k16_bf16_f32"), "sm_80", ["HMMA.16816.F32 R1, R2, R3, R4"])
    assert not bf.ok                                 # an f16 HMMA is not the bf16 instruction


def test_check_sass_of_the_ffma_kernel():
    """The CUDA-core kernel expects a plain FFMA: its own FFMA is no fallback, ptxas's constant
    moves (HFMA2[.MMA] Rd, -RZ, RZ, 0, 0: sm_80, sm_120) are none either; an FFMA.FTZ (flushed
    subnormals) or an FMUL fails; a tensor-core kernel beside an FFMA still fails."""
    spec = get_kernel("ffma_m8n4k1_f32_f32")
    ok = build.check_sass(spec, "sm_80", ["HFMA2.MMA R21, -RZ, RZ, 0, 0", "FFMA R23, R26, R25, R23"])
    assert ok.ok and ok.found == ["FFMA"]
    ftz = build.check_sass(spec, "sm_90", ["FFMA.FTZ R1, R2, R3, R1"])
    assert not ftz.ok and "no instruction matches" in ftz.problem
    mul = build.check_sass(spec, "sm_90", ["FFMA R1, R2, R3, R1", "FMUL R4, R5, R6"])
    assert not mul.ok and "FMUL" in mul.problem
    hfma = build.check_sass(spec, "sm_90", ["FFMA R1, R2, R3, R1", "HFMA2 R4, R5, R6, R7"])
    assert not hfma.ok and "HFMA2" in hfma.problem
    mma = build.check_sass(get_kernel("mma_m16n8k16_f16_f32"), "sm_90",
                           ["HMMA.16816.F32 R1, R2, R3, R4", "HFMA2.MMA R5, -RZ, RZ, 0, 0", "FFMA R0, R1, R2, R3"])
    assert not mma.ok and mma.problem.endswith("FFMA")


@needs_sass
def test_ffma_kernel_builds_and_checks_for_hopper(cache):
    """ptxas 13 lowers the kernel's fma.rn.f32 to plain FFMAs on sm_90, one per product, each
    accumulating onto the last one's result."""
    spec = get_kernel("ffma_m8n4k1_f32_f32")
    insns = build.disassemble(build.compile_unit([spec], "sm_90"), "sm_90")[spec.function]
    res = build.check_sass(spec, "sm_90", insns)
    assert res.ok and res.found == ["FFMA"], res.problem
    ffma = [i for i in insns if i.startswith("FFMA")]
    assert ffma and all(i.split()[0] == "FFMA" for i in ffma)


def _fake_nvcc(tmp_path, codes):
    p = tmp_path / "nvcc"
    p.write_text("#!/bin/sh\ncase \"$1\" in\n --version) echo 'Cuda compilation tools, release 0.0, fake';;\n"
                 f" --list-gpu-code) printf '{chr(10).join(codes)}\\n';;\n *) exit 1;;\nesac\n")
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return p


def test_toolchain_without_volta_skips_sm70(tmp_path, monkeypatch, cache):
    monkeypatch.setenv("MMAPROBE_NVCC", str(_fake_nvcc(tmp_path, ["sm_75", "sm_80"])))
    monkeypatch.setenv("MMAPROBE_LEGACY_CUDA", str(tmp_path / "no-such-folder"))
    monkeypatch.setattr(build.sys, "path", [])
    assert build.toolchain_lacks("sm_70").startswith(
        "toolchain lacks sm_70 (CUDA 13 dropped it: set MMAPROBE_LEGACY_CUDA to a CUDA 12 toolkit's bin")
    assert build.toolchain_lacks("sm_80") is None
    rows = build.build([get_kernel("mma_m8n8k4_f16_f16")], check=False)
    by_arch = {r.arch: r.status for r in rows}
    assert by_arch["sm_70"].startswith("skipped: toolchain lacks sm_70")
    assert by_arch["sm_75"].startswith("failed: nvcc failed for sm_75")      # the fake cannot compile
    with pytest.raises(HarnessError, match="cannot build for sm_70"):
        build.compile_unit([get_kernel("mma_m8n8k4_f16_f16")], "sm_70")


def test_retarget_ptx_rewrites_the_header_only():
    ptx = "//\n.version 9.0\n.target sm_75\n.address_size 64\n\t// .target sm_80 in a comment\nmma.sync;\n"
    out = build.retarget_ptx(ptx, "sm_70", "8.4")
    assert out == ptx.replace(".version 9.0", ".version 8.4").replace(".target sm_75\n", ".target sm_70\n")
    assert ".version 7.0" in build.retarget_ptx(ptx.replace("9.0", "7.0"), "sm_70", "8.4")   # never raised
    with pytest.raises(HarnessError, match="cannot retarget"):
        build.retarget_ptx(".target sm_75\n", "sm_70", "8.4")


def _script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@needs_nvcc
def test_legacy_ptxas_route(tmp_path, monkeypatch):
    """A target the main nvcc lacks goes through its PTX for compute_75, retargeted, into the
    legacy ptxas of $MMAPROBE_LEGACY_CUDA (here a stand-in that reads ISA 8.4 and copies its
    input to the output), and is read by the legacy disassembler, whose empty output is an error."""
    legacy = tmp_path / "cuda12"
    legacy.mkdir()
    _script(legacy / "ptxas", 'for a; do case "$a" in -o) o=1;; *) if [ -n "$o" ]; then out=$a; o=; fi; in=$a;; esac; '
            'done\ncase "$(head -1 "$in")" in ".version 99.9") echo "ptxas probe.ptx, line 1; fatal   : '
            "Unsupported .version 99.9; current version is '8.4'\" >&2; exit 1;; esac\n"
            'if [ "$1" = --version ]; then echo "Cuda compilation tools, release 12.4"; exit 0; fi\ncp "$in" "$out"\n')
    _script(legacy / "cuobjdump", "echo '\tcode for sm_70'\n")
    monkeypatch.setenv("MMAPROBE_LEGACY_CUDA", str(legacy))
    monkeypatch.setenv("MMAPROBE_CACHE", str(tmp_path / "cache"))
    if "sm_70" in build.nvcc_info()[1]:
        pytest.skip("this nvcc builds sm_70 itself")
    assert build.toolchain_lacks("sm_70") is None and build.legacy_route("sm_70") == ("ptxas", str(legacy / "ptxas"))
    spec = get_kernel("mma_m8n8k4_f16_f32")
    ptx = build.compile_unit([spec], "sm_70").read_text()     # the stand-in "assembled" the PTX it got
    assert ".target sm_70\n" in ptx and ".version 8.4\n" in ptx and "mma.sync.aligned.m8n8k4" in ptx
    with pytest.raises(HarnessError, match="printed no SASS"):
        build.disassemble(build.compile_unit([spec], "sm_70"), "sm_70")


LEGACY = build.legacy_route("sm_70") if HAVE_NVCC and "sm_70" not in (build.nvcc_info() or ("", ()))[1] else None


@pytest.mark.skipif(LEGACY is None, reason="no CUDA 12 toolchain for sm_70: set MMAPROBE_LEGACY_CUDA to folders with "
                    "a CUDA 12 ptxas and cuobjdump/nvdisasm (docs/harness.md, '4-bit integers and Volta')")
def test_volta_kernels_build_and_check_with_the_legacy_toolchain(cache):
    """The two sm_70 kernels assembled by a CUDA 12 ptxas (or nvcc) and disassembled by a CUDA 12
    cuobjdump/nvdisasm: HMMA.884 in four (f32) or two (f16) steps, no FMA fallback."""
    specs = [get_kernel("mma_m8n8k4_f16_f32"), get_kernel("mma_m8n8k4_f16_f16")]
    rows = {r.spec.id: r for r in build.build(specs) if r.arch == "sm_70"}
    assert rows["mma_m8n8k4_f16_f32"].status == "ok" and rows["mma_m8n8k4_f16_f16"].status == "ok", rows
    assert rows["mma_m8n8k4_f16_f32"].sass == [f"HMMA.884.F32.F32.STEP{i}" for i in range(4)]
    assert rows["mma_m8n8k4_f16_f16"].sass == ["HMMA.884.F16.F16.STEP0", "HMMA.884.F16.F16.STEP1"]


def test_no_nvcc_reports_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv("MMAPROBE_NVCC", str(tmp_path / "missing-nvcc"))
    rows = build.build([get_kernel("mma_m16n8k16_f16_f32")])
    assert rows and all(r.status.startswith("skipped: nvcc not found") for r in rows)


def test_check_archs_cover_targets():
    assert build.check_archs(get_kernel("wgmma_m64n8k32_e4m3_f32")) == ["sm_90a"]
    assert build.check_archs(get_kernel("mma_m8n8k4_f16_f32")) == ["sm_70", "sm_75"]
    assert build.check_archs(get_kernel("mma_m16n8k32_e4m3_f32")) == ["sm_89", "sm_90", "sm_100", "sm_103", "sm_120"]
    assert "sm_103" in build.check_archs(get_kernel("mma_m8n8k4_f64_f64"))          # B300's fp64 alias
    mx = get_kernel("mma_m16n8k32_mxf8f6f4_e2m1e5m2_f32")
    assert build.check_archs(mx) == ["sm_120"] and mx.compile_target("sm_121") == "sm_121a"
    assert mx.supports("sm_121") and not mx.supports("sm_100") and not mx.supports("sm_89")
    s4 = get_kernel("mma_m8n8k32_s4_s32")
    assert build.check_archs(s4) == ["sm_75", "sm_80", "sm_89", "sm_90"] and not s4.supports("sm_100")
    assert s4.emulated_on("sm_90") and not s4.emulated_on("sm_89")


@needs_sass
def test_build_one_kernel_per_target_and_check_sass(cache):
    """The default run builds and SASS-checks the first kernel of every check target (the whole
    set, and the catalog's coverage, -m slow below)."""
    first = {}
    for spec in KERNELS.values():
        for arch in build.check_archs(spec):
            first.setdefault(spec.compile_target(arch), spec)
    specs = list({s.id: s for s in first.values()}.values())
    rows = build.build(specs, check=True)
    bad = [(r.spec.id, r.arch, r.status) for r in rows if not r.ok]
    assert not bad, bad
    supported = build.nvcc_info()[1]
    built = {r.target for r in rows if r.status == "ok"}
    assert {t for t in first if f"sm_{t[3:].rstrip('af')}" in supported} <= built


@needs_sass
@pytest.mark.slow          # every kernel for every target: minutes of ptxas
def test_build_all_and_check_sass(cache):
    rows = build.build(check=True)
    bad = [(r.spec.id, r.arch, r.status) for r in rows if not r.ok]
    assert not bad, bad
    checked = {(r.spec.id, r.arch) for r in rows if r.status == "ok"}
    supported = build.nvcc_info()[1]
    for spec in KERNELS.values():                      # every kernel verified wherever nvcc can build it
        for arch in build.check_archs(spec):
            if f"sm_{arch[3:].rstrip('a')}" in supported:
                assert (spec.id, arch) in checked
    from hw_runner.coverage import catalog_models, coverage
    from smtmodel.catalog import alias_models, all_models, integer_models
    cov = coverage(catalog_models(("nvidia",)), rows)
    for c in cov:                                      # every catalog model of a buildable arch
        if c.target in supported:
            assert c.models and not c.missing, (c.arch, c.missing)
    # the count is the catalog's: every NVIDIA model (findings, rivals, B300 aliases) in one row
    nvidia = [m for m in all_models() + integer_models() + alias_models() if m.sm]
    assert sum(len(c.models) for c in cov) == len(nvidia)
    assert sum(len(c.covered) for c in cov) == sum(f"sm_{m.sm}" in supported for m in nvidia)
    b300 = next(c for c in cov if c.target == "sm_103")
    assert b300.arch == "blackwell-ultra" and sorted(b300.covered) == sorted(m.id for m in alias_models())
    fp8_90 = next(r for r in rows if r.spec.id == "mma_m16n8k32_e4m3_f32" and r.arch == "sm_90")
    assert fp8_90.sass == ["HMMA.16816.F32"]          # fp8 mma.sync lowered to HMMA on Hopper


B300_MMA = {  # mma.sync kernels of the B300 aliases -> the tensor-core mnemonic ptxas 13 gives for sm_103
    "mma_m16n8k8_f16_f32": "HMMA.1688.F32", "mma_m16n8k8_f16_f16": "HMMA.1688.F16",
    "mma_m16n8k16_f16_f32": "HMMA.16816.F32", "mma_m16n8k16_f16_f16": "HMMA.16816.F16",
    "mma_m16n8k8_bf16_f32": "HMMA.1688.F32.BF16", "mma_m16n8k16_bf16_f32": "HMMA.16816.F32.BF16",
    "mma_m16n8k4_tf32_f32": "HMMA.1684.F32.TF32", "mma_m16n8k8_tf32_f32": "HMMA.1688.F32.TF32",
    "mma_m16n8k32_e4m3_f32": "HMMA.16816.F32", "mma_m16n8k32_e4m3_f16": "HMMA.16816.F16",
    "mma_m16n8k32_e5m2_f32": "HMMA.16816.F32", "mma_m16n8k32_e5m2_f16": "HMMA.16816.F16",
    "mma_m16n8k32_e4m3e5m2_f32": "HMMA.16816.F32", "mma_m16n8k32_e4m3e5m2_f16": "HMMA.16816.F16",
    "mma_m16n8k32_e5m2e4m3_f32": "HMMA.16816.F32", "mma_m16n8k32_e5m2e4m3_f16": "HMMA.16816.F16",
    "mma_m8n8k4_f64_f64": "DMMA.8x8x4"}


def test_b300_aliases_name_tcgen05_and_the_mma_sync_kernels_listed_here():
    """The B300 aliases' kernels that are not tcgen05 are exactly B300_MMA's, and all run on sm_103
    (no toolchain needed)."""
    from smtmodel.catalog import alias_models
    kernels = {k for m in alias_models() for k in m.kernels}
    assert {k for k in kernels if not k.startswith("tcgen05_")} == set(B300_MMA)
    assert all(get_kernel(k).supports("sm_103") for k in kernels)


@needs_sass
def test_b300_mma_sync_kernels_build_and_check_for_sm_103(cache):
    """The B300 (sm_103) mma.sync kernels, disassembled: fp16, bf16 and tf32 to their HMMA, FP8
    as on sm_90 and sm_100 (F2FP
    fp8->fp16 unpacks, two HMMA.16816 per chunk, the first from a zero accumulator, c added after by
    FADD / HADD2: seed 001 §IV-A5/A6 for Hopper, seen here in ptxas 13's SASS for sm_103), fp64 to
    DMMA.8x8x4; each kernel's instructions are those of its sm_100 build (ptxas pads sm_103
    functions with NOPs, left out of the comparison), and the native-QMMA check of sm_89/sm_120
    refuses them."""
    specs = [get_kernel(k) for k in B300_MMA]
    funcs = build.disassemble(build.compile_unit(specs, "sm_103"), "sm_103")
    funcs100 = build.disassemble(build.compile_unit(specs, "sm_100"), "sm_100")
    for s in specs:
        insns = funcs[s.function]
        res = build.check_sass(s, "sm_103", insns)
        assert res.ok and res.found == [B300_MMA[s.id]], (s.id, res)
        ops = Counter(i.split()[0] for i in insns if i != "NOP")
        assert ops == Counter(i.split()[0] for i in funcs100[s.function] if i != "NOP"), s.id
        if s.id.startswith("mma_m16n8k32"):
            assert not build.check_sass(s, "sm_120", insns).ok             # no QMMA on sm_103
            hmma = [i for i in insns if i.startswith("HMMA.16816")]
            assert len(hmma) % 2 == 0 and sum(i.endswith(", RZ") for i in hmma) == len(hmma) // 2
            for rx in s.also_expected("sm_103"):                           # each part is needed:
                bad = build.check_sass(s, "sm_103", [i for i in insns if not re.search(rx, i)])
                assert not bad.ok and rx in bad.problem, (s.id, rx)
        assert "sm_103" in build.check_archs(s)         # and harness build checks it there


@needs_sass
def test_sm120_block_scaled_and_s4_sass(cache):
    """The mnemonics nvcc 13 gives (seen by disassembling, now the SASS check's regexes)."""
    want = {"mma_m16n8k32_mxf8f6f4_e2m1e5m2_f32": "QMMA.SF.16832.F32.E2M1.E5M2.E8",
            "mma_m16n8k64_mxf4_e2m1_f32": "OMMA.SF.16864.F32.E2M1.E2M1.E8",
            "mma_m16n8k64_mxf4nvf4_4x_ue4m3_e2m1_f32": "OMMA.SF.16864.F32.E2M1.E2M1.UE4M3.4X",
            "mma_m16n8k32_e3m2e2m1_f32": "QMMA.16832.F32.E3M2.E2M1",
            "mma_m16n8k32_e2m3_f16": "QMMA.16832.F16.E2M3.E2M3"}
    specs = [get_kernel(k) for k in want]
    funcs = build.disassemble(build.compile_unit(specs, "sm_120a"))
    for s in specs:
        res = build.check_sass(s, "sm_120", funcs[s.function])
        assert res.ok and res.found == [want[s.id]], (s.id, res)
    s4 = get_kernel("mma_m16n8k64_s4_s32_sat")
    assert build.check_sass(s4, "sm_89", build.disassemble(build.compile_unit([s4], "sm_89"))[s4.function]).found \
        == ["IMMA.16864.S4.S4.SAT"]
    # on sm_90 nvcc 13 emulates the 4-bit PTX: two 8-bit IMMA of half the K from a zero accumulator,
    # integer adds, and the .satfinite clamp as SEL of the s32 bounds (seen by disassembling)
    emu = build.disassemble(build.compile_unit([s4], "sm_90"))[s4.function]
    assert not build.check_sass(s4, "sm_89", emu).ok
    assert sum(i.startswith("IMMA.16832.S8.S8 ") and i.endswith(", RZ") for i in emu) == 2
    assert build.check_sass(s4, "sm_90", emu).ok
    # the wrap-around kernel's emulation has no clamp: the .satfinite check refuses it
    wrap = get_kernel("mma_m16n8k64_s4_s32")
    plain = build.disassemble(build.compile_unit([wrap], "sm_90"))[wrap.function]
    assert build.check_sass(wrap, "sm_90", plain).ok
    bad = build.check_sass(s4, "sm_90", plain)
    assert not bad.ok and "0x7fffffff" in bad.problem


@needs_sass
def test_m8n8k4_f16_on_ampere_is_an_fma_fallback(cache):
    # seed 002 §3.1: mma.m8n8k4 no longer invokes the tensor cores on Ampere.
    spec = get_kernel("mma_m8n8k4_f16_f32")
    funcs = build.disassemble(build.compile_unit([spec], "sm_80"))
    res = build.check_sass(spec, "sm_80", funcs[spec.function])
    assert not res.ok and "FMA fallback" in res.problem and not res.found
    with pytest.raises(HarnessError, match="does not run on sm_80"):
        build.cubin_for(spec, "sm_80")


@needs_sass
def test_integer_tcgen05_is_sm100_only(cache):
    """kind::i8 builds to UTCIMMA for sm_100a; ptxas refuses it for sm_103a, and the harness
    refuses the kernel for sm_103 in one line saying why."""
    spec = get_kernel("tcgen05_m128n8k32_s8_s32_sat")
    assert build.check_archs(spec) == ["sm_100"] and spec.compile_target("sm_100") == "sm_100a"
    res = build.check_sass(spec, "sm_100", build.disassemble(build.compile_unit([spec], "sm_100a"))[spec.function])
    assert res.ok and res.found == ["UTCIMMA"]
    with pytest.raises(HarnessError, match="not supported on .target 'sm_103a'"):
        build.compile_unit([spec], "sm_103a")
    with pytest.raises(HarnessError, match=r"does not run on sm_103 \(needs sm_100..sm_100\): no integer tcgen05"):
        build.cubin_for(spec, "sm_103")


@needs_nvcc
def test_cubins_are_cached(cache):
    spec = get_kernel("mma_m16n8k8_f16_f32")
    p1 = build.compile_unit([spec], "sm_75")
    mtime = os.stat(p1).st_mtime_ns
    p2 = build.compile_unit([spec], "sm_75")
    assert p1 == p2 and os.stat(p2).st_mtime_ns == mtime and p1.parent == cache
