"""Property: any override of any catalog model is either refused at construction with one clean
``ModelError``, or read alike by every reading -- NumPy, compiled (``backend="native"``, which may
refuse a model on integers too wide for it with its documented ``ModelError``) and SMT (z3 terms
folded on each case) -- on random inputs with specials. Never different bits, never another
exception.

The expected values are the readings themselves (each is an independent evaluation of the same
``Model.build``: NumPy arrays, traced LLVM code, z3 terms); tests/test_model_ranges.py checks the
readings against exact arithmetic at the edges of the ranges. Hypothesis draws the model, up to
five overrides (mostly inside the ranges, some outside), K and the input seed; derandomised, so
the default run is the same few examples every time (``-m slow``: many more).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smtmodel.catalog import all_models, get_model, integer_models
from smtmodel.fp.rounding import MODES
from smtmodel.model import CARRY_MAX, F_MAX, OPS, TF32_LOW, ModelError
from smtmodel.sampling import edge_patterns

from test_catalog_smt_twin import smt_outputs
from test_native import cases

MODELS = all_models() + integer_models()


def _sometimes(inside, outside):
    """Mostly a value inside the range, now and then one outside."""
    return st.one_of(inside, inside, inside, inside, outside)


def _zero_rule():
    return _sometimes(st.one_of(st.sampled_from(["seed000", "ignore"]), st.integers(-300, 300)),
                      st.sampled_from([-1001, 1001]))


VALUES = {
    "F": _sometimes(st.integers(0, 48), st.sampled_from([-3, -1, F_MAX + 1, 100000])),
    "F2": _sometimes(st.integers(20, 56), st.sampled_from([-1, 10, F_MAX + 1])),
    "L": _sometimes(st.integers(1, 24), st.sampled_from([0, -2])),
    "carry": _sometimes(st.one_of(st.just("none"), st.integers(0, 8)), st.sampled_from([-1, CARRY_MAX + 1])),
    "rho": st.sampled_from(["RZ-FP32", "RNE-FP32", "RU-FP32", "RTO-E8M13", "RD-E8M5", "RNE-FP16", "RZ-FP16",
                            "RNA-FP16", "RQ-FP32"]),
    "normalize": st.booleans(),
    "zero_prod": _zero_rule(), "zero_c": _zero_rule(), "zero_group": _zero_rule(), "zero_scale": _zero_rule(),
    "e_zero": _zero_rule(), "zero_align": _zero_rule(),
    "flush_inputs": st.sampled_from(["none", "signed", "positive"]),
    "flush_outputs": st.sampled_from(["none", "signed", "positive"]),
    "P": _sometimes(st.sampled_from([1, 2, 4, 8]), st.sampled_from([0, 3, 6])),
    "G": _sometimes(st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([0, 5, 12])),
    "scale_block": _sometimes(st.sampled_from([16, 32, 64]), st.sampled_from([0, 8, 48])),
    "specials": st.sampled_from(["nvidia", "ieee"]),
    "round_products": st.sampled_from(("none",) + MODES),
    "c_entry": st.sampled_from(["align", "end"]),
    "c_rm": st.sampled_from(MODES),
    "tf32_low": st.sampled_from(TF32_LOW),
    "saturate": st.booleans(),
    "op": st.sampled_from(OPS),
    "a_fmt": st.sampled_from(["fp16", "bf16", "fp8e4m3", "fp8e5m2", "fp6e2m3", "fp4e2m1", "tf32", "fp32",
                              "int8", "e8m0", "e5m3"]),
    "b_fmt": st.sampled_from(["fp16", "bf16", "fp8e4m3", "fp8e5m2", "fp6e3m2", "fp4e2m1", "int4", "e4m4"]),
}


WIDE = dict(VALUES, F=st.one_of(VALUES["F"], st.sampled_from([200, 1100, F_MAX])))
"""The long run also takes wide alignments (F up to F_MAX: NumPy on Python integers, z3 on wide
terms, and the compiled reading's refusal above 1,024-bit integers)."""


@st.composite
def overridden(draw, values=VALUES):
    """(catalog model, override text)."""
    m = draw(st.sampled_from(MODELS))
    keys = draw(st.lists(st.sampled_from(sorted(values)), max_size=5, unique=True))
    return m, ",".join(f"{k}={str(draw(values[k])).lower()}" for k in keys)


def _inputs(m, k, n, seed):
    """Raw inputs of K = k: the validation mix (normal, wide, cancelling, raw bits with specials)
    with every edge pattern (zeros, subnormals, inf, NaN, max) placed in term 0; integers
    uniformly over their range."""
    if m.op == "imma":
        g = np.random.default_rng(seed)
        wa, wb = m.operand_widths
        return (g.integers(0, 1 << wa, (n, k)).astype(np.uint64), g.integers(0, 1 << wb, (n, k)).astype(np.uint64),
                g.integers(0, 1 << 32, n).astype(np.uint64), None, None)
    a, b, c, sa, sb = cases(m, k, n, seed)
    g = np.random.default_rng(seed)
    for x, f in ((a, m.operand_fmts[0]), (b, m.operand_fmts[1])):
        edge = np.array(edge_patterns(f), np.uint64)
        x[:, 0] = edge[g.integers(0, len(edge), n)]
    return a, b, c, sa, sb


def check(m, text, k_max, n, seed):
    try:
        h = get_model(f"{m.id}:{text}")
    except ModelError as e:
        assert "\n" not in str(e)
        return "refused"
    k = 1 + seed % min(k_max, 2 * h.block(10**6) + 3)
    a, b, c, sa, sb = _inputs(h, k, n, seed)
    ref = h.evaluate(a, b, c, sa, sb, backend="numpy")
    try:
        nat = h.evaluate(a, b, c, sa, sb, backend="native", jobs=1)
    except ModelError as e:        # the compiled reading's documented refusal (smtmodel.native.TooWide)
        assert "the native reading does not compile" in str(e) and "\n" not in str(e), str(e)
    else:
        assert np.array_equal(nat, ref), f"{h.id} K={k}: native {nat} != numpy {ref}"
    smt = smt_outputs(h, a, b, c, None if sa is None else (sa, sb))
    assert smt == [int(x) for x in ref], f"{h.id} K={k}: smt {[hex(x) for x in smt]} != numpy {[hex(int(x)) for x in ref]}"
    return "read"


COMMON = dict(derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=60, **COMMON)
@given(overridden(), st.integers(0, 2**16))
def test_overrides_are_refused_or_read_alike(mo, seed):
    check(*mo, k_max=20, n=6, seed=seed)


@pytest.mark.slow
@settings(max_examples=600, **COMMON)
@given(overridden(WIDE), st.integers(0, 2**16))
def test_overrides_are_refused_or_read_alike_long(mo, seed):
    check(*mo, k_max=40, n=12, seed=seed)
