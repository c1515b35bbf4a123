"""Where a zero aligns (docs/zeros.md): one rule per place (zero product, c = +-0, all-zero GST
group, zero scale), each ``seed000`` | ``ignore`` | a fixed e_zero.

Expected values come from (a) a real RTX 4060 capture (../shared/hwdata/rtx4060_mmaemu, copied
below with the case it comes from), (b) MMA-Sim 2.1.1's fixed e_zero applied by hand to the cases
the issue names, and (c) an independent Fraction computation of seed 000 Algorithm 7 with each
zero rule (``_tfdpa_ref``)."""

from __future__ import annotations

from fractions import Fraction
from math import floor

import numpy as np
import pytest
import z3

from smtmodel.bv.z3_backend import Z3Backend
from smtmodel.catalog import all_models, get_model
from smtmodel.model import ZERO_RULES, ModelError

# ---- the override syntax -------------------------------------------------------------------------


def test_overrides_and_shorthands():
    m = get_model("hopper-bf16-fp32:zero_align=ignore")
    assert (m.zero_prod, m.zero_c, m.zero_align) == ("ignore", "ignore", "ignore")
    m = get_model("blackwell-fp4e2m1-fp32-nvfp4:e_zero=-126")
    assert [getattr(m, r) for r in ZERO_RULES] == [-126] * 4
    m = get_model("hopper-bf16-fp32:zero_prod=seed000,zero_c=-140")
    assert (m.zero_prod, m.zero_c, m.zero_align) == ("seed000", -140, None)
    assert get_model(m.id) == m
    assert "zero_c=-140" in m.summary()


@pytest.mark.parametrize("text", ["zero_prod=never", "zero_c=1.5", "e_zero=-5000", "zero_group=true"])
def test_bad_zero_rules_are_refused(text):
    with pytest.raises(ModelError):
        get_model(f"hopper-bf16-fp32:{text}")


def test_catalog_rules_are_mmasim_2_1_1_constants():
    """The fixed e_zero per family as MMA-Sim 2.1.1 publishes them (nv_ptx/sim.py:24-41, 94, 101)."""
    want = {"volta-fp16-fp32": -131, "volta-fp16-fp16": -19, "turing-fp16-fp32": -132, "ampere-bf16-fp32": -132,
            "ada-fp8e4m3-fp32": -132, "ada-fp8e5m2-fp16": -20, "hopper-tf32-fp32": -133, "hopper-fp16-fp16": -21,
            "hopper-fp8e4m3-fp32": -133, "blackwell-fp6e2m3-fp32": -133, "rtx-blackwell-fp4e2m1-fp16": -21,
            "blackwell-fp8e4m3-fp32-mx": -133, "hopper-fp8e4m3-fp32-mmasync": -133}
    for mid, e in want.items():
        m = get_model(mid)
        assert (m.zero_prod, m.zero_c) == (e, e), mid
    for mid in ("blackwell-fp4e2m1-fp32-mxgst", "rtx-blackwell-fp4e2m1-fp32-nvfp4"):
        m = get_model(mid)
        assert (m.zero_c, m.zero_group, m.zero_scale) == (-139, -139, -139), mid
    for mid in ("cdna3-bf16-fp32", "cdna3-fp8e4m3fnuz-fp32"):     # arithmetic/fdpa.py:343, 346, 398, 406
        m = get_model(mid)
        assert (m.zero_prod, m.zero_c) == ("ignore", -126), mid


def test_every_zero_rival_has_a_base_that_differs_in_zero_rules_only():
    zr = [m for m in all_models() if m.id.endswith(("-zero126", "-zeroignore"))]
    assert len(zr) == 12
    for r in zr:
        base = get_model(r.rival_of)
        diff = {f for f in ZERO_RULES if getattr(r, f) != getattr(base, f)}
        assert diff and r.source and r.kind == "rival", r.id


# ---- (a) the RTX 4060 capture -----------------------------------------------------------------------

# c2.S16_sparse/e4m3xe4m3/hw_k16@c2fam (c2.npz), tile 0, row i=1, column j=7: K = 16, c = 0x80035808
# (an fp32 subnormal), one product -0 x -4 (k = 3), every other product has a zero factor.
ADA_A = [0, 128, 128, 128, 128, 0, 128, 128, 128, 0, 128, 0, 0, 0, 128, 0]
ADA_B = [0, 128, 0, 200, 128, 0, 128, 128, 128, 0, 0, 0, 128, 0, 128, 0]
ADA_C, ADA_GPU = 0x80035808, 0x80035800


