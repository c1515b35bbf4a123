"""The GEMM reading (smtmodel.native.gemm: the traced chain split into A-only, B-only and mixed
nodes) against the two readings it replaces in a GEMM, bit for bit: the per-row compiled reading
(``_dots_rows``: every node per output element) and the NumPy reading (``_dots_numpy``: the
reference, ``Model.evaluate`` per element). Inputs mix normal values with every edge encoding of
the formats (zeros of both signs, subnormals, largest finite, infinities, NaNs), in A, B and C.
K gives a first block, next blocks and a zero-padded last block; N is not a multiple of the
vector of columns."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import smtmodel.gemm as G
from smtmodel.catalog import get_model
from smtmodel.gemm import NativeFallback, gemm, gemm_bits
from smtmodel.model import ModelError
from smtmodel.native import gemm as ngemm
from smtmodel.sampling import edge_patterns, round_to

MODELS = ["hopper-fp16-fp32", "ampere-bf16-fp32", "hopper-fp8e4m3-fp32", "ada-fp8e5m2-fp16", "ampere-tf32-fp32",
          "volta-fp16-fp16", "cdna3-fp8e4m3fnuz-fp32", "cdna3-bf16-fp32", "cdna2-fp16-fp32",
          "cdna2-bf16-fp32-fmachain", "cdna3-fp32-fp32", "hopper-fp16-fp32:c_entry=end,c_rm=RZ",
          "ampere-bf16-fp32:flush_outputs=signed", "turing-s8-s32", "turing-u4-s32-satfinite"]
SLOW = ["hopper-fp8e4m3-fp16-mmasync", "hopper-fp8e4m3xfp8e5m2-fp32", "cdna1-fp16-fp32", "hopper-fp64-fp64",
        "hopper-fp16-fp32:round_products=RNE"]           # 5-20 s of compilation each


def operands(m, M, N, K, seed):
    """A (M, K), B (K, N), C (M, N) raw bits: normal values with a fifth of the entries replaced by
    the formats' edge patterns (integers: uniform over the format)."""
    rng = np.random.default_rng(seed)
    fa, fb = m.operand_fmts
    out = []
    for fmt, shape in ((fa, (M, K)), (fb, (K, N)), (m.c_fmt, (M, N))):
        from smtmodel.formats import get_format, is_int_format
        f = get_format(fmt)
        if is_int_format(fmt):
            out.append(rng.integers(0, 1 << f.width, shape, dtype=np.uint64))
            continue
        x = round_to(rng.standard_normal(shape) * 4.0, fmt)
        edge = np.array(edge_patterns(fmt), dtype=np.uint64)
        pick = rng.random(shape) < 0.2
        x[pick] = rng.choice(edge, int(pick.sum()))
        out.append(np.ascontiguousarray(x, dtype=np.uint64))
    return out


