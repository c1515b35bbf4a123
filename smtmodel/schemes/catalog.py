"""Named schemes: the baselines, Markidis et al. (2018), Ootomo-Yokota (2022) as their tcec
library implements it, and seed 002's encoding of both. New schemes are data
(:func:`scheme_from_dict`), e.g. 3xTF32 or bf16x3 below."""

from __future__ import annotations

import json

from .core import Pass, Scheme, SchemeError, Split

_MARKIDIS_PAIRS = ((0, 0), (1, 0), (0, 1), (1, 1))   # A16 B16, dA B16, A16 dB, dA dB (seed 002's code order)

SCHEMES: dict[str, Scheme] = {}


def _add(s: Scheme) -> Scheme:
    if s.name in SCHEMES:
        raise RuntimeError(f"duplicate scheme {s.name}")
    SCHEMES[s.name] = s
    return s


_add(Scheme(
    "fp32", "plain fp32 dot product on CUDA cores: d = fma(a_K, b_K, ... fma(a_1, b_1, c)) with RNE",
    "baseline (IEEE 754 FMA chain, as SIMT SGEMM)", None, fp32=True, c_mode="first"))
_add(Scheme(
    "fp32-blocked", "fp32 on CUDA cores in a blocked order: per k-block of 32 an FMA chain from +0, the blocks "
    "added RN in K order into a register that starts at c (the order of a split-K SGEMM; the block is a parameter)",
    "baseline (a modelling choice, not one library's kernel)", None, fp32=True, block=32, c_mode="register"))
_add(Scheme(
    "fp16", "single-pass fp16 tensor-core GEMM: a, b rounded RNE to fp16, c the initial accumulator",
    "baseline", "volta-fp16-fp32", Split("fp16", 1), (Pass(((0, 0),), "inside", "concat"),), c_mode="first"))
_add(Scheme(
    "tf32", "single-pass tf32 tensor-core GEMM: a, b rounded RNA to tf32 (cvt.rna.tf32.f32), c first",
    "baseline", "ampere-tf32-fp32", Split("tf32", 1, rm="RNA"), (Pass(((0, 0),), "inside", "concat"),),
    c_mode="first"))
_add(Scheme(
    "markidis", "Markidis et al. 2018: A16 = RN16(A), dA = RN16(A - A16) (no scaling); the four products "
    "A16 B16, dA B16, A16 dB, dA dB accumulated in one tensor-core chain (pair-major concatenation, in that "
    "order), c the initial accumulator",
    "Markidis et al., IPDPSW 2018; seed 002 §6", "volta-fp16-fp32",
    Split("fp16", 2, "RNE", "RNE", 0), (Pass(_MARKIDIS_PAIRS, "inside", "concat"),), c_mode="first"))
_add(Scheme(
    "oy-fp16", "Ootomo-Yokota fp16 as wmma_extension tcec implements it: a_hi = RN16(a), a_lo = "
    "RN16(fl32(a - a_hi) * 2^11); per k-block of 16 (8 on sm_75) a_hi b_hi from 0 on the tensor core, added "
    "RN into an fp32 register that starts at c; a_lo b_hi then a_hi b_lo accumulated inside the tensor core "
    "across all of K; a_lo b_lo dropped; d = fl32(hi + fl32(lo / 2^11))",
    "Ootomo & Yokota, IJHPCA 2022; wmmae/wmma_extension tcec", "ampere-fp16-fp32",
    Split("fp16", 2, "RNE", "RNE", 11), (Pass(((0, 0),), "outside"), Pass(((1, 0), (0, 1)), "inside", "kblock")),
    block=16, block_by_arch=(("turing", 8),), c_mode="register"))
_add(Scheme(
    "oy-tf32", "Ootomo-Yokota tf32: a_hi = RNA-tf32(a), a_lo = RNA-tf32(fl32(a - a_hi)) (no scaling); k-blocks "
    "of 8, hi outside (register starts at c), a_lo b_hi then a_hi b_lo inside; d = fl32(hi + lo)",
    "Ootomo & Yokota, IJHPCA 2022; wmmae/wmma_extension tcec", "ampere-tf32-fp32",
    Split("tf32", 2, "RNA", "RNA", 0), (Pass(((0, 0),), "outside"), Pass(((1, 0), (0, 1)), "inside", "kblock")),
    block=8, c_mode="register"))
