"""smtmodel.gemm against independent references: per-element ``Model.evaluate`` (NumPy reading)
for the dot products and the K orders, fp32 NumPy arithmetic for the alpha/beta epilogue."""

from __future__ import annotations

import numpy as np
import pytest

from smtmodel.catalog import get_model
from smtmodel.formats import bits_to_numpy
from smtmodel.gemm import gemm, gemm_bits, k_chunks, to_bits
from smtmodel.model import ModelError

M, N, K = 9, 13, 45          # N not a multiple of the 8 lanes, K not a multiple of the block


def mats(in_fmt, c_fmt, seed=1, m=M, n=N, k=K):
    rng = np.random.default_rng(seed)
    from smtmodel.sampling import round_to
    A = bits_to_numpy(round_to(rng.standard_normal((m, k)), in_fmt), in_fmt)
    B = bits_to_numpy(round_to(rng.standard_normal((k, n)), in_fmt), in_fmt)
    C = bits_to_numpy(round_to(rng.standard_normal((m, n)), c_fmt), c_fmt)
    return A, B, C


def per_element(m, A, B, C, k0=0, k1=None):
    """D[i,j] = model(A[i,k0:k1], B[k0:k1,j], C[i,j] or +0): every element a case of its own, all
    cases in one NumPy ``evaluate`` call (the dot-product reading, not the GEMM's)."""
    a, b = to_bits(A, m.in_fmt), to_bits(B, m.in_fmt)
    k1 = a.shape[1] if k1 is None else k1
    c = np.zeros((a.shape[0], b.shape[1]), np.uint64) if C is None else to_bits(C, m.c_fmt)
    rows, cols = a.shape[0], b.shape[1]
    ca = np.repeat(a[:, k0:k1], cols, axis=0)                  # case i*cols + j: row i of A
    cb = np.tile(np.ascontiguousarray(b[k0:k1, :].T), (rows, 1))   # ... and column j of B
    d = m.evaluate(ca, cb, c.reshape(-1), backend="numpy")
    return np.asarray(d, dtype=np.uint64).reshape(rows, cols)


@pytest.mark.parametrize("mid", ["hopper-fp16-fp32", "hopper-fp8e4m3-fp32", "hopper-fp8e4m3-fp16-mmasync",
                                 "volta-fp16-fp32", "hopper-fp16-fp32:c_entry=end,c_rm=RZ",
                                 "ampere-bf16-fp32:flush_outputs=signed", "hopper-fp16-fp32:round_products=RNE"])
@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_plain_gemm_is_per_element_dot_products(mid, backend):
    m = get_model(mid)
    A, B, C = mats(m.in_fmt, m.c_fmt)
    if m.flush_outputs:                         # tiny values, so that subnormal outputs occur
        A = bits_to_numpy(to_bits(A, m.in_fmt) & np.uint64(0x807F) | np.uint64(0x0800), m.in_fmt)
    D = gemm(m, A, B, C, backend=backend, dataflow="instruction")     # C as the instruction's c, alpha = 1
    assert np.array_equal(to_bits(D, m.out_fmt), per_element(m, A, B, C))


def test_transposes_read_the_same_matrices():
    m = get_model("hopper-fp16-fp32")
    A, B, C = mats(m.in_fmt, m.c_fmt, seed=2)
    D = gemm(m, A, B, C)
    At, Bt = np.ascontiguousarray(A.T), np.ascontiguousarray(B.T)
    for ta, tb in ((True, False), (False, True), (True, True)):
        got = gemm(m, At if ta else A, Bt if tb else B, C, transa=ta, transb=tb)
        assert np.array_equal(got.view(np.uint32), D.view(np.uint32))


@pytest.mark.parametrize("alpha,beta", [(2.0, 0.5), (0.25, -1.0), (1.0, 0.0), (-4.0, 3.0)])
def test_epilogue_is_fp32_fma_of_alpha_acc_and_beta_c(alpha, beta):
    """acc from +0 by the model (checked per element); then fp32 RN: t = beta*C, D = alpha*acc + t
    with one rounding. alpha is a power of two here, so NumPy's fp32 alpha*acc is exact and
    the fp32 add of t is the fma's single rounding."""
    m = get_model("hopper-fp16-fp32")
    A, B, C = mats(m.in_fmt, m.c_fmt, seed=3)
    acc = bits_to_numpy(per_element(m, A, B, None), "fp32")
    t = np.float32(beta) * C if beta else np.float32(0)
    ref = (np.float32(alpha) * acc + t).astype(np.float32)
    D = gemm(m, A, B, C, alpha=alpha, beta=beta)
    assert np.array_equal(D.view(np.uint32), ref.view(np.uint32))
    assert np.array_equal(gemm(m, A, B, C, alpha=alpha, beta=beta, backend="numpy").view(np.uint32),
                          ref.view(np.uint32))


