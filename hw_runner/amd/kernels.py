"""The registry of MFMA kernels and the LLVM IR generated for each.

One kernel per single-block MFMA instruction of CDNA1-4 that a catalog model describes
(``smtmodel.catalog.amd``, ``smtmodel.catalog.cdna4``). Like the NVIDIA kernels (:mod:`hw_runner.kernels`) the host does all
layout work (:mod:`hw_runner.amd.layouts`) and one kernel serves both modes, single case and
replicate; a case longer than the instruction's K is cut into chunks chained through the
accumulator registers (chunk j starts from the D of chunk j-1, rounded to fp32/fp64 as a GEMM
loop over K would be).

Kernel signature (all kernels; one 64-lane wavefront per case, four per 256-lane workgroup)::

    mmaprobe_<id>(const R *A, const R *B, const U *C, U *D, i32 n_cases, i32 n_chunks)

A/B: ``[case][chunk][lane][reg]``, C/D: ``[case][lane][reg]``; registers are 32-bit words (64-bit
for fp64) as :class:`hw_runner.layouts.Fragment` packs them.

gfx950 (CDNA4) kernels: the double-K f16/bf16 MFMAs, the FP8 MFMAs of gfx942 reading OCP E4M3FN /
E5M2, and the ``f8f6f4`` MFMAs (16x16x128, 32x32x64) for each of FP8, BF8, FP6, BF6, FP4 on both
operands. LLVM has one intrinsic for the f8f6f4 family, the scaled one
(``llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4(A, B, C, cbsz, blgp, opsel_a, scale_a, opsel_b,
scale_b)``; ``cbsz``/``blgp`` = A's/B's format: 0 FP8, 1 BF8, 2 FP6, 3 BF6, 4 FP4); called with
constant scales 0 it selects the unscaled ``v_mfma_f32_*_f8f6f4`` (the unscaled kernels), with
run-time scales ``v_mfma_scale_f32_*_f8f6f4``. The scaled kernels take two more buffers after B::

    mmaprobe_<id>(A, B, const i32 *SA, const i32 *SB, C, D, i32 n_cases, i32 n_chunks)

SA/SB: ``[case][chunk][lane]``, the E8M0 scale of the lane's 32 elements in byte 0 (``op_sel``
0). No XF32 kernel runs on gfx950: the instruction is gone (LLVM cannot select it there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from ..errors import HarnessError
from . import layouts

GFX = ("gfx908", "gfx90a", "gfx942", "gfx950")
CDNA = {"gfx908": "cdna1", "gfx90a": "cdna2", "gfx942": "cdna3", "gfx950": "cdna4"}
ELEM_BITS = {"fp16": 16, "bf16": 16, "tf32": 32, "fp32": 32, "fp64": 64, "int8": 8, "int32": 32,
             "fp8e4m3fnuz": 8, "fp8e5m2fnuz": 8, "fp8e4m3": 8, "fp8e5m2": 8, "fp6e2m3": 6, "fp6e3m2": 6,
             "fp4e2m1": 4}
# LLVM IR type of the A/B operand per (input format, elements per lane) and of the accumulator.
_OPERAND_TYPE = {("fp32", 1): "float", ("fp64", 1): "double", ("fp16", 4): "<4 x half>",
                 ("bf16", 2): "<2 x i16>", ("bf16", 4): "<4 x i16>", ("tf32", 2): "<2 x float>",
                 ("fp8e4m3fnuz", 8): "i64", ("fp8e5m2fnuz", 8): "i64",
                 ("int8", 4): "i32", ("int8", 8): "i64",
                 ("fp16", 8): "<8 x half>", ("bf16", 8): "<8 x bfloat>", ("fp8e4m3", 8): "i64", ("fp8e5m2", 8): "i64"}
F8F6F4_CODE = {"fp8e4m3": 0, "fp8e5m2": 1, "fp6e2m3": 2, "fp6e3m2": 3, "fp4e2m1": 4}
"""The ``cbsz`` (A) / ``blgp`` (B) code of each f8f6f4 operand format (LLVM AMDGPU, gfx950)."""


def is_gfx(arch: str) -> bool:
    return bool(re.fullmatch(r"gfx[0-9a-f]+", arch or ""))


@dataclass(frozen=True)
class MfmaSpec:
    """One MFMA kernel.

    ``intrinsic``: the ``llvm.amdgcn.mfma.*`` intrinsic it calls; ``gfx``: the targets that run
    it; ``mnemonics``: ``(first gfx, mnemonic)`` pairs, the instruction the ISA of that target and
    newer ones must hold (gfx940+ spells the names with an underscore before the type);
    ``note``: what is known about the instruction.
    """

    id: str
    intrinsic: str
    gfx: tuple[str, ...]
    shape: tuple[int, int, int]
    in_fmt: str
    c_fmt: str
    out_fmt: str
    mnemonics: tuple[tuple[str, str], ...]
    note: str = ""
    family: str = "mfma"
    fmt_code: int | None = None       # f8f6f4: cbsz = blgp, the operands' format (F8F6F4_CODE)
    scaled: bool = False              # f8f6f4 with E8M0 scales per 32 (SA/SB buffers)

    @property
    def k(self) -> int:
        return self.shape[2]

    @property
    def threads(self) -> int:
        return layouts.WAVE

    @property
    def function(self) -> str:
        return f"mmaprobe_{self.id}"

    @property
    def arch(self) -> str:
        """The oldest target that runs it."""
        return self.gfx[0]

    @property
    def instruction(self) -> str:
        """The instruction name as the oldest target spells it."""
        return self.mnemonics[0][1]

    def mnemonic(self, gfx: str) -> str:
        """The ``v_mfma_*`` mnemonic expected in the ISA for ``gfx``."""
        if gfx not in self.gfx:
            raise HarnessError(f"{self.id} does not run on {gfx} (runs on {', '.join(self.gfx)})")
        return [m for g, m in self.mnemonics if GFX.index(g) <= GFX.index(gfx)][-1]

    def instruction_for(self, arch: str) -> str:
        """The instruction named in the device key of a run on ``arch`` (its own spelling)."""
        return self.mnemonic(arch)

    def supports(self, arch: str) -> bool:
        return arch in self.gfx

    @cached_property
    def fragments(self):
        """(A, B, C/D) :class:`hw_runner.layouts.Fragment` over the 64 lanes of a wavefront."""
        m, n, k = self.shape
        return layouts.mfma_fragments(m, n, k, ELEM_BITS[self.in_fmt], ELEM_BITS[self.out_fmt])

    @property
    def scale_fmt(self) -> str | None:
        return "e8m0" if self.scaled else None

    @property
    def scale_block(self) -> int | None:
        return layouts.SCALE_BLOCK if self.scaled else None

    @property
    def scale_key(self) -> tuple[str, int] | None:
        """(scale format, products per scale) as a model's ``scale_fmt``/``scale_block`` spell them."""
        return (self.scale_fmt, self.scale_block) if self.scale_fmt else None

    @property
    def block_scaled(self) -> bool:
        """False: NVIDIA's block-scaled kernels pack their scales beside the fragments
        (:func:`hw_runner.pack.operands`); gfx950's ``v_mfma_scale_*`` takes them in buffers of
        their own (:func:`hw_runner.amd.layouts.scale_buffers`). ``scaled`` and ``scale_key`` say
        that it is scaled."""
        return False

    @property
    def operand_fmts(self) -> tuple[str, str]:
        """(A's format, B's format): one format for both."""
        return (self.in_fmt, self.in_fmt)

    @property
    def in_key(self) -> str:
        return self.in_fmt

    @property
    def satfinite(self) -> bool:
        """Integer MFMA wraps its s32 sum (no clamp)."""
        return False

    def isa_fields(self) -> tuple[str, ...]:
        """The format fields the instruction line must carry (LLVM prints ``cbsz``/``blgp``
        only when not 0)."""
        return () if not self.fmt_code else (f"cbsz:{self.fmt_code}", f"blgp:{self.fmt_code}")

    def source(self) -> str:
        """LLVM IR (``amdgcn-amd-amdhsa``) of this kernel: one ``amdgpu_kernel`` function."""
        return _kernel_ir(self)


