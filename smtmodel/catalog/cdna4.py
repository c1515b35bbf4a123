"""AMD CDNA4 (gfx950: MI350X, MI355X) Matrix Core hypotheses, all UNVALIDATED.

No hardware capture of a CDNA4 MFMA and no seed measurement exists: every model here is a
hypothesis (``validated=False``) and every output that uses one says so. What is known is the
instruction set (AMD "CDNA4 Instruction Set Architecture" reference guide, chapter "Matrix
Arithmetic Instructions"; LLVM's AMDGPU intrinsics, ``llvm/include/llvm/IR/IntrinsicsAMDGPU.td``):

- f16 and bf16 ``v_mfma_f32_16x16x32_{f16,bf16}`` and ``v_mfma_f32_32x32x16_{f16,bf16}``, twice
  CDNA3's K;
- FP8 ``v_mfma_f32_{16x16x32,32x32x16}_{fp8,bf8}_{fp8,bf8}`` as on CDNA3, but with the OCP
  formats E4M3FN and E5M2 instead of CDNA3's FNUZ ones (llvm/llvm-project pull/123361: "Part of what's new is
  the instructions supporting OCP FP8 instead of the gfx940 format");
- ``v_mfma_f32_16x16x128_f8f6f4`` and ``v_mfma_f32_32x32x64_f8f6f4``: A and B each in one of
  E4M3, E5M2, E2M3, E3M2, E2M1, chosen independently (the ``cbsz`` and ``blgp`` fields);
- the scaled forms ``v_mfma_scale_f32_16x16x128_f8f6f4`` / ``v_mfma_scale_f32_32x32x64_f8f6f4``
  (``llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4``): one E8M0 scale per 32 elements of K for A
  and for B. LLVM has no unscaled intrinsic: it selects the unscaled instruction for the scaled
  intrinsic with constant scale operands 0 (llvm/llvm-project pull/133553 lowers unscaled FP4/FP6 MFMAs so);
- no XF32 MFMA (LLVM 22 cannot select ``llvm.amdgcn.mfma.f32.16x16x8.xf32`` for gfx950).

Two readings of the arithmetic, rivals of each other:

- CDNA3-like (the catalog entries): seed 000's CDNA3 parameters carried over (Tables 6-7;
  MMA-Sim 2.1.1 ``amd/sim.py``): TR-FDPA L=8, F=24, F2=31 for f16/bf16; GTR-FDPA L=16 (even/odd
  groups) for FP8/FP6/FP4; RNE-FP32; zero products left out and c = 0 at -126 (MMA-Sim's CDNA3
  zeros); IEEE special values. The scaled forms add the block's scale exponents to every
  product before alignment, as ST-FDPA does to T-FDPA (one scale per block of 16).
- NVIDIA-like (``-tfdpa`` / ``-stfdpa`` rivals): the arithmetic of Blackwell's tensor cores for
  the same formats (seed 000 Table 4: T-FDPA L=16 F=25 for f16/bf16, L=32 F=25 for FP8/FP6/FP4,
  ST-FDPA L=32 F=25 for MX; RZ-FP32; MMA-Sim 2.1.1's e_zero -133) with AMD's IEEE special
  values.

A and B in different formats (the f8f6f4 instructions) are overrides of A's model:
``cdna4-fp8e4m3-fp32-mx:b_fmt=fp4e2m1``. ``generated_tests/cdna4/`` holds the deciding vectors.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import Model
from .nvidia import NVIDIA_MODELS

ARCH, GFX = "cdna4", "gfx950"
OCP = ("fp8e4m3", "fp8e5m2")
F8F6F4 = OCP + ("fp6e2m3", "fp6e3m2", "fp4e2m1")

ISA_SRC = ("AMD CDNA4 ISA guide, Matrix Arithmetic Instructions; LLVM IntrinsicsAMDGPU.td "
           "(llvm.amdgcn.mfma.f32.16x16x32.f16, .mfma.scale.f32.16x16x128.f8f6f4); llvm/llvm-project pull/123361 (OCP FP8)")
UNVALIDATED = "UNVALIDATED hypothesis: no CDNA4 capture or seed measurement"
CDNA3_LIKE = (f"{UNVALIDATED}; CDNA3's parameters carried over (seed 000 Tables 6-7, Algorithms 10-11; "
              f"MMA-Sim 2.1.1 amd/sim.py, zeros arithmetic/fdpa.py:343-346); {ISA_SRC}")
NVIDIA_LIKE = (f"{UNVALIDATED}; rival: Blackwell's tensor-core arithmetic for the same formats (seed 000 "
               f"Table 4; MMA-Sim 2.1.1 nv_ptx/sim.py) with IEEE special values; {ISA_SRC}")

_PTX = {"fp8e4m3": "fp8", "fp8e5m2": "bf8", "fp6e2m3": "fp6", "fp6e3m2": "bf6", "fp4e2m1": "fp4"}
"""AMD's operand type names of the f8f6f4 instructions (the kernel id suffixes)."""


