"""NVIDIA Tensor Core models: seed 000 Tables 3-5 (T-FDPA, ST-FDPA, GST-FDPA, FMA for FP64)
and the FP8-through-mma.sync path of seed 001 §IV-A5/A6.

Each model names the harness kernels (``hw_runner.kernels`` ids, kept here as plain data) that
run its instruction on its architecture: ``mma.sync`` shapes for the 16-bit and TF32 inputs on
every arch from the one that introduced the shape, ``wgmma`` on Hopper, the FP8 ``mma.sync``
m16n8k32 kernel for Ada and RTX Blackwell (QMMA) and, on Hopper and Blackwell, for the
``-mmasync`` models (lowered to fp16 HMMA, seed 001 §IV-A5/A6); on RTX Blackwell the sm_120a
``mma.sync`` kinds: ``.kind::f8f6f4`` for FP6/FP4 (QMMA) and the block-scaled ``.kind::mxf8f6f4``
(QMMA.SF), ``.kind::mxf4`` / ``.kind::mxf4nvf4`` (OMMA.SF) for the MX and NVFP4 models; on
Blackwell (sm_100) ``tcgen05.mma`` of every kind (UTCHMMA, UTCQMMA, UTCOMMA)."""

from __future__ import annotations

from dataclasses import replace

from ..model import Model

S000_T4 = "seed 000 Table 4"

# arch, sm, rows of (in, out, L_max, F, rho) from seed 000 Table 4
_T4 = {
    "volta": (70, [("fp16", "fp32", 4, 23, "RZ-FP32"), ("fp16", "fp16", 4, 23, "RNE-FP16")]),
    "turing": (75, [("fp16", "fp32", 8, 24, "RZ-FP32"), ("fp16", "fp16", 8, 24, "RNE-FP16")]),
    "ampere": (80, [("tf32", "fp32", 4, 24, "RZ-FP32"), ("bf16", "fp32", 8, 24, "RZ-FP32"),
                         ("fp16", "fp32", 8, 24, "RZ-FP32"), ("fp16", "fp16", 8, 24, "RNE-FP16")]),
    "ada": (89, [("tf32", "fp32", 4, 24, "RZ-FP32"), ("bf16", "fp32", 8, 24, "RZ-FP32"),
                      ("fp16", "fp32", 8, 24, "RZ-FP32"), ("fp16", "fp16", 8, 24, "RNE-FP16"),
                      ("fp8e4m3", "fp32", 16, 13, "RZ-E8M13"), ("fp8e4m3", "fp16", 16, 13, "RNE-FP16"),
                      ("fp8e5m2", "fp32", 16, 13, "RZ-E8M13"), ("fp8e5m2", "fp16", 16, 13, "RNE-FP16")]),
    "hopper": (90, [("tf32", "fp32", 8, 25, "RZ-FP32"), ("bf16", "fp32", 16, 25, "RZ-FP32"),
                         ("fp16", "fp32", 16, 25, "RZ-FP32"), ("fp16", "fp16", 16, 25, "RNE-FP16"),
                         ("fp8e4m3", "fp32", 32, 13, "RZ-E8M13"), ("fp8e4m3", "fp16", 32, 13, "RNE-FP16"),
                         ("fp8e5m2", "fp32", 32, 13, "RZ-E8M13"), ("fp8e5m2", "fp16", 32, 13, "RNE-FP16")]),
}
_LOWP = ("fp8e4m3", "fp8e5m2", "fp6e2m3", "fp6e3m2", "fp4e2m1")
for _arch, _sm in (("blackwell", 100), ("rtx-blackwell", 120)):
    rows = [("tf32", "fp32", 8, 25, "RZ-FP32"), ("bf16", "fp32", 16, 25, "RZ-FP32"),
            ("fp16", "fp32", 16, 25, "RZ-FP32"), ("fp16", "fp16", 16, 25, "RNE-FP16")]
    rows += [(f, o, 32, 25, r) for f in _LOWP for o, r in (("fp32", "RZ-FP32"), ("fp16", "RNE-FP16"))]
    _T4[_arch] = (_sm, rows)