def test_epilogue_to_fp16_output_rounds_once_more():
    m = get_model("hopper-fp8e4m3-fp16-mmasync")
    A, B, C = mats(m.in_fmt, m.c_fmt, seed=4)
    acc = bits_to_numpy(per_element(m, A, B, None), "fp16").astype(np.float32)
    ref = (np.float32(2.0) * acc + np.float32(0.5) * C.astype(np.float32)).astype(np.float16)
    D = gemm(m, A, B, C, alpha=2.0, beta=0.5)
    assert np.array_equal(D.view(np.uint16), ref.view(np.uint16))


@pytest.mark.parametrize("order,chunks", [("split:2", [(0, 32), (32, 45)]), ("split:3", [(0, 16), (16, 32), (32, 45)]),
                                          ("interval:32", [(0, 32), (32, 45)]), ("interval:20", [(0, 20), (20, 40), (40, 45)])])
def test_k_orders_sum_partials_in_fp32(order, chunks):
    m = get_model("hopper-fp16-fp32")
    assert k_chunks(m, K, order) == chunks
    A, B, C = mats(m.in_fmt, m.c_fmt, seed=5)
    parts = [bits_to_numpy(per_element(m, A, B, None, k0, k1), "fp32") for k0, k1 in chunks]
    acc = parts[0]
    for p in parts[1:]:
        acc = (acc + p).astype(np.float32)
    ref = (acc + C).astype(np.float32)          # alpha = beta = 1: fma(1, acc, C) = fp32 add
    got = gemm(m, A, B, C, k_order=order)
    assert np.array_equal(got.view(np.uint32), ref.view(np.uint32))


def test_bad_input_is_a_model_error():
    m = get_model("hopper-fp16-fp32")
    A, B, C = mats(m.in_fmt, m.c_fmt)
    with pytest.raises(ModelError, match="shapes do not fit"):
        gemm(m, A, B[:-1], C)
    with pytest.raises(ModelError, match="shapes do not fit"):
        gemm(m, A, B, C[:-1])
    with pytest.raises(ModelError, match="not exactly representable"):
        gemm(m, A.astype(np.float32) + np.float32(1e-4), B, C)
    with pytest.raises(ModelError, match="not exactly representable in fp32"):
        gemm(m, A, B, C, alpha=0.1)
    with pytest.raises(ModelError, match="bad K order"):
        gemm(m, A, B, C, k_order="split:0")
    with pytest.raises(ModelError, match="block scales"):
        gemm("blackwell-fp8e4m3-fp32-mx", A, B, C)


def test_raw_bits_are_checked_and_read_in_place():
    """gemm_bits takes A and B as raw bits in any unsigned (or non-negative signed) dtype: a
    pattern wider than the format is refused, the caller's uint64 arrays are read as they are
    (not copied, never written), and every dtype gives the same D."""
    m = get_model("hopper-fp16-fp32")
    rng = np.random.default_rng(5)
    a16 = rng.integers(0, 1 << 16, (4, 16)).astype(np.uint16)
    b16 = rng.integers(0, 1 << 16, (16, 3)).astype(np.uint16)
    a64, b64 = a16.astype(np.uint64), b16.astype(np.uint64)
    keep = a64.copy(), b64.copy()
    d = gemm_bits(m, a64, b64, None, beta_bits=0)
    assert np.array_equal(a64, keep[0]) and np.array_equal(b64, keep[1])
    assert np.array_equal(d, gemm_bits(m, a16, b16, None, beta_bits=0))
    assert np.array_equal(d, gemm_bits(m, a16.astype(np.int32), b16.astype(np.int64), None, beta_bits=0))
    wide = a64.copy()
    wide[2, 5] = 1 << 16
    with pytest.raises(ValueError, match="do not fit 16 bits"):
        gemm_bits(m, wide, b64, None, beta_bits=0)
    neg = a16.astype(np.int32)
    neg[0, 0] = -1
    with pytest.raises(ValueError, match="do not fit 16 bits"):
        gemm_bits(m, neg, b16, None, beta_bits=0)
