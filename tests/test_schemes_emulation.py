"""The libraries' FP32 emulation modes (smtmodel/schemes/catalog.py) against independent
transcriptions of the libraries' source, computed in Python Fractions.

Expected values: every CUDA-core step (split roundings, fp32 subtractions and additions, scalings,
NaN masks) is computed here in exact rationals with a rounding function written for this test;
the schedule of tensor-core calls is transcribed from the cited source files (Triton F32DotTC.cpp,
XLA dot_algorithms.cc and dot_algorithm_rewriter.cc, CUTLASS sm100_mma_warpspecialized_emulated.hpp
and mma_tensor_op_fast_f32.h, Composable Kernel's gfx950 TF32 warp GEMM); only each tensor-core
call (one instruction k-block, fp32 accumulator in and out) is delegated to the catalog model, as
in tests/test_schemes_core.py. rocm-libraries pull 11876's counterexample 1.0009765625 is from that PR.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from smtmodel.catalog import get_model
from smtmodel.schemes import get_scheme, scheme_from_dict
from smtmodel.schemes.core import SchemeError

TWO = Fraction(2)
P = {"bf16": 8, "tf32": 11, "fp32": 24}


def rnd(x: Fraction, p: int, mode: str, emin: int = -126) -> Fraction:
    """x rounded to p significant bits (exponent >= emin, subnormals below), mode RNE/RNA/RZ."""
    if x == 0:
        return Fraction(0)
    s, m = (1 if x > 0 else -1), abs(x)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if TWO ** e > m:
        e -= 1
    q = TWO ** (max(e, emin) - p + 1)
    n = m / q
    fl = n.numerator // n.denominator
    fr = n - fl
    if mode == "RNE" and (fr > Fraction(1, 2) or (fr == Fraction(1, 2) and fl % 2)):
        fl += 1
    elif mode == "RNA" and fr >= Fraction(1, 2):
        fl += 1
    return s * fl * q


def f32(x: Fraction) -> Fraction:
    return rnd(x, 24, "RNE")


def bits(vals, fmt: str) -> np.ndarray:
    """Raw bits of exactly representable values (bf16: the top half of the fp32 pattern)."""
    u = np.array([float(v) for v in vals], np.float32).view(np.uint32).astype(np.uint64)
    return u >> np.uint64(16) if fmt == "bf16" else u


def frac(b) -> Fraction:
    return Fraction(float(np.array([b], np.uint64).astype(np.uint32).view(np.float32)[0]))


def split(x: Fraction, fmt: str, rms, scale: int = 0, scaled_residual: bool = False) -> list:
    """Successive residual splitting; returns the pieces as stored (piece i times 2^(i scale))."""
    out, r = [], x
    for i, rm in enumerate(rms):
        p = rnd(r, P[fmt], rm)
        out.append(p)
        r = f32(r - p) * (TWO ** scale if scaled_residual else 1)
    return out


class TC:
    """Tensor-core calls of one catalog model on rows of pieces (Fractions) and fp32 accumulators."""

    def __init__(self, mid: str, fmt: str):
        self.m, self.fmt = get_model(mid), fmt

    def __call__(self, xs, ys, acc):
        """xs, ys: per row a list of Fractions (one k-block); acc: per row a Fraction."""
        a = np.stack([bits(r, self.fmt) for r in xs])
        b = np.stack([bits(r, self.fmt) for r in ys])
        c = bits(acc, "fp32")
        return [frac(v) for v in self.m.evaluate(a, b, c)]


def data(n, k, seed, spread=0):
    g = np.random.default_rng(seed)

    def draw(shape):
        return (g.uniform(1, 2, shape) * 2.0 ** g.integers(-spread, spread + 1, shape)
                * g.choice([-1, 1], shape)).astype(np.float32)
    return draw((n, k)), draw((n, k)), draw((n,))


def run(scheme, a, b, c, model=None):
    u = lambda x: np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)   # noqa: E731
    return get_scheme(scheme).evaluate(u(a), u(b), u(c), model)


def as_bits(vals) -> np.ndarray:
    return bits(vals, "fp32")


# ---- transcriptions -----------------------------------------------------------------------------

def tiled(tc, A, B, C, pairs, block, tile, register_c=True, band=False, scale=0):
    """A loop over tiles of ``tile`` elements: per tile an accumulator from 0 through ``pairs``
    (pair by pair over the tile's k-blocks; with ``band``: bands of equal i+j, k-block by k-block,
    the accumulator times 2^-scale when the band changes), added RN into an fp32 register."""
    n, k = len(A), len(A[0])
    reg = list(C) if register_c else [Fraction(0)] * n
    for t0 in range(0, k, tile):
        blocks = range(t0, t0 + tile, block)
        acc = [Fraction(0)] * n
        if band:
            bands = []
            for pr in pairs:
                if bands and sum(bands[-1][0]) == sum(pr):
                    bands[-1].append(pr)
                else:
                    bands.append([pr])
            w = sum(pairs[0])
            for bd in bands:
                if sum(bd[0]) != w:
                    acc = [v * TWO ** (-scale * (w - sum(bd[0]))) for v in acc]   # exact here (no underflow)
                    w = sum(bd[0])
                for s in blocks:
                    for i, j in bd:
                        acc = tc([[A[r][kk][i] for kk in range(s, s + block)] for r in range(n)],
                                 [[B[r][kk][j] for kk in range(s, s + block)] for r in range(n)], acc)
        else:
            for i, j in pairs:
                for s in blocks:
                    acc = tc([[A[r][kk][i] for kk in range(s, s + block)] for r in range(n)],
                             [[B[r][kk][j] for kk in range(s, s + block)] for r in range(n)], acc)
        reg = [f32(x + y) for x, y in zip(reg, acc)]
    return reg


def pieces(a, fmt, rms, scale=0, scaled=False):
    return [[split(Fraction(float(x)), fmt, rms, scale, scaled) for x in row] for row in a]


HI, MID, LO = 0, 1, 2


@pytest.mark.parametrize("name,fmt,rms,order,tile,mid", [
    # Triton F32DotTC BF16xN: x3 = mid*hi, hi*mid, mask, hi*hi; x6 adds mid*mid, lo*hi, hi*lo first
    ("bf16x3-triton", "bf16", ("RNE", "RNE"), [(MID, HI), (HI, MID), (HI, HI)], 32, "hopper-bf16-fp32"),
    ("bf16x6-triton", "bf16", ("RNE",) * 3,
     [(MID, MID), (LO, HI), (HI, LO), (MID, HI), (HI, MID), (HI, HI)], 32, "hopper-bf16-fp32"),
    # Triton TF32x3: big = cvt.rna.tf32, small = a - big read by the MMA as tf32 (top 19 bits)
    ("tf32x3-triton", "tf32", ("RNA", "RZ"), [(1, 0), (0, 1), (0, 0)], 32, "hopper-tf32-fp32"),
    # XLA EmitBF16x9Matmul: lo*lo, mid*lo, lo*mid, mid*mid, lo*hi, hi*lo, mid*hi, hi*mid, ZeroNaNs, hi*hi
    ("bf16x9-xla", "bf16", ("RNE",) * 3,
     [(LO, LO), (MID, LO), (LO, MID), (MID, MID), (LO, HI), (HI, LO), (MID, HI), (HI, MID), (HI, HI)], 32,
     "hopper-bf16-fp32"),
    ("bf16x3-xla", "bf16", ("RNE", "RNE"), [(1, 0), (0, 1), (0, 0)], 32, "ampere-bf16-fp32"),
])
def test_triton_and_xla_tiles_match_transcription(name, fmt, rms, order, tile, mid):
    """Per tile of BLOCK_K = 32 an accumulator from +0 through the source's dot order, then
    acc_loop = fl32(acc_loop + tile) with acc_loop starting at c."""
    n, k = 12, 64
    a, b, c = data(n, k, 3, spread=6)
    block = 8 if fmt == "tf32" else 16
    A, B = pieces(a, fmt, rms), pieces(b, fmt, rms)
    ref = tiled(TC(mid, fmt), A, B, [Fraction(float(x)) for x in c], order, block, tile)
    assert np.array_equal(run(name, a, b, c, mid), as_bits(ref))


@pytest.mark.parametrize("name,rms,dots", [
    # RewriteF32ToBF16X3: sum(low_high, high_low), mask, + high_high
    ("bf16x3-xla-hlo", ("RZ", "RNE"), [[(1, 0), (0, 1)], [(0, 0)]]),
    # RewriteF32ToBF16X6: ((((mm + hl) + lh) + hm) + mh), mask, + hh
    ("bf16x6-xla-hlo", ("RZ", "RZ", "RNE"), [[(1, 1), (0, 2), (2, 0), (0, 1), (1, 0)], [(0, 0)]]),
])
def test_xla_hlo_rewrite_matches_transcription(name, rms, dots):
    """Full-K GEMMs from +0 (each the model's chain over K), summed left to right in fp32, c last."""
    n, k = 12, 48
    a, b, c = data(n, k, 5, spread=4)
    tc = TC("hopper-bf16-fp32", "bf16")
    A, B = pieces(a, "bf16", rms), pieces(b, "bf16", rms)

    def gemm(i, j):
        acc = [Fraction(0)] * n
        for s in range(0, k, 16):
            acc = tc([[A[r][kk][i] for kk in range(s, s + 16)] for r in range(n)],
                     [[B[r][kk][j] for kk in range(s, s + 16)] for r in range(n)], acc)
        return acc
    low, (hh,) = dots
    tot = gemm(*low[0])
    for pr in low[1:]:
        tot = [f32(x + y) for x, y in zip(tot, gemm(*pr))]
    d = [f32(x + y) for x, y in zip(tot, gemm(*hh))]
    d = [f32(x + Fraction(float(y))) for x, y in zip(d, c)]
    assert np.array_equal(run(name, a, b, c), as_bits(d))


@pytest.mark.parametrize("name,bands", [
    ("bf16x9-cutlass", [(2, 2), (1, 2), (2, 1), (0, 2), (1, 1), (2, 0), (0, 1), (1, 0), (0, 0)]),
    ("bf16x6-cutlass", [(0, 2), (1, 1), (2, 0), (0, 1), (1, 0), (0, 0)]),
])
def test_cutlass_sm100_bands_match_transcription(name, bands):
    """CUTLASS SM100 emulated mainloop: pieces RNE-bf16 of residuals r_(i+1) = fl32(r_i - p_i)*2^8;
    per promotion interval of 4 UMMA k-blocks (16 each) bands from lo*lo to hi*hi, the TMEM
    accumulator scaled by 2^-8 on entering a band; intervals added into a register from 0; c last."""
    n, k = 8, 128
    a, b, c = data(n, k, 9, spread=10)
    A = pieces(a, "bf16", ("RNE",) * 3, 8, True)
    B = pieces(b, "bf16", ("RNE",) * 3, 8, True)
    d = tiled(TC("blackwell-bf16-fp32", "bf16"), A, B, [Fraction(0)] * n, bands, 16, 64, register_c=False,
              band=True, scale=8)
    d = [f32(x + Fraction(float(y))) for x, y in zip(d, c)]
    assert np.array_equal(run(name, a, b, c), as_bits(d))


@pytest.mark.parametrize("name,rms,mid,block", [
    ("3xtf32-cutlass", ("RZ", "RNA"), "ampere-tf32-fp32", 8),       # MmaTensorOpFastF32: D = C; sb, bs, bb
    ("tf32-gfx950", ("RNE", "RNE"), "cdna4-bf16-fp32", 16),         # CK: small*big, big*small, big*big
])
def test_chained_three_pass_modes_match_transcription(name, rms, mid, block):
    """Per instruction k-block, three MMAs into one accumulator that starts at c."""
    n, k = 12, 64
    a, b, c = data(n, k, 7, spread=5)
    fmt = "tf32" if "tf32-c" in name else "bf16"
    tc = TC(mid, fmt)
    A, B = pieces(a, fmt, rms), pieces(b, fmt, rms)
    acc = [Fraction(float(x)) for x in c]
    for s in range(0, k, block):
        for i, j in ((1, 0), (0, 1), (0, 0)):
            acc = tc([[A[r][kk][i] for kk in range(s, s + block)] for r in range(n)],
                     [[B[r][kk][j] for kk in range(s, s + block)] for r in range(n)], acc)
    assert np.array_equal(run(name, a, b, c), as_bits(acc))


# ---- special values, the gfx950 counterexample, bad input -------------------------------------------

def test_masks_keep_an_infinite_product():
    """Triton's and XLA's comment: a = 1.0 (lo = 0), b = +inf gives lo*hi = 0*inf = NaN; the mask
    replaces it by 0 so hi*hi's +inf survives. XLA's ZeroNaNs also zeroes +-inf partial sums."""
    a = np.ones((1, 32), np.float32)
    b = np.ones((1, 32), np.float32)
    b[0, 3] = np.inf
    c = np.zeros(1, np.float32)
    for name in ("bf16x3-triton", "bf16x6-triton", "bf16x9-xla", "bf16x3-xla-hlo"):
        got = run(name, a, b, c).astype(np.uint32).view(np.float32)
        assert np.isposinf(got[0]), name
    # without the mask the same schedule is NaN
    nomask = scheme_from_dict({"base": "bf16x3-triton", "name": "nomask",
                               "passes": [{"pairs": [[1, 0], [0, 1], [0, 0]], "where": "tile", "order": "pair",
                                           "group": 2}]})
    got = nomask.evaluate(a.view(np.uint32).astype(np.uint64), b.view(np.uint32).astype(np.uint64),
                          c.view(np.uint32).astype(np.uint64)).astype(np.uint32).view(np.float32)
    assert np.isnan(got[0])


def test_gfx950_counterexample_of_rocm_11876():
    """rocm-libraries pull 11876: 1.0009765625 = 1 + 2^-10 is a TF32 value but not a bf16 one. CDNA3's
    XF32 MFMA and CK's 3-pass gfx950 TF32 give 1.0009765625 * 1; a single bf16 pass ('bf16-mode')
    gives 1.0."""
    a = np.array([[1.0009765625] + [0.0] * 15], np.float32)
    b = np.array([[1.0] + [0.0] * 15], np.float32)
    c = np.zeros(1, np.float32)
    f = lambda name, mid=None: float(run(name, a, b, c, mid).astype(np.uint32).view(np.float32)[0])  # noqa: E731
    assert f("xf32-cdna3") == 1.0009765625
    assert f("tf32-gfx950") == 1.0009765625
    assert f("bf16", "cdna4-bf16-fp32") == 1.0


def test_bad_split_and_tile_refused():
    """Piece counts beyond what fp32's 24 bits need, masks at a non-band position, a K that the
    tile does not divide: SchemeError with one line each."""
    with pytest.raises(SchemeError, match="out of range"):
        scheme_from_dict({"base": "bf16x9-cutlass", "name": "x", "split": {"fmt": "bf16", "pieces": 5}})
    with pytest.raises(SchemeError, match="out of range"):
        scheme_from_dict({"base": "bf16x3-triton", "name": "x", "split": {"fmt": "bf16", "pieces": 0}})
    s = scheme_from_dict({"base": "bf16x9-cutlass", "name": "x",
                          "passes": [{"pairs": [[1, 0], [0, 1], [0, 0]], "where": "tile", "order": "band",
                                      "mask": ["nan", 1]}]})
    a = np.ones((1, 64), np.uint64) * np.uint64(0x3F800000)
    with pytest.raises(SchemeError, match="mask"):
        s.evaluate(a, a, np.zeros(1, np.uint64))
    with pytest.raises(SchemeError, match="multiple"):
        get_scheme("bf16x9-cutlass").evaluate(a[:, :48], a[:, :48], np.zeros(1, np.uint64))


# ---- the claim "bfx9 ~<= ieee" ----------------------------------------------------------------------

def test_bf16x9_less_accurate_than_fp32_on_one_product():
    """K = 1, c = 0, a = 1 + 2^-12 + 2^-23, b = 1 + 2^-12: the fp32 FMA rounds a*b to nearest
    (0.5 - 2^-12 ulp off); BF16x9 (CUTLASS bands, XLA x9) sums the nine exact piece products in the
    tensor core, whose accumulator keeps 25 bits below the largest and truncates, so it returns
    RZ(a*b), 0.5 + 2^-12 ulp off: strictly less accurate. Expected values: Fractions."""
    from queries.schemes.claims import _errors
    from queries.schemes.inputs import setup
    a = np.array([[0x3F800801]], np.uint32).view(np.float32)
    b = np.array([[0x3F800800]], np.uint32).view(np.float32)
    c = np.zeros(1, np.float32)
    ab = Fraction(float(a[0, 0])) * Fraction(float(b[0, 0]))
    ulp = TWO ** -23
    z = np.zeros((1, 63), np.float32)
    for x in ("bf16x9-cutlass", "bf16x9-xla"):
        (ex, ey), _ = _errors([setup(x), setup("fp32")], a, b, c)
        got = run(x, np.concatenate([a, z], 1), np.concatenate([b, z], 1), c)     # K padded with zeros
        assert np.array_equal(got, as_bits([rnd(ab, 24, "RZ")]))
        assert Fraction(int(ex[0]), int(ey[0])) == abs(rnd(ab, 24, "RZ") - ab) / abs(rnd(ab, 24, "RNE") - ab)
        assert abs(rnd(ab, 24, "RZ") - ab) == ulp * (Fraction(1, 2) + TWO ** -12)


def test_cli_claim_and_bad_input(tmp_path, capsys):
    """`scheme claim` prints the table and the first witness; bad K or family: exit 2, no file."""
    from mmaprobe.cli import main
    out = tmp_path / "c.json"
    assert main(["scheme", "claim", "bf16x9-xla", "fp32", "--ks", "1", "--family", "uniform", "--n", "8",
                 "-o", str(out)]) == 0
    assert out.exists() and "witness" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    for argv in (["--ks", "0"], ["--family", "nope"]):
        assert main(["scheme", "claim", "bf16x9-xla", "fp32", *argv, "-o", str(bad)]) == 2
        assert not bad.exists()
        assert capsys.readouterr().err.startswith("mmaprobe: error:")


def test_table_found_within_proved():
    """`scheme table`'s rows: the twin's largest componentwise error on the wide family (inputs in
    the proved range [-20, 20]) stays below the composed bound; products counted from the passes."""
    from queries.schemes.claims import table
    rows = table(["fp32", "bf16x9-xla"], k=32, n=8)
    assert [r["tc_products"] for r in rows] == [0, 9]
    for r in rows:
        assert r["found_comp"] <= r["proved_comp"]


def test_worst_case_search_stays_below_the_proved_bound():
    """The twin's mutation search keeps its inputs in the exponent range of the composed bound and
    finds errors below it (the bound is proved; a larger find would be a bug in one of them)."""
    from queries.schemes.bound import compose
    from queries.schemes.claims import search_worst
    from queries.schemes.inputs import InputRange
    r = search_worst("bf16x3-triton", k=32, n=8, steps=2, exp_range=(-20, 20))
    proved = compose("bf16x3-triton", 32, None, InputRange(exp_range=(-20, 20), c_exp_range=(-20, 20))).comp
    assert 0 < r["found_comp"] <= proved
    for x in r["a"] + r["b"] + [r["c"]]:
        e = ((int(x, 16) >> 23) & 0xFF) - 127
        assert -20 <= e <= 20


def test_fp32_blocked_order():
    """fp32-blocked: per k-block of 32 an FMA chain from +0 (one rounding per step, Fractions),
    the blocks added RN into a register that starts at c."""
    n, k = 6, 64
    a, b, c = data(n, k, 13, spread=8)
    ref = []
    for r in range(n):
        d = Fraction(float(c[r]))
        for s in range(0, k, 32):
            p = Fraction(0)
            for t in range(s, s + 32):
                p = f32(Fraction(float(a[r, t])) * Fraction(float(b[r, t])) + p)
            d = f32(d + p)
        ref.append(d)
    assert np.array_equal(run("fp32-blocked", a, b, c), as_bits(ref))
