"""NVIDIA Tensor Core models: seed 000 Tables 3-5 (T-FDPA, ST-FDPA, GST-FDPA, FMA for FP64)
and the FP8-through-mma.sync path of seed 001 §IV-A5/A6.

Each model names the harness kernels (``hw_runner.kernels`` ids, kept here as plain data) that
run its instruction on its architecture: ``mma.sync`` shapes for the 16-bit and TF32 inputs on
every arch from the one that introduced the shape, ``wgmma`` on Hopper, the FP8 ``mma.sync``
m16n8k32 kernel for Ada and RTX Blackwell (QMMA) and, on Hopper and Blackwell, for the
``-mmasync`` models (lowered to fp16 HMMA, seed 001 §IV-A5/A6).

Mixed operand formats (A and B in different formats, ``a_fmt``/``b_fmt``; ids ``ARCH-AxB-OUT``)
are listed where the PTX ISA has them (NVIDIA, "Parallel Thread Execution ISA", §9.7.14.5.14
``mma``: ``.f8type`` of A and of B each in {.e4m3, .e5m2} for m16n8k16/m16n8k32 from sm_89, and
``.kind::f8f6f4`` / ``.kind::mxf8f6f4`` with each of A and B in {.e4m3, .e5m2, .e3m2, .e2m3,
.e2m1} from sm_100a/sm_120a; §9.7.15.5.2 ``wgmma.mma_async``: ``.atype``/``.btype`` each in
{.e4m3, .e5m2} on sm_90a; §9.7.16 ``tcgen05.mma`` ``.kind::f8f6f4``/``.kind::mxf8f6f4`` likewise).
They keep their same-format sibling's parameters: the datapath decodes each operand in its own
format and multiplies exactly, as the RTX 4060 recordings (../shared/hwdata/rtx4060_mmaemu,
301,058 mixed e4m3 x e5m2 outputs) show for Ada. ``in_fmt`` of a mixed model is A's format."""

from __future__ import annotations

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

_FP8 = ("fp8e4m3", "fp8e5m2")
_FP8_MIXES = (("fp8e4m3", "fp8e5m2"), ("fp8e5m2", "fp8e4m3"))
_LOWP_MIXES = tuple((x, y) for x in ("fp8e4m3", "fp8e5m2", "fp6e2m3", "fp6e3m2", "fp4e2m1")
                    for y in ("fp8e4m3", "fp8e5m2", "fp6e2m3", "fp6e3m2", "fp4e2m1") if x != y)


def _pair(fa: str, fb: str) -> str:
    """The id part of an operand pair: ``fp8e4m3`` or ``fp8e4m3xfp8e5m2``."""
    return fa if fa == fb else f"{fa}x{fb}"


def _ptx_pair(fa: str, fb: str) -> str:
    return fa[3:] if fa == fb else f"{fa[3:]} x {fb[3:]}"

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


def _kernels(arch: str, fin: str, fout: str, mmasync: bool = False) -> tuple[str, ...]:
    """Harness kernel ids that run (arch, fin -> fout). FP8 m16n8k32 is QMMA on sm_89/sm_120
    (Table 4's T-FDPA) and the ``-mmasync`` path on sm_90/sm_100; tcgen05 (sm_100's own FP8
    instruction) and the block-scaled instructions have no harness kernel."""
    sm = SM[arch]
    if fin not in _PTX:
        return ()
    t, o = _PTX[fin], _PTX[fout]
    if fin.startswith("fp8"):
        ids = [f"mma_m16n8k32_{t}_{o}"] if mmasync or arch in ("ada", "rtx-blackwell") else []
    else:
        ids = [f"mma_m{m}n{n}k{k}_{t}_{o}" for (m, n, k), first, last in _MMA[fin]
               if first <= sm and (last is None or sm <= last)]
    if arch == "hopper" and not mmasync and fin in _WGMMA_K:
        ids.append(f"wgmma_m64n8k{_WGMMA_K[fin]}_{t}_{o}")
    return tuple(ids)


NVIDIA_MODELS: list[Model] = []
for _arch, (_sm, _rows) in _T4.items():
    for fin, fout, L, F, rho in _rows:
        NVIDIA_MODELS.append(Model(
            id=f"{_arch}-{fin}-{fout}", op="tfdpa", in_fmt=fin, c_fmt=fout, out_fmt=fout, L=L, F=F, rho=rho,
            arch=_arch, sm=_sm, kernels=_kernels(_arch, fin, fout),
            source=S000_T4, instruction=_instr(_arch, fin),
            description=f"{_NAMES[_arch]} (sm_{_sm}) {fin} -> {fout}: T-FDPA L={L}, F={F}, {rho}"))

# Mixed operand formats of the same T-FDPA (PTX ISA §9.7.14.5.14 / §9.7.15.5.2 / §9.7.16, see the
# module docstring): FP8 e4m3 x e5m2 both ways on Ada (mma.sync), Hopper (wgmma) and Blackwell
# (tcgen05 / mma.sync kind::f8f6f4, which also mixes FP6 and FP4: those mixes are overrides of the
# same-format models, e.g. ``blackwell-fp8e4m3-fp32:b_fmt=fp4e2m1``).
for _arch, (_sm, _rows) in _T4.items():
    for fin, fout, L, F, rho in _rows:
        if fin != "fp8e4m3":
            continue
        for fa, fb in _FP8_MIXES:
            src = S000_T4 + "; PTX ISA mixed FP8 operands" + ("; RTX 4060 hwdata (mmaemu)" if _arch == "ada" else "")
            NVIDIA_MODELS.append(Model(
                id=f"{_arch}-{_pair(fa, fb)}-{fout}", op="tfdpa", in_fmt=fa, a_fmt=fa, b_fmt=fb, c_fmt=fout,
                out_fmt=fout, L=L, F=F, rho=rho, arch=_arch, sm=_sm, kernels=(),
                source=src, instruction=_instr(_arch, fa) + f" {_ptx_pair(fa, fb)}",
                description=(f"{_NAMES[_arch]} (sm_{_sm}) {fa} x {fb} -> {fout}: T-FDPA L={L}, F={F}, {rho}, "
                             "each operand decoded in its own format")))

