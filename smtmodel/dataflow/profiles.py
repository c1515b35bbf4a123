"""Named library dataflows as data, with their citations (docs/dataflow.md, "Profiles").

Each profile's ``source`` says where its facts come from and which of them the vendor documents
(source code or manuals) and which were inferred by others from measurements. A profile fixes
the dataflow's shape; per-call choices (cuBLASLt's split count S and combine, chosen by its
heuristics) are overridden in the text form: ``cublaslt-ada-fp8-fast:S=3,combine=pairwise``.
"""

from __future__ import annotations

import difflib
from dataclasses import replace

from .spec import REGISTRY, Dataflow, DataflowError

_MMAEMU = ("mmaemu 0.1.0 (PyPI; docs/semantics.md, mmaemu/model/plan.py, mmaemu/model/epilogue.py): "
           "measured on an RTX 4060, cuBLASLt 12.8.3.14, torch 2.7.1; ")

_P = [
    Dataflow(
        name="cutlass2",
        source="CUTLASS 2.x epilogue::thread::LinearCombination (vendor source, "
               "include/cutlass/epilogue/thread/linear_combination.h): intermediate = beta*source, then "
               "alpha*accumulator + intermediate as one multiply-add; with beta = 0 the source is not read "
               "(is_source_needed) and D = alpha*accumulator. The mainloop chains the MMA over K from +0."),
    Dataflow(
        name="cutlass3-sm90", epilogue="fma_c",
        source="CUTLASS 3.x SM90 collective epilogue, fusion::LinearCombination as Sm90EVT "
               "(vendor source, include/cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp): "
               "multiply_add(beta, C, alpha*acc). beta = 0 skipping the C load is the documented "
               "is_source_needed behaviour; D = RN(alpha*acc) then is inferred (no +0 addend written)."),
    Dataflow(
        name="cutlass-splitk-serial", slices=2, assign="contiguous", tile=8, combine="output",
        source="CUTLASS 2.x GemmSplitKSerial / kSplitKSerial (vendor source, include/cutlass/gemm/kernel/gemm.h "
               "and LinearCombination::set_k_partition): partition k covers gemm_k_size = round_up(ceil(K/S), "
               "kAlignK) elements (kAlignK = 128 bits of the operand: 8 fp16/bf16, 16 FP8; set tile=16 for FP8); "
               "partition 0 runs the epilogue with C, partition k > 0 reads the previous partition's D "
               "(output type) with beta = 1: D rounded to the output type once per partition. S is per call."),
    Dataflow(
        name="cublaslt-ada-fp8-fast", tile=64, assign="interleaved", beta0="fma0", alpha_from_scales=True,
        k0="zero", k_multiple=16,
        source=_MMAEMU + "inferred by mmaemu from recordings, not documented by NVIDIA: alpha = RN32(scale_a*scale_b); "
               "D = fma(alpha, acc, +0) (beta = 0); K in 64-wide k-tiles, slice s owning tiles t mod S, the last "
               "tile zero-padded; S and the combine (serial: customOption 0/2, pairwise: 1) are cuBLASLt's "
               "heuristic choice per call (override S=, combine=); bf16/fp16 outputs RNE from fp32, FP8 outputs "
               "times scale_result, saturated, RNE; NaN canonical 0x7FFFFFFF; K = 0 gives +0 even with NaN or infinite "
               "scales (recordings ws2:r6.zero_dims: no epilogue runs); K a multiple of 16 (torch._scaled_mm's check, "
               "torch source). Vendor-documented: the FP8 "
               "fast-accumulation switch (CUBLASLT_MATMUL_DESC_FAST_ACCUM) and scale_result (D scale)."),
    Dataflow(
        name="cublaslt-ada-fp8-slow", tile=64, assign="interleaved", restart=2, beta0="fma0",
        alpha_from_scales=True, k0="zero", k_multiple=16,
        source=_MMAEMU + "as cublaslt-ada-fp8-fast, with slow accumulation (use_fast_accum=False): a new chain every 2 "
               "of a slice's own k-tiles (every 128 elements of K unsplit), the chunks added serially from +0 "
               "in fp32 (inferred by mmaemu from recordings)."),
    Dataflow(
        name="cublaslt-ada-fp8-fast-splitk", tile=64, assign="interleaved", slices=2, combine="serial",
        beta0="fma0", alpha_from_scales=True, k0="zero", k_multiple=16,
        source=_MMAEMU + "an Ada split-K plan (serial combine ((p0+p1)+p2)..; S=2 here, per call). Inferred by mmaemu."),
    Dataflow(
        name="cublaslt-ada-fp8-slow-splitk", tile=64, assign="interleaved", slices=3, combine="pairwise",
        restart=2, beta0="fma0", alpha_from_scales=True, k0="zero", k_multiple=16,
        source=_MMAEMU + "an Ada split-K plan with slow accumulation (pairwise combine: h = ceil(S/2), "
               "slot_i = p_i + p_(i+h) if i+h < S-1 else p_i, ((p_(S-1) + slot_0) + slot_1) + ..; S=3 here, "
               "per call). Inferred by mmaemu."),
    Dataflow(
        name="cublaslt-hopper-fp8-fast", tile=128, assign="contiguous", beta0="fma0", alpha_from_scales=True,
        k0="zero", k_multiple=16,
        source=_MMAEMU.replace("an RTX 4060", "an H100 PCIe") + "inferred by mmaemu: one chain over K (split-K: "
               "contiguous runs of 128-wide k-tiles, serial combine); epilogue as on Ada."),
    Dataflow(
        name="cublaslt-hopper-fp8-slow", tile=128, assign="contiguous", restart=1, beta0="fma0",
        alpha_from_scales=True, k0="zero", k_multiple=16,
        source=_MMAEMU.replace("an RTX 4060", "an H100 PCIe") + "inferred by mmaemu: slow accumulation restarts the "
               "chain every 128-wide k-tile, added serially from +0 in fp32 (DeepSeek-V3 §3.3.2 reports the "
               "limited accumulation that makes this promotion necessary)."),
    Dataflow(
        name="tensile", epilogue="fma_c",
        source="rocBLAS/Tensile assembly kernels (vendor source, Tensile/KernelWriterAssembly.py, global write): "
               "the accumulator is multiplied by alpha (v_mul_f32), then v_fmac_f32 adds beta*C: "
               "D = fma(beta, C, RN(alpha*acc)); beta = 0 kernels do not read C. The order is the code's, "
               "not documented behaviour."),
    Dataflow(
        name="cuda-sample-tensorcoregemm", c_entry="accumulator", c_scale="beta", epilogue="alpha_acc",
        source="CUDA samples cudaTensorCoreGemm.cu compute_gemm (vendor sample source): C is loaded into the "
               "accumulator fragments and scaled (c *= beta) before the MMA loop, then c *= alpha before the "
               "store: D = RN(alpha * chain(RN(beta*C), A*B)). (A reading of C*(beta/alpha) was "
               "proposed; the sample's code multiplies by beta; c_scale=beta/alpha states the other rule.)"),
    Dataflow(
        name="cuda-sample-simple-wmma", beta0="read",
        source="CUDA samples simple_wmma_gemm (vendor sample source): acc filled with 0, MMA over K, then "
               "alpha*acc + beta*c per element, always reading C. That nvcc contracts this to "
               "fma(alpha, acc, RN(beta*c)) (not fma(beta, c, RN(alpha*acc))) is inferred, not documented."),
    Dataflow(
        name="deepgemm", tile=128, restart=1, combine_op="ffma", scale_a="1x128", scale_b="128x128", out="bf16",
        k_multiple=128,
        source="DeepGEMM (DeepSeek; authors' source, fp8_gemm.cuh) and DeepSeek-V3 §3.3.2 (paper): FP8 with 1x128 "
               "(A) and 128x128 (B) fp32 block scales; the tensor-core chain is promoted every N_C = 128 "
               "elements: final = fma(RN(s_a*s_b), acc, final) from +0 (FFMA), bf16 output; K a multiple of 128."),
    Dataflow(
        name="instruction", c_entry="accumulator", epilogue="alpha_acc",
        source="Not a library: C is the instruction's c (a kernel that loads C into the accumulators and "
               "chains the MMA over K), D = RN(alpha*acc) (exactly the chain when alpha = 1). What "
               "gemm(alpha=beta=1) computed before dataflows (seed 000 Algorithm 5 over all of K)."),
]

PROFILES: dict[str, Dataflow] = {}
for _p in _P:
    PROFILES[_p.name] = _p.validate()
REGISTRY.update(PROFILES)

DEFAULT = PROFILES["cutlass2"]
"""The default dataflow: the CUTLASS 2.x LinearCombination epilogue over one chain from +0.
Why: it is vendor-documented source, the epilogue most cuBLAS/CUTLASS GEMMs with fp32 C use, it
keeps C out of the tensor-core chain (C in the epilogue reproduces seed 003 §V on
Volta, Ampere, Hopper and CDNA1), and it reads the same for every alpha and beta."""


def get_profile(name: str) -> Dataflow:
    """A named profile; an unknown name is one line suggesting the close ones."""
    name = name.strip()
    if name in ("", "default"):
        return DEFAULT
    if name not in PROFILES:
        close = difflib.get_close_matches(name, list(PROFILES), n=4, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise DataflowError(f"unknown dataflow profile {name!r}{hint} (profiles: {', '.join(PROFILES)})")
    return PROFILES[name]


def profile_variant(name: str, **kw) -> Dataflow:
    """A profile with fields replaced (per-call choices), validated."""
    return replace(get_profile(name), **kw).validate()