SM = {arch: sm for arch, (sm, _rows) in _T4.items()}

# Where a zero aligns (docs/zeros.md): the fixed e_zero per instruction family of MMA-Sim 2.1.1
# (seed 000's code as published on PyPI), for zero products and c = +-0 alike:
#   mma: nv_ptx/sim.py:24-41 (fp16 output / fp32 output per arch), :54-58; wgmma :140 and
#   tcgen05 :163 (-21 / -133); ST-FDPA (MX, k32) :101 and :192 (-133); GST-FDPA (MXFP4 / NVFP4,
#   k64) :94 and :185 (-139, also for all-zero groups and zero scales, arithmetic/fdpa.py:261-272).
# Seed 000 never defines Exp(0). The RTX 4060 (Ada FP8) captures agree with -132 (and with zeros
# ignored, equivalent there); they refute the catalog's earlier -126 + Exp(other) (the -zero126
# rivals). Where no hardware has spoken, MMA-Sim 2.1.1's constant is the strongest evidence.
E_ZERO = {"volta": (-131, -19), "turing": (-132, -20), "ampere": (-132, -20), "ada": (-132, -20),
          "hopper": (-133, -21), "blackwell": (-133, -21), "rtx-blackwell": (-133, -21)}
"""arch -> (e_zero with fp32 output, e_zero with fp16 output), MMA-Sim 2.1.1 nv_ptx/sim.py:24-41."""
E_ZERO_ST, E_ZERO_GST = -133, -139
"""MMA-Sim 2.1.1 block-scaled e_zero: ST-FDPA nv_ptx/sim.py:101, GST-FDPA :94 (and :192, :185)."""
ZEROS_SRC = "zeros: MMA-Sim 2.1.1 nv_ptx/sim.py:24-41 (docs/zeros.md)"


def _ez(arch: str, fout: str) -> int:
    return E_ZERO[arch][0 if fout == "fp32" else 1]

_NAMES = {"volta": "Volta", "turing": "Turing", "ampere": "Ampere", "ada": "Ada Lovelace",
          "hopper": "Hopper", "blackwell": "Blackwell", "rtx-blackwell": "RTX Blackwell"}

_INSTR = {
    ("volta", "fp16"): "mma.sync.aligned.m8n8k4 (HMMA.884)",
    ("turing", "fp16"): "mma.sync.aligned.m16n8k8 (HMMA.1688)",
    ("hopper", "fp8e4m3"): "wgmma.mma_async m64nNk32 (QGMMA)",
    ("hopper", "fp8e5m2"): "wgmma.mma_async m64nNk32 (QGMMA)",
    ("hopper", "fp16"): "wgmma.mma_async m64nNk16 / mma.sync m16n8k16 (HGMMA/HMMA)",
    ("hopper", "bf16"): "wgmma.mma_async m64nNk16 / mma.sync m16n8k16 (HGMMA/HMMA)",
    ("hopper", "tf32"): "wgmma.mma_async m64nNk8 / mma.sync m16n8k8 (HGMMA/HMMA)",
}


def _instr(arch: str, fin: str) -> str:
    if (arch, fin) in _INSTR:
        return _INSTR[(arch, fin)]
    if fin == "tf32":
        return "mma.sync.aligned.m16n8k8 tf32 (HMMA.1684/1688)"
    if fin in ("fp16", "bf16"):
        return "mma.sync.aligned.m16n8k16 (HMMA.16816)"
    return "mma.sync.aligned.m16n8k32 (QMMA)" if arch in ("ada", "rtx-blackwell") else "tcgen05.mma (UTCQMMA)"


_PTX = {"fp16": "f16", "bf16": "bf16", "tf32": "tf32", "fp8e4m3": "e4m3", "fp8e5m2": "e5m2",
        "fp32": "f32", "fp64": "f64"}
