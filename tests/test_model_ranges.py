"""Every model field is range-checked where the model is made (``Model.validate`` at construction):
out of range is one ``ModelError`` line naming the model, the field, the value and the range,
never wrong bits; at the edges of the ranges the twin computes what the algorithms define.

Expected values: the ranges are smtmodel.model.FIELD_RANGES; the bits at F = F_MAX, at small F
(F = 0 included) and for the block-scaled groups come from exact rational arithmetic written here
(Python ``Fraction``s, seed 000 Algorithms 7-9 read directly: terms aligned at the largest
exponent, cut toward zero to 2^(e_max - F), summed, rounded once), independent of the core; the
pairwise groups of a K below the block from explicit zero padding (the kernels' padding).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from fractions import Fraction

import numpy as np
import pytest

from mmaprobe import cli
from mmaprobe.errors import EXIT_USAGE
from smtmodel.catalog import all_models, get_model, integer_models
from smtmodel.catalog.identified import KIND, load_identified
from smtmodel.catalog.spaces import build_space
from smtmodel.formats import bits_to_numpy, get_format
from smtmodel.model import CARRY_MAX, F_MAX, FIELD_RANGES, Model, ModelError, field_ranges
from smtmodel.sampling import round_to, validation_mix

HW = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "hwdata")
WHY = ["F=100000", "F=-3", "L=0"]          # the overrides that ran before ranges were checked


# ---- the table ----------------------------------------------------------------------------------

DESCRIPTIVE = {"id", "kind", "rival_of", "arch", "sm", "gfx", "kernels", "description", "source", "instruction",
               "overrides", "validated"}


def test_the_table_names_every_field_that_enters_build():
    rows = {f for key in FIELD_RANGES for f in key.split(", ")}
    fields = {f.name for f in dataclasses.fields(Model)} - DESCRIPTIVE
    assert fields <= rows, fields - rows
    text = field_ranges()
    assert len(text.splitlines()) == len(FIELD_RANGES) and f"0..{F_MAX}" in text
    assert "needed by tfdpa" in text.splitlines()[3]          # F, with the ops that need it


def test_every_catalog_model_lies_inside_the_ranges():
    for m in all_models() + integer_models():
        m.validate()


# ---- refusals: one line, model, field, value, range -----------------------------------------------

REFUSED = [
    ("hopper-fp16-fp32:F=100000", "F=100000"), ("hopper-fp16-fp32:F=-3", "F=-3"),
    ("hopper-fp16-fp32:F=16385", "F=16385"), ("hopper-fp16-fp32:L=0", "L=0"), ("hopper-fp16-fp32:L=-2", "L=-2"),
    ("hopper-fp16-fp32:carry=-1", "carry=-1"), ("hopper-fp16-fp32:carry=65", "carry=65"),
    ("hopper-fp16-fp32:specials=arm", "specials=arm"), ("hopper-fp16-fp32:e_zero=1001", "1001"),
    ("hopper-fp16-fp32:rho=RNE-FP16", "rho=RNE-FP16"), ("hopper-fp16-fp16:rho=RZ-FP32", "rho=RZ-FP32"),
    ("hopper-fp16-fp32:rho=RQ-FP32", "RQ-FP32"), ("hopper-fp16-fp32:op=trfdpa", "F2"),
    ("hopper-fp16-fp32:op=ftz_addmul", "P"), ("hopper-fp16-fp32:op=stfdpa", "scale_fmt"),
    ("hopper-fp16-fp32:scale_block=32", "scale_block"), ("blackwell-fp8e4m3-fp32-mx:op=tfdpa", "scale_fmt"),
    ("cdna3-fp16-fp32:F2=20", "F2=20"), ("cdna3-fp16-fp32:F2=16385", "F2=16385"),
    ("cdna2-fp16-fp32:P=3", "P=3"), ("cdna2-fp16-fp32:P=0", "P=0"), ("cdna2-fp16-fp32:P=8", "P=8"),
    ("blackwell-fp4e2m1-fp32-mxgst:G=0", "G=0"), ("blackwell-fp4e2m1-fp32-mxgst:G=5", "G=5"),
    ("blackwell-fp4e2m1-fp32-mxgst:scale_block=8", "G=16"), ("blackwell-fp8e4m3-fp32-mx:L=64", "scale_block=32"),
    ("blackwell-fp8e4m3-fp32-mx:scale_block=0", "scale_block=0"), ("hopper-fp8e4m3-fp32-mmasync:L=0", "L=0"),
    ("hopper-fp8e4m3-fp32-mmasync:a_fmt=bf16", "a_fmt=bf16"), ("hopper-fp16-fp32:a_fmt=int8", "int8"),
    ("hopper-fp16-fp32:a_fmt=e8m0", "a_fmt=e8m0"), ("hopper-fp16-fp32:b_fmt=e15m3", "b_fmt=e15m3"),
    ("hopper-fp16-fp32:a_fmt=e8m7:bias=3000", "bias=3000"), ("turing-s8-s32:c_entry=end", "imma"),
    ("turing-s8-s32:flush_outputs=signed", "imma"), ("hopper-fp16-fp32:F=x", "F"),
]


@pytest.mark.parametrize("spec,what", REFUSED, ids=[s for s, _ in REFUSED])
def test_out_of_range_is_one_line_naming_model_field_and_range(spec, what):
    with pytest.raises(ModelError) as exc:
        get_model(spec)
    msg = str(exc.value)
    assert "\n" not in msg and what in msg, msg
    if not spec.endswith("=x"):
        assert msg.startswith(spec + ":"), msg


ACCEPTED = ["hopper-fp16-fp32:F=0", f"hopper-fp16-fp32:F={F_MAX}", f"hopper-fp16-fp32:carry={CARRY_MAX}",
            "hopper-fp16-fp32:carry=0", "hopper-fp16-fp32:L=1", "hopper-fp16-fp32:e_zero=-1000",
            "cdna3-fp16-fp32:F2=24", f"cdna3-fp16-fp32:F={F_MAX},F2={F_MAX}", "cdna2-fp16-fp32:P=1",
            "cdna2-fp16-fp32:P=2", "blackwell-fp4e2m1-fp32-mxgst:G=1", "blackwell-fp4e2m1-fp32-mxgst:scale_block=48",
            "blackwell-fp8e4m3-fp32-mx:L=16", "hopper-fp16-fp32:a_fmt=fp64,b_fmt=fp64",
            "hopper-fp8e4m3-fp32-mmasync:a_fmt=fp4e2m1"]


@pytest.mark.parametrize("spec", ACCEPTED)
def test_the_edges_of_the_ranges_are_models(spec):
    get_model(spec)


def test_direct_construction_and_replace_are_checked():
    m = get_model("hopper-fp16-fp32")
    with pytest.raises(ModelError, match=r"hopper-fp16-fp32: F=100000 is out of range"):
        dataclasses.replace(m, F=100000)
    with pytest.raises(ModelError, match=r"F=true is out of range"):
        dataclasses.replace(m, F=True)
    with pytest.raises(ModelError, match=r"L=2.0 is out of range"):
        dataclasses.replace(m, L=2.0)


def test_an_identified_model_file_out_of_range_is_refused(tmp_path):
    fields = {f.name: getattr(get_model("hopper-fp16-fp32"), f.name) for f in dataclasses.fields(Model)
              if f.name != "overrides"}
    for bad, what in (({"F": "25"}, "F=25"), ({"F": 100000}, "F=100000"), ({"L": 0}, "L=0"),
                      ({"normalize": "yes"}, "normalize=yes")):
        p = tmp_path / "m.json"
        p.write_text(json.dumps({"kind": KIND, "model": {**fields, "kernels": list(fields["kernels"]), **bad}}))
        with pytest.raises(ModelError, match=what):
            load_identified(str(p))


# ---- the command line: one line, exit 2, no file -------------------------------------------------

def _npy(tmp_path):
    rng = np.random.default_rng(0)
    out = []
    for name, shape, fmt in (("A", (3, 16), "fp16"), ("B", (16, 4), "fp16"), ("C", (3, 4), "fp32")):
        p = tmp_path / f"{name}.npy"
        np.save(p, bits_to_numpy(round_to(rng.standard_normal(shape), fmt), fmt))
        out.append(str(p))
    return out


def _commands(spec, tmp_path, out):
    return {
        "eval": ["eval", os.path.join(HW, "h100_fp16_fp32.jsonl.gz"), "--model", spec, "-o", out],
        "gemm": ["gemm", *_npy(tmp_path), "--model", spec, "-o", out, "--backend", "numpy"],
        "distinguish": ["distinguish", spec, "hopper-fp16-fp32", "-o", out],
        "identify": ["identify", "--device", f"twin:{spec}", "-o", out, "--quiet"],
    }


@pytest.mark.parametrize("cmd", ["eval", "gemm", "distinguish", "identify"])
@pytest.mark.parametrize("over", WHY)
def test_cli_refuses_out_of_range_models(cmd, over, tmp_path, capsys):
    spec = f"hopper-fp16-fp32:{over}"
    out = tmp_path / "out.file"
    assert cli.main(_commands(spec, tmp_path, str(out))[cmd]) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mmaprobe: error:") and f"{over} is out of range" in err[0], err
    assert not out.exists()


# ---- exact references --------------------------------------------------------------------------------

def _value(bits: int, fmt) -> tuple[Fraction, int]:
    """(value, Exp) of a finite pattern: Exp the exponent of a normal value, emin for subnormals
    and zeros (seed 000 §4.1.3)."""
    f = get_format(fmt)
    bits = int(bits) >> f.shift
    m = bits & ((1 << f.mbits) - 1)
    e = (bits >> f.mbits) & ((1 << f.ebits) - 1)
    s = -1 if f.signed and bits >> (f.ebits + f.mbits) & 1 else 1
    if f.policy == "e8m0":
        return Fraction(2) ** (e - f.bias), e - f.bias
    if e == 0:
        return s * Fraction(m) * Fraction(2) ** (1 - f.bias - f.mbits), 1 - f.bias
    return s * Fraction((1 << f.mbits) + m) * Fraction(2) ** (e - f.bias - f.mbits), e - f.bias


def _round(x: Fraction, rm: str, fmt="fp32") -> int:
    """Bits of x rounded RZ or RNE into an IEEE-style format (overflow: inf, as RZ-FP32 with
    NVIDIA's specials and as IEEE RNE; zero: +0, NVIDIA's and these cases')."""
    f = get_format(fmt)
    if x == 0:
        return 0
    s, a = (1 << (f.width - 1) if x < 0 else 0), abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = Fraction(2) ** (max(e, f.emin) - f.mbits)
    r = a / q
    m = r.numerator // r.denominator
    if rm == "RNE" and (r - m > Fraction(1, 2) or (r - m == Fraction(1, 2) and m % 2)):
        m += 1
    v = m * q
    top = (1 << f.ebits) - 1
    if v >= Fraction(2) ** (f.emax + 1):
        return s | top << f.mbits
    if v < Fraction(2) ** f.emin:
        return s | m
    e = v.numerator.bit_length() - v.denominator.bit_length()
    return s | (e + f.bias) << f.mbits | (int(v / Fraction(2) ** (e - f.mbits)) - (1 << f.mbits))


def _fp32(x: Fraction, rm: str) -> int:
    return _round(x, rm, "fp32")


def _finite(fmt, shape, rng):
    """Finite patterns over the format's whole exponent range (subnormals and zeros included)."""
    f = get_format(fmt)
    top = (1 << f.ebits) - (2 if f.policy == "ieee" else 1)
    e = rng.integers(0, top + 1, shape).astype(np.uint64)
    m = rng.integers(0, 1 << f.mbits, shape, dtype=np.uint64)
    m[rng.random(shape) < 0.1] = 0
    e[rng.random(shape) < 0.1] = 0
    s = rng.integers(0, 2, shape).astype(np.uint64)
    bits = (s << np.uint64(f.ebits + f.mbits)) | (e << np.uint64(f.mbits)) | m
    if f.policy == "fn":                       # S.1111.111 is NaN: keep it out
        bits[(e == top) & (m == (1 << f.mbits) - 1)] ^= 1
    return bits << np.uint64(f.shift)


def _tfdpa_ref(m, a, b, c) -> int:
    """Seed 000 Algorithm 7 on one case: products aligned at Exp(a) + Exp(b), c at Exp(c), a zero
    at the fixed e_zero (or left out, "ignore"); each term cut toward zero to 2^(e_max - F),
    summed exactly (carry none), rounded once (RZ-FP32 or RNE-FP32)."""
    fa, fb = m.operand_fmts
    terms = []
    for x, y in zip(a, b):
        (vx, ex), (vy, ey) = _value(x, fa), _value(y, fb)
        terms.append((vx * vy, ex + ey if vx * vy else m.zero_prod))
    vc, ec = _value(c, m.c_fmt)
    terms.append((vc, ec if vc else m.zero_c))
    exps = [e for _, e in terms if e != "ignore"]
    if not exps:
        return 0
    q = Fraction(2) ** (max(exps) - m.F)
    S = sum(int(v / q) for v, _ in terms)         # int() truncates toward zero
    return _fp32(S * q, m.rho.split("-")[0])


def _check(m, a, b, c, ref, **kw):
    got = m.evaluate(a, b, c, backend="numpy", **kw)
    want = np.array([ref(i) for i in range(len(c))], np.uint64)
    bad = np.flatnonzero(got != want)
    assert not bad.size, f"{m.id}: {bad.size}/{len(c)} differ; case {bad[0]}: {int(got[bad[0]]):#x} != {int(want[bad[0]]):#x}"


TFDPA_F = [0, 1, 3, 10, 25, 60, F_MAX]


@pytest.mark.parametrize("F", TFDPA_F)
@pytest.mark.parametrize("extra", ["", ",e_zero=ignore", ",e_zero=1000"])
def test_tfdpa_at_any_F_is_algorithm_7(F, extra):
    """bf16 products over the whole exponent range and fp32 c: at F = 0 the sum keeps whole units
    of 2^e_max, at F_MAX everything exactly (2^(e_max - 16384) lies below every bit)."""
    m = get_model(f"hopper-bf16-fp32:F={F},carry=none{extra}")
    rng = np.random.default_rng(F)
    a, b, c = _finite("bf16", (60, 16), rng), _finite("bf16", (60, 16), rng), _finite("fp32", 60, rng)
    _check(m, a, b, c, lambda i: _tfdpa_ref(m, a[i], b[i], c[i]))


def test_fp64_operands_at_F_MAX_are_exact():
    """The widest exponents the ranges admit (fp64 products 2^-2148 .. 2^2048) at F = F_MAX:
    exactly the RZ-FP32 of the exact sum (most of them overflow or vanish in fp32, as they should)."""
    m = get_model(f"hopper-bf16-fp32:a_fmt=fp64,b_fmt=fp64,F={F_MAX}")
    rng = np.random.default_rng(7)
    a, b, c = _finite("fp64", (40, 4), rng), _finite("fp64", (40, 4), rng), _finite("fp32", 40, rng)
    b[:20] = np.array([0x3FF0000000000000], np.uint64)          # some products at a's own exponent
    _check(m, a, b, c, lambda i: _fp32(sum(_value(x, "fp64")[0] * _value(y, "fp64")[0] for x, y in zip(a[i], b[i]))
                                        + _value(c[i], "fp32")[0], "RZ"))


def test_the_widest_formats_and_scales_at_F_MAX_are_exact():
    """ST-FDPA with operands of a format at the edge of FORMAT_EXP_MAX (e12m1: 2^-2047 .. 2^2047)
    and E8M0 scales over their whole range, at F = F_MAX: the RZ-FP32 of the exact sum of
    a_k b_k 2^(sa + sb) plus c (seed 000 Algorithm 8), the widest exponents the ranges admit."""
    m = get_model(f"blackwell-fp8e4m3-fp32-mx:a_fmt=e12m1,b_fmt=e12m1,F={F_MAX}")
    rng = np.random.default_rng(11)
    a, b, c = _finite("e12m1", (40, 32), rng), _finite("e12m1", (40, 32), rng), _finite("fp32", 40, rng)
    ea = (a[:20] >> np.uint64(1)) & np.uint64(0xFFF)      # half the cases: Exp(b) = -Exp(a), products near 1
    b[:20] = (b[:20] & np.uint64(0x2001)) | ((np.uint64(4094) - np.minimum(ea, np.uint64(4094))) << np.uint64(1))
    sa, sb = rng.integers(0, 255, (40, 1)).astype(np.uint64), rng.integers(0, 255, (40, 1)).astype(np.uint64)

    def ref(i):
        s = sum(_value(x, "e12m1")[0] * _value(y, "e12m1")[0] for x, y in zip(a[i], b[i]))
        return _fp32(s * _value(sa[i, 0], "e8m0")[0] * _value(sb[i, 0], "e8m0")[0] + _value(c[i], "fp32")[0], "RZ")
    _check(m, a, b, c, ref, a_scale=sa, b_scale=sb)


def test_trfdpa_at_F_MAX_is_the_rounded_exact_sum():
    """TR-FDPA (seed 000 Algorithm 10) with F = F2 = F_MAX loses nothing: RNE-FP32 of the exact
    sum (IEEE zeros: exact zeros left out of the comparison)."""
    m = get_model(f"cdna3-fp16-fp32:F={F_MAX},F2={F_MAX}")
    rng = np.random.default_rng(3)
    a, b, c = _finite("fp16", (80, 8), rng), _finite("fp16", (80, 8), rng), _finite("fp32", 80, rng)
    got = m.evaluate(a, b, c, backend="numpy")
    for i in range(80):
        x = sum(_value(p, "fp16")[0] * _value(q, "fp16")[0] for p, q in zip(a[i], b[i])) + _value(c[i], "fp32")[0]
        if x:
            assert int(got[i]) == _fp32(x, "RNE"), i


def _gst_ref(m, a, b, c, sa, sb, k) -> int:
    """Seed 000 Algorithms 5 and 9 at an F past every bit: per block of L products (K above L
    zero-padded to a multiple of it), the exact sum of the block's products times their scales
    2^Exp(sa) 2^Exp(sb) (product j reads scale j // scale_block) plus the running d, rounded
    RZ-FP32; d starts at c, an infinite d stays."""
    d = int(c)
    for i in range(0, k, m.L):
        if d & 0x7F800000 == 0x7F800000:
            return d
        s = _value(d, "fp32")[0]
        for j in range(i, min(i + m.L, k)):
            s += (_value(a[j], m.in_fmt)[0] * _value(b[j], m.in_fmt)[0]
                  * _value(sa[j // m.scale_block], m.scale_fmt)[0] * _value(sb[j // m.scale_block], m.scale_fmt)[0])
        d = _fp32(s, "RZ")
    return d


@pytest.mark.parametrize("k", [17, 20, 33, 40, 64, 100])
def test_gstfdpa_groups_read_their_own_scale_block(k):
    """MXFP4 GST-FDPA (L = 64, G = 16, E8M0 per 32) with F = F_MAX at any K: every product counted
    once, with the scale of its own block of 32, over the whole E8M0 range (2^-127 .. 2^127)."""
    m = get_model(f"blackwell-fp4e2m1-fp32-mxgst:F={F_MAX}")
    rng = np.random.default_rng(k)
    n, ns = 40, m.scale_count(k)
    a, b, c = _finite("fp4e2m1", (n, k), rng), _finite("fp4e2m1", (n, k), rng), _finite("fp32", n, rng)
    sa, sb = rng.integers(0, 255, (n, ns)).astype(np.uint64), rng.integers(0, 255, (n, ns)).astype(np.uint64)
    sa[: n // 2], sb[: n // 2] = rng.integers(117, 137, (n // 2, ns)), rng.integers(117, 137, (n // 2, ns))
    _check(m, a, b, c, lambda i: _gst_ref(m, a[i], b[i], c[i], sa[i], sb[i], k), a_scale=sa, b_scale=sb)


def test_scale_counts_are_checked():
    m = get_model("blackwell-fp4e2m1-fp32-mxgst")
    a, b, c, _ = validation_mix("fp4e2m1", "fp32", 33, 4, 1)
    s = np.full((4, 3), 127, np.uint64)
    with pytest.raises(ModelError, match="K=33 takes 2 scales per operand"):
        m.evaluate(a, b, c, s, s, backend="numpy")


@pytest.mark.parametrize("mid,k", [("cdna2-fp16-fp32", 3), ("cdna2-fp16-fp32:P=2", 3),
                                   ("cdna1-fp16-fp32-pairwise", 2), ("cdna2-bf16-fp32-legacy", 1)])
def test_pairwise_group_below_P_is_the_zero_padded_group(mid, k):
    """A K that leaves the last pairwise group short reads as the kernels' zero padding to the
    group (+0 * +0 = +0 products): the same bits as the padded inputs, on both readings."""
    m = get_model(mid)
    a, b, c, _ = validation_mix(m.in_fmt, m.c_fmt, k, 500, 5)
    kp = -(-k // m.P) * m.P             # k below the block: the block is k, its last group short
    pad = np.zeros((500, kp - k), np.uint64)
    want = m.evaluate(np.hstack([a, pad]), np.hstack([b, pad]), c, backend="numpy")
    assert np.array_equal(m.evaluate(a, b, c, backend="numpy"), want)
    assert np.array_equal(m.evaluate(a, b, c, backend="native"), want)


# ---- hypothesis spaces: only points inside the ranges ---------------------------------------------

RELATED = ("L", "F", "F2", "P", "G", "rho")
"""The override keys that a range relates to one another (P | L, G | L, F <= F2, rho's container);
every other key's range stands alone."""


def _covering(part):
    """Override texts that try every combination of the related keys' values and every value of
    each other key: every point is valid iff these are (the ranges' checks relate no other keys)."""
    keys = list(part.ranges)
    rel = [k for k in keys if k in RELATED]
    first = {k: v[0] for k, v in part.ranges.items()}
    combos = [dict(first, **dict(zip(rel, vals))) for vals in itertools.product(*(part.ranges[k] for k in rel))]
    combos += [dict(first, **{k: v}) for k in keys if k not in rel for v in part.ranges[k]]
    for kv in combos:
        i, mult = 0, 1
        for k in keys:
            i += part.ranges[k].index(kv[k]) * mult
            mult *= len(part.ranges[k])
        yield part.overrides(i)


def _pairs():
    return sorted({(m.in_key, m.out_fmt, (m.scale_fmt, m.scale_block) if m.scale_fmt else None) for m in all_models()},
                  key=str)


@pytest.mark.parametrize("narrow", [None, "open"], ids=["default", "open"])
def test_every_space_point_lies_inside_the_ranges(narrow):
    """identify's default and open spaces of every catalog pair produce only valid models."""
    seen = 0
    for fi, fo, scale in _pairs():
        s = build_space(fi, fo, narrow, scale=scale)
        for part in s.parts:
            for text in _covering(part):
                get_model(f"{s.base.id}:{text}")
                seen += 1
    assert seen > 1000


def test_fma_reads_its_operands_in_their_own_format():
    """An FMA chain with bf16 operands and fp16 accumulation (same width: the operands were once
    read as fp16 patterns): each step one RNE rounding of the exact a_k b_k + d into fp16
    (seed 000 Algorithm 4); cases with an exact zero step or an infinite d left out."""
    m = get_model("hopper-fp16-fp16:op=fma,L=1,a_fmt=bf16,b_fmt=bf16")
    rng = np.random.default_rng(2)
    a, b = round_to(rng.standard_normal((200, 4)), "bf16"), round_to(rng.standard_normal((200, 4)), "bf16")
    c = round_to(rng.standard_normal(200), "fp16")
    got = m.evaluate(a, b, c, backend="numpy")
    checked = 0
    for i in range(200):
        d = int(c[i])
        for x, y in zip(a[i], b[i]):
            v = _value(x, "bf16")[0] * _value(y, "bf16")[0] + _value(d, "fp16")[0]
            d = _round(v, "RNE", "fp16") if v else None
            if d is None or d & 0x7C00 == 0x7C00:
                break
        else:
            assert int(got[i]) == d, i
            checked += 1
    assert checked > 150


@pytest.mark.parametrize("mid", ["cdna1-fp16-fp32", "cdna1-bf16-fp32", "cdna1-fp32-fp32", "hopper-fp32-fp32",
                                 "ampere-fp64-fp64", "hopper-fp64-fp64"])
def test_units_proved_monotone_by_reduction_round_the_exact_sum_once(mid):
    """The units whose monotonicity and scaling are proved by reduction (queries/properties/reductions.py:
    their output is the core's correctly rounded sum) against the exact sum of their products and c
    computed here with Fractions and rounded to nearest even by this file's own rounding, on finite
    inputs over each format's whole exponent range (an exact zero: any zero)."""
    from queries.properties.defs import get_property
    m = get_model(mid)
    k = get_property("monotonicity").default_k(m)
    fa, fb = m.operand_fmts
    rng = np.random.default_rng(9)
    a, b, c = _finite(fa, (300, k), rng), _finite(fb, (300, k), rng), _finite(m.c_fmt, 300, rng)
    got = m.evaluate(a, b, c, backend="numpy")
    zero_mask = (1 << (get_format(m.out_fmt).width - 1)) - 1
    for i in range(300):
        x = sum(_value(p, fa)[0] * _value(q, fb)[0] for p, q in zip(a[i], b[i])) + _value(c[i], m.c_fmt)[0]
        if x:
            assert int(got[i]) == _round(x, "RNE", m.out_fmt), (mid, i)
        else:
            assert int(got[i]) & zero_mask == 0, (mid, i)
