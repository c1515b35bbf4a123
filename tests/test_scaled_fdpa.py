"""ST-FDPA and GST-FDPA (the block-scaled MX / NVFP4 models) against an independent reference.

Expected values: seed 000 Algorithms 8 and 9 written out here in exact rational arithmetic
(``Fraction``), independent of the semantic core: inputs are decoded from their bit fields,
each summand is aligned at e_max and truncated to F fraction bits toward zero, the sum is exact,
and the result is rounded toward zero to fp32. Scales are drawn so that results stay in fp32's
normal range (the reference does not model subnormal or overflowing outputs).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from smtmodel.catalog import get_model
from smtmodel.formats import get_format
from smtmodel.sampling import finite_raw, pack_fields


def value_exp(bits: int, fmt) -> tuple[Fraction, int]:
    """(value, Exp) of finite raw bits; Exp of a zero is -126 (seed 000's zero rule)."""
    f = get_format(fmt)
    e_bits, m_bits = f.ebits, f.mbits
    enc = bits >> f.shift
    M = enc & ((1 << m_bits) - 1)
    E = (enc >> m_bits) & ((1 << e_bits) - 1)
    s = (enc >> (m_bits + e_bits)) & 1 if f.signed else 0
    if f.name == "e8m0":
        return Fraction(2) ** (E - 127), E - 127
    if E == 0:
        v, ex = Fraction(M, 1 << m_bits) * Fraction(2) ** f.emin, f.emin
    else:
        v, ex = Fraction((1 << m_bits) + M, 1 << m_bits) * Fraction(2) ** (E - f.bias), E - f.bias
    if v == 0:
        ex = -126
    return (-v if s else v), ex


def rz_fp32(x: Fraction) -> int:
    if x == 0:
        return 0
    s = 1 if x < 0 else 0
    a = abs(x)
    e = math.floor(math.log2(a))
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    assert -126 <= e <= 127, "reference covers normal results only"
    m = math.floor(a / Fraction(2) ** (e - 23))
    return s << 31 | (e + 127) << 23 | (m - (1 << 23))


def truncated_sum(summands: list[tuple[Fraction, int]], F: int) -> Fraction:
    """Algorithm 7/8/9 step 2-3 before rounding: align at e_max, truncate each to F bits (RZ)."""
    emax = max(e for _, e in summands)
    unit = Fraction(2) ** (emax - F)
    total = Fraction(0)
    for v, _ in summands:
        q = abs(v) / unit
        t = Fraction(math.floor(q)) * unit
        total += t if v >= 0 else -t
    return total


def st_fdpa_ref(m, a, b, c, sa, sb) -> int:
    ea_s = value_exp(sa, m.scale_fmt)[1] + value_exp(sb, m.scale_fmt)[1]
    terms = []
    for x, y in zip(a, b):
        (vx, ex), (vy, ey) = value_exp(x, m.in_fmt), value_exp(y, m.in_fmt)
        terms.append((vx * vy * Fraction(2) ** ea_s, ex + ey + ea_s))
    terms.append(value_exp(c, "fp32"))
    return rz_fp32(truncated_sum(terms, m.F))


def gst_fdpa_ref(m, a, b, c, sa, sb) -> int:
    terms = []
    for g in range(m.L // m.G):
        j = g * m.G // m.scale_block
        (va, ea), (vb, eb) = value_exp(sa[j], m.scale_fmt), value_exp(sb[j], m.scale_fmt)
        p = sum(value_exp(a[k], m.in_fmt)[0] * value_exp(b[k], m.in_fmt)[0] for k in range(g * m.G, (g + 1) * m.G))
        terms.append((p * va * vb, ea + eb))
    terms.append(value_exp(c, "fp32"))
    return rz_fp32(truncated_sum(terms, m.F))


def _scale(fmt, n, g):
    f = get_format(fmt)
    if f.name == "e8m0":                                      # 2^-20 .. 2^20
        return pack_fields(f, 0, g.integers(f.bias - 20, f.bias + 21, n), 0)
    return g.integers(0x20, 0x50, n).astype(np.uint64)       # ue4m3 around 1 (2^-3 .. 2^2)


def _c(n, g):
    """fp32 c with exponents in [-10, 10], a fifth +0."""
    e = g.integers(-10, 11, n) + get_format("fp32").bias
    bits = pack_fields("fp32", g.integers(0, 2, n), e, g.integers(0, 1 << 23, n))
    return np.where(g.random(n) < 0.2, np.uint64(0), bits).astype(np.uint64)


@pytest.mark.parametrize("mid", ["blackwell-fp8e4m3-fp32-mx", "blackwell-fp6e3m2-fp32-mx", "blackwell-fp4e2m1-fp32-mx",
                                 "blackwell-fp4e2m1-fp32-mxgst", "blackwell-fp4e2m1-fp32-nvfp4"])
def test_block_scaled_against_reference(mid):
    m = get_model(mid)
    g = np.random.default_rng(7)
    n, L = 300, m.L
    nb = L // m.scale_block
    a = np.stack([finite_raw(m.in_fmt, n, g) for _ in range(L)], 1)
    b = np.stack([finite_raw(m.in_fmt, n, g) for _ in range(L)], 1)
    c = _c(n, g)
    sa = np.stack([_scale(m.scale_fmt, n, g) for _ in range(nb)], 1)
    sb = np.stack([_scale(m.scale_fmt, n, g) for _ in range(nb)], 1)
    d = m.evaluate(a, b, c, sa, sb)
    ref = st_fdpa_ref if m.op == "stfdpa" else gst_fdpa_ref
    bad = []
    for i in range(n):
        args = ([int(x) for x in a[i]], [int(x) for x in b[i]], int(c[i]))
        scales = ([int(x) for x in sa[i]], [int(x) for x in sb[i]])
        want = ref(m, *args, *(scales if m.op == "gstfdpa" else (scales[0][0], scales[1][0])))
        if int(d[i]) != want:
            bad.append((i, hex(int(d[i])), hex(want)))
    assert not bad, bad[:5]