# ---- LLVM IR generation --------------------------------------------------------------------

def _operand_types(spec: MfmaSpec) -> tuple[str, str, str, str, int, int]:
    """(A/B type, accumulator type, register int type, accumulator element, regs A, regs C)."""
    fa, _, fc = spec.fragments
    a_ty = f"<{fa.n_regs} x i32>" if spec.fmt_code is not None else _OPERAND_TYPE[(spec.in_fmt, fa.slots)]
    elem = {"fp64": "double", "int32": "i32"}.get(spec.out_fmt, "float")
    acc_ty = f"<{fc.slots} x {elem}>"
    reg = "i64" if fa.reg_bits == 64 else "i32"
    return a_ty, acc_ty, reg, elem, fa.n_regs, fc.n_regs


def _kernel_ir(spec: MfmaSpec) -> str:
    a_ty, acc_ty, reg, _, na, nc = _operand_types(spec)
    reg_c = "i64" if spec.out_fmt == "fp64" else "i32"
    ra = reg if na == 1 else f"<{na} x {reg}>"
    rc = f"<{nc} x {reg_c}>"
    al = 8 if reg == "i64" else 4
    alc = 8 if reg_c == "i64" else 4
    f = spec.function
    if spec.fmt_code is None:
        decl = f"declare {acc_ty} @{spec.intrinsic}({a_ty}, {a_ty}, {acc_ty}, i32 immarg, i32 immarg, i32 immarg)"
        call = f"call {acc_ty} @{spec.intrinsic}({a_ty} %a, {a_ty} %b, {acc_ty} %acc, i32 0, i32 0, i32 0)"
        scale_args = scale_loads = ""
    else:       # the f8f6f4 family: the scaled intrinsic, constant 0 scales for the unscaled instruction
        decl = (f"declare {acc_ty} @{spec.intrinsic}({a_ty}, {a_ty}, {acc_ty}, i32 immarg, i32 immarg, "
                f"i32 immarg, i32, i32 immarg, i32)")
        code = spec.fmt_code
        sa, sb = ("%sa", "%sb") if spec.scaled else ("0", "0")
        call = (f"call {acc_ty} @{spec.intrinsic}({a_ty} %a, {a_ty} %b, {acc_ty} %acc, i32 {code}, i32 {code}, "
                f"i32 0, i32 {sa}, i32 0, i32 {sb})")
        scale_args = ("ptr addrspace(1) noalias readonly %SA, ptr addrspace(1) noalias readonly %SB,\n    "
                      if spec.scaled else "")
        scale_loads = ("  %sa_ptr = getelementptr i32, ptr addrspace(1) %SA, i64 %x3\n"
                       "  %sb_ptr = getelementptr i32, ptr addrspace(1) %SB, i64 %x3\n"
                       "  %sa = load i32, ptr addrspace(1) %sa_ptr, align 4\n"
                       "  %sb = load i32, ptr addrspace(1) %sb_ptr, align 4\n" if spec.scaled else "")
    return f"""
; {spec.id}: {spec.instruction} via @{spec.intrinsic} (targets {', '.join(spec.gfx)})
{decl}

define amdgpu_kernel void @{f}(ptr addrspace(1) noalias readonly %A, ptr addrspace(1) noalias readonly %B,
    {scale_args}ptr addrspace(1) noalias readonly %C, ptr addrspace(1) noalias %D, i32 %n_cases, i32 %n_chunks) #0 {{
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %bid = call i32 @llvm.amdgcn.workgroup.id.x()
  %lane = and i32 %tid, 63
  %wave = lshr i32 %tid, 6
  %first = shl i32 %bid, 2
  %case = add i32 %first, %wave
  %live = icmp slt i32 %case, %n_cases
  br i1 %live, label %load_c, label %exit
load_c:
  %cs = zext i32 %case to i64
  %ln = zext i32 %lane to i64
  %nch = zext i32 %n_chunks to i64
  %c_row = mul i64 %cs, 64
  %c_lane = add i64 %c_row, %ln
  %c_off = mul i64 %c_lane, {nc}
  %c_ptr = getelementptr {reg_c}, ptr addrspace(1) %C, i64 %c_off
  %c_bits = load {rc}, ptr addrspace(1) %c_ptr, align {alc}
  %c0 = bitcast {rc} %c_bits to {acc_ty}
  %any = icmp sgt i32 %n_chunks, 0
  br i1 %any, label %chunk, label %store
chunk:
  %j = phi i64 [0, %load_c], [%j_next, %chunk]
  %acc = phi {acc_ty} [%c0, %load_c], [%d, %chunk]
  %x0 = mul i64 %cs, %nch
  %x1 = add i64 %x0, %j
  %x2 = mul i64 %x1, 64
  %x3 = add i64 %x2, %ln
  %ab_off = mul i64 %x3, {na}
  %a_ptr = getelementptr {reg}, ptr addrspace(1) %A, i64 %ab_off
  %b_ptr = getelementptr {reg}, ptr addrspace(1) %B, i64 %ab_off
  %a_bits = load {ra}, ptr addrspace(1) %a_ptr, align {al}
  %b_bits = load {ra}, ptr addrspace(1) %b_ptr, align {al}
  %a = bitcast {ra} %a_bits to {a_ty}
  %b = bitcast {ra} %b_bits to {a_ty}
{scale_loads}  %d = {call}
  %j_next = add i64 %j, 1
  %more = icmp slt i64 %j_next, %nch
  br i1 %more, label %chunk, label %store
store:
  %out = phi {acc_ty} [%c0, %load_c], [%d, %chunk]
  %d_bits = bitcast {acc_ty} %out to {rc}
  %d_ptr = getelementptr {reg_c}, ptr addrspace(1) %D, i64 %c_off
  store {rc} %d_bits, ptr addrspace(1) %d_ptr, align {alc}
  br label %exit
exit:
  ret void
}}
"""


