"""Integer MMA models (op imma) against an independent computation: Python integers.

Expected values: the PTX ISA's integer mma semantics computed here with Python's unbounded
ints (exact products and sum per instruction, then mod 2^32 or a clamp to the s32 range), not
through the semantic core."""

from __future__ import annotations

import numpy as np
import pytest

from smtmodel.catalog import all_models, get_model, integer_models
from smtmodel.formats import get_format
from smtmodel.model import Model, ModelError

LO, HI = -(1 << 31), (1 << 31) - 1


def _val(bits, fmt):
    return get_format(fmt).value(int(bits))


def reference(m: Model, a_row, b_row, c) -> int:
    """d of one case as Python ints: per instruction block of L, exact c + sum, then wrap/clamp."""
    acc = _val(c, "int32")
    k = len(a_row)
    for s in range(0, k, m.L):
        t = acc + sum(_val(x, m.in_fmt) * _val(y, m.in_fmt) for x, y in zip(a_row[s:s + m.L], b_row[s:s + m.L]))
        if m.saturate:
            acc = min(HI, max(LO, t))
        else:
            acc = (t + (1 << 31)) % (1 << 32) - (1 << 31)
    return acc & 0xFFFFFFFF


def _check(m, a, b, c, backend="numpy"):
    d = m.evaluate(a, b, c, backend=backend)
    want = [reference(m, a[i], b[i], c[i]) for i in range(a.shape[0])]
    assert [int(x) for x in d] == want


@pytest.mark.parametrize("mid", ["turing-s8-s32", "ampere-u8-s32-satfinite", "hopper-s4-s32", "ampere-u4-s32-satfinite",
                                 "cdna3-i8-i32", "blackwell-s8-s32-satfinite"])
def test_random(mid):
    m = get_model(mid)
    w = m.widths[0]
    rng = np.random.default_rng(1)
    a = rng.integers(0, 1 << w, (300, 2 * m.L), dtype=np.uint64)
    b = rng.integers(0, 1 << w, (300, 2 * m.L), dtype=np.uint64)
    c = rng.integers(0, 1 << 32, 300, dtype=np.uint64)
    _check(m, a, b, c)


def test_edges_wrap_and_saturate():
    """-128 * -128 sums (the largest s8 products), sums that cross 2^31 and -2^31, u8 255*255."""
    K = 64
    cases = [  # (a value, b value, c)
        (-128, -128, 0), (-128, -128, HI), (-128, 127, LO), (127, 127, HI - 5), (-128, -128, -(1 << 20)),
        (0, 0, HI), (-1, 1, LO),
    ]
    for mid in ("ampere-s8-s32", "ampere-s8-s32-satfinite", "turing-s8-s32-satfinite"):
        m = get_model(mid)
        f = get_format("int8")
        a = np.array([[f.bits(x)] * K for x, _, _ in cases], dtype=np.uint64)
        b = np.array([[f.bits(y)] * K for _, y, _ in cases], dtype=np.uint64)
        c = np.array([cc & 0xFFFFFFFF for _, _, cc in cases], dtype=np.uint64)
        _check(m, a, b, c)
    m, ms = get_model("ampere-s8-s32"), get_model("ampere-s8-s32-satfinite")
    a = np.full((1, 32), 0x80, dtype=np.uint64)
    c = np.array([HI], dtype=np.uint64)
    # 32 * 16384 = 2^19 past MAX_INT32: wraps to LO + 2^19 - 1, saturates at MAX_INT32
    assert int(m.evaluate(a, a, c)[0]) == ((HI + (1 << 19)) & 0xFFFFFFFF)
    assert int(ms.evaluate(a, a, c)[0]) == HI


def test_saturation_is_per_instruction():
    """A chain that saturates in its first instruction and comes back in range in the second
    differs from one clamp at the end (the wrap-around chain equals the sum mod 2^32)."""
    ms = get_model("ampere-s8-s32-satfinite")
    f = get_format("int8")
    a = np.array([[f.bits(127)] * 32 + [f.bits(-128)] * 32], dtype=np.uint64)
    b = np.array([[f.bits(127)] * 64], dtype=np.uint64)
    c = np.array([HI - 10], dtype=np.uint64)
    d = _val(ms.evaluate(a, b, c)[0], "int32")
    assert d == HI - 32 * 128 * 127              # clamped to HI after block 1, then block 2 added
    assert d != (HI - 10) + 32 * 127 * 127 - 32 * 128 * 127


