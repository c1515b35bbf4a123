"""smtmodel.tabulate: long dot products by tables of a repeated block's step give exactly the
bits of Model.evaluate (the reference reading), with windows small enough to be left often."""

import numpy as np
import pytest

from smtmodel.tabulate import ChainEvaluator
from smtmodel.catalog import get_model


def _case(rng, k: int, period: int):
    """fp16 patterns: 2^10 first, then a repeating group of ``period`` small values with a few
    random interruptions, so runs, fixed points and window misses all occur."""
    small = (rng.standard_normal(period) * 2.0 ** rng.integers(-4, 0, period)).astype(np.float16)
    a = np.resize(small, k).astype(np.float16)
    b = np.resize(small[::-1], k).astype(np.float16)
    a[0] = b[0] = 1024
    for i in rng.integers(1, k, 3):
        a[i] = np.float16(rng.standard_normal())
    return a.view(np.uint16).astype(np.uint64), b.view(np.uint16).astype(np.uint64)


@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("mid", ["volta-fp16-fp32", "hopper-fp16-fp32", "cdna1-fp16-fp32", "cdna2-fp16-fp32",
                                 "cdna2-fp16-fp32-fmachain", "cdna3-fp16-fp32", "cdna1-fp16-fp32-pairwise"])
def test_tabulated_chain_equals_evaluate(mid, native):
    m = get_model(mid)
    rng = np.random.default_rng(5)
    for period, k in ((2, 72), (1, 41)):
        a, b = _case(rng, k, period)
        for c in (int(np.float32(2.0 ** 20).view(np.uint32)), int(np.float32(-3.5).view(np.uint32))):
            ev = ChainEvaluator(m, run=2, window=4, native=native)
            want = int(m.evaluate(a[None], b[None], np.array([c], np.uint64), backend="numpy")[0])
            assert ev.dot(a, b, c) == want, (mid, period, k, c)
