"""The seeds' competing hypotheses, each a model of its own: ``kind="rival"`` and ``rival_of`` the
catalog model it contradicts (its id is the base id with a suffix, for reading only)."""

from __future__ import annotations

from dataclasses import replace

from ..model import Model
from .amd import AMD_MODELS
from .nvidia import NVIDIA_MODELS

_BASE = {m.id: m for m in NVIDIA_MODELS + AMD_MODELS}


def _rival(base: str, suffix: str, source: str, description: str, **kw) -> Model:
    m = _BASE[base]
    return replace(m, id=f"{base}-{suffix}", source=source, description=description, kind="rival",
                   rival_of=base, **kw)


RIVAL_MODELS: list[Model] = []
for _b in ("volta-fp16-fp32", "turing-fp16-fp32", "ampere-fp16-fp32", "hopper-fp16-fp32", "ampere-bf16-fp32",
           "hopper-bf16-fp32"):
    RIVAL_MODELS.append(_rival(
        _b, "normalized", "seed 002 Algorithm 1 step 1 (vs unnormalised products, seeds 000/001)",
        f"{_b} with products normalised to fp32 before alignment (seed 002's reading)", normalize=True))
# Where a zero aligns (docs/zeros.md). The catalog follows MMA-Sim 2.1.1's fixed e_zero (and the
# RTX 4060 captures on Ada FP8); each rival below is a reading the suite separates from its base.
_ZIGNORE = ("rival of seed 000's code as released (MMA-Sim 2.1.1, a fixed e_zero: nv_ptx/sim.py:24-41): "
            "zeros left out of the maximum")
for _b in ("ampere-bf16-fp32", "hopper-bf16-fp32"):      # differ at c = 0 with products below e_zero
    RIVAL_MODELS.append(_rival(
        _b, "zeroignore", _ZIGNORE,
        f"{_b} with zero products and c = +-0 left out of the alignment maximum", zero_prod="ignore", zero_c="ignore"))
_Z126 = ("the catalog's earlier convention (an earlier seed 000 simulator code; seed 000 never defines "
         "Exp(0)): a zero operand has exponent -126")
_Z126_ADA = _Z126 + "; refuted on Ada FP8 by the RTX 4060 captures (36,925 of 315,019 vectors differ)"
for _b in ("ada-fp8e4m3-fp32", "ampere-bf16-fp32", "hopper-bf16-fp32", "hopper-fp16-fp32", "hopper-fp16-fp16",
           "hopper-fp8e4m3-fp32", "blackwell-fp8e4m3-fp32-mx"):
    RIVAL_MODELS.append(_rival(
        _b, "zero126", _Z126_ADA if _b.startswith("ada-fp8") else _Z126,
        f"{_b} with a zero product aligned at -126 + Exp(other operand) (+ the scales) and c = +-0 at -126",
        zero_prod="seed000", zero_c="seed000"))
for _b in ("blackwell-fp4e2m1-fp32-mxgst", "blackwell-fp4e2m1-fp32-nvfp4"):
    RIVAL_MODELS.append(_rival(
        _b, "zero126", _Z126,
        f"{_b} with c = +-0 at -126 and an all-zero group (or a zero-scale group) at its scale exponent sum "
        "(a zero UE4M3 scale at -6)", zero_c="seed000", zero_group="seed000", zero_scale="seed000"))
RIVAL_MODELS.append(_rival(
    "cdna3-bf16-fp32", "zero126", "the catalog's earlier reading of seed 000 Algorithm 10 (no CDNA3 capture has spoken)",
    "cdna3-bf16-fp32 with a zero product aligned at -126 + Exp(other operand) and c = +-0 left out of E",
    zero_prod="seed000", zero_c="ignore"))
for _b in ("ampere-bf16-fp32", "hopper-bf16-fp32", "blackwell-bf16-fp32"):
    RIVAL_MODELS.append(_rival(
        _b, "ftz", "rival: bf16 subnormal inputs flushed (seed 002 §4.4 finds subnormals kept)",
        f"{_b} with bf16 subnormal inputs flushed to zero", flush_inputs="signed"))
# Seed 002's Volta accumulator: normalised products, 24-bit mantissas, 3 (or 2) carry-out bits.
for _c in (2, 3, 4):
    RIVAL_MODELS.append(_rival(
        "volta-fp16-fp32", f"carry{_c}", "seed 002 §4.3, Algorithm 1 (3 carry bits on Volta/Turing)",
        f"Volta fp16 -> fp32, seed 002 accumulator: normalised products, F=23, {_c} carry-out bits",
        normalize=True, carry=_c))
