"""The CDNA2 fp16/bf16 FMA-chain rival (seed 003 Table III: MI250X "FMA unit width 1", RTN-TE)
against an independent computation: exact rational arithmetic, one RNE rounding to fp32 per
product, written here without the core."""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from smtmodel.catalog import get_model, rivals_of


def _rne_fp32(x: Fraction) -> Fraction:
    """x rounded to the nearest fp32 value, ties to even (no overflow in these cases)."""
    if x == 0:
        return Fraction(0)
    s, a = (-1 if x < 0 else 1), abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, -126)
    unit = Fraction(2) ** (e - 23)
    q, r = divmod(a, unit)
    if r > unit / 2 or (r == unit / 2 and q % 2 == 1):
        q += 1
    return s * q * unit


@pytest.mark.parametrize("fmt, dtype", [("fp16", np.float16), ("bf16", ml_dtypes.bfloat16)])
def test_fma_chain_rounds_after_every_product(fmt, dtype):
    m = get_model(f"cdna2-{fmt}-fp32-fmachain")
    assert m.kind == "rival" and m.rival_of == f"cdna2-{fmt}-fp32" and m in rivals_of(f"cdna2-{fmt}-fp32")
    rng = np.random.default_rng(7)
    n, k = 64, 8
    a = (rng.standard_normal((n, k)) * 2.0 ** rng.integers(-6, 7, (n, k))).astype(dtype)
    b = (rng.standard_normal((n, k)) * 2.0 ** rng.integers(-6, 7, (n, k))).astype(dtype)
    c = (rng.standard_normal(n) * 2.0 ** rng.integers(-3, 12, n)).astype(np.float32)
    bits = lambda x, t: x.view(t).astype(np.uint64)
    got = m.evaluate(bits(a, np.uint16), bits(b, np.uint16), bits(c, np.uint32)).astype(np.uint32).view(np.float32)
    for i in range(n):
        d = Fraction(float(c[i]))
        for x, y in zip(a[i], b[i]):
            d = _rne_fp32(Fraction(float(x)) * Fraction(float(y)) + d)
        assert Fraction(float(got[i])) == d, i


def test_fma_chain_differs_from_seed000_pairwise_ftz():
    """Products 1, 0, 2^-24, 2^-24: the FMA chain rounds 1 + 2^-24 to 1 twice (ties to even);
    seed 000's pairwise group adds the two small products first (exactly 2^-23) and keeps them."""
    h = lambda v: int(np.float16(v).view(np.uint16))
    a = np.array([[h(1.0), 0, h(2.0 ** -12), h(2.0 ** -12)]], np.uint64)
    b = np.array([[h(1.0), 0, h(2.0 ** -12), h(2.0 ** -12)]], np.uint64)
    c = np.array([0], np.uint64)
    rival = get_model("cdna2-fp16-fp32-fmachain").evaluate(a, b, c)[0]
    base = get_model("cdna2-fp16-fp32").evaluate(a, b, c)[0]
    f = lambda x: float(np.array([x], np.uint32).view(np.float32)[0])
    assert (f(rival), f(base)) == (1.0, 1.0 + 2.0 ** -23)
