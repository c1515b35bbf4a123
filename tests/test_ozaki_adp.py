"""cuBLAS's DYNAMIC mantissa control (Automatic Dynamic Precision, arXiv 2511.13778): the ESC
estimator, the slice count it picks, the fallback to native FP64, and the claim "equivalent to or
better than native FP64".

Expected values are computed here by hand from the paper's definition (ESC = e(max x) + e(max y)
- e(max z), the blockwise estimate max(Max_x + Min_y, Min_x + Max_y) with zeros as -inf, as
quoted by the sources cited in ``smtmodel/schemes/ozaki.py``) with ``math.frexp`` exponents, and
by Python Fractions; the emulated path is compared with the plain-Python transcription of the
cuBLASDx sample in ``test_ozaki_unsigned.py``.
"""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from smtmodel.schemes.ozaki import (ESC_NONE, Dynamic, OzakiError, adp_gemm, dynamic_plan, esc_matrix,
                                    unsigned_k_max)
from test_ozaki_unsigned import reference


def e_of(v: float):
    """floor(log2|v|), at least -1022 (the IEEE exponent component); None for zero."""
    return None if v == 0 else max(math.frexp(abs(v))[1] - 1, -1022)


def esc_by_hand(x, y, block):
    """The paper's ESC of one dot product, written directly from the definition."""
    ex, ey = [e_of(v) for v in x], [e_of(v) for v in y]
    if all(e is None for e in ex) or all(e is None for e in ey):
        return None
    ep, eq = max(e for e in ex if e is not None), max(e for e in ey if e is not None)
    best = None
    for s in range(0, len(x), block):
        bx, by = ex[s:s + block], ey[s:s + block]
        mx = max((e for e in bx if e is not None), default=None)
        my = max((e for e in by if e is not None), default=None)
        nx = None if None in bx else min(bx)
        ny = None if None in by else min(by)
        for a, b in ((mx, ny), (nx, my)):
            if a is not None and b is not None:
                best = a + b if best is None else max(best, a + b)
    return "unbounded" if best is None else ep + eq - best


CASES = [
    # (x, y, block, ESC)
    ([2.0 ** 8, 2.0 ** -8], [2.0 ** -4, 2.0 ** 8], 1, 12),     # e(max z) = 4: products 2^4, 2^0
    ([16.0, 1.0], [16.0, 1 / 16], 1, 0),                         # the largest product pairs the maxima
    ([16.0, 1.0], [16.0, 1 / 16], 2, 4),                         # block of 2: max(4 - 4, 0 + 4) = 4
    ([16.0, 0.0], [16.0, 1.0], 2, 4),                            # a zero makes Min_x -inf
    ([1.0, 0.0], [1.0, 0.0], 1, 0),
    ([1.0, 0.0], [1.0, 0.0], 2, "unbounded"),                    # both block terms -inf
    ([2.0 ** -1074, 1.0], [1.0, 2.0 ** -1074], 1, 1022),         # subnormals read as exponent -1022
    ([3.0, 1.5, -0.75], [0.3, -7.0, 2.0 ** -30], 1, 1),          # e = (1, 0, -1), (-2, 2, -30): F = 2
    ([3.0, 1.5, -0.75], [0.3, -7.0, 2.0 ** -30], 3, 2),          # max(1 - 30, -1 + 2) = 1
]


@pytest.mark.parametrize("x,y,block,esc", CASES)
def test_esc_by_hand(x, y, block, esc):
    """Each ESC above is worked out from the definition (comments); the NumPy estimator and the
    direct transcription both give it."""
    assert esc_by_hand(x, y, block) == esc
    got = int(esc_matrix(np.array([x]), np.array([y]).T, block)[0, 0])
    assert (got == -ESC_NONE) if esc == "unbounded" else got == esc


