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
        kw["split"] = Split(**d.pop("split"))
    if "passes" in d:
        kw["passes"] = tuple(Pass(tuple(tuple(p) for p in x["pairs"]), x.get("where", "inside"),
                                  x.get("order", "kblock")) for x in d.pop("passes"))
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
        if p.where not in ("inside", "outside") or p.order not in ("concat", "kblock"):
            raise SchemeError(f"scheme {s.name}: pass where/order must be inside|outside and concat|kblock")
    if s.c_mode not in ("register", "first", "final"):
        raise SchemeError(f"scheme {s.name}: c_mode must be register, first or final")
    return s
