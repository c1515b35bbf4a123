"""The canonical reading (smtmodel.bv.canonical_backend): its normal forms are equalities of
QF_BV, so a model built on it computes what the NumPy reading computes, and two terms equal up
to associativity and commutativity reach one node. Expected values: the NumPy reading of the
same model (an independent reading of the core) and, for the rules, SMT-LIB's algebra."""

from __future__ import annotations

import numpy as np
import pytest

from queries.properties import check_property
from queries.properties.check import canonical_formula
from queries.properties.defs import get_property
from smtmodel.bv import smax_all, sum_all
from smtmodel.bv.canonical_backend import CanonicalBackend
from smtmodel.catalog import get_model
from smtmodel.formats import get_format
from smtmodel.sampling import edge_heavy

MODELS = ["hopper-fp16-fp32", "volta-fp16-fp32", "cdna3-fp16-fp32", "cdna2-bf16-fp32", "cdna1-fp16-fp32",
          "ampere-fp64-fp64", "hopper-fp8e4m3-fp32-mmasync", "ampere-tf32-fp32", "hopper-fp16-fp16",
          "blackwell-fp4e2m1-fp32-mxgst-f34", "cdna4-fp8e4m3-fp32-mx"]


@pytest.mark.parametrize("mid", MODELS)
def test_canonical_reading_equals_the_numpy_reading(mid):
    """Every rewrite keeps the value: the model built on the canonical backend, read back node by
    node with the NumPy primitives, gives the bits of Model.evaluate (NumPy) on edge-heavy inputs."""
    m = get_model(mid)
    k = min(m.block(1 << 20), 16)
    k = max(k, m.scale_block or 1)
    (fa, fb), fc = m.operand_fmts, m.c_fmt
    g = np.random.default_rng(7)
    n = 600
    a = np.stack([edge_heavy(fa, n, g) for _ in range(k)], axis=1)
    b = np.stack([edge_heavy(fb, n, g) for _ in range(k)], axis=1)
    c = edge_heavy(fc, n, g)
    B = CanonicalBackend()
    wa, wb = m.operand_widths
    scales, sv = (None, None), (None, None)
    inputs = {f"a{i}": a[:, i] for i in range(k)} | {f"b{i}": b[:, i] for i in range(k)} | {"c": c}
    if m.scale_fmt:
        ns, ws = m.scale_count(k), get_format(m.scale_fmt).width
        scales = tuple(np.stack([edge_heavy(m.scale_fmt, n, g) for _ in range(ns)], axis=1) for _ in "ab")
        sv = tuple([B.var(f"s{side}{j}", ws) for j in range(ns)] for side in "ab")
        inputs |= {f"s{side}{j}": scales[i][:, j] for i, side in enumerate("ab") for j in range(ns)}
    want = m.evaluate(a, b, c, *scales, backend="numpy")
    d = m.build([B.var(f"a{i}", wa) for i in range(k)], [B.var(f"b{i}", wb) for i in range(k)],
                B.var("c", get_format(fc).width), *sv)
    got = np.broadcast_to(np.asarray(B.evaluate([d.v], inputs)[0], dtype=np.uint64), (n,))
    assert np.array_equal(got, want)


def test_sums_and_maxima_up_to_order_reach_one_node():
    B = CanonicalBackend()
    x = [B.var(f"x{i}", 8) for i in range(5)]
    perm = [x[3], x[0], x[4], x[2], x[1]]
    assert sum_all(x).v == sum_all(perm).v
    assert smax_all(x).v == smax_all(perm).v
    assert ((x[0] + x[1]) + x[2]).v == (x[2] + (x[1] + x[0])).v
    assert (x[0] ^ x[1] ^ x[0]).v == x[1].v                    # x ^ x = 0
    assert ((x[0] + 3) + (x[1] + 5)).v == (x[1] + x[0] + 8).v  # constants combined
    assert (x[0] & 0).v == B.const(0, 8).v


def test_different_terms_stay_apart():
    """Rewriting proves nothing it should not: non-commutative and unequal terms stay distinct."""
    B = CanonicalBackend()
    x, y, z = (B.var(n, 8) for n in "xyz")
    assert (x - y).v != (y - x).v
    assert (x << y).v != (y << x).v
    assert smax_all([x, y]).v != sum_all([x, y]).v
    assert smax_all([x, y, z]).v != smax_all([x, y]).v
    assert B.constant(x.eq(y)) is None


def test_permutation_of_a_hopper_block_proved_by_rewriting():
    """Seed 000 Algorithm 7: a T-FDPA block sums aligned terms under one maximum exponent, with no
    order; the proof is the rewriting, and the twin sees no violation on random cases."""
    r = check_property("permutation", "hopper-fp16-fp32", timeout=30)
    assert r.status == "proved" and r.solver == "rewriting"
    r = check_property("permutation", "hopper-fp16-fp32", timeout=2, solver="twin")
    assert r.status == "unknown"


@pytest.mark.parametrize("prop, mid", [("permutation", "cdna2-fp16-fp32"), ("permutation", "hopper-fp8e4m3-fp32-mmasync"),
                                       ("sign-symmetry", "cdna3-fp16-fp32"), ("monotonicity", "volta-fp16-fp32")])
def test_rewriting_does_not_prove_what_the_twin_refutes(prop, mid):
    """Properties refuted by a twin witness (docs/properties.md's table) do not reduce to false."""
    p = get_property(prop)
    m = get_model(mid)
    assert not canonical_formula(p, m, p.default_k(m)).false
    assert check_property(prop, mid, timeout=20).status == "refuted"


@pytest.mark.parametrize("prop, mid", [("sign-symmetry", "hopper-fp16-fp32"), ("sign-symmetry", "cdna3-fp16-fp32"),
                                       ("zero-padding", "volta-fp16-fp32"), ("scaling", "ampere-bf16-fp32"),
                                       ("monotonicity", "cdna2-fp16-fp32")])
def test_the_solvers_formula_reads_as_the_property_formula(prop, mid):
    """What the solvers read (the canonical formula replayed) is the property's formula: on the
    twin search's own batches it holds exactly where the NumPy reading of hypothesis and violation
    does (an independent reading of the same predicates)."""
    from queries.distinguish.constraints import Constraints
    from queries.distinguish.search import probes
    from smtmodel.bv import NUMPY, all_of

    p, m = get_property(prop), get_model(mid)
    k = p.default_k(m)
    canon = canonical_formula(p, m, k)
    g = np.random.default_rng(3)
    seen = 0
    for i, base in enumerate(probes(m, k, Constraints(), 0, ())):
        batch = p.derive(m, k, base, g)
        n = len(batch["c"])
        v = {nm: NUMPY.input(np.asarray(batch[nm], dtype=np.uint64), w) for nm, w in p.variables(m, k).items()}
        cps = p.copies(m, k, v)
        d = [cp.build(m) for cp in cps]
        want = np.broadcast_to(all_of(p.hypothesis(m, k, v, cps) + [p.violation(m, k, v, cps, d)]).v, (n,))
        got = np.broadcast_to(canon.B.evaluate([canon.root.v], batch)[0], (n,))
        assert np.array_equal(np.asarray(got, dtype=bool), np.asarray(want, dtype=bool))
        seen += int(np.asarray(want).sum())
        if i >= 8:
            break
    assert prop != "monotonicity" or seen > 0       # the refuted property's violations are among them