def test_slice_counts():
    """Slices = ceil((N + 1) / 8), N = 53 + ESC + pad + offset. pad 0 is NVIDIA's count as quoted
    (ceil((1 + 52 + ESC + 1) / 8)): ESC 12 -> 9 slices, the number the quoted example gives; ESC 0
    -> 7 for every pad (the 55-bit setting); with pad 1 the count steps to 8 at ESC 2, with pad 0
    at ESC 3; an offset of -8 saves one slice; N above the maximum falls back to native FP64."""
    A, B = np.array([[2.0 ** 8, 2.0 ** -8]]), np.array([[2.0 ** -4], [2.0 ** 8]])
    p = dynamic_plan(A, B, Dynamic(pad=0))
    assert (p["esc"], p["bits"], p["slices"], p["path"]) == (12, 65, 9, "native")
    for pad in (0, 1, 2):
        assert Dynamic(pad=pad).slices(0) == 7
    assert [Dynamic(pad=1).slices(e) for e in (1, 2)] == [7, 8]
    assert [Dynamic(pad=0).slices(e) for e in (2, 3)] == [7, 8]
    assert Dynamic(pad=1, offset=-8).slices(2) == 7
    p = dynamic_plan(np.array([[16.0, 1.0]]), np.array([[16.0], [1 / 16]]), Dynamic(block=2, max_bits=57))
    assert (p["esc"], p["bits"], p["slices"], p["path"]) == (4, 58, 8, "native")
    p = dynamic_plan(np.array([[1.0, 0.0]]), np.array([[1.0], [0.0]]), Dynamic(block=2))
    assert p["path"] == "native" and p["reason"] == "unbounded ESC estimate"


def chain(x, y):
    """The fp64 FMA chain from +0 in K order, each step one correct rounding (Fractions)."""
    acc = 0.0
    for a, b in zip(x, y):
        acc = float(Fraction(acc) + Fraction(a) * Fraction(b))
    return acc


