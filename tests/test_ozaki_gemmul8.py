"""GEMMul8 (Ozaki scheme II, INT8 backend) bit for bit: smtmodel/schemes/gemmul8.py against an
independent transcription of GEMMul8's arithmetic steps in Python Fractions with explicit IEEE
roundings (own rounding function, decimal log2, the source's multiply-high modular reductions),
and against the library's published constants and sample.

Expected values: the constants are transcribed from ``RIKEN-RCCS/GEMMul8`` ``GEMMul8/src/table.hpp``
at commit 71296f99a812fb3cb694768d01855837a57c5086; the sample inputs and its reference ``hC_exact``
from ``GEMMul8/sample/dgemm_cuBLAS_int8.cu`` (same commit); everything else from the transcription
below. GEMMul8's own test programs (``testing/make_matrix.hpp``) draw their inputs with cuRAND
(``curand_init(seed, idx, 0)``, ``curand_uniform_double``, ``curand_normal_double``) and the device's
``exp``, and write only error statistics: no output matrix of the library is published to compare.
"""

from __future__ import annotations

import math
import subprocess
import sys
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from smtmodel.schemes.gemmul8 import (GEMMUL8_INT8_MODULI, Gemmul8Error, constants, gemmul8_gemm, plan)
from smtmodel.schemes.ozaki import OzakiError, gemm, get_ozaki

H = float.fromhex

# ---- table.hpp, transcribed (INT8 namespace) -------------------------------------------------------
TABLE_P = {
    3: ('-0x1.f806000000000p+23', '0x0.0000000000000p+0'),
    7: ('-0x1.a30f6de308f20p+55', '0x0.0000000000000p+0'),
    10: ('-0x1.2e88a4e387945p+79', '0x1.1444000000000p+22'),
    15: ('-0x1.b88e245754182p+117', '0x1.df666905d3cbcp+63'),
    17: ('-0x1.ef9c77c5f5ec7p+132', '-0x1.b141114c878cep+77'),
}
TABLE_INVP = {3: '0x1.040d287a7051fp-24',
              7: '0x1.38c6a8b145786p-56',
              10: '0x1.b13f5ca3b64a6p-80',
              15: '0x1.2983f5dbae8acp-118',
              17: '0x1.0877227a9f8e3p-133'}
TABLE_LOG2P = {2: '0x1.dfd1ec0000000p+2',
               3: '0x1.6fa3360000000p+3',
               4: '0x1.ef2ea60000000p+3',
               5: '0x1.372d940000000p+4',
               6: '0x1.767b2e0000000p+4',
               7: '0x1.b5b0280000000p+4',
               8: '0x1.f49a020000000p+4',
               9: '0x1.19a8580000000p+5',
               10: '0x1.38f6bc0000000p+5',
               11: '0x1.582ada0000000p+5',
               12: '0x1.7736ae0000000p+5',
               13: '0x1.9619160000000p+5',
               14: '0x1.b4a4fe0000000p+5',
               15: '0x1.d321f80000000p+5',
               16: '0x1.f180a60000000p+5',
               17: '0x1.07e7f80000000p+6',
               18: '0x1.16e7e20000000p+6',
               19: '0x1.25df9a0000000p+6',
               20: '0x1.34be220000000p+6'}