# mma.sync shapes (m, n, k) per input format: (shape, first sm, last sm or None). m8n8k4 fp16 is
# listed for Volta only: Turing still runs it (HMMA.884) but the seeds model Turing's m16n8k8.
_MMA = {"fp16": [((8, 8, 4), 70, 70), ((16, 8, 8), 75, None), ((16, 8, 16), 80, None)],
        "bf16": [((16, 8, 8), 80, None), ((16, 8, 16), 80, None)],
        "tf32": [((16, 8, 4), 80, None), ((16, 8, 8), 80, None)],
        "fp64": [((8, 8, 4), 80, None)]}
_WGMMA_K = {"fp16": 16, "bf16": 16, "tf32": 8, "fp8e4m3": 32, "fp8e5m2": 32}


_TCGEN05_K = {"fp16": 16, "bf16": 16, "tf32": 8}


def _kernels(arch: str, fin: str, fout: str, mmasync: bool = False) -> tuple[str, ...]:
    """Harness kernel ids that run (arch, fin -> fout). FP8 m16n8k32 is QMMA on sm_89/sm_120
    (Table 4's T-FDPA) and the ``-mmasync`` path on sm_90/sm_100; FP6/FP4 on sm_120 is
    ``mma.sync .kind::f8f6f4`` (QMMA); on sm_100 the T-FDPA models also run ``tcgen05.mma``
    (``.kind::f16``/``tf32`` UTCHMMA, ``.kind::f8f6f4`` UTCQMMA), M = 128, N = 8."""
    sm = SM[arch]
    if fin in _LOWP:
        t, o = fin[3:], _PTX[fout]
        ids = [f"mma_m16n8k32_{t}_{o}"] if mmasync or arch in ("ada", "rtx-blackwell") else []
        if arch == "blackwell" and not mmasync:
            ids.append(f"tcgen05_m128n8k32_{t}_{o}")
    elif fin in _PTX:
        t, o = _PTX[fin], _PTX[fout]
        ids = [f"mma_m{m}n{n}k{k}_{t}_{o}" for (m, n, k), first, last in _MMA[fin]
               if first <= sm and (last is None or sm <= last)]
    else:
        return ()
    if arch == "hopper" and not mmasync and fin in _WGMMA_K:
        ids.append(f"wgmma_m64n8k{_WGMMA_K[fin]}_{t}_{o}")
    if arch == "blackwell" and fin in _TCGEN05_K:
        ids.append(f"tcgen05_m128n8k{_TCGEN05_K[fin]}_{t}_{o}")
    return tuple(ids)


NVIDIA_MODELS: list[Model] = []
for _arch, (_sm, _rows) in _T4.items():
    for fin, fout, L, F, rho in _rows:
        NVIDIA_MODELS.append(Model(
            id=f"{_arch}-{fin}-{fout}", op="tfdpa", in_fmt=fin, c_fmt=fout, out_fmt=fout, L=L, F=F, rho=rho,
            zero_prod=_ez(_arch, fout), zero_c=_ez(_arch, fout),
            arch=_arch, sm=_sm, kernels=_kernels(_arch, fin, fout),
            source=f"{S000_T4}; {ZEROS_SRC}" + ("; RTX 4060 captures (zeros)" if (_arch, fin[:3]) == ("ada", "fp8") else ""),
            instruction=_instr(_arch, fin),
            description=f"{_NAMES[_arch]} (sm_{_sm}) {fin} -> {fout}: T-FDPA L={L}, F={F}, {rho}"))