# FP8 through mma.sync on Hopper / Blackwell: fp16 tensor-core work on interleaved pairs.
for _arch in ("hopper", "blackwell"):
    for fa, fb in tuple((f, f) for f in _FP8) + _FP8_MIXES:
        for fout, rho in (("fp32", "RZ-FP32"), ("fp16", "RNE-FP16")):
            mixed = dict(a_fmt=fa, b_fmt=fb) if fa != fb else {}
            NVIDIA_MODELS.append(Model(
                id=f"{_arch}-{_pair(fa, fb)}-{fout}-mmasync", op="fp8_via_fp16", in_fmt=fa, c_fmt=fout, out_fmt=fout,
                L=16, F=25, rho=rho, arch=_arch, sm=SM[_arch],
                kernels=_kernels(_arch, fa, fout, mmasync=True) if fa == fb else (),
                source="seed 001 §IV-A5/A6, Fig. 5c; B200 hwdata" + ("; PTX ISA mixed FP8 operands" if mixed else ""),
                instruction=f"mma.sync.aligned.m16n8k32 {_ptx_pair(fa, fb)} -> HMMA (fp8 converted to fp16)",
                description=(f"{_NAMES[_arch]} {fa if fa == fb else fa + ' x ' + fb} -> {fout} via mma.sync: "
                             f"halves {{k mod 4 in 0,1}} and {{2,3}} as fp16 T-FDPA (L=16, F=25, {rho}) chained, "
                             "then c added with RNE"), **mixed))

# Block-scaled formats (seed 000 Tables 4 and 5); kind::mxf8f6f4 takes A and B each in any of
# the five formats (PTX ISA §9.7.14.5.14, §9.7.16): the 20 mixed pairs follow the same ST-FDPA.
for _arch in ("blackwell", "rtx-blackwell"):
    for fa, fb in tuple((f, f) for f in _LOWP) + _LOWP_MIXES:
        mixed = dict(a_fmt=fa, b_fmt=fb) if fa != fb else {}
        what = f"MX{fa[2:]}" if fa == fb else f"MX{fa[2:]} x MX{fb[2:]}"
        NVIDIA_MODELS.append(Model(
            id=f"{_arch}-{_pair(fa, fb)}-fp32-mx", op="stfdpa", in_fmt=fa, c_fmt="fp32", out_fmt="fp32", L=32, F=25,
            rho="RZ-FP32", scale_fmt="e8m0", scale_block=32, arch=_arch, sm=SM[_arch],
            source="seed 000 Table 4 (MXFP8/6/4)" + ("; PTX ISA kind::mxf8f6f4 mixed operands" if mixed else ""),
            instruction="mma.sync ...block_scale / tcgen05.mma ...block_scale (QMMA.SF / UTCQMMA)",
            description=f"{_NAMES[_arch]} {what} -> fp32: ST-FDPA L=32, F=25, RZ-FP32, E8M0 scales per 32",
            **mixed))
    NVIDIA_MODELS.append(Model(
        id=f"{_arch}-fp4e2m1-fp32-mxgst", op="gstfdpa", in_fmt="fp4e2m1", c_fmt="fp32", out_fmt="fp32", L=64, G=16,
        F=35, rho="RZ-FP32", scale_fmt="e8m0", scale_block=32, arch=_arch, sm=SM[_arch],
        source="seed 000 Table 5 (MXFP4)",
        instruction="mma.sync ...block_scale.scale_vec::2X (OMMA.SF)",
        description=f"{_NAMES[_arch]} MXFP4 -> fp32: GST-FDPA L=64, G=16, F=35, E8M0 scales per 32"))
    NVIDIA_MODELS.append(Model(
        id=f"{_arch}-fp4e2m1-fp32-nvfp4", op="gstfdpa", in_fmt="fp4e2m1", c_fmt="fp32", out_fmt="fp32", L=64, G=16,
        F=35, rho="RZ-FP32", scale_fmt="ue4m3", scale_block=16, arch=_arch, sm=SM[_arch],
        source="seed 000 Table 5 (NVFP4)",
        instruction="mma.sync ...block_scale.scale_vec::4X (OMMA.SF)",
        description=f"{_NAMES[_arch]} NVFP4 -> fp32: GST-FDPA L=64, G=16, F=35, UE4M3 scales per 16"))

# FP64 (DMMA): a chain of IEEE FMAs (seed 000 Table 3, Algorithm 4; seed 001 §IV-A2).
for _arch in ("ampere", "ada", "hopper", "blackwell"):
    NVIDIA_MODELS.append(Model(
        id=f"{_arch}-fp64-fp64", op="fma", in_fmt="fp64", c_fmt="fp64", out_fmt="fp64", L=1, specials="ieee",
        arch=_arch, sm=SM[_arch], kernels=_kernels(_arch, "fp64", "fp64"), source="seed 000 Table 3",
        instruction="mma.sync.aligned.m8n8k4 f64 (DMMA)",
        description=f"{_NAMES[_arch]} fp64: chain of IEEE FMAs (RNE)"))