@pytest.mark.parametrize("spec,want", [
    ("ada-fp8e4m3-fp32", ADA_GPU),                       # e_zero = -132: c cut on 2^(-126-13)
    ("ada-fp8e4m3-fp32:zero_align=ignore", ADA_GPU),
    ("ada-fp8e4m3-fp32-zero126", 0x80035000),            # -0 x -4 at -126 + 2: c cut on 2^-137
])
def test_rtx4060_recorded_zero_product(spec, want):
    m = get_model(spec)
    a, b = np.array([ADA_A], np.uint64), np.array([ADA_B], np.uint64)
    c = np.array([ADA_C], np.uint64)
    for backend in ("numpy", "native"):
        assert int(m.evaluate(a, b, c, backend=backend)[0]) == want, (spec, backend)


# ---- (b) MMA-Sim 2.1.1's constants applied by hand ---------------------------------------------------

def _bf16(x: float) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0]) >> 16


def _run(spec, a, b, c=0, sa=None, sb=None, k=None):
    m = get_model(spec)
    k = k or m.block(64)
    A = np.zeros((1, k), np.uint64)
    B = np.zeros((1, k), np.uint64)
    A[0, :len(a)], B[0, :len(b)] = a, b
    sc = (None, None) if sa is None else (np.array([sa], np.uint64), np.array([sb], np.uint64))
    C = np.array([c], np.uint64)
    outs = {int(m.evaluate(A, B, C, *sc, backend=be)[0]) for be in ("numpy", "native")}
    assert len(outs) == 1, (spec, outs)
    return outs.pop()


@pytest.mark.parametrize("spec,want", [
    ("hopper-bf16-fp32", 0x1FF),               # e_max = -133 (c = 0): -2^-158 kept on 2^-158
    ("hopper-bf16-fp32-zeroignore", 0x1FF),    # e_max = -140: kept
    ("hopper-bf16-fp32-zero126", 0x200),       # c = 0 at -126: -2^-158 cut on 2^-151
])
def test_hopper_bf16_products_below_e_zero(spec, want):
    """Products 2^-140 and -2^-158, c = 0 (the issue's example); RZ-FP32 of 2^-140 - 2^-158 on the
    subnormal grid 2^-149 is 511 * 2^-149 = 0x1ff; 2^-140 alone is 0x200."""
    a = [_bf16(2.0 ** -70), _bf16(-(2.0 ** -79))]
    b = [_bf16(2.0 ** -70), _bf16(2.0 ** -79)]
    assert _run(spec, a, b) == want


@pytest.mark.parametrize("spec,want", [
    ("hopper-bf16-fp32", 0x200),               # e_zero = -133 binds: -2^-160 cut on 2^-158
    ("hopper-bf16-fp32-zeroignore", 0x1FF),    # e_max = -140: cut on 2^-165, kept
])
def test_fixed_e_zero_binds(spec, want):
    """A fixed e_zero binds (every nonzero term below it is cut at 2^(e_zero - F)): products 2^-140
    and -2^-160 with c = 0."""
    a = [_bf16(2.0 ** -70), _bf16(-(2.0 ** -80))]
    b = [_bf16(2.0 ** -70), _bf16(2.0 ** -80)]
    assert _run(spec, a, b) == want


@pytest.mark.parametrize("spec,want", [
    ("hopper-fp16-fp16", 0x0000),             # e_zero = -21: 2^-48 cut on 2^-46, a tie -> even (0)
    ("hopper-fp16-fp16-zero126", 0x0001),     # e_max = -25: 2^-48 kept, above the tie
])
def test_fp16_output_e_zero(spec, want):
    """fp16 output, c = 0: 2^-25 (= 2^-12 * 2^-13, half the smallest subnormal) + 2^-48 (two
    smallest subnormals); RNE-FP16."""
    a, b = [0x0C00, 0x0001], [0x0800, 0x0001]    # 2^-12, 2^-24; 2^-13, 2^-24
    assert _run(spec, a, b) == want


def test_st_fdpa_fixed_e_zero_is_not_scaled():
    """MX ST-FDPA, scales 2^100 each, a zero product 0 x 448 and c = 2^-120: the earlier convention
    aligns the zero at -126 + 8 + 200 and erases c; a fixed e_zero (-133) leaves c exact
    (MMA-Sim 2.1.1 arithmetic/fdpa.py:176-177 sets the exponent after the scales)."""
    c = 0x03800000                                  # 2^-120
    sa = sb = [127 + 100]
    assert _run("blackwell-fp8e4m3-fp32-mx", [0x00], [0x7E], c, sa, sb) == c
    assert _run("blackwell-fp8e4m3-fp32-mx-zero126", [0x00], [0x7E], c, sa, sb) == 0