# FP8 through mma.sync on Hopper / Blackwell: fp16 tensor-core work on interleaved pairs.
for _arch in ("hopper", "blackwell"):
    for fin in ("fp8e4m3", "fp8e5m2"):
        for fout, rho in (("fp32", "RZ-FP32"), ("fp16", "RNE-FP16")):
            NVIDIA_MODELS.append(Model(
                id=f"{_arch}-{fin}-{fout}-mmasync", op="fp8_via_fp16", in_fmt=fin, c_fmt=fout, out_fmt=fout,
                L=16, F=25, rho=rho, zero_prod=_ez(_arch, fout), zero_c=_ez(_arch, fout),
                arch=_arch, sm=SM[_arch], kernels=_kernels(_arch, fin, fout, mmasync=True),
                source=f"seed 001 §IV-A5/A6, Fig. 5c; B200 hwdata; {ZEROS_SRC} (the fp16 HMMA halves)",
                instruction=f"mma.sync.aligned.m16n8k32 {fin[3:]} -> HMMA (fp8 converted to fp16)",
                description=(f"{_NAMES[_arch]} {fin} -> {fout} via mma.sync: halves {{k mod 4 in 0,1}} and "
                             f"{{2,3}} as fp16 T-FDPA (L=16, F=25, {rho}) chained, then c added with RNE")))

# Block-scaled formats (seed 000 Tables 4 and 5). Harness kernels: on RTX Blackwell the sm_120a
# mma.sync block-scaled kinds (.kind::mxf8f6f4 .scale_vec::1X; .kind::mxf4 / .kind::mxf4nvf4
# .scale_vec::2X with UE8M0, .kind::mxf4nvf4 .scale_vec::4X with UE4M3), on Blackwell the same
# kinds of tcgen05.mma (m128n8).
for _arch in ("blackwell", "rtx-blackwell"):
    _rtx = _arch == "rtx-blackwell"
    _pre, _m = ("mma", "m16n8") if _rtx else ("tcgen05", "m128n8")
    _MXF4 = (f"{_pre}_{_m}k64_mxf4_e2m1_f32", f"{_pre}_{_m}k64_mxf4nvf4_2x_ue8m0_e2m1_f32")
    _NVF4 = (f"{_pre}_{_m}k64_mxf4nvf4_4x_ue4m3_e2m1_f32",)
    for fin in _LOWP:
        NVIDIA_MODELS.append(Model(
            id=f"{_arch}-{fin}-fp32-mx", op="stfdpa", in_fmt=fin, c_fmt="fp32", out_fmt="fp32", L=32, F=25,
            rho="RZ-FP32", scale_fmt="e8m0", scale_block=32, zero_prod=E_ZERO_ST, zero_c=E_ZERO_ST,
            kernels=(f"{_pre}_{_m}k32_mxf8f6f4_{fin[3:]}_f32",),
            arch=_arch, sm=SM[_arch], source="seed 000 Table 4 (MXFP8/6/4); zeros: MMA-Sim 2.1.1 nv_ptx/sim.py:101",
            instruction="mma.sync ...block_scale / tcgen05.mma ...block_scale (QMMA.SF / UTCQMMA)",
            description=f"{_NAMES[_arch]} MX{fin[2:]} -> fp32: ST-FDPA L=32, F=25, RZ-FP32, E8M0 scales per 32"))
    NVIDIA_MODELS.append(Model(
        id=f"{_arch}-fp4e2m1-fp32-mxgst", op="gstfdpa", in_fmt="fp4e2m1", c_fmt="fp32", out_fmt="fp32", L=64, G=16,
        F=35, rho="RZ-FP32", scale_fmt="e8m0", scale_block=32, arch=_arch, sm=SM[_arch],
        zero_c=E_ZERO_GST, zero_group=E_ZERO_GST, zero_scale=E_ZERO_GST, kernels=_MXF4,
        source="seed 000 Table 5 (MXFP4); zeros: MMA-Sim 2.1.1 nv_ptx/sim.py:94",
        instruction="mma.sync ...block_scale.scale_vec::2X (OMMA.SF)",
        description=f"{_NAMES[_arch]} MXFP4 -> fp32: GST-FDPA L=64, G=16, F=35, E8M0 scales per 32"))
    NVIDIA_MODELS.append(Model(
        id=f"{_arch}-fp4e2m1-fp32-nvfp4", op="gstfdpa", in_fmt="fp4e2m1", c_fmt="fp32", out_fmt="fp32", L=64, G=16,
        F=35, rho="RZ-FP32", scale_fmt="ue4m3", scale_block=16, arch=_arch, sm=SM[_arch],
        zero_c=E_ZERO_GST, zero_group=E_ZERO_GST, zero_scale=E_ZERO_GST, kernels=_NVF4,
        source="seed 000 Table 5 (NVFP4); zeros: MMA-Sim 2.1.1 nv_ptx/sim.py:94",
        instruction="mma.sync ...block_scale.scale_vec::4X (OMMA.SF)",
        description=f"{_NAMES[_arch]} NVFP4 -> fp32: GST-FDPA L=64, G=16, F=35, UE4M3 scales per 16"))

