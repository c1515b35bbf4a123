"""The native reading (traced DAG -> LLVM -> machine code) equals the NumPy reading, bit for bit.

Expected values come from the NumPy reading of the same ``Model.build`` (the reference), from
explicit zero padding, and from the GPUs' own outputs (../shared/hwdata). The default run covers
one model of each operation shape; ``-m slow`` covers every catalog model.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import z3

from smtmodel.sampling import boundary_patterns, edge_patterns, validation_mix
from smtmodel.bv.trace_backend import TraceBackend
from smtmodel.bv.z3_backend import Z3Backend
from smtmodel.catalog import all_models, get_model
from smtmodel.formats import get_format
from smtmodel.model import ModelError
from smtmodel.native import codegen, jit, kernel, run_cases
from smtmodel.native import kernel as kernel_mod
from test_catalog_hwdata import FILES, model_id, observed, read_vectors

MODELS = all_models()


def _reps():
    seen, reps = set(), set()
    for m in MODELS:
        key = (m.op, m.in_fmt, m.out_fmt, m.normalize, m.carry is None)
        if key not in seen:
            seen.add(key)
            reps.add(m.id)
    return reps


REPS = _reps()
ALL = [pytest.param(m, id=m.id, marks=() if m.id in REPS else pytest.mark.slow) for m in MODELS]


def cases(m, k, n, seed=3):
    """Validation mix (normal, wide, cancelling, raw bits with specials) plus, for scaled models,
    scales near 1 and some raw scale patterns."""
    a, b, c, _ = validation_mix(m.in_fmt, m.c_fmt, k, n, seed)
    if not m.scale_fmt:
        return a, b, c, None, None
    rng = np.random.default_rng(seed)
    fs = get_format(m.scale_fmt)
    nb = -(-m.padded_k(k) // m.scale_block)
    lo, hi = (120, 135) if fs.name == "e8m0" else (0x30, 0x48)
    sa = rng.integers(lo, hi, (n, nb)).astype(np.uint64)
    sb = rng.integers(lo, hi, (n, nb)).astype(np.uint64)
    raw = rng.random((n, nb)) < 0.1
    sa[raw] = rng.integers(0, 1 << fs.width, raw.sum()).astype(np.uint64)
    return a, b, c, sa, sb


def _k(m):
    return m.block(m.L or 1) if m.op != "fma" else 4


@pytest.mark.parametrize("m", ALL)
def test_native_equals_numpy(m):
    k = _k(m)
    a, b, c, sa, sb = cases(m, k, 3001)
    # every special encoding of the input format against every other, in term 0
    sp = np.array(edge_patterns(m.in_fmt), dtype=np.uint64)
    grid = np.array(np.meshgrid(sp, sp)).reshape(2, -1)
    a[:grid.shape[1], 0], b[:grid.shape[1], 0] = grid[0], grid[1]
    ref = m.evaluate(a, b, c, sa, sb, backend="numpy")
    got = m.evaluate(a, b, c, sa, sb, backend="native", jobs=2)
    bad = np.flatnonzero(ref != got)
    assert len(bad) == 0, f"{len(bad)} differ, first {bad[0]}: numpy {ref[bad[0]]:#x} native {got[bad[0]]:#x}"


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_hardware_set_through_native(path):
    vf = read_vectors(path)
    a, b, c = vf.arrays()
    d = get_model(model_id(path)).evaluate(a, b, c, backend="native")
    assert np.array_equal(d, observed(vf))


ANY_K = [("hopper-fp16-fp32", 20), ("hopper-fp16-fp32", 100), ("hopper-fp8e4m3-fp32", 45),
         ("hopper-fp8e4m3-fp16-mmasync", 36), ("volta-fp16-fp32", 7), ("ampere-bf16-fp32", 13),
         ("blackwell-fp8e4m3-fp32-mx", 40)]


@pytest.mark.parametrize("mid,k", ANY_K)
def test_any_k_is_explicit_zero_padding(mid, k):
    m = get_model(mid)
    kp = m.padded_k(k)
    assert kp % m.block(kp) == 0 and kp >= k and kp - k < m.block(kp)
    a, b, c, sa, sb = cases(m, k, 1000)
    ap = np.zeros((len(c), kp), dtype=np.uint64)
    bp = np.zeros((len(c), kp), dtype=np.uint64)
    ap[:, :k], bp[:, :k] = a, b
    ref = m.evaluate(ap, bp, c, sa, sb, backend="numpy")
    assert np.array_equal(m.evaluate(a, b, c, sa, sb, backend="numpy"), ref)
    assert np.array_equal(m.evaluate(a, b, c, sa, sb, backend="native"), ref)


def test_any_k_symbolic_reading_pads_alike():
    """The SMT reading of K = 20 (padded inside build) equals the twin on the same cases."""
    m = get_model("hopper-fp16-fp32")
    a, b, c, _, _ = cases(m, 20, 40)
    twin = m.evaluate(a, b, c, backend="native")
    va, vb, vc, d, _ = m.symbolic(Z3Backend(), 20)
    for i in range(len(c)):
        subs = [(x.v, z3.BitVecVal(int(v), 16)) for x, v in zip(va + vb, list(a[i]) + list(b[i]))]
        subs.append((vc.v, z3.BitVecVal(int(c[i]), 32)))
        assert z3.simplify(z3.substitute(d.v, *subs)).as_long() == int(twin[i])


def test_padding_zeros_take_part_in_alignment():
    """K = 17 on Hopper (L = 16): the second block holds one product and 15 padding zeros. The
    seed-000 alignment lets the zeros into the maximum exponent, the ``zero_align=ignore`` rival
    leaves them out; with all real products non-zero and tiny, the two differ only through the
    padding, and each equals its own explicitly padded evaluation."""
    base = get_model("hopper-fp16-fp32")
    rival = base.with_overrides("zero_align=ignore")
    rng = np.random.default_rng(5)
    n = 2000
    # tiny non-zero products (exponent far below 0), c = 0: a zero's alignment exponent matters
    a = (rng.integers(1, 0x3FF, (n, 17)) | 0x0400).astype(np.uint64)       # exponent field 1
    b = (rng.integers(0x3C00, 0x3FFF, (n, 17))).astype(np.uint64)          # ~1.0
    c = np.zeros(n, dtype=np.uint64)
    ap = np.concatenate([a, np.zeros((n, 15), np.uint64)], axis=1)
    bp = np.concatenate([b, np.zeros((n, 15), np.uint64)], axis=1)
    d0 = base.evaluate(a, b, c, backend="native")
    d1 = rival.evaluate(a, b, c, backend="native")
    assert np.array_equal(d0, base.evaluate(ap, bp, c, backend="numpy"))
    assert np.array_equal(d1, rival.evaluate(ap, bp, c, backend="numpy"))
    # the same 17 products evaluated without padding differ in neither model's first block
    same16 = base.evaluate(a[:, :16], b[:, :16], c, backend="numpy") == rival.evaluate(a[:, :16], b[:, :16], c, backend="numpy")
    assert np.any((d0 != d1) & same16), "padding zeros never changed the alignment"


def _compile_pair(fn, w):
    """Compile d = fn(x, y) over two w-bit inputs; return a NumPy-callable."""
    T = TraceBackend()
    x, y = T.input(("a", 0), w), T.input(("a", 1), w)
    d = fn(x, y)
    mod = codegen.emit_module(T.nodes, T.live([d.v]), d.v, {("a", 0): ("a", 0), ("a", 1): ("a", 1),
                              ("c", 0): ("c", 0)}, dict(kernel_mod.ROWS))
    comp = jit.compile_ir(str(mod))

    def call(xs, ys):
        kern = type("K", (), {"fn": comp.fn, "lanes": codegen.LANES, "n_scales": 0})()
        aT = np.ascontiguousarray(np.stack([xs, ys]).astype(np.uint64))
        return run_cases(kern, aT, aT, np.zeros(len(xs), np.uint64), None, None, jobs=1)
    return call


@pytest.mark.parametrize("op", ["shl", "lshr", "ashr"])
def test_variable_shifts_keep_smt_semantics(op):
    """Shift amounts >= width give 0 / all sign bits (SMT-LIB), not LLVM's poison."""
    from smtmodel.bv import NUMPY
    w = 8
    f = {"shl": lambda x, y: x << y, "lshr": lambda x, y: x.lshr(y), "ashr": lambda x, y: x.ashr(y)}[op]
    xs, ys = (v.ravel() for v in np.meshgrid(np.arange(256), np.arange(256)))
    ref = np.asarray(f(NUMPY.input(xs, w), NUMPY.input(ys, w)).v, dtype=np.uint64)
    assert np.array_equal(_compile_pair(f, w)(xs, ys), ref)


