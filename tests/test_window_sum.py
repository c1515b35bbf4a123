"""The two-term windowed sum (``smtmodel.fp.exact.window_sum2``, the FMA and product-plus-c case of
``ieee_sum``) rounds exactly as the exact wide accumulator (``exact_sum``) does.

Expected values: the exact accumulator itself (every term at its absolute position in one
two's-complement integer, nothing lost) -- an independent construction of the same real sum. The
proofs are Bitwuzla unsat answers on the finite results (specials are shared code); the twin check
compares both readings on edge-heavy random cases in every rounding mode of the core.

Proof times (2-core machine): fp8e4m3 products plus an fp16 addend, 3-6 min each with Bitwuzla
(the exact side is a 100-bit accumulator), so ``-m slow``; with fp32 addends (a 284-528-bit
accumulator) Bitwuzla does not finish in 300 s, and those are checked by the twin here. The same
code is proved equal to SMT-LIB ``fp.fma`` (e4m3, fp16; every IEEE mode) in
tests/test_ieee_proofs.py (``-m slow``).
"""

from __future__ import annotations

import numpy as np
import pytest

from smtmodel.bv import NUMPY
from smtmodel.fp import decode, exact_sum, mul_exact, round_finite
from smtmodel.fp.exact import window_sum2
from smtmodel.solve import solve

MODES = ("RNE", "RZ", "RU", "RD", "RNA", "RTO")

# (product operand format, addend format, result format)
CASES = [("fp8e4m3", "fp16", "fp16")]


def _both(B, a, b, c, fa, fc, fo, rm):
    from smtmodel.formats import get_format

    p = get_format(fo).precision
    P, C = mul_exact(decode(a, fa), decode(b, fa)), decode(c, fc)
    sign, mag, exp, frac = exact_sum([P, C])
    exact = round_finite(fo, sign, mag, exp, frac, rm, "ieee")
    sw, mw, ew, fw = window_sum2(P, C, p)
    window = round_finite(fo, sw, mw, ew, fw, rm, "ieee")
    finite = P.finite_nonzero | P.zero
    finite = finite & (C.finite_nonzero | C.zero)
    nonzero = mag.ne(0)                      # an exact zero's sign is ieee_zero_sign's, shared code
    return exact, window, finite & nonzero


@pytest.mark.slow
@pytest.mark.parametrize("fa,fc,fo", CASES, ids=["-".join(c) for c in CASES])
@pytest.mark.parametrize("rm", ["RNE", "RZ"])
def test_window_sum_rounds_as_the_exact_sum_bitwuzla(fa, fc, fo, rm):
    from smtmodel.formats import get_format

    wa, wc = get_format(fa).width, get_format(fc).width

    def build(B):
        a, b, c = B.var("a", wa), B.var("b", wa), B.var("c", wc)
        exact, window, live = _both(B, a, b, c, fa, fc, fo, rm)
        return [live, exact.ne(window)], {"a": a, "b": b, "c": c}

    r = solve(build, "bitwuzla", timeout=300)
    assert r.status == "unsat", (r.status, getattr(r, "model", None), r.reason)


@pytest.mark.parametrize("fa", ["fp16", "bf16"])
@pytest.mark.parametrize("rm", MODES)
def test_window_sum_twin_equals_exact_on_edge_cases(rm, fa):
    """fp16 or bf16 products plus fp32 in every mode, 20,000 cases, a third of them cancelling."""
    g = np.random.default_rng(11)
    n = 20_000
    a = g.integers(0, 1 << 16, n, dtype=np.uint64)
    b = g.integers(0, 1 << 16, n, dtype=np.uint64)
    c = g.integers(0, 1 << 32, n, dtype=np.uint64)
    # a third of the cases: c = -(a*b) rounded to fp32 plus a small perturbation (cancellation)
    import ml_dtypes

    dt = np.float16 if fa == "fp16" else ml_dtypes.bfloat16
    with np.errstate(invalid="ignore", over="ignore"):
        prod = (a.astype(np.uint16).view(dt).astype(np.float32) * b.astype(np.uint16).view(dt).astype(np.float32))
        near = (-prod).view(np.uint32).astype(np.uint64) + g.integers(-3, 4, n).astype(np.uint64)
    pick = g.random(n) < 0.33
    c = np.where(pick, near & np.uint64(0xFFFFFFFF), c)
    A, Bv, Cv = NUMPY.input(a, 16), NUMPY.input(b, 16), NUMPY.input(c, 32)
    exact, window, live = _both(NUMPY, A, Bv, Cv, fa, "fp32", "fp32", rm)
    live = np.asarray(live.v, dtype=bool)
    assert live.sum() > n // 2
    e, w = np.asarray(exact.v)[live], np.asarray(window.v)[live]
    assert np.array_equal(e, w), np.flatnonzero(e != w)[:5]