_add(Scheme(
    "markidis-seed002", "seed 002's encoding of Markidis: conversions to fp16 with RTZ, residual "
    "fl32_RZ(a - a16), four products in one chain (A16 B16, dA B16, A16 dB, dA dB), c the initial "
    "accumulator, seed 002's Volta accumulator (normalised products, F=23, 3 carry bits)",
    "seed 002 §6 (Property 5, Table 5) and its smt/markidi.py", "volta-fp16-fp32-carry3",
    Split("fp16", 2, "RZ", "RZ", 0, sub_rm="RZ"), (Pass(_MARKIDIS_PAIRS, "inside", "concat"),), c_mode="first",
    tags=("seed002",)))
_add(Scheme(
    "oy-seed002", "seed 002's encoding of Ootomo-Yokota: a16 = RZ16(a), a_lo = RZ16(fl32_RD(fl32_RZ(a - a16)"
    " * 2^11)); hi = one tensor-core op of A16 B16 from 0; lo = chain dA B16 then A16 dB from 0; d = "
    "fl32(fl32(hi + fl32_RD(lo * 2^-11)) + c) (c added outside, seed 002 §6 item 6c)",
    "seed 002 §6 (Property 5, Table 5) and its smt/markidi.py", "volta-fp16-fp32-carry3",
    Split("fp16", 2, "RZ", "RZ", 11, sub_rm="RZ", scale_rm="RD"),
    (Pass(((0, 0),), "outside"), Pass(((1, 0), (0, 1)), "inside", "concat")),
    block=None, c_mode="final", unscale_rm="RD", tags=("seed002",)))
_add(Scheme(
    "3xtf32", "3xTF32 (CUTLASS-style, as data): big/small tf32 split (RNA), small*big + big*small + big*big "
    "accumulated in the tensor core per k-block of 8, c first", "example of a user scheme",
    "ampere-tf32-fp32", Split("tf32", 2, "RNA", "RNA", 0),
    (Pass(((1, 0), (0, 1), (0, 0)), "inside", "kblock"),), block=8, c_mode="first"))
_add(Scheme(
    "bf16x3", "bf16x3 (as data): hi/lo bf16 split (RNE), lo*hi + hi*lo + hi*hi accumulated in the tensor "
    "core per k-block of 16, c first", "example of a user scheme", "ampere-bf16-fp32",
    Split("bf16", 2, "RNE", "RNE", 0), (Pass(((1, 0), (0, 1), (0, 0)), "inside", "kblock"),), block=16,
    c_mode="first"))


# ---- FP32 emulation modes of the libraries (docs/schemes.md, "Emulation modes") ------------------
# Each entry cites the source it follows; "inferred" marks what the source does not state.

_BF16_PAIRS6 = ((1, 1), (2, 0), (0, 2), (1, 0), (0, 1), (0, 0))
_BF16_PAIRS9 = ((2, 2), (1, 2), (2, 1), (1, 1), (2, 0), (0, 2), (1, 0), (0, 1), (0, 0))

_add(Scheme(
    "bf16", "single-pass bf16 tensor-core GEMM: a, b rounded RNE to bf16, c the initial accumulator "
    "(rocm-libraries pull 11876's 'bf16-mode' on gfx950 with --model cdna4-bf16-fp32)",
    "baseline", "ampere-bf16-fp32", Split("bf16", 1), (Pass(((0, 0),), "inside", "concat"),), c_mode="first"))