TABLE_QPI = {3: ['0x1.50ac020000000p+23', '0x1.f60c000000000p+22', '0x1.a45a000000000p+23'],
             7: [('0x1.49071d4742000p+55', '0x1.8080000000000p+9'),
                 ('0x1.5fae947039800p+55', '0x1.a000000000000p+12'),
                 ('0x1.42fdb9e194800p+55', '0x1.c000000000000p+10'),
                 ('0x1.187c8ee783400p+55', '0x1.8000000000000p+12'),
                 ('0x1.e89ef222a0000p+52', '0x1.c000000000000p+12'),
                 ('0x1.0316493fe2400p+55', '0x1.d000000000000p+12'),
                 ('0x1.1f8e561d65000p+53', '0x1.e000000000000p+11')],
             10: [('0x1.1ba01a9548000p+75', '0x1.c6c29fa008000p+37'),
                  ('0x1.b499060d20000p+76', '0x1.4ddc380000000p+30'),
                  ('0x1.8d00367a82000p+77', '0x1.5e72640800000p+37'),
                  ('0x1.348f721e1e000p+77', '0x1.5939d00000000p+34'),
                  ('0x1.09c9ed1acf000p+79', '0x1.acce161000000p+36'),
                  ('0x1.6988bc8c28000p+75', '0x1.d3148d7000000p+37'),
                  ('0x1.4e2df779b8000p+77', '0x1.1bca621000000p+37'),
                  ('0x1.54302cc6b7000p+78', '0x1.be65b8a000000p+35'),
                  ('0x1.675767107c000p+76', '0x1.43b8ee6000000p+36'),
                  ('0x1.1fdfa04826000p+77', '0x1.940b60e000000p+36')],
             15: [('0x1.8334edf0c0800p+117', '0x1.a4b62a6fdb1e1p+75'),
                  ('0x1.d9618469e1000p+116', '0x1.c75bd2f612d0fp+75'),
                  ('0x1.4c97d49af8800p+117', '0x1.3f90fd4ad5142p+74'),
                  ('0x1.3db0f47816800p+117', '0x1.9e3c7f45d92bfp+75'),
                  ('0x1.ac11e30d56000p+116', '0x1.c9413fbd969ffp+75'),
                  ('0x1.d3f9c70000000p+109', '0x1.6550132900769p+75'),
                  ('0x1.0210da6024000p+117', '0x1.a05bb4379a4c1p+75'),
                  ('0x1.2e86f6e52b000p+116', '0x1.dae820f5ffc00p+74'),
                  ('0x1.f43197eee2000p+115', '0x1.6405781ac87d9p+75'),
                  ('0x1.e913152bf0000p+115', '0x1.175dbeffba9cdp+75'),
                  ('0x1.775c686f24000p+116', '0x1.fe04b43a93e73p+71'),
                  ('0x1.44d556f611000p+116', '0x1.67335f8e813b8p+73'),
                  ('0x1.90e2677038000p+115', '0x1.1bfe09769edb0p+75'),
                  ('0x1.1b5f498bca000p+117', '0x1.f1ee6037f1f5dp+71'),
                  ('0x1.9702ab51fa000p+116', '0x1.0c08e68bbfe9cp+75')],
             17: [('0x1.e01f9407c4000p+129', '0x1.1e87e3b708c22p+90'),
                  ('0x1.e201959d63000p+131', '0x1.4160efcbeef78p+90'),
                  ('0x1.31982160c4000p+132', '0x1.4480003b19f81p+89'),
                  ('0x1.7f0fe22eef000p+132', '0x1.0b25d1ed6a121p+87'),
                  ('0x1.00d5bf9f80000p+126', '0x1.747bf6c0d8b31p+90'),
                  ('0x1.8ad801f1a0000p+129', '0x1.bcbc193dd346cp+88'),
                  ('0x1.2a9c662802000p+130', '0x1.fddf745f1ee5ap+88'),
                  ('0x1.d836977997000p+131', '0x1.d1f525311dabfp+90'),
                  ('0x1.85903a5f3c000p+132', '0x1.1660b883eb1a4p+90'),
                  ('0x1.a3320451ba800p+132', '0x1.41dedd270b797p+88'),
                  ('0x1.ce462d2242000p+132', '0x1.79125e4f2418ap+90'),
                  ('0x1.d67cf11ca9800p+132', '0x1.0272e6220fc37p+90'),
                  ('0x1.add7c7ba40000p+132', '0x1.d2e0f92de9773p+87'),
                  ('0x1.57b0afae95000p+131', '0x1.ea083b704edc0p+90'),
                  ('0x1.e30840c0e8000p+128', '0x1.eba48f8e2a378p+90'),
                  ('0x1.5aabc9d4bf800p+132', '0x1.a977e531befa8p+90'),
                  ('0x1.82a0ee308b800p+132', '0x1.2ed72602864a3p+88')]}

# ---- the transcription: exact rationals, one explicit rounding per IEEE operation ---------------------
INF = math.inf
F64, F32 = (53, -1022), (24, -126)


def rnd(q, fmt, mode="RN"):
    """q (Fraction or ±inf) rounded to binary64/32: RN (ties even), RU, RD; overflow -> ±inf."""
    if q in (INF, -INF):
        return q
    p, emin = fmt
    if q == 0:
        return Fraction(0)
    neg = q < 0
    a = -q if neg else q
    e = a.numerator.bit_length() - a.denominator.bit_length()      # floor(log2 a) is e or e - 1
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    ulp = Fraction(2) ** (e - p + 1)
    n = math.floor(a / ulp)
    r = a / ulp - n
    if mode == "RN":
        n += r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2)
    elif mode == "RU":
        n += (r > 0) and not neg
    elif mode == "RD":
        n += (r > 0) and neg
    v = n * ulp
    emax = 1023 if fmt == F64 else 127
    if v >= Fraction(2) ** (emax + 1):
        return -INF if neg else INF
    return -v if neg else v


