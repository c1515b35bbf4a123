"""Model.evaluate's compiled reading on inputs held in uint64 (truncated to their formats'
widths as the kernel loads them) gives the bits of the NumPy reading, and still refuses bits
that do not fit the formats."""

from __future__ import annotations

import numpy as np
import pytest

from smtmodel import native
from smtmodel.catalog import get_model
from smtmodel.formats import get_format

pytestmark = pytest.mark.skipif(not native.available(), reason="llvmlite does not load")


def stored(bits, width):
    return bits.astype(next(d for d in (np.uint8, np.uint16, np.uint32, np.uint64) if 8 * np.dtype(d).itemsize >= width))


@pytest.mark.parametrize("mid,k", [("hopper-fp16-fp32", 16), ("hopper-fp16-fp32", 12), ("hopper-fp8e4m3-fp32", 32),
                                   ("ampere-bf16-fp32", 8), ("hopper-tf32-fp32", 8)])
def test_uint64_inputs_give_the_numpy_readings_bits(mid, k):
    m = get_model(mid)
    (wa, wb), (_, wc, _) = m.operand_widths, m.widths
    rng = np.random.default_rng(k)
    n = 3000                                    # whole vectors of cases and a tail
    a = rng.integers(0, 1 << wa, (n, k), dtype=np.uint64)
    b = rng.integers(0, 1 << wb, (n, k), dtype=np.uint64)
    c = rng.integers(0, 1 << wc, n, dtype=np.uint64)
    want = m.evaluate(a[:400], b[:400], c[:400], backend="numpy")      # expected: the reference reading
    got64 = m.evaluate(a, b, c, backend="native", jobs=1)
    got = m.evaluate(stored(a, wa), stored(b, wb), stored(c, wc), backend="native", jobs=1)
    assert np.array_equal(got64[:400], want) and np.array_equal(got64, got)


def test_uint64_inputs_that_do_not_fit_are_refused():
    m = get_model("hopper-fp16-fp32")
    a = np.zeros((64, 16), np.uint64)
    a[37, 5] = 1 << 16                        # one bit above fp16's 16
    with pytest.raises(ValueError, match="do not fit 16 bits"):
        m.evaluate(a, np.zeros_like(a), np.zeros(64, np.uint64), backend="native", jobs=1)
    assert get_format("fp16").width == 16


def test_evaluate_batches_equals_each_batch_read_alone():
    """Batches of two K read together per K (Model.evaluate_batches) give each batch's own
    evaluate() bits, in order (expected values: evaluate() itself, one batch at a time)."""
    m = get_model("hopper-fp16-fp32")
    g = np.random.default_rng(3)
    batches = [(g.integers(0, 1 << 16, (n, k), dtype=np.uint64), g.integers(0, 1 << 16, (n, k), dtype=np.uint64),
                g.integers(0, 1 << 32, n, dtype=np.uint64), None, None) for n, k in ((3, 16), (5, 8), (2, 16))]
    got = m.evaluate_batches(batches)
    assert [d.tolist() for d in got] == [m.evaluate(a, b, c).tolist() for a, b, c, _sa, _sb in batches]