_add(Scheme(
    "bf16x3-triton", "Triton input_precision='bf16x3' (F32DotTC, BF16xN): hi = RNE-bf16(a) (arith.truncf), "
    "lo = RNE-bf16(fl32(a - hi)); per tile of BLOCK_K (group x 16; 32 here) one accumulator from +0: lo*hi, hi*lo, "
    "NaN -> +0, hi*hi; the tile added RN into the loop's fp32 accumulator, which starts at c",
    "triton-lang/triton lib/Dialect/TritonGPU/Transforms/F32DotTC.cpp (BF16xN); BLOCK_K is a kernel parameter",
    "hopper-bf16-fp32", Split("bf16", 2),
    (Pass(((1, 0), (0, 1), (0, 0)), "tile", "pair", group=2, mask=("nan", 2)),), block=16, c_mode="register"))
_add(Scheme(
    "bf16x6-triton", "Triton input_precision='bf16x6': hi, mid, lo = successive RNE-bf16 residuals; per tile "
    "from +0: mid*mid, lo*hi, hi*lo, mid*hi, hi*mid, NaN -> +0, hi*hi; added RN into the register that starts at c",
    "triton-lang/triton F32DotTC.cpp (BF16xN)", "hopper-bf16-fp32", Split("bf16", 3),
    (Pass(_BF16_PAIRS6, "tile", "pair", group=2, mask=("nan", 5)),), block=16, c_mode="register"))
_add(Scheme(
    "tf32x3-triton", "Triton input_precision='tf32x3' (F32DotTC, TF32x3): big = cvt.rna.tf32(a), small = "
    "fl32(a - big) given to the tf32 MMA as fp32 bits (the tensor core reads the top 19 bits: RZ, inferred); per "
    "tile from +0: small*big, big*small, NaN -> +0, big*big; added RN into the register that starts at c",
    "triton-lang/triton F32DotTC.cpp (TF32x3); RZ of the small part inferred from the mma.tf32 operand format",
    "hopper-tf32-fp32", Split("tf32", 2, rms=("RNA", "RZ")),
    (Pass(((1, 0), (0, 1), (0, 0)), "tile", "pair", group=4, mask=("nan", 2)),), block=8, c_mode="register"))
for _n, _pieces, _pairs in (("bf16x3-xla", 2, ((1, 0), (0, 1), (0, 0))), ("bf16x6-xla", 3, _BF16_PAIRS6),
                            ("bf16x9-xla", 3, _BF16_PAIRS9)):
    _add(Scheme(
        _n, f"XLA GPU Triton emitter ALG_DOT_BF16_BF16_F32_X{len(_pairs)} (JAX bf16_{len(_pairs)}x): {_pieces} RNE-bf16 "
        f"pieces (SplitF32); per tile from +0 the pairs {_pairs[:-1]}, non-finite -> +0 (ZeroNaNs: |x| < inf), "
        "hi*hi; the tile added RN into the register that starts at c",
        "openxla/xla xla/backends/gpu/codegen/triton/dot_algorithms.cc (EmitBF16x3/x6/x9Matmul)",
        "hopper-bf16-fp32", Split("bf16", _pieces),
        (Pass(_pairs, "tile", "pair", group=2, mask=("nonfinite", len(_pairs) - 1)),), block=16, c_mode="register"))
_add(Scheme(
    "bf16x3-xla-hlo", "XLA DotAlgorithmRewriter ALG_DOT_BF16_BF16_F32_X3 (the cuBLAS path): hi = a & 0xFFFF0000 "
    "(RZ), lo = RNE-bf16(a - hi); three full-K bf16 GEMMs from +0 (each the model's chain, inferred for cuBLAS); "
    "d' = fl32(lo*hi + hi*lo), non-finite -> +0, fl32(d' + hi*hi); c added last",
    "openxla/xla xla/service/gpu/transforms/dot_algorithm_rewriter.cc (RewriteF32ToBF16X3)", "hopper-bf16-fp32",
    Split("bf16", 2, rms=("RZ", "RNE")),
    (Pass(((0, 0),), "inside", "kblock"), Pass(((0, 1),), "inside", "kblock"), Pass(((1, 0),), "inside", "kblock")),
    block=16, c_mode="final", combine_mask="nonfinite"))
