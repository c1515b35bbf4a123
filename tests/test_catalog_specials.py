"""Special values, rival hypotheses against the data, and the GEMM API.

Expected special-value encodings come from seed 000 §4.2 (NVIDIA canonical NaN 0x7FFFFFFF /
0x7FFF) and seed 002 §4.4 (zero results are +0; subnormals kept); IEEE 754 for the rest.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from smtmodel.catalog import get_model, rivals_of
from smtmodel.gemm import gemm
from smtmodel.model import ModelError
from smtmodel.vectors import read_vectors

HW = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "hwdata")
ONE, MONE, INF, NINF, NAN16, ZERO, NZERO = 0x3C00, 0xBC00, 0x7C00, 0xFC00, 0x7E01, 0x0000, 0x8000


def d(model, a, b, c, k=None):
    m = get_model(model)
    k = k or len(a)
    A = np.zeros((1, k), np.uint64); B = np.zeros((1, k), np.uint64)
    A[0, :len(a)] = a; B[0, :len(b)] = b
    return int(m.evaluate(A, B, np.array([c], np.uint64))[0])


@pytest.mark.parametrize("model", ["volta-fp16-fp32", "ampere-fp16-fp32", "hopper-fp16-fp32"])
def test_nvidia_specials_fp32_out(model):
    assert d(model, [NAN16], [ONE], 0) == 0x7FFFFFFF                     # NaN input -> canonical NaN
    assert d(model, [INF, INF], [ONE, MONE], 0) == 0x7FFFFFFF            # inf - inf
    assert d(model, [INF], [ZERO], 0) == 0x7FFFFFFF                      # inf * 0
    assert d(model, [INF], [ONE], 0x3F800000) == 0x7F800000              # inf + finite = inf
    assert d(model, [NINF], [ONE], 0) == 0xFF800000
    assert d(model, [ONE], [ONE], 0xBF800000) == 0x00000000              # exact cancellation: +0
    assert d(model, [NZERO], [ONE], 0x80000000) == 0x00000000            # -0 + -0 -> +0 (seed 002)
    assert d(model, [ONE], [ONE], 0x7F7FFFFF) == 0x7F7FFFFF              # 1 is cut below fp32 max: no overflow
    assert d(model, [0x0001], [0x0001], 0) == 0x27800000                 # 2^-24 * 2^-24 = 2^-48, exact


@pytest.mark.parametrize("model", ["ampere-bf16-fp32", "hopper-bf16-fp32"])
def test_overflow_after_rz_gives_inf(model):
    # 2^127 * 2 = 2^128 exceeds fp32: RZ would give max finite, NVIDIA gives inf (seed 000 §4.2,
    # as its simulator does); the sign follows the sum
    assert d(model, [0x7F00], [0x4000], 0) == 0x7F800000
    assert d(model, [0xFF00], [0x4000], 0) == 0xFF800000


def test_subnormal_in_and_out_kept():
    # fp16 subnormal inputs are exact; an fp32 subnormal c passes through (seed 002 §4.4)
    assert d("hopper-fp16-fp32", [0x0001], [0x3C00], 0) == 0x33800000    # 2^-24 * 1
    assert d("hopper-fp16-fp32", [ZERO], [ZERO], 0x00000001) == 0x00000001
    assert d("hopper-fp16-fp16", [0x0001], [0x3C00], 0x0000) == 0x0001   # fp16 subnormal out


def test_fp16_out_specials():
    assert d("hopper-fp16-fp16", [NAN16], [ONE], 0) == 0x7FFF
    assert d("hopper-fp16-fp16", [0x7BFF], [0x3C00], 0x7BFF) == 0x7C00   # 65504 + 65504 -> inf (RNE)


def test_ieee_models_specials():
    # FMA chains follow IEEE 754: -0 + -0 = -0 under RNE; NaN is the canonical quiet NaN
    assert d("cdna3-fp32-fp32", [0x80000000], [0x3F800000], 0x80000000) == 0x80000000
    assert d("cdna3-fp32-fp32", [0x7FC00001], [0x3F800000], 0) == 0x7FC00000


F32_ONE, F32_NZERO = 0x3F800000, 0x80000000


def test_nvidia_ffma_chain_specials():
    """hopper-fp32-fp32, the FFMA chain: every NaN result is the one fp32 NaN NVIDIA GPUs write,
    0x7FFFFFFF (CUDA C++ Programming Guide, "Floating-Point Standard"), whatever the NaN operand's
    sign and payload; zeros, subnormals and overflow are IEEE 754's (PTX ISA fma.rn.f32 without
    .ftz; IEEE 754-2008 §5.4.1, §6.3), unlike the tensor cores' +0 rule. cdna3-fp32-fp32, the same
    chain with IEEE specials, differs from it on the NaN bits only."""
    m = "hopper-fp32-fp32"
    for nan in (0x7FC00001, 0x7F800001, 0xFFC00000):                    # quiet, signalling, negative
        assert d(m, [nan], [F32_ONE], 0) == 0x7FFFFFFF
        assert d(m, [F32_ONE], [F32_ONE], nan) == 0x7FFFFFFF              # a NaN c too
        assert d("cdna3-fp32-fp32", [nan], [F32_ONE], 0) == 0x7FC00000
    assert d(m, [0x7F800000], [0], 0) == 0x7FFFFFFF                       # inf * 0
    assert d(m, [0x7F800000, 0x7F800000], [F32_ONE, 0xBF800000], 0) == 0x7FFFFFFF   # inf - inf
    assert d(m, [0x7F800000], [F32_ONE], 0x3F800000) == 0x7F800000        # inf + finite = inf
    assert d(m, [F32_NZERO], [F32_ONE], F32_NZERO) == F32_NZERO           # -0 + -0 = -0 (IEEE), not +0
    assert d(m, [F32_ONE], [F32_ONE], 0xBF800000) == 0                    # exact cancellation: +0 (RNE)
    assert d(m, [0x00800000], [0x3A800000], 0) == 0x00002000              # 2^-126 * 2^-10 = 2^-136, subnormal kept
    assert d(m, [0x7F7FFFFF], [0x40000000], 0) == 0x7F800000              # overflow under RNE: inf
    # one rounding per product: (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly; a rounded product
    # (1 + 2^-11, the tie to even) would give 0
    assert d(m, [0x3F800800], [0x3F800800], 0xBF801000) == 0x33800000


def test_nvidia_ffma_chain_smt_reading_on_specials():
    """The SMT reading of hopper-fp32-fp32 writes the same NaN bits as the twin (a chain of 3 with
    NaNs, infinities, zeros and subnormals in every position)."""
    from test_catalog_smt_twin import smt_outputs
    m = get_model("hopper-fp32-fp32")
    vals = [0x7FC00001, 0xFF800001, 0x7F800000, 0xFF800000, 0, F32_NZERO, 0x00000001, F32_ONE]
    rng = np.random.default_rng(5)
    a, b = (rng.choice(vals, (64, 3)).astype(np.uint64) for _ in range(2))
    c = rng.choice(vals, 64).astype(np.uint64)
    twin = m.evaluate(a, b, c)
    assert smt_outputs(m, a, b, c) == [int(x) for x in twin]
    nan = ((twin >> 23) & 0xFF == 0xFF) & (twin & 0x7FFFFF != 0)
    assert nan.sum() > 10 and (twin[nan] == 0x7FFFFFFF).all()            # every NaN the canonical one


@pytest.mark.parametrize("gpu,base", [("v100", "volta-fp16-fp32"), ("a100", "ampere-fp16-fp32"),
                                      ("h100", "hopper-fp16-fp32")])
def test_data_refute_normalised_products(gpu, base):
    """Seed 002 normalises products before alignment; seeds 000/001 do not. The hardware decides:
    the default (unnormalised) matches every case, the rival does not."""
    vf = read_vectors(os.path.join(HW, f"{gpu}_fp16_fp32.jsonl.gz"))
    a, b, c = vf.arrays()
    obs = np.array([int(next(iter(x["observed"].values())), 16) for x in vf.cases], dtype=np.uint64)
    assert np.array_equal(get_model(base).evaluate(a, b, c), obs)
    (rival,) = [m for m in rivals_of(base) if m.normalize and m.carry is None]
    assert np.sum(rival.evaluate(a, b, c) != obs) > 0


def test_gemm_matches_per_element_dot_products():
    rng = np.random.default_rng(5)
    A = rng.standard_normal((6, 32)).astype(np.float16)
    B = rng.standard_normal((32, 5)).astype(np.float16)
    C = rng.standard_normal((6, 5)).astype(np.float32)
    D = gemm("hopper-fp16-fp32", A, B, C, dataflow="instruction")      # C as the instruction's c
    m = get_model("hopper-fp16-fp32")
    a = A.view(np.uint16).astype(np.uint64); b = B.view(np.uint16).astype(np.uint64)
    c = C.view(np.uint32).astype(np.uint64)
    per = m.evaluate(np.repeat(a, 5, axis=0), np.tile(np.ascontiguousarray(b.T), (6, 1)), c.reshape(-1))
    assert np.array_equal(np.asarray(per, np.uint64).reshape(6, 5), D.view(np.uint32).astype(np.uint64))  # case i*5+j
    ref = A.astype(np.float64) @ B.astype(np.float64) + C
    assert np.allclose(D, ref, rtol=1e-5, atol=1e-5)            # an independent fp64 computation
    with pytest.raises(ModelError):
        gemm("hopper-fp16-fp32", A, B[:-1], C)
    with pytest.raises(ModelError):
        gemm("hopper-fp16-fp32", A.astype(np.float32) + 1e-4, B, C)   # not fp16 values