@pytest.mark.parametrize("spec,want_group,want_scale", [
    ("blackwell-fp4e2m1-fp32-nvfp4", 0x30800000, 0x2B800000),        # -139: c kept
    ("blackwell-fp4e2m1-fp32-nvfp4-zero126", 0, 0),                   # scale sums erase c
    ("blackwell-fp4e2m1-fp32-nvfp4:zero_group=ignore,zero_scale=ignore", 0x30800000, 0x2B800000),
    ("blackwell-fp4e2m1-fp32-nvfp4:zero_scale=seed000", 0x30800000, 0),
])
def test_gst_all_zero_group_and_zero_scale(spec, want_group, want_scale):
    """NVFP4 GST-FDPA (F = 35). All products zero, UE4M3 scales 448 = 1.75 * 2^8 on every block,
    c = 2^-30: the earlier convention aligns the groups at 8 + 8 = 16, cutting c on 2^-19 (0).
    A zero scale for A's first block (the rest 448), group products 1 * 1, c = 2^-40: the earlier
    convention aligns that group at -6 + 8 (UE4M3's minimum exponent) and the others, all zero,
    at 16."""
    s448 = [0x7E] * 4
    assert _run(spec, [], [], 0x30800000, s448, s448) == want_group
    one = 0x2                                     # fp4 e2m1 1.0
    assert _run(spec, [one], [one], 0x2B800000, [0x00] + [0x7E] * 3, s448) == want_scale


def test_tr_fdpa_c_zero_at_minus_126():
    """CDNA3 bf16 TR-FDPA, c = 0, products 2^-140, 2^-150, 2^-160 (sum just above a tie of the
    fp32 subnormal grid): with c = 0 at -126 (MMA-Sim 2.1.1) E = -126 and the step-3 floor on
    2^(E - 31) = 2^-157 drops 2^-160, leaving a tie that RNE sends to 2^-140 (0x200); with c left
    out, E = -140 and the sum rounds up (0x201)."""
    a = [_bf16(2.0 ** -70), _bf16(2.0 ** -75), _bf16(2.0 ** -80)]
    assert _run("cdna3-bf16-fp32", a, a) == 0x200
    assert _run("cdna3-bf16-fp32-zero126", a, a) == 0x201


def test_tr_fdpa_zero_product_rule():
    """CDNA3 bf16, a zero product 0 x 2^100 beside 2^-30 * 2^-30: the earlier convention aligns the
    zero at -126 + 100 = -26 and cuts 2^-60 on 2^-50 (d = 0); MMA-Sim 2.1.1 leaves it out."""
    a, b = [0, _bf16(2.0 ** -30)], [_bf16(2.0 ** 100), _bf16(2.0 ** -30)]
    assert _run("cdna3-bf16-fp32", a, b) == 0x21800000        # 2^-60
    assert _run("cdna3-bf16-fp32-zero126", a, b) == 0


# ---- (c) an independent Fraction computation of seed 000 Algorithm 7 ----------------------------------

def _val_bf16(bits: int) -> Fraction:
    return Fraction(float(np.array([bits << 16], np.uint32).view(np.float32)[0]))


def _val_fp32(bits: int) -> Fraction:
    return Fraction(float(np.array([bits], np.uint32).view(np.float32)[0]))


def _exp(x: Fraction) -> int:
    """Exp(x) of seed 000: floor(log2 |x|), at least -126 (bf16/fp32 subnormals)."""
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    return max(e, -126)


def _rz_fp32(x: Fraction) -> int:
    if x == 0:
        return 0
    s, x = (1 << 31) if x < 0 else 0, abs(x)
    e = _exp(x)
    m = floor(x / Fraction(2) ** (e - 23))
    if m == 0:                  # below the smallest subnormal: NVIDIA's +0
        return 0
    if e == -126 and m < (1 << 23):
        return s | m
    return s | ((e + 127) << 23) | (m - (1 << 23))