def test_trace_folds_and_shares():
    T = TraceBackend()
    x = T.input(("a", 0), 16)
    y = (x + 3) * (x + 3)
    assert T.nodes[y.v].args[0] == T.nodes[y.v].args[1]            # one (x + 3) node
    k = T.const(0x1234, 16) + T.const(0xFFFF, 16)
    assert T.nodes[k.v].op == "const" and T.nodes[k.v].p == (0x1233,)
    assert (x & 0).v == T.const(0, 16).v and (x | 0).v == x.v


def test_unsupported_primitive_is_one_clear_error(monkeypatch):
    m = get_model("volta-fp16-fp32").with_overrides("carry=5")
    monkeypatch.setattr(codegen, "SUPPORTED", codegen.SUPPORTED - {"mul"})
    with pytest.raises(ModelError, match="cannot compile primitive 'mul'"):
        kernel(m, 4)


def test_llvmlite_missing_is_one_clear_error(monkeypatch):
    m = get_model("volta-fp16-fp32").with_overrides("carry=6")

    def broken(*a, **k):
        raise ImportError("no llvmlite")
    monkeypatch.setattr(jit, "compile_ir", broken)
    with pytest.raises(ModelError, match="native backend unavailable"):
        m.evaluate(np.zeros((1, 4), np.uint64), np.zeros((1, 4), np.uint64), np.zeros(1, np.uint64),
                   backend="native")
    with pytest.raises(ModelError, match="unknown backend"):
        m.evaluate(np.zeros((1, 4), np.uint64), np.zeros((1, 4), np.uint64), np.zeros(1, np.uint64),
                   backend="gpu")


def test_bad_input_bits_rejected_like_numpy():
    m = get_model("hopper-fp16-fp32")
    a = np.zeros((4, 16), np.uint64)
    a[0, 0] = 1 << 20
    for be in ("numpy", "native"):
        with pytest.raises(ValueError, match="do not fit"):
            m.evaluate(a, a, np.zeros(4, np.uint64), backend=be)