for _c in (3, 4):
    RIVAL_MODELS.append(_rival(
        "ampere-fp16-fp32", f"carry{_c}", "seed 002 §4.3 (Ampere's 9-term accumulator needs 4 carry bits)",
        f"Ampere fp16 -> fp32 with normalised products and {_c} carry-out bits", normalize=True, carry=_c))
for _c in (4, 5):
    RIVAL_MODELS.append(_rival(
        "hopper-fp16-fp32", f"carry{_c}", "seed 001 §IV-A5 (17-term adder, 27 + ceil(log2 17) = 32 bits)",
        f"Hopper fp16 -> fp32 with {_c} carry bits above the products' 2 integer bits", carry=_c))
# CDNA1 fp16/bf16 as pairwise fp32 multiplications and additions (a simulator's reading) against
# seed 000 Table 6's exact E-FDPA (one rounding; seed 003 finds the same unit exact).
for _b, _P in (("cdna1-fp16-fp32", 4), ("cdna1-bf16-fp32", 2)):
    RIVAL_MODELS.append(_rival(
        _b, "pairwise", "rival of seed 000 Table 6: pairwise fp32 additions (Algorithm 2's order, no FTZ)",
        f"{_b} as IEEE fp32 products summed pairwise in groups of {_P}, then added to c (RNE each)",
        op="addmul", P=_P))
# CDNA2 (MI250X) fp16/bf16 as a chain of fp32 FMAs, one product per rounding: seed 003 Table III
# reads MI250X fp16 and bf16 as "FMA unit width 1", RTN-TE, no subnormal inputs or outputs. Seed
# 000 Table 6 / Algorithm 2 finds FTZ-Add/FTZ-Mul over pairwise groups of 4 instead: the seeds
# disagree. Subnormal handling kept as seed 000 reads it (inputs and c to +0, results flushed).
for _b in ("cdna2-fp16-fp32", "cdna2-bf16-fp32"):
    RIVAL_MODELS.append(_rival(
        _b, "fmachain", "seed 003 Table III (MI250X: FMA unit width 1, RTN-TE; vs seed 000 Table 6, Algorithm 2)",
        f"{_b} as a chain of IEEE fp32 FMAs (RNE), one product per rounding; subnormal inputs and c "
        f"flushed to +0, subnormal results to a zero of their sign",
        op="fma", L=1, P=None, flush_inputs="positive", flush_outputs="signed"))
# Block-scaled FP4 accumulator widths in dispute (docs/disputes.md; deciding files in
# generated_tests/disputes/). The catalog follows seed 000 Table 5 and MMA-Sim 2.1.1
# (nv_ptx/sim.py:89-104 and :180-195: a k = 64 block-scaled MMA is GST-FDPA with F = 35, k = 32
# ST-FDPA with F = 25).
HUWEIM = ("huweim/emulation_sys bit_width_test_/README.md (commit 7c21c9d): RTX 5090 (sm_120a), FP4 E2M1 scaled "
          "mma.sync m16n8k32 kind::mxf8f6f4 and m16n8k64 kind::mxf4nvf4: 25-bit accumulator, RZ; its k64 probe "
          "(src/probe_mma_nvfp4_acc_fp32.cu) runs kind::mxf4nvf4 scale_vec::2X with UE8M0 scales")
for _b in ("rtx-blackwell-fp4e2m1-fp32-mxgst", "rtx-blackwell-fp4e2m1-fp32-nvfp4"):
    RIVAL_MODELS.append(_rival(
        _b, "f25", HUWEIM + "; against seed 000 Table 5 (F = 35)", f"{_b} with F = 25 (huweim/emulation_sys's 25-bit RZ accumulator for k = 64)", F=25))
DEEPGEMM = ("deepseek-ai/DeepGEMM issues/176 (B200, sm_100a): tcgen05.mma kind::mxf4 and kind::mxf4nvf4 accumulator "
            "width 'not sure, 34,35,36,37bits are tested'")
for _f in (34, 36, 37):
    RIVAL_MODELS.append(_rival(
        "blackwell-fp4e2m1-fp32-mxgst", f"f{_f}", DEEPGEMM + "; against seed 000 Table 5 (F = 35)",
        f"blackwell-fp4e2m1-fp32-mxgst with F = {_f} (one of DeepGEMM issues/176 candidate widths for tcgen05 kind::mxf4)",
        F=_f, instruction="tcgen05.mma.cta_group::1.kind::mxf4.block_scale (UTCQMMA)"))