# FP64 (DMMA): a chain of IEEE FMAs (seed 000 Table 3, Algorithm 4; seed 001 §IV-A2). The H100's
# NaN results, measured (hwdata/survey/h100-sxm: 17,500 survey outputs and the 219 NaN-precedence
# probes in hwdata/survey/h100-sxm/probes): NaN operands pass on quieted, per FMA b's before the
# accumulator's before a's, an invalid operation gives 0xfff8000000000000. The other GPUs' DMMA
# NaNs are unmeasured: the canonical NaN stays their reading.
for _arch in ("ampere", "ada", "hopper", "blackwell"):
    _measured = _arch == "hopper"
    NVIDIA_MODELS.append(Model(
        id=f"{_arch}-fp64-fp64", op="fma", in_fmt="fp64", c_fmt="fp64", out_fmt="fp64", L=1,
        specials="propagate" if _measured else "ieee",
        arch=_arch, sm=SM[_arch], kernels=_kernels(_arch, "fp64", "fp64"),
        source="seed 000 Table 3" + ("; NaNs: hwdata/survey/h100-sxm (H100 SXM survey)" if _measured else ""),
        instruction="mma.sync.aligned.m8n8k4 f64 (DMMA)",
        description=f"{_NAMES[_arch]} fp64: chain of IEEE FMAs (RNE)"
                    + ("; NaN operands passed on (b, then the accumulator, then a), invalid -> -NaN" if _measured else "")))

# Mixed operand formats (A and B in different formats, ``a_fmt``/``b_fmt``; ids ``ARCH-AxB-OUT``),
# where the PTX ISA has them (NVIDIA, "Parallel Thread Execution ISA"): §9.7.14.5.14 ``mma`` --
# ``.f8type`` of A and of B each in {.e4m3, .e5m2} (m16n8k16/m16n8k32, sm_89 on), and
# ``.kind::f8f6f4`` / ``.kind::mxf8f6f4`` with each of A and B in {.e4m3, .e5m2, .e3m2, .e2m3,
# .e2m1} (sm_100a/sm_120a); §9.7.15.5.2 ``wgmma.mma_async`` -- ``.atype``/``.btype`` each in
# {.e4m3, .e5m2} (sm_90a); §9.7.16 ``tcgen05.mma`` ``.kind::f8f6f4``/``.kind::mxf8f6f4`` likewise.
# Each is its same-format sibling (the catalog model of A's format) with B read in its own format:
# the datapath decodes each operand and multiplies exactly, as the RTX 4060 recordings
# (../shared/hwdata/rtx4060_mmaemu: 301,058 mixed e4m3 x e5m2 outputs) show for Ada. The FP6/FP4
# mixes of the unscaled kind::f8f6f4 are overrides (``blackwell-fp8e4m3-fp32:b_fmt=fp4e2m1``).
_FP8_MIXES = (("fp8e4m3", "fp8e5m2"), ("fp8e5m2", "fp8e4m3"))
_LOWP_MIXES = tuple((x, y) for x in _LOWP for y in _LOWP if x != y)