CODE_OBJECT_VERSION = 400
"""``amdhsa_code_object_version`` module flag (code object v4: loaded by ROCm 4.x-6.x and linked
by every ``ld.lld`` since LLVM 12; v5 needs ld.lld >= 15). :mod:`hw_runner.amd.build` passes the
version it links."""


def module_ir(specs, code_object_version: int = CODE_OBJECT_VERSION) -> str:
    """One LLVM module holding every kernel in ``specs``."""
    head = ('target triple = "amdgcn-amd-amdhsa"\n'
            "declare i32 @llvm.amdgcn.workitem.id.x()\n"
            "declare i32 @llvm.amdgcn.workgroup.id.x()\n")
    tail = ('\nattributes #0 = { "amdgpu-flat-work-group-size"="256,256" }\n'
            "!llvm.module.flags = !{!0}\n"
            f'!0 = !{{i32 1, !"amdhsa_code_object_version", i32 {code_object_version}}}\n')
    seen, body = set(), []
    for line in "".join(s.source() for s in specs).splitlines():
        if line.startswith("declare "):     # kernels may share an intrinsic (the f8f6f4 family): declare it once
            if line in seen:
                continue
            seen.add(line)
        body.append(line)
    return head + "\n".join(body) + "\n" + tail


# ---- the registry --------------------------------------------------------------------------