def test_native_equals_numpy():
    m = get_model("hopper-s8-s32-satfinite")
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (3000, 96), dtype=np.uint64)
    b = rng.integers(0, 256, (3000, 96), dtype=np.uint64)
    c = rng.integers(0, 1 << 32, 3000, dtype=np.uint64)
    assert np.array_equal(m.evaluate(a, b, c, backend="numpy"), m.evaluate(a, b, c, backend="auto"))


def test_smt_equals_twin():
    """The solver reading is the twin's: the z3 term, evaluated on a random case, gives the
    twin's bits."""
    import z3
    from smtmodel.bv.z3_backend import Z3Backend
    m = get_model("turing-s8-s32-satfinite")
    a, b, c, d, _ = m.symbolic(Z3Backend(), 16)
    rng = np.random.default_rng(3)
    av = rng.integers(0, 256, 16)
    bv = rng.integers(0, 256, 16)
    cv = int(rng.integers(0, 1 << 32))
    sub = [(x.v, z3.BitVecVal(int(v), 8)) for x, v in zip(a + b, list(av) + list(bv))] + [(c.v, z3.BitVecVal(cv, 32))]
    got = z3.simplify(z3.substitute(d.v, *sub)).as_long()
    want = int(m.evaluate(av[None].astype(np.uint64), bv[None].astype(np.uint64), np.array([cv], dtype=np.uint64))[0])
    assert got == want


def test_catalog_split_and_validation():
    ids = {m.id for m in integer_models()}
    assert "ampere-s8-s32" in ids and "cdna3-i8-i32" in ids and "turing-s4-s32-satfinite" in ids
    assert not ids & {m.id for m in all_models()}
    assert "volta-s8-s32" not in ids            # Volta has no integer tensor cores
    with pytest.raises(ModelError, match="integer formats"):
        Model(id="x", op="imma", in_fmt="fp16", c_fmt="int32", out_fmt="int32", L=16).validate()
    with pytest.raises(ModelError, match="integer formats"):
        Model(id="x", op="tfdpa", in_fmt="int8", c_fmt="fp32", out_fmt="fp32", L=16, F=24).validate()
    assert get_model("ampere-s8-s32:saturate=true").saturate


def test_gemm_with_an_integer_model():
    """smtmodel.gemm: C enters the s32 accumulator; alpha/beta scaling is refused (no integer
    epilogue is modelled). Expected values: NumPy int64 matmul, wrapped to int32 by hand."""
    from smtmodel.gemm import gemm
    rng = np.random.default_rng(4)
    A = rng.integers(-128, 128, (5, 70)).astype(np.int8)
    B = rng.integers(-128, 128, (70, 3)).astype(np.int8)
    C = rng.integers(-(1 << 31), 1 << 31, (5, 3)).astype(np.int32)
    want = (A.astype(np.int64) @ B.astype(np.int64) + C + (1 << 31)) % (1 << 32) - (1 << 31)
    assert np.array_equal(gemm("ampere-s8-s32", A, B, C).astype(np.int64), want)
    assert np.array_equal(gemm("ampere-s8-s32", A, B).astype(np.int64),
                          (A.astype(np.int64) @ B.astype(np.int64)))
    with pytest.raises(ModelError, match="alpha = beta = 1"):
        gemm("ampere-s8-s32", A, B, C, alpha=2.0)


def test_distinguish_wrap_from_satfinite():
    """The twin search's integer probes find where wrap-around and .satfinite part (c near
    MAX_INT32, products of 127); same-instruction models with different K are proved equal."""
    from queries.distinguish import Constraints, distinguish
    r = distinguish("ampere-s8-s32", "ampere-s8-s32-satfinite", 4, solver="bitwuzla", timeout=60,
                    constraints=Constraints())
    assert r.status == "sat" and r.vectors
    assert distinguish("turing-s8-s32", "ampere-s8-s32", 32, solver="bitwuzla", timeout=60).status == "unsat"
