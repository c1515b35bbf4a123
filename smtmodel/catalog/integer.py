"""Integer MMA models (NVIDIA IMMA, AMD ``v_mfma_i32_*``): exact products and sums into s32.

These are not seed findings: the semantics is the PTX ISA's documented one (integer ``mma``:
products and sum exact, the s32 result wrapped, or clamped with ``.satfinite``; see
:mod:`smtmodel.ops.integer`) and AMD's ISA guides for the i8 MFMA (exact, s32 wrap-around; no
clamp modelled). ``L`` is the instruction's K: with wrap-around it does not change any result
(addition modulo 2^32 is associative), with ``.satfinite`` each instruction clamps its own sum.
No hardware capture of an integer MMA is in ../shared/hwdata yet: the models are the ISA's word,
waiting for the harness kernels (``hw_runner.kernels``: ``mma_m16n8k32_s8_s32[_sat]``,
``mma_m8n8k16_s8_s32[_sat]``, the 4-bit ``mma_m8n8k32_s4_s32[_sat]``, ``mma_m16n8k32_s4_s32[_sat]``,
``mma_m16n8k64_s4_s32[_sat]`` (a 4-bit IMMA on sm_75-sm_89, nvcc's 8-bit emulation on sm_90) and the
unsigned twins; ``hw_runner.amd.kernels``: ``mfma_i32_32x32x8_i8``, ``mfma_i32_16x16x16_i8`` (CDNA1,
CDNA2), ``mfma_i32_32x32x16_i8``, ``mfma_i32_16x16x32_i8`` (CDNA3)) to run.

The integer models are kept apart from the floating-point catalog (:func:`integer_models`;
:func:`smtmodel.catalog.get_model` finds both) so that the suite, identify and the Table 9
bounds, which read floating-point models, keep reading only those.
"""

from __future__ import annotations

from ..model import Model
from .amd import GFX
from .nvidia import SM

_NAMES = {"turing": "Turing", "ampere": "Ampere", "ada": "Ada Lovelace", "hopper": "Hopper",
          "blackwell": "Blackwell", "rtx-blackwell": "RTX Blackwell"}
_PTX = {"int8": "s8", "uint8": "u8", "int4": "s4", "uint4": "u4"}
# (arch, input format) -> (L = instruction K, instruction, harness kernel stems)
_NV = {}
for _a in ("turing",):
    for _f in ("int8", "uint8"):
        _NV[(_a, _f)] = (16, "mma.sync.aligned.m8n8k16 (IMMA.8816)", ("m8n8k16",))
    for _f in ("int4", "uint4"):
        _NV[(_a, _f)] = (32, "mma.sync.aligned.m8n8k32 (IMMA.8832)", ("m8n8k32",))
for _a in ("ampere", "ada", "hopper", "blackwell", "rtx-blackwell"):
    for _f in ("int8", "uint8"):
        instr = ("wgmma.mma_async m64nNk32 .s8 (IGMMA) / mma.sync m16n8k32 (IMMA.16832)" if _a == "hopper"
                 else "tcgen05.mma kind::i8 / mma.sync m16n8k32 (IMMA.16832)" if _a == "blackwell"
                 else "mma.sync.aligned.m16n8k32 (IMMA.16832)")
        _NV[(_a, _f)] = (32, instr, ("m8n8k16", "m16n8k32"))
# .s4/.u4: IMMA.8832/16832/16864 on sm_75-sm_89. Hopper has no 4-bit IMMA: nvcc emulates the PTX on
# sm_90 (nibbles extended to bytes, two 8-bit IMMA from a zero accumulator, integer adds of the
# partial sums and c, the .satfinite clamp by sign-overflow tests), which keeps every product and
# sum exact; the Hopper models describe what the PTX computes, and their kernels run that emulation.
_S4_HOPPER = ("mma.sync.aligned.m16n8k64 .s4/.u4, emulated on sm_90 (no 4-bit IMMA: nibbles extended to "
              "bytes, IMMA.16832.S8.S8/U8.U8 from a zero accumulator, IADD of the partial sums and c)")