def k_for(m) -> int:
    """A K with a first block, at least one next block and a zero-padded last one."""
    L = m._block_max()
    return 3 * L + max(1, L // 2 - 1) if L > 1 else 7


@pytest.mark.parametrize("mid", MODELS + [pytest.param(x, marks=pytest.mark.slow) for x in SLOW])
def test_gemm_reading_equals_row_and_numpy_readings(mid):
    m = get_model(mid)
    M, N, K = 5, 37, k_for(m)
    a, b, c = operands(m, M, N, K, seed=len(mid))
    got = ngemm.dots(m, a, b, c, 0, K, 2)
    assert np.array_equal(got, G._dots_numpy(m, a, b, c, 0, K, 1))
    assert np.array_equal(got, G._dots_rows(m, a, b, c, 0, K, 2))
    # a range of K read in place (k0 > 0), no C (+0), one thread
    k0 = K // 3
    assert np.array_equal(ngemm.dots(m, a, b, None, k0, K, 1), G._dots_numpy(m, a, b, None, k0, K, 1))


@pytest.mark.parametrize("mid,K", [("hopper-fp8e4m3-fp32", 32), ("hopper-fp8e4m3-fp32", 64), ("hopper-fp16-fp32", 5),
                                   ("hopper-fp16-fp32", 1), ("ampere-bf16-fp32", 300)])
@pytest.mark.parametrize("N", [1, 32, 64, 70])
def test_block_structures_and_widths(mid, K, N):
    """One block (K <= L), whole blocks only (no padded last), many next blocks; N below, at and
    above the vector of columns."""
    m = get_model(mid)
    a, b, c = operands(m, 3, N, K, seed=K + N)
    assert np.array_equal(ngemm.dots(m, a, b, c, 0, K, 2), G._dots_numpy(m, a, b, c, 0, K, 1))


def test_gemm_reading_hoists_what_reads_one_operand():
    """The split: in a Hopper FP8 block the decode of a_k and b_k (exponent, significand, sign,
    special flags) reads one operand; the main loop reads them only through the records (no
    input of A or B in its nodes), and computes fewer nodes than the whole block."""
    m = get_model("hopper-fp8e4m3-fp32")
    gk = ngemm.gemm_kernel(m, 96)
    for name, p in gk.pieces.items():
        nodes = p.T.nodes
        assert not any(nodes[i].op == "input" and nodes[i].p[0][0] in ("a", "b") for i in p.mixed)
        st = p.stats
        assert st["a"] > 0 and st["b"] > 0 and st["mixed"] < st["nodes"] - st["a"] - st["b"] + 1
        # every mixed node's arguments are mixed nodes or frontier values
        front = {i for i, _, _ in p.front[1]} | {i for i, _, _ in p.front[2]}
        mixed = set(p.mixed)
        assert all(j in mixed or j in front for i in p.mixed for j in nodes[i].args), name


@pytest.mark.parametrize("profile", ["cutlass2", "cublaslt-hopper-fp8-slow", "cublaslt-ada-fp8-fast-splitk",
                                     "cublaslt-ada-fp8-slow-splitk", "deepgemm"])
def test_dataflows_through_the_gemm_reading(profile):
    """Whole GEMMs with dataflows (restarted chains, interleaved slices, per-block scales): the
    compiled reading equals the NumPy reading of the same GEMM."""
    m = get_model("hopper-fp8e4m3-fp32" if "hopper" in profile or profile == "deepgemm" else "ada-fp8e4m3-fp32")
    M, N, K = 4, 40, 384
    a, b, c = operands(m, M, N, K, seed=7)
    kw = {}
    df = G.resolve_dataflow(profile)
    if df.scale_a != "tensor":
        nk = K // 128
        kw = dict(scale_a_bits=np.full((M, nk), 0x40000000, np.uint64),
                  scale_b_bits=np.full((-(-N // 128), nk), 0x3F000000, np.uint64))
    cc = None if df.alpha_from_scales else round_to(np.ones((M, N)), "fp32")
    want = gemm_bits(m, a, b, cc, dataflow=profile, backend="numpy", **kw)
    assert np.array_equal(gemm_bits(m, a, b, cc, dataflow=profile, backend="native", jobs=2, **kw), want)


def test_wide_model_falls_back_to_rows_and_numpy_with_a_warning():
    """cdna1-bf16-fp32 (E-FDPA, 529-bit sums) is above the GEMM reading's 128 bits: the per-row
    reading runs it, same bits. An fp64 exact sum of 2 products (4,203 bits) compiles nowhere:
    ``auto`` runs NumPy and says so; ``native`` is a one-line error."""
    m = get_model("cdna1-bf16-fp32")
    a, b, c = operands(m, 3, 33, 9, seed=1)
    with pytest.raises(ngemm.NotSplit):
        ngemm.gemm_kernel(m, 9)
    assert np.array_equal(G._dots_native(m, a, b, c, 0, 9, 2), G._dots_numpy(m, a, b, c, 0, 9, 1))
    w = get_model("ampere-fp64-fp64:op=efdpa,L=2")
    a = np.full((2, 3), 0x3FF0000000000000, np.uint64)
    b = np.full((3, 4), 0x4000000000000000, np.uint64)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        d = gemm_bits(w, a, b, None, beta_bits=0)
    assert [r.category for r in rec] == [NativeFallback]
    assert "4203-bit" in str(rec[0].message) and "NumPy reading" in str(rec[0].message)
    assert np.all(d == np.uint64(0x4018000000000000))           # 3 * (1 * 2) = 6, exactly
    with pytest.raises(ModelError, match="does not compile primitive"):
        gemm_bits(w, a, b, None, beta_bits=0, backend="native")


def test_uncompilable_primitive_falls_back(monkeypatch):
    """A primitive the code generator does not know: ``auto`` warns and runs NumPy (same bits)."""
    from smtmodel.native import codegen
    m = get_model("hopper-fp16-fp32:F=23")                     # a model no other test compiled
    a, b, c = operands(m, 2, 8, 20, seed=3)
    want = gemm_bits(m, a, b, c, backend="numpy")
    monkeypatch.setattr(codegen, "SUPPORTED", codegen.SUPPORTED - {"mul"})
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = gemm_bits(m, a, b, c)
    assert np.array_equal(got, want)
    assert any(r.category is NativeFallback and "'mul'" in str(r.message) for r in rec)


def test_too_large_for_memory_is_refused_before_allocating():
    """Zero-stride views stand for matrices that would not fit: the refusal names the need."""
    m = get_model("hopper-fp16-fp32")
    A = np.broadcast_to(np.float16(1), (1 << 19, 1 << 19))
    with pytest.raises(ModelError, match=r"needs about [\d.]+ GiB of memory; [\d.]+ GiB are available"):
        gemm(m, A, A)
    with pytest.raises(ModelError, match=r"needs about [\d.]+ GiB"):
        gemm_bits(m, np.broadcast_to(np.uint64(0), (1 << 19, 1 << 19)), np.broadcast_to(np.uint64(0), (1 << 19, 4)))


def test_interrupt_cancels_the_work_not_started():
    """A Ctrl-C (KeyboardInterrupt) while the pool runs: the items not started are cancelled,
    so the call returns after the running ones."""
    import threading
    ran = []
    gate = threading.Event()

    def item(i):
        if i == 0:
            raise KeyboardInterrupt
        gate.wait(0.5)                 # the running item: held until the interrupt has been raised
        ran.append(i)

    with pytest.raises(KeyboardInterrupt):
        ngemm._submit_all(2, item, [(i,) for i in range(200)])
    gate.set()
    import time
    time.sleep(0.2)
    assert len(ran) < 10


def test_gemm_command_leaves_no_file_on_interrupt(tmp_path, monkeypatch):
    """``mmaprobe gemm`` interrupted in the middle of the GEMM: exit status of an interrupt, no D
    and no sidecar written."""
    from mmaprobe.cli import main
    m = get_model("hopper-fp16-fp32")
    A = np.ones((4, 40), np.float16)
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", A.T.copy())

    def stop(*args, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(ngemm, "dots", stop)
    rc = main(["gemm", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--model", m.id,
               "-o", str(tmp_path / "d.npy"), "--backend", "native"])
    assert rc != 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npy"]