def log2_rn32(v):
    if v == 0:
        return -INF
    with localcontext() as ctx:
        ctx.prec = 50
        d = (Decimal(v.numerator).ln() - Decimal(v.denominator).ln()) / Decimal(2).ln()
    e = v.numerator.bit_length() - v.denominator.bit_length()      # floor(log2 v) is e or e - 1
    while Fraction(2) ** e > v:
        e -= 1
    return Fraction(e) if Fraction(2) ** e == v else rnd(Fraction(d), F32)


def ilogb(v):
    if v == 0:
        return 0
    v = abs(Fraction(v))
    e = v.numerator.bit_length() - v.denominator.bit_length()      # floor(log2 v) is e or e - 1
    while Fraction(2) ** e > v:
        e -= 1
    return e


def add(a, b, fmt, mode="RN"):
    if INF in (a, b) or -INF in (a, b):
        return a if a in (INF, -INF) else b
    return rnd(a + b, fmt, mode)


def mul(a, b, fmt, mode="RN"):
    if a in (INF, -INF) or b in (INF, -INF):
        return INF if (a > 0) == (b > 0) else -INF
    return rnd(a * b, fmt, mode)


def add_exact_product(a, b, c, fmt, mode):
    if a in (INF, -INF) or b in (INF, -INF):
        prod = INF if (a > 0) == (b > 0) else -INF
        return prod if c not in (INF, -INF) or c == prod else float("nan")
    if c in (INF, -INF):
        return c
    return rnd(a * b + c, fmt, mode)


def warp_ru(vals):
    v = list(vals) + [Fraction(0)] * (32 - len(vals))
    o = 16
    while o:
        for l in range(o):
            v[l] = add(v[l], v[l + o], F64, "RU")
        o //= 2
    return v[0]