_add(Scheme(
    "bf16x6-xla-hlo", "XLA DotAlgorithmRewriter ALG_DOT_BF16_BF16_F32_X6: hi = RZ, mid = RZ (bit masks), lo = RNE; "
    "six full-K GEMMs from +0; ((((mid*mid + hi*lo) + lo*hi) + hi*mid) + mid*hi), non-finite -> +0, + hi*hi; c last",
    "openxla/xla dot_algorithm_rewriter.cc (RewriteF32ToBF16X6)", "hopper-bf16-fp32",
    Split("bf16", 3, rms=("RZ", "RZ", "RNE")),
    tuple(Pass((pr,), "inside", "kblock") for pr in ((0, 0), (1, 0), (0, 1), (2, 0), (0, 2), (1, 1))),
    block=16, c_mode="final", combine_mask="nonfinite"))
_add(Scheme(
    "bf16x9-cutlass", "CUTLASS SM100 emulated FP32 (example 78, 9xBF16, NumBandsToCompute = 5): pieces "
    "RNE-bf16 (round_to_nearest_satfinite) of residuals kept scaled, r_(i+1) = fl32(r_i - p_i) * 2^8; per "
    "promotion interval (group k-blocks of 16) one TMEM accumulator from +0 runs the bands lo*lo | mid*lo, lo*mid | "
    "hi*lo, mid*mid, lo*hi | hi*mid, mid*hi | hi*hi, each band k-block by k-block, scaling the accumulator by 2^-8 "
    "(scale-input-d) on entering a band; each interval added RN into an fp32 register from 0; c added by the "
    "epilogue. cuBLAS's BF16x9 kernel is not public: this is NVIDIA's published algorithm, not cuBLAS's code",
    "NVIDIA/cutlass include/cutlass/gemm/collective/sm100_mma_warpspecialized_emulated.hpp; ScalingFactor 8 and "
    "AccPromotionInterval 4 are parameters (values inferred)", "blackwell-bf16-fp32",
    Split("bf16", 3, scale=8, residual="scaled"),
    (Pass(((2, 2), (1, 2), (2, 1), (0, 2), (1, 1), (2, 0), (0, 1), (1, 0), (0, 0)), "tile", "band", group=4),),
    block=16, c_mode="final"))
_add(Scheme(
    "bf16x6-cutlass", "CUTLASS SM100 emulated FP32 with NumBandsToCompute = 3 (6 products): bands hi*lo, mid*mid, "
    "lo*hi | hi*mid, mid*hi | hi*hi, otherwise as bf16x9-cutlass",
    "NVIDIA/cutlass sm100_mma_warpspecialized_emulated.hpp", "blackwell-bf16-fp32",
    Split("bf16", 3, scale=8, residual="scaled"),
    (Pass(((0, 2), (1, 1), (2, 0), (0, 1), (1, 0), (0, 0)), "tile", "band", group=4),), block=16, c_mode="final"))
_add(Scheme(
    "3xtf32-cutlass", "CUTLASS 3xTF32 (MmaTensorOpFastF32, example 27): big = a & 0xffffe000 (round_toward_zero), "
    "small = RNA-tf32(fl32(a - big)) (round_half_ulp_truncate: +0x1000, top 19 bits read); per mma k-block of 8, "
    "D = C then small*big, big*small, big*big in one accumulator",
    "NVIDIA/cutlass include/cutlass/gemm/warp/mma_tensor_op_fast_f32.h, numeric_conversion.h, tfloat32.h",
    "ampere-tf32-fp32", Split("tf32", 2, rms=("RZ", "RNA")),
    (Pass(((1, 0), (0, 1), (0, 0)), "inside", "kblock"),), block=8, c_mode="first"))
_add(Scheme(
    "tf32-gfx950", "gfx950 (MI355X) TF32 as Composable Kernel emulates V_MFMA_F32_32x32x16_XF32: big = "
    "RNE-bf16(a) (cvt_pk_bf16_f32), small = RNE-bf16(fl32(a - big)); per MFMA k-block of 16 three bf16 MFMAs "
    "into c_vec: small*big, big*small, big*big (16x16x32: k-blocks of 32, --param block=32)",
    "ROCm/rocm-libraries ck_tile warp_gemm_attribute_mfma_impl.hpp (WarpGemmAttributeMfmaImplF32F32F32M32N32K16"
    "Tf32Gfx950) and its test of convert_float_to_bf16_pairs", "cdna4-bf16-fp32", Split("bf16", 2),
    (Pass(((1, 0), (0, 1), (0, 0)), "inside", "kblock"),), block=16, c_mode="first"))