def kernel_ids(fin: str, scaled: bool = False) -> tuple[str, ...]:
    """The harness kernels (``hw_runner.amd.kernels`` ids, plain data) of a gfx950 format."""
    if fin in ("fp16", "bf16"):
        t = "f16" if fin == "fp16" else "bf16"
        return (f"mfma_f32_32x32x16_{t}", f"mfma_f32_16x16x32_{t}")
    t = _PTX[fin]
    pre = "mfma_scale" if scaled else "mfma"
    ids = (f"{pre}_f32_32x32x64_f8f6f4_{t}", f"{pre}_f32_16x16x128_f8f6f4_{t}")
    if fin in OCP and not scaled:
        ids = (f"mfma_f32_32x32x16_{t}_{t}_ocp", f"mfma_f32_16x16x32_{t}_{t}_ocp") + ids
    return ids


def _instruction(fin: str, scaled: bool) -> str:
    if fin in ("fp16", "bf16"):
        t = "f16" if fin == "fp16" else "bf16"
        return f"v_mfma_f32_16x16x32_{t} / v_mfma_f32_32x32x16_{t}"
    t = _PTX[fin]
    if scaled:
        return f"v_mfma_scale_f32_16x16x128_f8f6f4 / 32x32x64 [{t}, E8M0 scales per 32]"
    k32 = f"v_mfma_f32_16x16x32_{t}_{t} / 32x32x16, " if fin in OCP else ""
    return f"{k32}v_mfma_f32_16x16x128_f8f6f4 / 32x32x64 [{t}]"


def _base(fin: str, scaled: bool) -> dict:
    return dict(in_fmt=fin, c_fmt="fp32", out_fmt="fp32", arch=ARCH, gfx=GFX, validated=False,
                kernels=kernel_ids(fin, scaled), instruction=_instruction(fin, scaled))


CDNA4_MODELS: list[Model] = []
for _fin in ("fp16", "bf16"):
    CDNA4_MODELS.append(Model(
        id=f"cdna4-{_fin}-fp32", op="trfdpa", L=8, F=24, F2=31, rho="RNE-FP32", specials="ieee",
        zero_prod="ignore", zero_c=-126, source=CDNA3_LIKE, **_base(_fin, False),
        description=f"CDNA4 (gfx950) {_fin} -> fp32 [UNVALIDATED]: TR-FDPA L=8, F=24, F2=31, RNE-FP32 "
                    "(CDNA3's reading)"))
for _fin in F8F6F4:
    for _sc in (False, True):
        CDNA4_MODELS.append(Model(
            id=f"cdna4-{_fin}-fp32" + ("-mx" if _sc else ""), op="gtrfdpa", L=16, F=24, F2=31, rho="RNE-FP32",
            specials="ieee", zero_prod="ignore", zero_c=-126, source=CDNA3_LIKE,
            scale_fmt="e8m0" if _sc else None, scale_block=32 if _sc else None, **_base(_fin, _sc),
            description=f"CDNA4 (gfx950) {_fin}" + (" with E8M0 scales per 32" if _sc else "")
                        + " -> fp32 [UNVALIDATED]: GTR-FDPA L=16 (even/odd groups), F=24, F2=31, RNE-FP32"
                        + (", the block's scale exponents added to every product" if _sc else "")
                        + " (CDNA3's reading)"))

_BW = {m.id: m for m in NVIDIA_MODELS}


def _nvidia_like(m: Model) -> Model:
    """The rival of CDNA4 model ``m``: Blackwell's model of the same formats and scales, read on
    gfx950 with IEEE special values."""
    bw = _BW[f"blackwell-{m.in_fmt}-fp32" + ("-mx" if m.scale_fmt else "")]
    what = "ST-FDPA" if bw.op == "stfdpa" else "T-FDPA"
    return replace(bw, id=f"{m.id}-{what.lower().replace('-', '')}", kind="rival", rival_of=m.id, specials="ieee",
                   arch=ARCH, gfx=GFX, sm=None, kernels=m.kernels, instruction=m.instruction, validated=False,
                   source=NVIDIA_LIKE,
                   description=f"{m.id} read as Blackwell's {what} [UNVALIDATED]: L={bw.L}, F={bw.F}, {bw.rho}, "
                               f"e_zero {bw.zero_c}, IEEE special values (rival of the CDNA3 reading)")


CDNA4_RIVALS: list[Model] = [_nvidia_like(m) for m in CDNA4_MODELS]