def _tfdpa_ref(a, b, c, F, zp, zc) -> int:
    """d of one T-FDPA block, RZ-FP32, NVIDIA +0, with the zero rules zp (products), zc (c)."""
    terms = []
    for x, y in zip(a, b):
        vx, vy = _val_bf16(x), _val_bf16(y)
        if vx and vy:
            terms.append((vx * vy, _exp(vx) + _exp(vy)))
        elif zp == "seed000":
            terms.append((Fraction(0), (_exp(vx) if vx else -126) + (_exp(vy) if vy else -126)))
        elif zp != "ignore":
            terms.append((Fraction(0), zp))
    vc = _val_fp32(c)
    if vc:
        terms.append((vc, _exp(vc)))
    elif zc != "ignore":
        terms.append((Fraction(0), -126 if zc == "seed000" else zc))
    if not terms:
        return 0
    unit = Fraction(2) ** (max(e for _, e in terms) - F)
    s = sum((abs(v) // unit) * unit * (1 if v > 0 else -1) for v, _ in terms)
    return _rz_fp32(s)


RULES = [("seed000", "seed000"), ("ignore", "ignore"), (-133, -133), ("seed000", "ignore"), ("ignore", -126),
         (-140, -120), (-110, "seed000")]


@pytest.mark.parametrize("zp,zc", RULES)
def test_tfdpa_zero_rules_match_a_fraction_reference(zp, zc):
    """hopper-bf16-fp32 (F = 25, one block of 16) with each pair of rules on tiny and zero terms."""
    g = np.random.default_rng(7)
    n, k = 300, 16
    e = g.integers(1, 70, (n, k))                 # biased bf16 exponents 1..69: products 2^-252..2^-116
    big = g.random((n, k)) < 0.15
    e = np.where(big, g.integers(100, 190, (n, k)), e)      # big x big stays below 2^120
    a = (g.integers(0, 2, (n, k)) << 15) | (e << 7) | g.integers(0, 128, (n, k))
    eb = np.where(g.random((n, k)) < 0.05, g.integers(100, 180, (n, k)), g.integers(1, 70, (n, k)))
    b = ((g.integers(0, 2, (n, k)) << 15) | (eb << 7) | g.integers(0, 128, (n, k))).astype(np.uint64)
    a = np.where(g.random((n, k)) < 0.4, a & 0x8000, a).astype(np.uint64)
    c = (g.integers(0, 2, n) << 31) | (g.integers(0, 20, n) << 23) | g.integers(0, 1 << 23, n)
    c = np.where(g.random(n) < 0.5, c & (1 << 31), c).astype(np.uint64)
    tiny = g.random(n) < 0.3      # rows where e_zero binds: c = 0, an anchor product in 2^-144..2^-134
    nt = int(tiny.sum())          # (short mantissa: on the output grid), one in 2^-162..2^-156, the rest 0
    ex = np.concatenate([g.integers(55, 61, (nt, 1)), g.integers(46, 50, (nt, 1)), np.ones((nt, k - 2), int)], axis=1)
    for x in (a, b):
        x[tiny] = (x[tiny] & 0x8040) | (ex << 7).astype(np.uint64)
    a[tiny, 2:] &= 0x8000
    c[tiny] &= 1 << 31
    m = get_model(f"hopper-bf16-fp32:zero_prod={zp},zero_c={zc}")
    want = [_tfdpa_ref(a[i], b[i], int(c[i]), m.F, zp, zc) for i in range(n)]
    if (zp, zc) != ("ignore", "ignore"):        # the cases reach the rule: it changes some outputs
        assert want != [_tfdpa_ref(a[i], b[i], int(c[i]), m.F, "ignore", "ignore") for i in range(n)]
    for backend in ("numpy", "native"):
        got = m.evaluate(a, b, c, backend=backend)
        assert [int(x) for x in got] == want, (zp, zc, backend)


@pytest.mark.parametrize("spec", ["hopper-bf16-fp32", "hopper-bf16-fp32-zero126", "blackwell-fp4e2m1-fp32-nvfp4",
                                  "cdna3-bf16-fp32"])
def test_smt_reading_follows_the_zero_rules(spec):
    """The SMT reading (z3) equals the twin on the hand cases above."""
    m = get_model(spec)
    if m.scale_fmt:
        k = 64
        one = 0x2
        rows = [([], [], 0x30800000, [0x7E] * 4, [0x7E] * 4), ([one], [one], 0x2B800000, [0] + [0x7E] * 3, [0x7E] * 4)]
    else:
        k = m.block(64)
        rows = [([_bf16(2.0 ** -70), _bf16(-(2.0 ** -80))], [_bf16(2.0 ** -70), _bf16(2.0 ** -80)], 0, None, None),
                ([0, _bf16(2.0 ** -30)], [_bf16(2.0 ** 100), _bf16(2.0 ** -30)], 0, None, None)]
    va, vb, vc, d, sc = m.symbolic(Z3Backend(), k)
    for a, b, c, sa, sb in rows:
        twin = _run(spec, a, b, c, sa, sb, k=k)
        A = list(a) + [0] * (k - len(a))
        Bv = list(b) + [0] * (k - len(b))
        subs = [(x.v, z3.BitVecVal(v, x.w)) for x, v in zip(va + vb, A + Bv)] + [(vc.v, z3.BitVecVal(c, vc.w))]
        if sc:
            subs += [(x.v, z3.BitVecVal(v, x.w)) for x, v in zip(sc[0] + sc[1], list(sa) + list(sb))]
        assert z3.simplify(z3.substitute(d.v, *subs)).as_long() == twin, (spec, a, b)
