"""Ozaki I with unsigned slicing (kind "U") against a transcription of NVIDIA's cuBLASDx Ozaki
example in plain Python.

Expected values: ``max_to_exponent_shift``, ``slices_from_fp64`` (int64 truncation, bytes with
carry), the diagonal loop of ``fused_epilogue_kernel`` and ``nth_slice_to_fp64`` written here with
Python integers, ``math.frexp`` and float64 additions (IEEE RNE on the host), independent of the
semantic core; exact values by Python Fractions.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from smtmodel.schemes.ozaki import OzakiError, gemm, get_ozaki, mantissa_bits_to_slices, unsigned_k_max


def fields(x: float):
    u = struct.unpack("<Q", struct.pack("<d", x))[0]
    return (u >> 63) & 1, (u >> 52) & 0x7FF, u & ((1 << 52) - 1)


def shift_of(rowmax: float) -> int:
    _, e, f = fields(rowmax)
    em = e + 1 - 1023
    if (f >> 32) & (63 << 14):          # mantissa_hi & (63 << 14)
        em += 1
    return 7 - em


def slices_of(x: float, shift: int, n: int) -> list[int]:
    if x == 0:
        return [0] * n
    r = int(Fraction(abs(x)) * Fraction(2) ** (shift + 8 * (n - 1)))     # truncation toward zero
    r = -r if x < 0 else r
    out = []
    for _ in range(n):
        byte = r & 0xFF
        out.append(byte - 256 if byte >= 128 else byte)
        r = (r >> 8) + (byte >> 7)
    return out[::-1]                                                       # most significant first


def reference(A, B, n):
    M, K = A.shape
    N = B.shape[1]
    sa = [shift_of(max(abs(v) for v in A[i])) for i in range(M)]
    sb = [shift_of(max(abs(B[k, j]) for k in range(K))) for j in range(N)]
    SA = [[slices_of(A[i, k], sa[i], n) for k in range(K)] for i in range(M)]
    SB = [[slices_of(B[k, j], sb[j], n) for k in range(K)] for j in range(N)]
    D = np.zeros((M, N))
    for i in range(M):
        for j in range(N):
            acc = None
            for d in range(n - 1, -1, -1):
                c = sum(SA[i][k][t] * SB[j][k][d - t] for t in range(d + 1) for k in range(K))
                x = float(Fraction(c) * Fraction(2) ** (-8 * d - sa[i] - sb[j]))   # one rounding (exact here)
                acc = x if acc is None else x + acc                                  # float64 RNE
            D[i, j] = acc
    return D


@pytest.mark.parametrize("n", [3, 5, 7, 8])
@pytest.mark.parametrize("spread", [0, 20])
def test_unsigned_slicing_matches_transcription(n, spread):
    g = np.random.default_rng(n + spread)
    M, K, N = 4, 24, 3
    A = g.uniform(-1, 1, (M, K)) * 2.0 ** g.integers(-spread, spread + 1, (M, K))
    B = g.uniform(-1, 1, (K, N)) * 2.0 ** g.integers(-spread, spread + 1, (K, N))
    A[0, 3] = 0.0
    A[1, 5] = -2.0 ** -1030                                                # a subnormal
    got = gemm(get_ozaki(f"ozaki-unsigned-s{n}"), A, B)
    assert np.array_equal(got.view(np.uint64), reference(A, B, n).view(np.uint64))


def test_digits_use_all_eight_bits_and_carry():
    """0.99609375 (0xFF / 256) in a row whose largest is 1.0: shift 6, digits with a carry."""
    x, shift = 255 / 256, shift_of(1.0)
    assert shift == 6
    d = slices_of(x, shift, 3)
    assert sum(v * 256 ** (2 - i) for i, v in enumerate(d)) == int(Fraction(x) * 2 ** (6 + 16))
    assert all(-128 <= v <= 127 for v in d)
    A = np.array([[1.0, x]])
    B = np.array([[1.0], [1.0]])
    assert gemm(get_ozaki("ozaki-unsigned-s3"), A, B)[0, 0] == 1.0 + x


def test_unsigned_bad_input_refused():
    """Slice count outside 1..8, mantissa bits outside 1..63, k beyond the int32 limit, inf/NaN."""
    from dataclasses import replace
    s7 = get_ozaki("ozaki-unsigned-s7")
    assert mantissa_bits_to_slices(55) == 7
    with pytest.raises(OzakiError, match="out of range"):
        mantissa_bits_to_slices(64)
    with pytest.raises(OzakiError, match="out of range"):
        replace(s7, slices=9).check(16)
    k = unsigned_k_max(7)
    assert 7 * k * 2 ** 14 <= 2 ** 31 - 1 < 7 * (k + 1) * 2 ** 14
    with pytest.raises(OzakiError, match="exactness limit"):
        s7.check(k + 1)
    with pytest.raises(OzakiError, match="inf or NaN"):
        gemm(s7, np.array([[1.0, math.inf]]), np.ones((2, 1)))


def test_fixed_55_bits_less_accurate_than_fp64_on_one_product():
    """'Equivalent to or better than native FP64' is not an element-by-element fact for the FIXED
    55-bit setting (7 unsigned slices): K = 1, a = 0x1.187f5e7ece140p-2, b = 0x1.65603cf43b8f0p-4.
    The triangular diagonals drop the slice products below the seventh diagonal, so the result is
    below a*b by more than the correctly rounded native product's error. Expected values: the
    transcription above and Fractions (RN(a*b) is the fp64 FMA chain's result for K = 1)."""
    a, b = float.fromhex("0x1.187f5e7ece140p-2"), float.fromhex("0x1.65603cf43b8f0p-4")
    A, B = np.array([[a]]), np.array([[b]])
    got = gemm(get_ozaki(f"ozaki-unsigned-s{mantissa_bits_to_slices(55)}"), A, B)[0, 0]
    assert got == reference(A, B, 7)[0, 0]
    exact = Fraction(a) * Fraction(b)
    native = Fraction(a * b)                       # the host's correctly rounded product
    assert abs(Fraction(got) - exact) > abs(native - exact)
    assert got == float.fromhex("0x1.87931153b9bcfp-6") and a * b == float.fromhex("0x1.87931153b9bd0p-6")


def test_cli_ozaki_claim(tmp_path, capsys):
    """`scheme ozaki-claim --mantissa-bits 55` prints the table and the witness; bad mantissa bits or
    a K beyond the exactness limit: exit 2, one line, nothing written."""
    from mmaprobe.cli import main
    out = tmp_path / "c.json"
    assert main(["scheme", "ozaki-claim", "--mantissa-bits", "55", "--ks", "1", "--family", "uniform", "--n", "4",
                 "-o", str(out)]) == 0
    assert out.exists() and "first witness" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    for argv in (["--mantissa-bits", "70"], ["ozaki-unsigned-s7", "--ks", str(unsigned_k_max(7) + 1)]):
        assert main(["scheme", "ozaki-claim", *argv, "-o", str(bad)]) == 2
        assert not bad.exists()
        err = capsys.readouterr().err
        assert err.startswith("mmaprobe: error:") and err.count("\n") == 1
