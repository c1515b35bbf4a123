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

from smtmodel.sampling import edge_patterns, validation_mix
from smtmodel.bv.trace_backend import TraceBackend
from smtmodel.bv.z3_backend import Z3Backend
from smtmodel.catalog import all_models, get_model
from smtmodel.formats import get_format
from smtmodel.model import ModelError
from smtmodel import native
from smtmodel.native import MAX_WIDTH, ROWS, VECTOR_WIDTH, NativeError, codegen, jit, kernel, run_cases
from conftest import representatives
from test_catalog_hwdata import FILES, model_id, observed, read_vectors

MODELS = all_models()


REPS = representatives([m for m in MODELS if m.validated])   # the UNVALIDATED (CDNA4) ones: -m slow
ALL = [pytest.param(m, id=m.id, marks=() if m.id in REPS else pytest.mark.slow) for m in MODELS]


def cases(m, k, n, seed=3):
    """Validation mix (normal, wide, cancelling, raw bits with specials) plus, for scaled models,
    scales near 1 and some raw scale patterns."""
    fa, fb = m.operand_fmts
    a, b, c, _ = validation_mix(fa, m.c_fmt, k, n, seed, b_fmt=fb)
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


def kernel_width(m, k):
    """The widest integer of the model's traced DAG for K = k."""
    T = TraceBackend()
    (wa, wb), (_, wc, _) = m.operand_widths, m.widths
    sa = sb = None
    if m.scale_fmt:
        ws = get_format(m.scale_fmt).width
        ns = -(-m.padded_k(k) // m.scale_block)
        sa, sb = ([T.input((s, j), ws) for j in range(ns)] for s in ("sa", "sb"))
    d = m.build([T.input(("a", j), wa) for j in range(k)], [T.input(("b", j), wb) for j in range(k)],
                T.input(("c", 0), wc), sa, sb)
    return T.stats([d.v])["max_width"]


def _k(m):
    return m.block(m.L or 1) if m.op != "fma" else 4


@pytest.mark.parametrize("m", ALL)
def test_native_equals_numpy(m):
    k = _k(m)
    a, b, c, sa, sb = cases(m, k, 3001)
    # every special encoding of the input format against every other, in term 0
    sp_a, sp_b = (np.array(edge_patterns(f), dtype=np.uint64) for f in m.operand_fmts)
    grid = np.array(np.meshgrid(sp_a, sp_b)).reshape(2, -1)
    a[:grid.shape[1], 0], b[:grid.shape[1], 0] = grid[0], grid[1]
    ref = m.evaluate(a, b, c, sa, sb, backend="numpy")
    if kernel_width(m, k) > MAX_WIDTH:         # fp64 exact sums (4,202 bits): not compiled
        with pytest.raises(ModelError, match=r"does not compile primitive .* on \d+-bit values"):
            m.evaluate(a, b, c, sa, sb, backend="native")
        assert np.array_equal(m.evaluate(a, b, c, sa, sb, backend="auto"), ref)
        return
    got = m.evaluate(a, b, c, sa, sb, backend="native", jobs=2)
    bad = np.flatnonzero(ref != got)
    assert len(bad) == 0, f"{len(bad)} differ, first {bad[0]}: numpy {ref[bad[0]]:#x} native {got[bad[0]]:#x}"


def _sample_of_sets(files):
    """The default run reads a set of each input format, architecture and operation through the
    compiled reading (test_native_equals_numpy checks it against NumPy on a model of every
    operation shape, and test_catalog_hwdata NumPy against every set); the other sets -m slow."""
    seen, params = set(), []
    for p in files:
        m = get_model(model_id(p))
        keys = {("in", m.in_fmt), ("arch", m.arch), ("op", m.op)}
        params.append(pytest.param(p, id=os.path.basename(p), marks=() if keys - seen else pytest.mark.slow))
        seen |= keys
    return params


@pytest.mark.parametrize("path", _sample_of_sets(FILES))
def test_hardware_set_through_native(path):
    vf = read_vectors(path)
    a, b, c = vf.arrays()
    d = get_model(model_id(path)).evaluate(a, b, c, backend="native")
    assert np.array_equal(d, observed(vf))


ANY_K = [("hopper-fp16-fp32", 20), pytest.param("hopper-fp16-fp32", 100, marks=pytest.mark.slow),   # 20: blocks and a tail too
         ("hopper-fp8e4m3-fp32", 45),
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


def test_padded_block_follows_the_models_zero_alignment():
    """K = 17 on Hopper bf16 (L = 16): the padded second block holds the chained d1, one real
    product 0 * b17 and 15 padding zeros 0 * 0. Seed 000's rule aligns a zero product at
    -126 + Exp(b17) (and 0 * 0 at -252, below every non-zero term: padding alone never sets
    e_max); the ``zero_align=ignore`` rival leaves zeros out. So the earlier-convention rival
    (``-zero126``) truncates d1 to a multiple of 2^(e_max - F), e_max = max(Exp(d1), -126 +
    Exp(b17)), computed here in float64, while the ignore rival returns d1; both equal their
    explicitly padded evaluations. The catalog's fixed e_zero = -133 lies below every d1 here, so
    it returns d1 too."""
    from smtmodel.sampling import pack_fields
    catalog = get_model("hopper-bf16-fp32")
    base = get_model("hopper-bf16-fp32-zero126")
    (rival,) = [r for r in MODELS if r.rival_of == catalog.id and r.zero_align == "ignore"]
    rng = np.random.default_rng(5)
    n = 1000
    a = pack_fields("bf16", rng.integers(0, 2, (n, 17)), rng.integers(90, 100, (n, 17)), rng.integers(0, 128, (n, 17)))
    b = pack_fields("bf16", rng.integers(0, 2, (n, 17)), rng.integers(90, 100, (n, 17)), rng.integers(0, 128, (n, 17)))
    a[:, 16] = 0
    b[:, 16] = pack_fields("bf16", 0, rng.integers(100, 250, n), rng.integers(0, 128, n))
    c = np.zeros(n, dtype=np.uint64)
    ap = np.concatenate([a, np.zeros((n, 15), np.uint64)], axis=1)
    bp = np.concatenate([b, np.zeros((n, 15), np.uint64)], axis=1)
    d0 = base.evaluate(a, b, c, backend="native")
    d1 = rival.evaluate(a, b, c, backend="native")
    assert np.array_equal(d0, base.evaluate(ap, bp, c, backend="numpy"))
    assert np.array_equal(d1, rival.evaluate(ap, bp, c, backend="numpy"))
    first = base.evaluate(a[:, :16], b[:, :16], c, backend="numpy")      # d1: no zeros in block 1
    assert np.array_equal(d1, first)
    v = first.astype(np.uint32).view(np.float32).astype(np.float64)
    e_max = np.maximum(np.floor(np.log2(np.abs(v))), ((b[:, 16] >> np.uint64(7)) & np.uint64(0xFF)).astype(np.int64) - 127 - 126)
    q = np.exp2(e_max - base.F)
    want = (np.sign(v) * np.floor(np.abs(v) / q) * q).astype(np.float32)
    want_bits = np.where(want == 0, 0, want.view(np.uint32)).astype(np.uint64)   # NVIDIA: +0
    assert np.array_equal(d0, want_bits)
    assert np.count_nonzero(d0 != d1) > n // 10
    assert np.array_equal(catalog.evaluate(a, b, c, backend="native"), d1)


def _compile_pair(fn, w):
    """Compile d = fn(x, y) over two w-bit inputs; return a NumPy-callable."""
    T = TraceBackend()
    x, y = T.input(("a", 0), w), T.input(("a", 1), w)
    d = fn(x, y)
    mod = codegen.emit_module(T.nodes, T.live([d.v]), d.v, {("a", 0): ("a", 0), ("a", 1): ("a", 1),
                              ("c", 0): ("c", 0)}, dict(ROWS))
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


@pytest.mark.parametrize("w", [1, 3, 8, 11, 16, 24, 33, 48, 53, 64])
def test_clz_primitive_equals_the_cores_binary_search(w):
    """The compiled reading's leading-zero count (one ``clz`` node, LLVM ``ctlz``) equals the
    core's definition (``clz_search`` on the NumPy reading) and Python's ``w - bit_length``, on
    0, every power of two, every 2^j - 1, all ones and random values of every length."""
    from smtmodel.bv import NUMPY, clz
    from smtmodel.bv.core import clz_search
    T = TraceBackend()
    assert T.nodes[clz(T.input(("a", 0), w)).v].op == "clz"
    rng = np.random.default_rng(w)
    top = [(1 << j) - 1 for j in range(w + 1)] + [1 << j for j in range(w)]
    lens = [int(n) for n in rng.integers(0, w + 1, 2000)]
    rnd = [int(rng.integers(0, 1 << 62)) << 2 | int(rng.integers(0, 4)) for _ in lens]
    xs = np.array(top + [(r & ((1 << n) - 1)) | (1 << n >> 1) for r, n in zip(rnd, lens)], np.uint64)
    got = _compile_pair(lambda x, y: clz(x), w)(xs, xs)
    ref = np.asarray(clz_search(NUMPY.input(xs, w)).v, dtype=np.uint64)
    assert np.array_equal(got, ref)
    assert got.tolist() == [w - int(v).bit_length() for v in xs.tolist()]


def test_clz_wider_than_a_word_is_the_search():
    """Above 64 bits the trace records the core's binary search (no ``clz`` node); a constant is
    folded by that definition."""
    from smtmodel.bv import clz
    T = TraceBackend()
    wide = clz(T.input(("a", 0), 90))
    assert "clz" not in {T.nodes[i].op for i in T.live([wide.v])}
    assert T.nodes[clz(T.const(5, 16)).v].p == (13,)


def test_wide_models_compile_on_scalars():
    """Above VECTOR_WIDTH a kernel is emitted one case at a time (CDNA1's bf16 E-FDPA: an exact
    529-bit sum, docs/native.md); narrow models keep vectors of LANES cases. Bit equality with
    NumPy is test_native_equals_numpy's."""
    wide, narrow = (kernel(get_model(i), 16, 0, ROWS) for i in ("cdna1-bf16-fp32", "hopper-fp16-fp32"))
    assert VECTOR_WIDTH < wide.width <= MAX_WIDTH and wide.lanes == 1
    assert narrow.width <= VECTOR_WIDTH and narrow.lanes == codegen.LANES > 1


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
    with pytest.raises(NativeError, match="cannot compile primitive 'mul'"):
        kernel(m, 4)
    with pytest.raises(ModelError, match="cannot compile primitive 'mul'"):
        m.evaluate(np.zeros((1, 4), np.uint64), np.zeros((1, 4), np.uint64), np.zeros(1, np.uint64),
                   backend="native")


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


NARROW = [np.uint8, np.uint16, np.uint32, np.uint64]


def _narrowest(width):
    return next(d for d in NARROW if 8 * np.dtype(d).itemsize >= width)


@pytest.mark.parametrize("mid", ["hopper-fp16-fp32", "hopper-fp8e4m3-fp32", "blackwell-fp8e4m3-fp32-mx"])
def test_narrow_dtypes_read_in_place(mid):
    """Inputs held in their narrowest unsigned dtype (fp16 bits as uint16, e4m3 as uint8, fp32 c
    as uint32, a wider one for b) give the NumPy reading's bits on uint64 (the reference), on a
    batch whose last vector of cases is partial, on one thread and on two."""
    m = get_model(mid)
    k = 32 if m.scale_fmt else 16
    n = 4 * 8192 + 5
    a, b, c, sa, sb = cases(m, k, n)
    want = m.evaluate(a, b, c, sa, sb, backend="numpy")
    (wa, wb), (_, wc, _) = m.operand_widths, m.widths
    ws = get_format(m.scale_fmt).width if m.scale_fmt else 8
    an, cn = a.astype(_narrowest(wa)), c.astype(_narrowest(wc))
    bn = b.astype(NARROW[min(3, NARROW.index(_narrowest(wb)) + 1)])
    san, sbn = (None, None) if sa is None else (sa.astype(_narrowest(ws)), sb.astype(_narrowest(ws)))
    for jobs in (1, 2):
        assert np.array_equal(m.evaluate(an, bn, cn, san, sbn, backend="native", jobs=jobs), want)
    ns = 0 if sa is None else sa.shape[1]          # the big batches' kernel on the same cases
    kern = native.kernel(m, k, ns, native.row_layout(k, ns, (an.dtype, bn.dtype, cn.dtype, np.uint8), native.BIG_LANES))
    assert kern.lanes == native.BIG_LANES
    assert np.array_equal(native.run_rows(kern, an, bn, cn, san, sbn, jobs=2, widths=(wa, wc, ws, wb)), want)


@pytest.mark.parametrize("where", ["a", "b", "c", "s"])
@pytest.mark.parametrize("dtype", [np.uint16, np.uint64])
@pytest.mark.parametrize("row", [0, 9000, 2 * 8192 + 3])
def test_bits_above_the_width_rejected_where_the_kernel_reads(where, dtype, row):
    """One element above its operand's width (e4m3: 8 bits, fp32 c: 32, e8m0 scales: 8) in any
    operand, in the first vector of cases, in a later chunk, or in the zero-padded tail: the
    compiled reading raises the NumPy reading's error, from the OR its kernel accumulates."""
    m = get_model("blackwell-fp8e4m3-fp32-mx")
    n = 2 * 8192 + 4
    a, b, c, sa, sb = cases(m, 32, n)
    big = {"a": 1 << 9, "b": 1 << 12, "c": 1 << 33, "s": 1 << 8}[where]
    if where == "c" and dtype == np.uint16:
        pytest.skip("a 33-bit c needs uint64: the uint64 case runs it")
    x = {"a": a, "b": b, "c": c, "s": sa}[where].astype(np.uint64 if where == "c" else dtype)
    x[(row, x.shape[1] - 1) if x.ndim == 2 else row] = big
    args = dict(a=a, b=b, c=c, a_scale=sa, b_scale=sb)
    args[{"s": "a_scale"}.get(where, where)] = x
    for be in ("numpy", "native"):
        with pytest.raises(ValueError, match="do not fit"):
            m.evaluate(**args, backend=be, jobs=2)