_SUFFIX = {"fp32": "f32", "fp16": "f16", "bf16": "bf16", "tf32": "xf32", "fp64": "f64",
           "fp8e4m3fnuz": "fp8_fp8", "fp8e5m2fnuz": "bf8_bf8"}


def _mfma(m, k, in_fmt, gfx, one_k=False, note=""):
    """A kernel for ``v_mfma_{f32|f64}_{m}x{m}x{k}{type}``; gfx908/gfx90a names glue the type to
    the shape (``32x32x8f16``, ``32x32x8bf16_1k``), gfx940+ separates it (``32x32x8_f16``, and
    the ``_1k`` bf16 instructions become plain ``_bf16``)."""
    acc = "fp64" if in_fmt == "fp64" else "fp32"
    out = "f64" if acc == "fp64" else "f32"
    t = _SUFFIX[in_fmt]
    shape = f"{m}x{m}x{k}"
    kid = f"mfma_{out}_{shape}_{t}" + ("_1k" if one_k else "")
    if in_fmt == "tf32" or in_fmt.startswith("fp8"):
        intr = f"llvm.amdgcn.mfma.{out}.{shape}.{t.replace('_', '.')}"
    else:
        intr = f"llvm.amdgcn.mfma.{out}.{shape}{t}" + (".1k" if one_k else "")
    legacy = f"v_mfma_{out}_{shape}{t}" + ("_1k" if one_k else "")
    new = f"v_mfma_{out}_{shape}_{t}"
    mn = []
    if gfx[0] != "gfx942":
        mn.append((gfx[0], legacy))
    if "gfx942" in gfx:
        mn.append(("gfx942", new))
    return MfmaSpec(kid, intr, tuple(gfx), (m, m, k), in_fmt, acc, acc, tuple(mn), note)