def _mixed(m: Model, fa: str, fb: str, what: str, kernels: bool = False) -> Model:
    """Catalog model ``m`` (of A's format ``fa``) with B in ``fb``; ``kernels``: the harness kernels
    of the sibling's instructions with B's type (``mma_m16n8k32_e4m3_f32`` ->
    ``mma_m16n8k32_e4m3e5m2_f32``; the FP8 mixes of ``mma`` and ``wgmma`` and the
    ``.kind::mxf8f6f4`` mixes have them)."""
    ks = tuple(k.replace(f"_{fa[3:]}_", f"_{fa[3:]}{fb[3:]}_", 1) for k in m.kernels) if kernels else ()
    return replace(
        m, id=m.id.replace(f"-{fa}-", f"-{fa}x{fb}-", 1), a_fmt=fa, b_fmt=fb, kernels=ks,
        source=f"{m.source}; PTX ISA {what} (mixed operands)",
        instruction=f"{m.instruction} [{fa[3:]} x {fb[3:]}]",
        description=f"{m.description} [A {fa} x B {fb}, each decoded in its own format]")


_SAME = [m for m in NVIDIA_MODELS if m.kind == "catalog" and not m.mixed]
for _m in _SAME:
    if _m.op in ("tfdpa", "fp8_via_fp16") and not _m.scale_fmt and _m.in_fmt in ("fp8e4m3", "fp8e5m2"):
        _what = ("mma .f8type" if _m.arch == "ada" or _m.op == "fp8_via_fp16" else
                 "wgmma .atype/.btype" if _m.arch == "hopper" else "mma/tcgen05.mma kind::f8f6f4")
        NVIDIA_MODELS += [_mixed(_m, fa, fb, _what, kernels=True) for fa, fb in _FP8_MIXES if fa == _m.in_fmt]
for _m in _SAME:
    if _m.op == "stfdpa" and _m.scale_fmt == "e8m0" and _m.in_fmt in _LOWP:
        NVIDIA_MODELS += [_mixed(_m, fa, fb, "kind::mxf8f6f4", kernels=True) for fa, fb in _LOWP_MIXES
                          if fa == _m.in_fmt]

# FP32 on the CUDA cores (FFMA): what cuBLAS SGEMM runs, not a tensor-core instruction. One FMA
# per product, each rounded once to fp32 with RNE: PTX ISA §9.7.3 ``fma`` (``fma.rn.f32``: "the
# product of a and b to infinite precision, then c added in infinite precision, rounded to single
# precision"; subnormal inputs and results kept without ``.ftz``), IEEE 754-2008 §5.4.1
# fusedMultiplyAdd. NaN results are NVIDIA's single fp32 NaN 0x7FFFFFFF (CUDA C++ Programming
# Guide, "Floating-Point Standard"); zeros and overflow as IEEE 754 rounds them. The instruction's
# semantics are the same on every NVIDIA GPU since Fermi; the catalog holds it once, for the GPU
# whose library capture it reproduces (docs/models.md, "The FFMA chain"): the H100's torch.matmul
# fp32 with TF32 off (hwdata/survey/h100-sxm, matmul-fp32) with the dataflow
# ``cutlass2:tile=8,S=16,assign=interleaved``.
NVIDIA_MODELS.append(Model(
    id="hopper-fp32-fp32", op="fma", in_fmt="fp32", c_fmt="fp32", out_fmt="fp32", L=1, specials="nvidia",
    arch="hopper", sm=SM["hopper"], kernels=("ffma_m8n4k1_f32_f32",),
    source="seed 000 Algorithms 3-4 (an IEEE FMA, chained); PTX ISA §9.7.3 fma (fma.rn.f32); IEEE 754-2008 §5.4.1 fusedMultiplyAdd; NaN: CUDA C++ Programming "
           "Guide, Floating-Point Standard (0x7fffffff); hwdata/survey/h100-sxm matmul-fp32 (cuBLAS SGEMM)",
    instruction="fma.rn.f32 (FFMA, CUDA cores)",
    description="Hopper (sm_90) fp32: FFMA chain (cuBLAS SGEMM, CUDA-core fp32), not a tensor-core instruction: "
                "IEEE FMAs (RNE), subnormals kept, NaN 0x7FFFFFFF"))