def test_dynamic_twin_matches_transcription():
    """The DYNAMIC twin: the GEMM's ESC is the largest over its dot products (by hand), S from it,
    then the emulation equals the cuBLASDx transcription with that S; where N exceeds the
    maximum, every element equals the fp64 FMA chain computed in Fractions."""
    g = np.random.default_rng(3)
    paths = set()
    for spread, block in ((0, 1), (2, 4), (6, 1), (30, 1)):
        A = g.uniform(1, 2, (3, 8)) * 2.0 ** g.integers(-spread, spread + 1, (3, 8)) * g.choice([-1, 1], (3, 8))
        B = g.uniform(1, 2, (8, 2)) * 2.0 ** g.integers(-spread, spread + 1, (8, 2))
        A[1, 2] = 0.0
        cfg = Dynamic(block=block)
        esc = max(esc_by_hand(A[i], B[:, j], block) for i in range(3) for j in range(2))
        D, plan = adp_gemm(A, B, cfg=cfg)
        assert plan["esc"] == esc and plan["slices"] == -(-(53 + esc + 1 + 1) // 8)
        if plan["path"] == "emulated":
            want = reference(A, B, plan["slices"])
        else:
            want = np.array([[chain(A[i], B[:, j]) for j in range(2)] for i in range(3)])
        assert np.array_equal(D.view(np.uint64), want.view(np.uint64)), (spread, block, plan)
        paths.add((plan["path"], plan["slices"]))
    assert paths == {("emulated", 7), ("emulated", 8), ("native", 11)}


def test_dynamic_less_accurate_than_native_k2():
    """A witness against 'equivalent to or better than native FP64' that holds under every
    reading of the sources: x = (1, 2^-53 (1 + 2^-52)), y = (1, 1). ESC = 0 for any block (by
    hand: e(max x) = e(max y) = e(max z) = 0), so 7 slices for pad 0, 1, 2; x2's last bit lies
    below the fixed-point grid 2^-53 and is dropped (by truncation as the cuBLASDx sample, by
    floor as the Z3 model, and by rounding to nearest alike), so the emulation rounds
    1 + 2^-53 (a tie) to 1, while the native chain rounds the exact 1 + 2^-53 + 2^-105 up."""
    x = [1.0, 2.0 ** -53 * (1 + 2.0 ** -52)]
    y = [1.0, 1.0]
    exact = sum(Fraction(a) * Fraction(b) for a, b in zip(x, y))
    native = chain(x, y)
    assert native == 1 + 2.0 ** -52
    # all s^2 slice products summed exactly and rounded once (the Z3/Lean reading): W = 54 bits
    grid = Fraction(1, 2 ** 53)
    fixed = sum(Fraction(math.floor(Fraction(a) / grid)) * grid * Fraction(b) for a, b in zip(x, y))
    assert float(fixed) == 1.0
    for pad in (0, 1, 2):
        for block in (1, 2):
            D, plan = adp_gemm(np.array([x]), np.array([y]).T, cfg=Dynamic(pad=pad, block=block))
            assert (plan["esc"], plan["slices"], plan["path"]) == (0, 7, "emulated")
            got = float(D[0, 0])
            assert got == 1.0 == reference(np.array([x]), np.array([y]).T, 7)[0, 0]
            assert abs(Fraction(got) - exact) > abs(Fraction(native) - exact)


def test_dynamic_bad_input_refused(tmp_path, capsys):
    """Settings out of range and inf/NaN: OzakiError from the model; on the CLI one line, exit 2,
    nothing written."""
    for cfg in (Dynamic(pad=3), Dynamic(block=0), Dynamic(max_bits=64), Dynamic(max_bits=0),
                Dynamic(offset=-60)):
        with pytest.raises(OzakiError):
            cfg.check()
    with pytest.raises(OzakiError, match="inf or NaN"):
        adp_gemm(np.array([[1.0, math.nan]]), np.ones((2, 1)))
    from mmaprobe.cli import main
    out = tmp_path / "d.json"
    assert main(["scheme", "ozaki-claim", "--mode", "dynamic", "--ks", "2", "--family", "trunc", "--n", "2",
                 "-o", str(out)]) == 0
    assert out.exists() and "first witness" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    for argv in (["--mode", "dynamic", "--max-bits", "64"], ["--mode", "dynamic", "--offset", "-60"],
                 ["--mode", "dynamic", "--esc-pad", "3"], ["--mode", "dynamic", "--esc-block", "0"],
                 ["--mode", "dynamic", "ozaki-unsigned-s7"], ["--mantissa-bits", "55", "--offset", "-8"],
                 ["--mode", "dynamic", "--ks", str(unsigned_k_max(8) + 1)]):
        assert main(["scheme", "ozaki-claim", *argv, "-o", str(bad)]) == 2
        assert not bad.exists()
        err = capsys.readouterr().err
        assert err.startswith("mmaprobe: error:") and err.count("\n") == 1, argv


def test_strategy_and_special_values():
    """The documented settings as data: eager is modelled, performant (heuristic not public) and a
    maximum of 0 (cuBLAS's unpublished default) are refused; special values follow
    cudaEmulationSpecialValuesSupport_t: refused by default, undefined classes refused, covered
    classes sent to native FP64 (inferred), where the result is the native chain's (the catalog's
    fp64 model, computed here independently as an FMA chain in Fractions/floats)."""
    from smtmodel.schemes.ozaki import OzakiError
    B = np.array([[1.0, 2.0], [3.0, 4.0]])
    for kw in ({"strategy": "performant"}, {"max_bits": 0}, {"special": "sometimes"}):
        with pytest.raises(OzakiError):
            adp_gemm(B, B, cfg=Dynamic(**kw))
    A = np.array([[1.0, np.inf], [2.0, 3.0]])
    for sp in ("refuse", "none", "nan"):
        with pytest.raises(OzakiError, match="refused"):
            adp_gemm(A, B, cfg=Dynamic(special=sp))
    for sp in ("infinity", "default"):
        D, plan = adp_gemm(A, B, cfg=Dynamic(special=sp))
        assert plan["path"] == "native"
        assert D[0].tolist() == [np.inf, np.inf] and D[1].tolist() == [2.0 * 1 + 3.0 * 3, 2.0 * 2 + 3.0 * 4]
    with pytest.raises(OzakiError, match="nan"):
        adp_gemm(np.array([[np.nan, 1.0]]), B, cfg=Dynamic(special="infinity"))


def test_cli_strategy_performant_refused(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "mmaprobe", "scheme", "ozaki-claim", "--mode", "dynamic", "--strategy",
                        "performant", "--ks", "1", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and p.stderr.startswith("mmaprobe: error: ") and "performant" in p.stderr
    assert not out.exists()