_ALL, _CDNA23, _CDNA12 = ("gfx908", "gfx90a", "gfx942"), ("gfx90a", "gfx942"), ("gfx908", "gfx90a")


def _build_registry() -> dict[str, MfmaSpec]:
    specs = [
        _mfma(32, 2, "fp32", _ALL), _mfma(16, 4, "fp32", _ALL),
        _mfma(32, 8, "fp16", _ALL), _mfma(16, 16, "fp16", _ALL),
        _mfma(32, 4, "bf16", _CDNA12, note="pre-_1k bf16 (two bf16 per lane); gone on gfx940+"),
        _mfma(16, 8, "bf16", _CDNA12, note="pre-_1k bf16 (two bf16 per lane); gone on gfx940+"),
        _mfma(32, 8, "bf16", _CDNA23, one_k=True, note="CDNA2 _1k bf16; gfx942 names it v_mfma_f32_32x32x8_bf16"),
        _mfma(16, 16, "bf16", _CDNA23, one_k=True, note="CDNA2 _1k bf16; gfx942 names it v_mfma_f32_16x16x16_bf16"),
        _mfma(16, 4, "fp64", _CDNA23),
        _mfma(32, 4, "tf32", ("gfx942",), note="xf32: fp32 registers read as TF32 (CDNA3 only)"),
        _mfma(16, 8, "tf32", ("gfx942",), note="xf32: fp32 registers read as TF32 (CDNA3 only)"),
        _mfma(32, 16, "fp8e4m3fnuz", ("gfx942",), note="FP8 E4M3 FNUZ on both operands"),
        _mfma(16, 32, "fp8e4m3fnuz", ("gfx942",), note="FP8 E4M3 FNUZ on both operands"),
        _mfma(32, 16, "fp8e5m2fnuz", ("gfx942",), note="BF8 E5M2 FNUZ on both operands"),
        _mfma(16, 32, "fp8e5m2fnuz", ("gfx942",), note="BF8 E5M2 FNUZ on both operands"),
    ]
    specs += _integer()
    specs += _gfx950()
    return {s.id: s for s in specs}


