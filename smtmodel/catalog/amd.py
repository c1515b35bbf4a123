"""AMD Matrix Core models: seed 000 Tables 6 and 7.

Each model names the harness kernels (``hw_runner.amd.kernels`` ids, kept here as plain data)
that run its instruction on its ``gfx``: the single-block 32x32 and 16x16 MFMAs.
"""

from __future__ import annotations

from ..model import Model

GFX = {"cdna1": "gfx908", "cdna2": "gfx90a", "cdna3": "gfx942"}
ZEROS_SRC = "zeros: MMA-Sim 2.1.1 arithmetic/fdpa.py:343, 346 and 398, 406 (docs/zeros.md)"
"""CDNA3 TR/GTR-FDPA: MMA-Sim 2.1.1 leaves zero products out (exponent -999) and aligns c = 0 at
-126 (frexp's fp32 subnormal exponent); no CDNA3 hardware capture has spoken."""
_N = {arch: f"{arch.upper()} ({gfx})" for arch, gfx in GFX.items()}
# (input format, pre-_1k bf16?) -> the (32x32, 16x16) MFMA kernels
_MFMA = {("fp32", False): ("mfma_f32_32x32x2_f32", "mfma_f32_16x16x4_f32"),
         ("fp64", False): ("mfma_f64_16x16x4_f64",),
         ("fp16", False): ("mfma_f32_32x32x8_f16", "mfma_f32_16x16x16_f16"),
         ("bf16", True): ("mfma_f32_32x32x4_bf16", "mfma_f32_16x16x8_bf16"),
         ("bf16", False): ("mfma_f32_32x32x8_bf16_1k", "mfma_f32_16x16x16_bf16_1k"),
         ("tf32", False): ("mfma_f32_32x32x4_xf32", "mfma_f32_16x16x8_xf32"),
         ("fp8e4m3fnuz", False): ("mfma_f32_32x32x16_fp8_fp8", "mfma_f32_16x16x32_fp8_fp8"),
         ("fp8e5m2fnuz", False): ("mfma_f32_32x32x16_bf8_bf8", "mfma_f32_16x16x32_bf8_bf8")}


def _kernels(arch: str, fin: str, legacy: bool = False) -> tuple[str, ...]:
    """CDNA1 has only the pre-_1k bf16 instructions; CDNA2 both; CDNA3 only the _1k ones."""
    return _MFMA[(fin, legacy or (fin == "bf16" and arch == "cdna1"))]


def _fma(arch, f):
    return Model(id=f"{arch}-{f}-{f}", op="fma", in_fmt=f, c_fmt=f, out_fmt=f, L=1, specials="ieee", arch=arch, gfx=GFX[arch],
                 kernels=_kernels(arch, f), source="seed 000 Table 6",
                 instruction=f"v_mfma_{'f64' if f == 'fp64' else 'f32'}_*",
                 description=f"{_N[arch]} {f}: chain of IEEE FMAs (RNE)")


AMD_MODELS: list[Model] = [
    _fma("cdna1", "fp32"),
    Model(id="cdna1-bf16-fp32", op="efdpa", in_fmt="bf16", c_fmt="fp32", out_fmt="fp32", L=2, specials="ieee",
          arch="cdna1", gfx="gfx908", kernels=_kernels("cdna1", "bf16"), source="seed 000 Table 6", instruction="v_mfma_f32_*_bf16",
          description="CDNA1 (gfx908) bf16 -> fp32: E-FDPA L=2 (exact, RNE-FP32)"),
    Model(id="cdna1-fp16-fp32", op="efdpa", in_fmt="fp16", c_fmt="fp32", out_fmt="fp32", L=4, specials="ieee",
          arch="cdna1", gfx="gfx908", kernels=_kernels("cdna1", "fp16"), source="seed 000 Table 6", instruction="v_mfma_f32_*_f16",
          description="CDNA1 (gfx908) fp16 -> fp32: E-FDPA L=4 (exact, RNE-FP32)"),
    _fma("cdna2", "fp64"), _fma("cdna2", "fp32"),
    Model(id="cdna2-bf16-fp32", op="ftz_addmul", in_fmt="bf16", c_fmt="fp32", out_fmt="fp32", P=4, L=4,
          specials="ieee", arch="cdna2", gfx="gfx90a", kernels=_kernels("cdna2", "bf16"), source="seed 000 Table 6, Algorithm 2", instruction="v_mfma_f32_*_bf16_1k",
          description="CDNA2 (gfx90a) bf16 _1k -> fp32: FTZ-Add/FTZ-Mul, pairwise P=4, input FTZ to +0"),
    Model(id="cdna2-bf16-fp32-legacy", op="ftz_addmul", in_fmt="bf16", c_fmt="fp32", out_fmt="fp32", P=2, L=2,
          specials="ieee", arch="cdna2", gfx="gfx90a", kernels=_kernels("cdna2", "bf16", legacy=True), source="seed 000 Table 6, Algorithm 2", instruction="v_mfma_f32_*_bf16 (no _1k)",
          description="CDNA2 (gfx90a) bf16 (pre-_1k instruction) -> fp32: FTZ-Add/FTZ-Mul, pairwise P=2"),
    Model(id="cdna2-fp16-fp32", op="ftz_addmul", in_fmt="fp16", c_fmt="fp32", out_fmt="fp32", P=4, L=4,
          specials="ieee", arch="cdna2", gfx="gfx90a", kernels=_kernels("cdna2", "fp16"), source="seed 000 Table 6, Algorithm 2", instruction="v_mfma_f32_*_f16",
          description="CDNA2 (gfx90a) fp16 -> fp32: FTZ-Add/FTZ-Mul, pairwise P=4, input FTZ to +0"),
    _fma("cdna3", "fp64"), _fma("cdna3", "fp32"),
]
for _fin, _L in (("tf32", 4), ("bf16", 8), ("fp16", 8)):
    AMD_MODELS.append(Model(
        id=f"cdna3-{_fin}-fp32", op="trfdpa", in_fmt=_fin, c_fmt="fp32", out_fmt="fp32", L=_L, F=24, F2=31,
        rho="RNE-FP32", specials="ieee", zero_prod="ignore", zero_c=-126, arch="cdna3", gfx="gfx942",
        kernels=_kernels("cdna3", _fin), source=f"seed 000 Tables 6-7, Algorithm 10; {ZEROS_SRC}",
        instruction=f"v_mfma_f32_*_{_fin.replace('fp', 'f')}",
        description=f"CDNA3 (gfx942) {_fin} -> fp32: TR-FDPA L={_L}, F=24, F2=31, RD inside, RNE-FP32"))
for _fin in ("fp8e4m3fnuz", "fp8e5m2fnuz"):
    AMD_MODELS.append(Model(
        id=f"cdna3-{_fin}-fp32", op="gtrfdpa", in_fmt=_fin, c_fmt="fp32", out_fmt="fp32", L=16, F=24, F2=31,
        rho="RNE-FP32", specials="ieee", zero_prod="ignore", zero_c=-126, arch="cdna3", gfx="gfx942",
        kernels=_kernels("cdna3", _fin), source=f"seed 000 Tables 6-7, Algorithm 11; {ZEROS_SRC}",
        instruction="v_mfma_f32_*_fp8_fp8 / bf8_bf8",
        description=f"CDNA3 (gfx942) {_fin} -> fp32: GTR-FDPA L=16 (even/odd groups), F=24, F2=31, RNE-FP32"))
