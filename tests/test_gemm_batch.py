"""gemm_bits on a batch (B, M, K) x (B, K, N): each matrix of the batch is the GEMM of its own
operands, as ``gemm`` computes it matrix by matrix."""

from __future__ import annotations

import numpy as np
import pytest

from smtmodel.catalog import get_model
from smtmodel.formats import bits_to_numpy, get_format, numpy_to_bits
from smtmodel.gemm import gemm, gemm_bits, output_format, resolve_dataflow
from smtmodel.model import ModelError
from smtmodel.sampling import round_to

CASES = [
    ("hopper-bf16-fp32", "cutlass3-sm90:out=bf16,tile=64", True),
    ("hopper-fp16-fp32", "cutlass2", False),
    ("hopper-fp16-fp32", None, True),                                  # k_order below: split
    ("hopper-fp8e4m3-fp32", "cublaslt-hopper-fp8-fast", False),
    ("ampere-bf16-fp32", "cutlass2:tile=32,restart=1", True),          # restarted chains, summed in the kernel
    ("hopper-bf16-fp32", "cutlass2:tile=24,pad=tile", False),          # the last k-tile padded with zeros
    ("hopper-bf16-fp32", "cutlass2:tile=24,pad=tile,restart=1", True),
    ("hopper-fp16-fp32", "cutlass2:tile=16,S=3,assign=interleaved,restart=1", False),  # gathered k-tiles
    ("hopper-fp16-fp32", "cutlass2:tile=16,S=3,assign=interleaved", True),
]


def operands(m, B, M, N, K, seed):
    rng = np.random.default_rng(seed)
    fa, fb = m.operand_fmts
    A = round_to(rng.standard_normal((B, M, K)), fa)
    Bm = round_to(rng.standard_normal((B, K, N)), fb)
    C = round_to(rng.standard_normal((B, M, N)), m.c_fmt)
    return A, Bm, C


@pytest.mark.parametrize("jobs", [2, pytest.param(1, marks=pytest.mark.slow)])   # one thread: test_batch_on_threads_and_on_numpy's NumPy case
@pytest.mark.parametrize("mid,dataflow,with_c", CASES)
def test_batch_is_each_matrix(mid, dataflow, with_c, jobs):
    m = get_model(mid)
    k_order = "split:2" if dataflow is None else None
    df = resolve_dataflow(dataflow, k_order)
    B, M, N, K = 5, 7, 9, 80
    A, Bm, C = operands(m, B, M, N, K, seed=len(mid) + K)
    fa, fb = m.operand_fmts
    a, b = A.astype(_uint(get_format(fa).width)), Bm.astype(_uint(get_format(fb).width))   # stored dtypes
    c = C.astype(np.uint32) if with_c else None
    got = gemm_bits(m, a, b, c, dataflow=dataflow, k_order=k_order, jobs=jobs)
    assert got.shape == (B, M, N) and got.dtype == np.uint64
    out = output_format(m, df)
    for i in range(B):
        # expected: matrix i alone, through gemm's interface on values
        want = gemm(m, bits_to_numpy(A[i], fa), bits_to_numpy(Bm[i], fb),
                    None if c is None else bits_to_numpy(C[i], m.c_fmt), dataflow=dataflow, k_order=k_order, jobs=1)
        assert np.array_equal(got[i], numpy_to_bits(want, out)), i


def _uint(width):
    return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[width]


def test_batch_shapes_are_checked():
    m = get_model("hopper-fp16-fp32")
    z = np.zeros((2, 4, 8), np.uint16)
    with pytest.raises(ModelError, match="batches of as many matrices"):
        gemm_bits(m, z, np.zeros((3, 8, 4), np.uint16))
    with pytest.raises(ModelError, match="each with the batch first"):
        gemm_bits(m, z, np.zeros((2, 8, 4), np.uint16), np.zeros((4, 4), np.uint32))
    assert gemm_bits(m, np.zeros((0, 4, 8), np.uint16), np.zeros((0, 8, 4), np.uint16)).shape == (0, 4, 4)


@pytest.mark.parametrize("backend,shape", [("auto", (8, 32, 40, 128)), ("numpy", (3, 4, 5, 128))])
def test_batch_on_threads_and_on_numpy(backend, shape):
    """A batch large enough to be shared among threads (jobs=2), and the NumPy reading's batch
    (a matrix at a time): each matrix as gemm computes it alone."""
    m = get_model("hopper-bf16-fp32")
    dataflow = "cutlass3-sm90:out=bf16,tile=64,slices=2"
    df = resolve_dataflow(dataflow)
    B, M, N, K = shape
    A, Bm, C = operands(m, B, M, N, K, seed=K)
    got = gemm_bits(m, A, Bm, C, dataflow=dataflow, jobs=2, backend=backend)
    for i in range(B):
        want = gemm(m, bits_to_numpy(A[i], "bf16"), bits_to_numpy(Bm[i], "bf16"), bits_to_numpy(C[i], "fp32"),
                    dataflow=dataflow, jobs=1)
        assert np.array_equal(got[i], numpy_to_bits(want, output_format(m, df))), i