def _integer() -> list[MfmaSpec]:
    """The i8 MFMAs (i8 x i8 + i32 -> i32): CDNA1/CDNA2's ``v_mfma_i32_32x32x8i8`` and
    ``v_mfma_i32_16x16x16i8`` (four i8 per lane in one 32-bit register; gone on gfx940+), CDNA3's
    ``v_mfma_i32_32x32x16_i8`` and ``v_mfma_i32_16x16x32_i8`` (eight per lane in an ``i64``). The
    accumulator registers hold i32, laid out as the fp32 ones."""
    note = "integer MFMA: exact products and sum, i32 wrapped"
    out = []
    for m, k in ((32, 8), (16, 16)):
        out.append(MfmaSpec(f"mfma_i32_{m}x{m}x{k}_i8", f"llvm.amdgcn.mfma.i32.{m}x{m}x{k}i8", _CDNA12, (m, m, k),
                            "int8", "int32", "int32", (("gfx908", f"v_mfma_i32_{m}x{m}x{k}i8"),),
                            note + "; CDNA1/CDNA2 only (gfx940+ has the double-K instruction instead)"))
    for m, k in ((32, 16), (16, 32)):
        out.append(MfmaSpec(f"mfma_i32_{m}x{m}x{k}_i8", f"llvm.amdgcn.mfma.i32.{m}x{m}x{k}.i8", ("gfx942",),
                            (m, m, k), "int8", "int32", "int32", (("gfx942", f"v_mfma_i32_{m}x{m}x{k}_i8"),),
                            note + "; CDNA3"))
    return out


_GFX950 = ("gfx950",)
_F8F6F4_NAME = {"fp8e4m3": "fp8", "fp8e5m2": "bf8", "fp6e2m3": "fp6", "fp6e3m2": "bf6", "fp4e2m1": "fp4"}


def _gfx950() -> list[MfmaSpec]:
    """gfx950's own MFMAs (AMD CDNA4 ISA guide, Matrix Arithmetic Instructions; LLVM AMDGPU
    intrinsics, ``IntrinsicsAMDGPU.td``)."""
    out = []
    for m, k in ((32, 16), (16, 32)):
        for fin, t in (("fp16", "f16"), ("bf16", "bf16")):
            out.append(MfmaSpec(f"mfma_f32_{m}x{m}x{k}_{t}", f"llvm.amdgcn.mfma.f32.{m}x{m}x{k}.{t}", _GFX950,
                                (m, m, k), fin, "fp32", "fp32", (("gfx950", f"v_mfma_f32_{m}x{m}x{k}_{t}"),),
                                note=f"CDNA4: {t} with twice CDNA3's K"))
        for fin in ("fp8e4m3", "fp8e5m2"):
            t = _F8F6F4_NAME[fin]
            out.append(MfmaSpec(f"mfma_f32_{m}x{m}x{k}_{t}_{t}_ocp", f"llvm.amdgcn.mfma.f32.{m}x{m}x{k}.{t}.{t}",
                                _GFX950, (m, m, k), fin, "fp32", "fp32",
                                (("gfx950", f"v_mfma_f32_{m}x{m}x{k}_{t}_{t}"),),
                                note="gfx942's instruction; on gfx950 it reads OCP " + ("E4M3FN" if t == "fp8" else "E5M2")))
    for m, k in ((32, 64), (16, 128)):
        for fin, t in _F8F6F4_NAME.items():
            regs = 32 * layouts.ELEMENT_BITS_F8F6F4[fin] // 32
            mangle = f"v{regs}i32.v{regs}i32"
            for scaled in (False, True):
                pre = "mfma_scale" if scaled else "mfma"
                out.append(MfmaSpec(
                    f"{pre}_f32_{m}x{m}x{k}_f8f6f4_{t}", f"llvm.amdgcn.mfma.scale.f32.{m}x{m}x{k}.f8f6f4.{mangle}",
                    _GFX950, (m, m, k), fin, "fp32", "fp32", (("gfx950", f"v_{pre}_f32_{m}x{m}x{k}_f8f6f4"),),
                    note=f"{t} on both operands" + (", E8M0 scales per 32 (one per lane)" if scaled else
                                                    " (the scaled intrinsic with constant scales 0)"),
                    fmt_code=F8F6F4_CODE[fin], scaled=scaled))
    return out


MFMA_KERNELS: dict[str, MfmaSpec] = _build_registry()