def sumsq(row, lanes):
    part = [Fraction(0)] * lanes
    for t, x in enumerate(row):
        part[t % lanes] = add_exact_product(abs(x), abs(x), part[t % lanes], F64, "RU")
    if lanes == 32:
        return warp_ru(part)
    return warp_ru([warp_ru(part[32 * w:32 * w + 32]) for w in range(lanes // 32)])


SAFE = Fraction(H("0x1.0000060000000p-1"))


def fast_sft(row, lanes, log2P):
    amax = max(abs(x) for x in row)
    s = sumsq(row, lanes)
    e = ilogb(s)
    v = rnd(s / Fraction(2) ** e, F32, "RU")
    lg = log2_rn32(v)
    l = add(lg, Fraction(e), F32, "RU")
    h = mul(SAFE, l, F32, "RU")
    t = add(add(log2P, Fraction(-3, 2), F32, "RD"), -max(Fraction(1), h), F32, "RD")
    return math.floor(t) - ilogb(rnd(amax, F32))


def bits64(x):
    return int(np.array([float(x)]).view(np.uint64)[0])


def upper8(x, sft):
    """trunc_scalbn_8i as written (scaling.hpp)."""
    b = bits64(x) & ((1 << 63) - 1)
    if b == 0:
        return 0
    ex, frac = b >> 52, b & ((1 << 52) - 1)
    if ex:
        mant, e = frac | (1 << 52), ex - 1023
    else:
        lz = 64 - frac.bit_length()
        k = lz - 12
        mant, e = (frac << k) | (1 << 52), (1 - 1023) - k
    e += sft
    shift = 52 - e
    if shift <= 0:
        return mant << (-shift)
    if shift >= 53:
        return 1
    return (mant >> shift) + ((mant & ((1 << shift) - 1)) != 0)


def accurate_sfts(A, B, log2P):
    m, k = len(A), len(A[0])
    n = len(B[0])
    s0a = [5 - ilogb(max(abs(x) for x in row)) for row in A]
    s0b = [5 - ilogb(max(abs(B[t][j]) for t in range(k))) for j in range(n)]
    ahi = [[i8(upper8(A[i][t], s0a[i])) for t in range(k)] for i in range(m)]
    bhi = [[i8(upper8(B[t][j], s0b[j])) for j in range(n)] for t in range(k)]
    chi = [[sum(ahi[i][t] * bhi[t][j] for t in range(k)) for j in range(n)] for i in range(m)]

    def sft(M):
        if M == 0:
            return None
        t = rnd(-SAFE * log2_rn32(rnd(Fraction(M), F32)) + log2P, F32, "RD")
        return math.floor(t)
    sa = [None if sft(max(max(r), 0)) is None else s0a[i] + sft(max(max(r), 0)) for i, r in enumerate(chi)]
    sb = [None if sft(max(max(chi[i][j] for i in range(m)), 0)) is None else
          s0b[j] + sft(max(max(chi[i][j] for i in range(m)), 0)) for j in range(n)]
    return sa, sb


def trunc_scaled(x, sft, n):
    """trunc_scalbn_to_i32 / _i64 (exact), or for n >= 16 trunc_scalbn_to_fp + make_fp_mant_exp."""
    if x == 0:
        return 0
    b = bits64(x)
    if n >= 16 and (b >> 52) & 0x7FF == 0:
        sign, frac = b >> 63, b & ((1 << 52) - 1)
        lz = 12 - (64 - frac.bit_length())
        e = lz + sft
        if e < 1023:
            return 0
        ff = (frac << (2 - lz)) ^ (1 << 52)
        mask = ~((1 << max(1075 - e, 0)) - 1)
        out = ((sign << 63) | (e << 52) | (ff & mask)) & ((1 << 64) - 1)
        v = Fraction(float(np.array([out], dtype=np.uint64).view(np.float64)[0]))
        return math.trunc(v)
    return math.trunc(Fraction(x) * Fraction(2) ** sft)


def mulhi(a, b, w):
    return (a * b) >> w                                           # floor: __mulhi / __mul64hi on signed values


def wrap(a, p):
    return a - p if a > p // 2 else (a + p if a < -(p // 2) else a)


def i8(v):
    return (v + 128) % 256 - 128


def mod_small(a, p):
    if p == 256:
        return wrap(a & 255, p)
    return wrap(a - p * mulhi(a, (1 << 32) // p, 32), p)


def pinv64(p):
    return (2 ** 64 - 1) // p + ((2 ** 64 - 1) % p == p - 1)


def mod_int(a, p, n):
    """mod_small (n <= 7) / mod_middle (n <= 15) / mod_large via make_fp_mant_exp (n >= 16)."""
    if n <= 7:
        return i8(mod_small(a, p))
    if n <= 15:
        if p == 256:
            return i8(wrap(a & 255, p))
        return i8(wrap(a - p * mulhi(a, pinv64(p), 64), p))
    if a == 0:
        return 0
    u = abs(a).bit_length() - 1
    ex = max(u - 62, 0)
    mant = (abs(a) >> ex) * (1 if a > 0 else -1)
    if p == 256:
        return 0 if ex >= 8 else i8(wrap((mant << ex) & 255, p))
    rem1 = mant - p * mulhi(mant, pinv64(p), 64)
    rem2 = (1 << ex) if ex <= 6 else wrap(pow(2, ex, p), p)
    return i8(mod_small(rem1 * rem2, p))


def transcribe(A, B, n, mode, C=None, alpha=1.0, beta=0.0, scalars="host"):
    """GEMMul8's steps for C = alpha A B + beta C (op N, N), every rounding explicit."""
    A = [[Fraction(x) for x in row] for row in A]
    B = [[Fraction(x) for x in row] for row in B]
    m, k, nn = len(A), len(B), len(B[0])
    log2P = Fraction(H(TABLE_LOG2P[n]))
    if mode == "fast":
        sa = [fast_sft(row, 32, log2P) for row in A]
        sb = [fast_sft([B[t][j] for t in range(k)], 256, log2P) for j in range(nn)]
    else:
        sa, sb = accurate_sfts(A, B, log2P)
        sa = [0 if s is None else s for s in sa]
        sb = [0 if s is None else s for s in sb]
    Ai = [[trunc_scaled(A[i][t], sa[i], n) for t in range(k)] for i in range(m)]
    Bi = [[trunc_scaled(B[t][j], sb[j], n) for j in range(nn)] for t in range(k)]
    mods = GEMMUL8_INT8_MODULI[:n]
    P_hi, P_lo = (Fraction(H(v)) for v in TABLE_P[n])
    invP = Fraction(H(TABLE_INVP[n]))
    W = TABLE_QPI[n]
    D = np.zeros((m, nn))
    for i in range(m):
        for j in range(nn):
            res = []
            for p in mods:
                s = sum(mod_int(Ai[i][t], p, n) * mod_int(Bi[t][j], p, n) for t in range(k))
                s = (s + 2 ** 31) % 2 ** 32 - 2 ** 31                   # int32
                res.append(i8(mod_small(s, p)))
            if n <= 6:
                X = Fraction(0)
                for w, c in zip(W, res):
                    X = rnd(Fraction(H(w)) * c + X, F64)
                q = rnd(invP * X, F64)
                q = round(q)                                           # rint: half to even
                r = rnd(P_hi * q + X, F64)
            else:
                X = Y = Fraction(0)
                for (hi, lo), c in zip(W, res):
                    X = rnd(Fraction(H(hi)) * c + X, F64)
                    Y = rnd(Fraction(H(lo)) * c + Y, F64)
                q = round(rnd(invP * X, F64))
                r = rnd(P_lo * q + rnd(rnd(P_hi * q + X, F64) + Y, F64), F64)
            ab = rnd(r * Fraction(2) ** (-(sa[i] + sb[j])), F64)
            if scalars == "host" and alpha in (1.0, -1.0) and beta in (0.0, 1.0):
                x = ab if alpha == 1.0 else -ab
                out = x if beta == 0.0 else rnd(Fraction(C[i][j]) + x, F64)
                neg_zero = alpha == -1.0 and beta == 0.0 and ab == 0
            else:
                out = rnd(Fraction(beta) * Fraction(C[i][j]) + rnd(Fraction(alpha) * ab, F64), F64)
                neg_zero = False
            D[i, j] = -0.0 if neg_zero else float(out)
    return D


def _inputs(seed, m, k, n, spread=3):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, k)) * np.exp2(rng.integers(-spread, spread + 1, (m, k)))
    B = rng.standard_normal((k, n)) * np.exp2(rng.integers(-spread, spread + 1, (k, n)))
    return A, B


def _same(D, E):
    return np.array_equal(np.asarray(D).view(np.uint64), np.asarray(E).view(np.uint64))


# ---- tests ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", sorted(TABLE_QPI))
def test_constants_are_the_table(n):
    """constants(n), computed from the moduli by table.hpp's stated rules, equal its tables."""
    c = constants(n)
    assert (c.P_hi, c.P_lo) == tuple(H(v) for v in TABLE_P[n])
    assert c.invP == H(TABLE_INVP[n])
    want = [H(w) if isinstance(w, str) else (H(w[0]), H(w[1])) for w in TABLE_QPI[n]]
    assert list(c.weights) == want


def test_log2P_is_the_table():
    """log2P for every moduli count (N = 2 is the table's value, not its stated rule's)."""
    for n, v in TABLE_LOG2P.items():
        assert constants(int(n)).log2P == H(v), n


@pytest.mark.parametrize("mode", ["fast", "accurate"])
@pytest.mark.parametrize("n,k", [(3, 37), (7, 5), (10, 37), (17, 37)])
def test_twin_equals_transcription(mode, n, k):
    """The twin's bits equal the transcription's: int32 / int64 / double integer paths, plain and
    double-double CRT, fast and accurate shifts; one all-zero row and one tiny row included."""
    A, B = _inputs(n * 100 + k, 3, k, 3)
    A[1] = 0.0
    A[2] *= 2.0 ** -40
    D, pl = gemmul8_gemm(A, B, n=n, mode=mode, with_plan=True)
    assert pl.ambiguous == 0
    assert _same(D, transcribe(A, B, n, mode))


@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_long_k_reduction_orders(mode):
    """k = 300: the 256-thread column reduction's second level and the 32-lane row chains."""
    A, B = _inputs(7, 2, 300, 2, spread=6)
    assert _same(gemmul8_gemm(A, B, n=10, mode=mode), transcribe(A, B, 10, mode))


@pytest.mark.parametrize("n", [10, 17])
def test_subnormal_rows_accurate(n):
    """Rows whose largest element is subnormal or near it: the source's subnormal readings in
    trunc_scalbn_8i and (n >= 16) trunc_scalbn_to_fp, modelled as written."""
    rng = np.random.default_rng(n)
    A = rng.standard_normal((3, 6))
    A[0] *= 2.0 ** -1060                                   # all subnormal
    A[1, :3] = np.array([3.0, -5.0, 7.0]) * 2.0 ** -1074
    A[1, 3:] *= 2.0 ** -1030
    B = rng.standard_normal((6, 3))
    D = gemmul8_gemm(A, B, n=n, mode="accurate")
    assert _same(D, transcribe(A, B, n, "accurate"))


def test_subnormal_fp_path_reads_wrong_value():
    """A finding, from the transcription: for n >= 16 (here 17) accurate mode, a row [2^-1074 * 3, 0] with a
    column of ones does not give 3·2^-1074 (the int64 path, n = 15, does)."""
    A = np.array([[3 * 2.0 ** -1074, 0.0]])
    B = np.ones((2, 1))
    exact = 3 * 2.0 ** -1074
    assert gemmul8_gemm(A, B, n=15, mode="accurate")[0, 0] == exact
    d17 = gemmul8_gemm(A, B, n=17, mode="accurate")[0, 0]
    assert _same(np.array([d17]), transcribe(A, B, 17, "accurate")[0])
    assert d17 != exact


@pytest.mark.parametrize("alpha,beta,scalars", [(1.0, 1.0, "host"), (-1.0, 0.0, "host"), (-1.0, 1.0, "host"),
                                                 (2.5, 0.0, "host"), (0.75, -3.0, "host"), (1.0, 0.0, "device")])
def test_epilogue(alpha, beta, scalars):
    A, B = _inputs(3, 3, 9, 2)
    C = np.random.default_rng(4).standard_normal((3, 2))
    A[0] = 0.0
    D = gemmul8_gemm(A, B, C, alpha, beta, n=7, mode="fast", scalars=scalars)
    assert _same(D, transcribe(A, B, 7, "fast", C, alpha, beta, scalars))


def test_sample_program():
    """GEMMul8's sample (dgemm_cuBLAS_int8.cu: 15 moduli, accurate mode, alpha = 1, beta = 0):
    its hC_exact is the correctly rounded product, and the twin returns it on all 12 entries."""
    hA = [H(x) for x in (
        "0x1.13491b78f7ff1p-1 0x1.d5797d024f750p+0 -0x1.2121e4d9576a2p+1 0x1.b96ec80cedfb6p-1 0x1.466a65212f053p-2 "
        "-0x1.4ec4a901fe3c4p+0 -0x1.bbff8c0e700a1p-2 0x1.5ed8f2ba5f2dbp-2 0x1.ca08e9321d439p+1 0x1.627ce99fd7ed1p+1 "
        "-0x1.599230c5450f8p+0 0x1.84785f44e10f1p+1 0x1.73682ebd0c291p-1 -0x1.0245d3a33f7d8p-4 0x1.6df2c829f659fp-1 "
        "-0x1.a3c53ea980203p-3 -0x1.fc7ec8b9281f7p-4 0x1.7d5cd28a5e35bp+0 0x1.68b67bfca10cfp+0 "
        "0x1.6acd1f3bd1cafp+0").split()]
    hB = [H(x) for x in (
        "0x1.57ce78e868ad7p-1 -0x1.351ddceb47a8bp+0 0x1.6f39e78dc4de4p-1 0x1.a1571993bf63bp+0 0x1.f4a0918ad43eep-2 "
        "0x1.08e1a41eff3c4p+0 0x1.742a49c7a8c1fp-1 -0x1.36b937c0e54f0p-2 0x1.2ceca451a1789p-2 -0x1.9316bb4db16cfp-1 "
        "0x1.c6dbcad09ddd8p-1 -0x1.25a662f3a6d75p+0 -0x1.11a17e8d7e02fp+0 -0x1.9e769ce56b489p-1 "
        "-0x1.78de4dacf30d6p+1").split()]
    hC = [H(x) for x in (
        "0x1.d51136ef01e9dp+1 0x1.5b07528da2db2p+2 -0x1.b7d034d197c42p-4 0x1.59b0e0e988db5p+1 0x1.ad784e3b16dc5p-7 "
        "-0x1.15b1323003b06p+0 -0x1.922e5c1c4b38bp+1 -0x1.e95843f74c224p-1 -0x1.f79e85fefa19bp+1 "
        "-0x1.0a9fa599dc6d9p+2 -0x1.32cc3fa2fc921p+2 -0x1.b82c3fad3ab16p+2").split()]
    A = np.array(hA).reshape(5, 4).T                       # column-major, lda = m = 4
    B = np.array(hB).reshape(3, 5).T
    Cx = np.array(hC).reshape(3, 4).T
    exact = np.array([[float(sum(Fraction(A[i, t]) * Fraction(B[t, j]) for t in range(5))) for j in range(3)]
                      for i in range(4)])
    assert np.array_equal(exact, Cx)
    D = gemm(get_ozaki("ozaki2-gemmul8-accurate"), A, B)
    assert np.array_equal(D, Cx)
    assert _same(D, transcribe(A, B, 15, "accurate"))


def test_refusals():
    """Moduli counts outside 2..20, k > 2^17, fast mode beyond binary32's exponent range."""
    s = get_ozaki("ozaki2-gemmul8-fast")
    for bad in ("ozaki2-gemmul8-fast:moduli=1", "ozaki2-gemmul8-fast:moduli=21", "ozaki2-n8:moduli=9",
                "ozaki2-gemmul8-fast:slices=3"):
        with pytest.raises(OzakiError):
            get_ozaki(bad)
    with pytest.raises(OzakiError, match="2\\^17"):
        s.check((1 << 17) + 1)
    with pytest.raises(Gemmul8Error, match="2\\^128"):
        plan(np.array([[1e300, 1.0]]), np.ones((2, 1)), 14, "fast")
    assert plan(np.array([[1e300, 1.0]]), np.ones((2, 1)), 14, "accurate").ambiguous == 0


@pytest.mark.parametrize("argv", [["--moduli", "21"], ["--k", "131073"],
                                  ["--spread", "400", "--m", "2", "--n", "2", "--k", "4"]])
def test_cli_refuses(argv, tmp_path):
    out = tmp_path / "d.npy"
    p = subprocess.run([sys.executable, "-m", "mmaprobe", "scheme", "ozaki-gemm", "ozaki2-gemmul8-fast",
                        "--save", str(out), *argv], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mmaprobe: error: "), p.stderr
    assert not out.exists()


def test_fast_mode_flushes_tiny_rows():
    """A finding, from the transcription: fast mode converts max |x| to binary32 before ilogbf, so a
    row whose largest element is at most 2^-150 (binary32 0, whose Tilogb is 0) is scaled as if its
    maximum were 1 and truncates to zero; accurate mode keeps it."""
    B = np.ones((2, 1))
    for x, kept in ((2.0 ** -149, True), (2.0 ** -150, False), (1e-310, False)):
        A = np.array([[x, x / 3]])
        d = gemmul8_gemm(A, B, n=10, mode="fast")
        assert _same(d, transcribe(A, B, 10, "fast"))
        assert (d[0, 0] != 0) == kept
        assert gemmul8_gemm(A, B, n=10, mode="accurate")[0, 0] != 0


def test_cli_moduli(tmp_path):
    out = tmp_path / "d.npy"
    p = subprocess.run([sys.executable, "-m", "mmaprobe", "scheme", "ozaki-gemm", "ozaki2-gemmul8-fast", "--moduli",
                        "10", "--m", "4", "--n", "4", "--k", "16", "--sample", "4", "--save", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "ozaki2-gemmul8-fast:moduli=10" in p.stdout
    rng = np.random.default_rng(0)                       # the command's draw (spread 4, seed 0)
    A = rng.standard_normal((4, 16)) * np.exp2(rng.integers(-4, 5, (4, 16)))
    B = rng.standard_normal((16, 4)) * np.exp2(rng.integers(-4, 5, (16, 4)))
    assert _same(np.load(out), gemmul8_gemm(A, B, n=10, mode="fast"))


def test_largest_subnormal_row_is_refused():
    """Accurate mode on a row whose largest element is the largest subnormal: the source's subnormal
    reading gives the upper bound 128, which the int8 cast wraps to -128, so the row's bound product
    has no positive entry and its shift comes from __float2int_rd(+inf) (int overflow): refused."""
    x = float(np.array([(1 << 52) - 1], dtype=np.uint64).view(np.float64)[0])
    assert upper8(x, 1028) == 128
    A = np.array([[x, x]])
    with pytest.raises(Gemmul8Error, match="undefined in the source"):
        gemmul8_gemm(A, np.ones((2, 1)), n=10, mode="accurate")