_S4_HOPPER_NOTE = (" Hopper has no 4-bit IMMA: nvcc emulates the PTX on sm_90 (nibbles extended to bytes, two "
                   "8-bit IMMA of half the K from a zero accumulator, integer adds of the partial sums and c, "
                   ".satfinite as a clamp of that exact sum by sign-overflow tests); products and sums stay "
                   "exact, so the model is the PTX's arithmetic and the kernels run nvcc's emulation of it.")
for _a in ("ampere", "ada", "hopper"):
    for _f in ("int4", "uint4"):
        _NV[(_a, _f)] = (64, _S4_HOPPER if _a == "hopper" else "mma.sync.aligned.m16n8k64 (IMMA.16864)",
                         ("m8n8k32", "m16n8k32", "m16n8k64"))

_SRC = "PTX ISA, mma / wmma.mma integer types and .satfinite"


def _kernel_ids(stems, fin, sat):
    t = _PTX[fin]
    return tuple(f"mma_{s}_{t}_s32{'_sat' if sat else ''}" for s in stems)


def _tcgen05_ids(arch, fin, sat):
    """Blackwell (sm_100a) s8/u8 also run as tcgen05.mma .kind::i8 (none on sm_103: B300 aliases
    carry no integer models)."""
    return (f"tcgen05_m128n8k32_{_PTX[fin]}_s32{'_sat' if sat else ''}",) if arch == "blackwell" and fin in ("int8", "uint8") else ()


INTEGER_MODELS: list[Model] = []
for (_a, _f), (_L, _instr, _stems) in _NV.items():
    for _sat in (False, True):
        INTEGER_MODELS.append(Model(
            id=f"{_a}-{_PTX[_f]}-s32{'-satfinite' if _sat else ''}", op="imma", in_fmt=_f, c_fmt="int32",
            out_fmt="int32", L=_L, saturate=_sat, arch=_a, sm=SM[_a],
            kernels=_kernel_ids(_stems, _f, _sat) + _tcgen05_ids(_a, _f, _sat),
            source=_SRC, instruction=_instr + (" .satfinite" if _sat else ""),
            description=(f"{_NAMES[_a]} (sm_{SM[_a]}) {_PTX[_f]} x {_PTX[_f]} + s32: exact products and sum per "
                         f"instruction (K={_L}), s32 result {'clamped (.satfinite)' if _sat else 'wrapped mod 2^32'}"
                         + (_S4_HOPPER_NOTE if _a == "hopper" and _f in ("int4", "uint4") else ""))))

# AMD CDNA: v_mfma_i32_32x32x8i8 / 16x16x16i8 (CDNA1, CDNA2), v_mfma_i32_32x32x16_i8 /
# 16x16x32_i8 (CDNA3). L = the 16x16 instruction's K.
# The harness kernels (hw_runner.amd.kernels ids): the 32x32 and the 16x16 instruction.
_MFMA_I8 = {"cdna1": ("mfma_i32_32x32x8_i8", "mfma_i32_16x16x16_i8"),
            "cdna2": ("mfma_i32_32x32x8_i8", "mfma_i32_16x16x16_i8"),
            "cdna3": ("mfma_i32_32x32x16_i8", "mfma_i32_16x16x32_i8")}
for _a, _L, _instr in (("cdna1", 16, "v_mfma_i32_16x16x16i8 / v_mfma_i32_32x32x8i8"),
                       ("cdna2", 16, "v_mfma_i32_16x16x16i8 / v_mfma_i32_32x32x8i8"),
                       ("cdna3", 32, "v_mfma_i32_16x16x32_i8 / v_mfma_i32_32x32x16_i8")):
    INTEGER_MODELS.append(Model(
        id=f"{_a}-i8-i32", op="imma", in_fmt="int8", c_fmt="int32", out_fmt="int32", L=_L, arch=_a, gfx=GFX[_a],
        kernels=_MFMA_I8[_a],
        specials="ieee", source="AMD CDNA ISA guides (v_mfma_i32_*); exact integer sum, wrap-around",
        instruction=_instr,
        description=f"{_a.upper()} ({GFX[_a]}) i8 x i8 + i32: exact products and sum (K={_L}), i32 wrapped"))