_add(Scheme(
    "xf32-cdna3", "CDNA3 (MI300) native XF32 MFMA (v_mfma_f32_16x16x8_xf32): a, b read as xf32 (rounding of the "
    "fp32 registers inferred RNE), c the initial accumulator",
    "AMD CDNA3 ISA (XF32 MFMA); the catalog's cdna3-tf32-fp32 model", "cdna3-tf32-fp32", Split("tf32", 1),
    (Pass(((0, 0),), "inside", "concat"),), c_mode="first"))


def all_schemes() -> list[Scheme]:
    return list(SCHEMES.values())


def get_scheme(spec: "str | Scheme") -> Scheme:
    """A named scheme, or a JSON object (text or a path ending .json) read by scheme_from_dict."""
    if isinstance(spec, Scheme):
        return spec
    if spec in SCHEMES:
        return SCHEMES[spec]
    text = spec
    if spec.endswith(".json"):
        try:
            text = open(spec).read()
        except OSError as exc:
            raise SchemeError(f"cannot read scheme file {spec}: {exc}") from None
    if text.lstrip().startswith("{"):
        try:
            return scheme_from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise SchemeError(f"scheme JSON: {exc}") from None
    raise SchemeError(f"unknown scheme {spec!r}; one of {', '.join(SCHEMES)} (or a JSON scheme)")


def scheme_from_dict(d: dict) -> Scheme:
    """A scheme stated as data, e.g.::

        {"name": "my3xtf32", "model": "hopper-tf32-fp32", "block": 8, "c_mode": "first",
         "split": {"fmt": "tf32", "pieces": 2, "rm": "RNA", "lo_rm": "RNA"},
         "passes": [{"pairs": [[1, 0], [0, 1], [0, 0]], "where": "inside", "order": "kblock"}]}

    ``base`` names a catalog scheme whose fields are the defaults."""
    d = dict(d)
    base = SCHEMES[d.pop("base")] if "base" in d else None
    kw = {}
    if "split" in d:
        sp = dict(d.pop("split"))
        if "rms" in sp:
            sp["rms"] = tuple(sp["rms"])
        try:
            kw["split"] = Split(**sp)
        except TypeError as exc:
            raise SchemeError(f"bad split fields: {exc}") from None
    if "passes" in d:
        kw["passes"] = tuple(Pass(tuple(tuple(p) for p in x["pairs"]), x.get("where", "inside"),
                                  x.get("order", "kblock"), x.get("group"),
                                  tuple(x["mask"]) if x.get("mask") else None) for x in d.pop("passes"))
    if "block_by_arch" in d:
        kw["block_by_arch"] = tuple(tuple(x) for x in d.pop("block_by_arch"))
    kw.update(d)
    try:
        if base is not None:
            s = base.with_params(**kw)
        else:
            kw.setdefault("description", "user scheme")
            kw.setdefault("source", "user")
            kw.setdefault("model", None)
            s = Scheme(**kw)
    except TypeError as exc:
        raise SchemeError(f"bad scheme fields: {exc}") from None
    for p in s.passes:
        if p.where == "tile":
            if p.order not in ("pair", "band"):
                raise SchemeError(f"scheme {s.name}: a tile pass's order must be pair or band")
        elif p.where not in ("inside", "outside") or p.order not in ("concat", "kblock"):
            raise SchemeError(f"scheme {s.name}: pass where/order must be inside|outside|tile and concat|kblock "
                              "(tile: pair|band)")
        if p.group is not None and (not isinstance(p.group, int) or p.group < 1):
            raise SchemeError(f"scheme {s.name}: a tile's group must be a positive number of k-blocks")
    if s.c_mode not in ("register", "first", "final"):
        raise SchemeError(f"scheme {s.name}: c_mode must be register, first or final")
    return s
