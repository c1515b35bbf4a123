"""Formats: parameters, spec parsing, hex text, and exhaustive decode/encode of every <=16-bit format.

Where expected values come from:

* format parameters: the published definitions (IEEE 754 binary16/32/64, bfloat16, OCP 8-bit FP
  (E4M3/E5M2) v1.0, OCP MX v1.0 (FP6/FP4/E8M0), AMD CDNA3 FP8 "fnuz", NVFP4 UE4M3), written
  here as literal numbers;
* decoded values: NumPy / ml_dtypes where a dtype has exactly the layout, and always an
  independent pure-Python decoder (:func:`ref_decode`) written from those definitions;
* conversions fp32 -> small formats: ml_dtypes casts (round to nearest even), with every policy
  difference spelled out in :data:`ML_DTYPES_DIFFERENCES` and asserted explicitly.
"""

from __future__ import annotations

import math
import sys

import ml_dtypes
import numpy as np
import pytest

from smtmodel.bv import NUMPY
from smtmodel.formats import (FORMATS, Format, FormatError, bits_to_numpy, get_format, numpy_dtype,
                              numpy_to_bits, uint_dtype)
from smtmodel.fp import convert, decode, round_value

pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in cast:RuntimeWarning")

SMALL = ["fp16", "bf16", "fp8e4m3", "fp8e5m2", "fp6e2m3", "fp6e3m2", "fp4e2m1", "e8m0", "ue4m3",
         "fp8e4m3fnuz", "fp8e5m2fnuz"]

# ---------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------

# name: (width, ebits, mbits, bias, emin, emax, max finite, min subnormal or None)
KNOWN = {
    "fp64": (64, 11, 52, 1023, -1022, 1023, sys.float_info.max, 2.0 ** -1074),
    "fp32": (32, 8, 23, 127, -126, 127, 3.4028234663852886e38, 2.0 ** -149),
    "tf32": (32, 8, 10, 127, -126, 127, (2 - 2.0 ** -10) * 2.0 ** 127, 2.0 ** -136),
    "bf16": (16, 8, 7, 127, -126, 127, 3.3895313892515355e38, 2.0 ** -133),
    "fp16": (16, 5, 10, 15, -14, 15, 65504.0, 2.0 ** -24),
    "fp8e4m3": (8, 4, 3, 7, -6, 8, 448.0, 2.0 ** -9),
    "fp8e5m2": (8, 5, 2, 15, -14, 15, 57344.0, 2.0 ** -16),
    "fp6e2m3": (6, 2, 3, 1, 0, 2, 7.5, 0.125),
    "fp6e3m2": (6, 3, 2, 3, -2, 4, 28.0, 0.0625),
    "fp4e2m1": (4, 2, 1, 1, 0, 2, 6.0, 0.5),
    "e8m0": (8, 8, 0, 127, -127, 127, 2.0 ** 127, None),
    "ue4m3": (7, 4, 3, 7, -6, 8, 448.0, 2.0 ** -9),
    "fp8e4m3fnuz": (8, 4, 3, 8, -7, 7, 240.0, 2.0 ** -10),
    "fp8e5m2fnuz": (8, 5, 2, 16, -15, 15, 57344.0, 2.0 ** -17),
}

CANONICAL_NAN = {"fp64": 0x7FF8000000000000, "fp32": 0x7FC00000, "tf32": 0x7FC00000, "bf16": 0x7FC0,
                 "fp16": 0x7E00, "fp8e4m3": 0x7F, "fp8e5m2": 0x7E, "fp6e2m3": None, "fp6e3m2": None,
                 "fp4e2m1": None, "e8m0": 0xFF, "ue4m3": 0x7F, "fp8e4m3fnuz": 0x80, "fp8e5m2fnuz": 0x80}


def test_registry_is_the_documented_list():
    # spec/vectors.md lists exactly these names
    assert set(FORMATS) == set(KNOWN)


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_format_parameters(name):
    f = get_format(name)
    width, e, m, bias, emin, emax, mx, tiny = KNOWN[name]
    assert (f.width, f.ebits, f.mbits, f.bias) == (width, e, m, bias)
    assert (f.emin, f.emax) == (emin, emax)
    assert f.max_finite() == mx
    assert f.precision == m + 1
    assert f.canonical_nan == CANONICAL_NAN[name]
    if tiny is not None:
        assert 2.0 ** (f.emin - f.mbits) == tiny


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_parameters_agree_with_ml_dtypes_finfo(name):
    dt = numpy_dtype(name)
    if dt is None or name == "tf32":
        pytest.skip(f"{name}: no NumPy/ml_dtypes type of this layout")
    fi = ml_dtypes.finfo(dt)
    f = get_format(name)
    assert float(fi.max) == f.max_finite()
    assert int(fi.nexp) == f.ebits
    assert int(fi.nmant) == f.mbits
    if f.policy != "e8m0":
        assert float(fi.smallest_normal) == 2.0 ** f.emin
        assert float(fi.smallest_subnormal) == 2.0 ** (f.emin - f.mbits)


@pytest.mark.parametrize("name,has_inf,has_nan,neg_zero", [
    ("fp32", True, True, True), ("fp16", True, True, True), ("fp8e4m3", False, True, True),
    ("fp8e5m2", True, True, True), ("fp6e2m3", False, False, True), ("fp4e2m1", False, False, True),
    ("e8m0", False, True, False), ("ue4m3", False, True, False), ("fp8e4m3fnuz", False, True, False),
    ("fp8e5m2fnuz", False, True, False)])
def test_special_value_flags(name, has_inf, has_nan, neg_zero):
    f = get_format(name)
    assert (f.has_inf, f.has_nan, f.has_neg_zero) == (has_inf, has_nan, neg_zero)


def test_tf32_container():
    f = get_format("tf32")
    assert (f.enc_width, f.width, f.shift, f.hex_digits) == (19, 32, 13, 8)
    assert f.parse_hex("0x3f802000") == 0x3F802000
    with pytest.raises(FormatError, match="low bits must be zero"):
        f.parse_hex("0x3f801000")


def _params(f: Format):
    return (f.ebits, f.mbits, f.bias, f.policy, f.signed, f.subnormals, f.container,
            f.emin, f.emax, f.max_finite(), f.canonical_nan, f.width)


@pytest.mark.parametrize("spec,named", [
    ("e5m10", "fp16"), ("e8m7", "bf16"), ("e8m23", "fp32"), ("e11m52", "fp64"), ("e5m2", "fp8e5m2"),
    ("e4m3,policy=fn", "fp8e4m3"), ("e4m3,bias=8,policy=fnuz", "fp8e4m3fnuz"),
    ("e5m2,bias=16,policy=fnuz", "fp8e5m2fnuz"), ("e2m3,policy=finite", "fp6e2m3"),
    ("e3m2,policy=finite", "fp6e3m2"), ("e2m1,policy=finite", "fp4e2m1"),
    ("ue4m3,policy=fn", "ue4m3"), ("ue8m0,policy=e8m0", "e8m0"), ("e4m3:policy=fn", "fp8e4m3")])
def test_user_formats_equal_named(spec, named):
    f = get_format(spec)
    assert f.name == spec
    assert _params(f) == _params(get_format(named))


def test_user_format_options():
    f = get_format("e8m7,subnormals=no")
    assert not f.subnormals and (f.ebits, f.mbits, f.bias) == (8, 7, 127)
    g = get_format("bf16,subnormals=no")
    assert not g.subnormals and g.name == "bf16,subnormals=no"
    assert get_format("e5m2,bias=-3").bias == -3
    assert get_format("ue5m2").signed is False and get_format("ue5m2").width == 7
    assert get_format(get_format("fp16")) is get_format("fp16")


@pytest.mark.parametrize("spec,msg", [
    ("fp17", "unknown format"), ("", "format must be a name"), ("e4", "unknown format"),
    ("e4m3,policy=bogus", "unknown policy"), ("e4m3,color=red", "unknown format option"),
    ("e4m3,subnormals=maybe", "subnormals must be yes or no"), ("e0m3", "unsupported widths"),
    ("e16m3", "unsupported widths"), ("e4m113", "unsupported widths"),
    ("e5m0,policy=e8m0", "policy e8m0 needs"), ("ue8m1,policy=e8m0", "policy e8m0 needs"),
    ("e4m3,bias=x", "bias"), ("fp16,bias=1.5", "bias"), ("fp16,policy=nope", "unknown policy"),
    ("e5m0", "mantissa"), ("e4m0,policy=fn", "mantissa")])
def test_bad_specs_raise_format_error(spec, msg):
    with pytest.raises(FormatError, match=msg):
        get_format(spec)


@pytest.mark.parametrize("bad", [None, 5, b"fp16"])
def test_non_string_spec(bad):
    with pytest.raises(FormatError):
        get_format(bad)


def test_summary_mentions_parameters():
    s = get_format("fp8e4m3").summary()
    assert "e4m3" in s and "bias=7" in s and "max=448" in s


# ---------------------------------------------------------------------------------------------
# hex text (spec/vectors.md: "0x" + lowercase hex, zero-padded to the format's width)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,bits,text", [
    ("fp16", 0x3C00, "0x3c00"), ("bf16", 0x3F80, "0x3f80"), ("fp32", 0x3F800000, "0x3f800000"),
    ("fp64", 1, "0x0000000000000001"), ("fp8e4m3", 0x7F, "0x7f"), ("fp6e2m3", 0x3F, "0x3f"),
    ("fp4e2m1", 0x7, "0x07"), ("tf32", 0x3F802000, "0x3f802000"), ("ue4m3", 0x7F, "0x7f")])
def test_hex_round_trip(name, bits, text):
    f = get_format(name)
    assert f.hex(bits) == text
    assert f.parse_hex(text) == bits
    assert f.parse_hex(text.upper().replace("0X", "0x")) == bits


@pytest.mark.parametrize("name,text", [("fp16", "0x10000"), ("fp6e2m3", "0x40"), ("fp4e2m1", "0x10"),
                                       ("ue4m3", "0x80"), ("fp16", "3c00"), ("fp16", "0x"),
                                       ("fp16", "0xzz"), ("fp16", " 0x3c00")])
def test_parse_hex_rejects(name, text):
    with pytest.raises(FormatError):
        get_format(name).parse_hex(text)


def test_hex_rejects_out_of_range():
    with pytest.raises(FormatError):
        get_format("fp16").hex(1 << 16)
    with pytest.raises(FormatError):
        get_format("fp16").hex(-1)


def test_numpy_views():
    assert numpy_dtype("ue4m3") is None
    assert uint_dtype("fp6e2m3") == np.uint8 and uint_dtype("bf16") == np.uint16
    assert uint_dtype("tf32") == np.uint32 and uint_dtype("fp64") == np.uint64
    v = bits_to_numpy(np.array([0x3C00, 0xC000], np.uint64), "fp16")
    assert v.dtype == np.float16 and list(v.astype(float)) == [1.0, -2.0]
    assert list(numpy_to_bits(np.array([1.0, -2.0], np.float32), "bf16")) == [0x3F80, 0xC000]
    assert list(numpy_to_bits(np.array([1.0], np.float32), "tf32")) == [0x3F800000]
    with pytest.raises(FormatError, match="low 13 bits"):
        numpy_to_bits(np.array([1.0 + 2.0 ** -20], np.float32), "tf32")
    with pytest.raises(FormatError):
        bits_to_numpy([0], "ue4m3")


def test_integer_values_to_bits_include_the_4bit_formats():
    """Two's complement (signed) or plain binary (unsigned) in the format's width, written out by
    hand; int4/uint4 have no NumPy type but encode all the same; out of range is refused."""
    assert list(numpy_to_bits(np.array([-8.0, -1.0, 0.0, 7.0]), "int4")) == [0b1000, 0b1111, 0, 0b0111]
    assert list(numpy_to_bits(np.array([0, 15]), "uint4")) == [0, 0b1111]
    assert list(numpy_to_bits(np.array([-128, 127]), "int8")) == [0x80, 0x7F]
    assert list(numpy_to_bits(np.array([-2 ** 31]), "int32")) == [0x80000000]
    with pytest.raises(FormatError, match="out of the range of int4"):
        numpy_to_bits(np.array([8]), "int4")
    with pytest.raises(FormatError, match="not integers"):
        numpy_to_bits(np.array([0.5]), "uint4")


# ---------------------------------------------------------------------------------------------
# exhaustive decode / encode of every <=16-bit format
# ---------------------------------------------------------------------------------------------

def ref_decode(bits: int, fmt: Format) -> float:
    """Independent pure-Python decode written from the format definitions (not smtmodel.fp)."""
    e_b, m_b, bias = fmt.ebits, fmt.mbits, fmt.bias
    enc = bits >> fmt.shift
    sign = (enc >> (e_b + m_b)) & 1 if fmt.signed else 0
    E = (enc >> m_b) & ((1 << e_b) - 1)
    M = enc & ((1 << m_b) - 1)
    top = (1 << e_b) - 1
    s = -1.0 if sign else 1.0
    if fmt.policy == "e8m0":
        return math.nan if E == 0xFF else math.ldexp(1.0, E - bias)
    if fmt.policy == "ieee" and E == top:
        return s * math.inf if M == 0 else math.nan
    if fmt.policy == "fn" and E == top and M == (1 << m_b) - 1:
        return math.nan
    if fmt.policy == "fnuz" and sign and E == 0 and M == 0:
        return math.nan
    if E == 0:
        return s * math.ldexp(M, 1 - bias - m_b)
    return s * math.ldexp(M + (1 << m_b), E - bias - m_b)


def twin_values(fmt: Format, bits: np.ndarray) -> np.ndarray:
    """float64 values of the twin's decode (exact for every <=16-bit format)."""
    v = decode(NUMPY.input(bits, fmt.width), fmt)
    b = lambda x: np.broadcast_to(np.asarray(x.v), bits.shape)        # constants are scalars
    sign, nan, inf, zero = b(v.sign), b(v.nan), b(v.inf), b(v.zero)
    sig = b(v.sig).astype(np.float64)
    exp = b(v.exp).astype(np.int64)
    exp = np.where(exp >= 1 << 15, exp - (1 << 16), exp)          # EXP_W = 16, two's complement
    mag = np.ldexp(sig, (exp - v.frac).astype(np.int32))
    out = np.where(sign, -mag, mag)
    out = np.where(inf, np.where(sign, -np.inf, np.inf), out)
    out = np.where(nan, np.nan, out)
    # the flags must be consistent with the value
    assert not np.any(zero & nan) and not np.any(zero & inf) and not np.any(nan & inf)
    assert np.array_equal(zero, (sig == 0) & ~nan & ~inf)
    return out


def same_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise identity of float64 values: NaN == NaN, +0 != -0."""
    both_nan = np.isnan(a) & np.isnan(b)
    return both_nan | ((a == b) & (np.signbit(a) == np.signbit(b)))


def all_patterns(fmt: Format) -> np.ndarray:
    return np.arange(1 << fmt.width, dtype=np.uint64)


@pytest.mark.parametrize("name", SMALL)
def test_decode_matches_independent_decoder(name):
    fmt = get_format(name)
    bits = all_patterns(fmt)
    ours = twin_values(fmt, bits)
    ref = np.array([ref_decode(int(b), fmt) for b in bits])
    bad = ~same_values(ours, ref)
    assert not bad.any(), [(hex(int(b)), o, r) for b, o, r in zip(bits[bad], ours[bad], ref[bad])][:8]


@pytest.mark.parametrize("name", [n for n in SMALL if n != "ue4m3"])
def test_decode_matches_ml_dtypes(name):
    """Decoding agrees with NumPy/ml_dtypes on every pattern (no disagreement exists here)."""
    fmt = get_format(name)
    bits = all_patterns(fmt)
    ours = twin_values(fmt, bits)
    theirs = bits_to_numpy(bits, fmt).astype(np.float64)
    bad = ~same_values(ours, theirs)
    assert not bad.any(), [(hex(int(b)), o, t) for b, o, t in zip(bits[bad], ours[bad], theirs[bad])][:8]


def test_ue4m3_is_the_positive_half_of_e4m3():
    """ue4m3 (no ml_dtypes type) pattern p decodes as fp8e4m3 pattern p (sign bit 0)."""
    u, e = get_format("ue4m3"), get_format("fp8e4m3")
    bits = all_patterns(u)
    assert np.all(same_values(twin_values(u, bits), bits_to_numpy(bits, e).astype(np.float64)))


def expected_round_trip(fmt: Format, bits: np.ndarray) -> np.ndarray:
    """Round-trip normalisation: every NaN becomes the canonical NaN (payload and sign dropped);
    everything else keeps its bits."""
    vals = np.array([ref_decode(int(b), fmt) for b in bits])
    return np.where(np.isnan(vals), np.uint64(fmt.canonical_nan or 0), bits)


@pytest.mark.parametrize("name", [n for n in SMALL if n != "e8m0"])
@pytest.mark.parametrize("rm", ["RNE", "RZ", "RU", "RD", "RNA", "RTO"])
def test_round_trip_exhaustive(name, rm):
    """decode -> round_value into the same format is the identity (every value is representable,
    so every rounding mode gives it back), up to NaN canonicalisation."""
    fmt = get_format(name)
    bits = all_patterns(fmt)
    out = np.broadcast_to(np.asarray(round_value(decode(NUMPY.input(bits, fmt.width), fmt), fmt, rm).v),
                          bits.shape)
    exp = expected_round_trip(fmt, bits)
    bad = out != exp
    assert not bad.any(), [(hex(int(b)), hex(int(o)), hex(int(x))) for b, o, x in
                           zip(bits[bad], out[bad], exp[bad])][:8]


def test_e8m0_cannot_be_a_rounding_target():
    """Documented: e8m0 is a scale format; rounding into it is refused with FormatError."""
    x = decode(NUMPY.input(np.arange(256, dtype=np.uint64), 8), "e8m0")
    with pytest.raises(FormatError, match="e8m0"):
        round_value(x, "e8m0")


def test_e8m0_decode_values():
    f = get_format("e8m0")
    v = twin_values(f, all_patterns(f))
    assert np.isnan(v[255]) and not np.isnan(v[:255]).any()
    assert np.array_equal(v[:255], np.ldexp(1.0, np.arange(255) - 127))
    assert v[0] == 2.0 ** -127 and v[254] == 2.0 ** 127        # no zero in e8m0


@pytest.mark.parametrize("name", ["bf16", "fp16", "fp8e4m3", "fp8e5m2", "fp6e2m3"])
def test_subnormals_no_flushes_with_sign(name):
    """Documented normalisation: a format declared without subnormals decodes them as a zero of
    the same sign, so the round trip sends every subnormal to +-0."""
    base = get_format(name)
    fmt = get_format(name + ",subnormals=no")
    bits = all_patterns(fmt)
    out = np.broadcast_to(np.asarray(round_value(decode(NUMPY.input(bits, fmt.width), fmt), fmt).v), bits.shape)
    exp = expected_round_trip(base, bits)
    E = (bits >> np.uint64(fmt.mbits)) & np.uint64((1 << fmt.ebits) - 1)
    sign_bit = np.uint64(1 << (fmt.width - 1))
    exp = np.where(E == 0, bits & sign_bit, exp)
    assert np.array_equal(out, exp)


@pytest.mark.parametrize("flush,expect_sign", [("signed", True), ("positive", False)])
def test_flush_inputs(flush, expect_sign):
    """decode(..., flush_subnormals) zeroes subnormals: keeping the sign, or to +0 (AMD CDNA2)."""
    bits = np.array([0x0001, 0x8001, 0x83FF, 0x0400, 0x8400], np.uint64)
    out = np.asarray(convert(NUMPY.input(bits, 16), "fp16", "fp32", flush_inputs=flush).v)
    neg0 = 0x80000000 if expect_sign else 0
    assert list(out) == [0, neg0, neg0, 0x38800000, 0xB8800000]


# ---------------------------------------------------------------------------------------------
# fp32 -> small formats vs ml_dtypes / NumPy casts (round to nearest even)
# ---------------------------------------------------------------------------------------------

ML_DTYPES_DIFFERENCES = """
Policy differences between our convert(fp32 -> fmt, RNE, overflow="ieee") and ml_dtypes casts
(asserted in test_convert_from_fp32_vs_ml_dtypes):
* NaN sign and payload: we always write the format's canonical NaN (positive, quiet);
  NumPy/ml_dtypes keep the NaN's sign (and, for fp16/bf16, the top payload bits).
* fp8e4m3 (fn) / fnuz: overflow and +-inf give NaN in both, but ml_dtypes gives a NaN of the
  input's sign for fn (0xff for negatives) where we give 0x7f.
* fp6e2m3 / fp6e3m2 / fp4e2m1 (no inf, no NaN): overflow and +-inf saturate to +-max in both;
  a NaN input becomes +-max finite (the NaN's sign) in ours, but a ZERO in ml_dtypes with the
  OPPOSITE sign (+NaN -> -0, -NaN -> +0).
* e8m0: ml_dtypes rounds to a power of two (negatives and zero -> NaN); our convert refuses e8m0
  as a target (FormatError), see test_e8m0_cannot_be_a_rounding_target.
* ue4m3: no ml_dtypes type; compared with float8_e4m3fn for x >= 0 (and -0 / values rounding to
  zero give +0); other negative inputs give NaN 0x7f.
"""


def fp32_draw(fmt: Format, n: int, rng: np.random.Generator) -> np.ndarray:
    """fp32 patterns: a quarter uniform, the rest with an exponent in and around ``fmt``'s range,
    half of those with an exact tie (or near-tie) at a random bit position."""
    from conftest import draw_bits
    n_uni = n // 4
    uni = draw_bits("fp32", n_uni, rng)
    k = n - n_uni
    lo = max(1, 127 + fmt.emin - fmt.mbits - 3)
    hi = min(254, 127 + fmt.emax + 2)
    E = rng.integers(lo, hi + 1, k, dtype=np.uint64)
    M = rng.integers(0, 1 << 23, k, dtype=np.uint64)
    pos = rng.integers(1, 24, k, dtype=np.uint64)
    tie = (M & ~((np.uint64(1) << pos) - np.uint64(1))) | (np.uint64(1) << (pos - np.uint64(1)))
    near = tie + rng.integers(-1, 2, k).astype(np.int64).astype(np.uint64)
    M = np.where(rng.random(k) < 0.5, M, np.where(rng.random(k) < 0.6, tie, near)) & np.uint64((1 << 23) - 1)
    S = rng.integers(0, 2, k, dtype=np.uint64)
    body = (S << np.uint64(31)) | (E << np.uint64(23)) | M
    return np.concatenate([uni, body]).astype(np.uint64)


CAST_TARGETS = ["fp16", "bf16", "fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz", "fp6e2m3",
                "fp6e3m2", "fp4e2m1", "tf32_ref", "ue4m3"]


@pytest.mark.parametrize("name", CAST_TARGETS)
def test_convert_from_fp32_vs_ml_dtypes(name):
    rng = np.random.default_rng(1234 + CAST_TARGETS.index(name))
    target = "tf32" if name == "tf32_ref" else name
    fmt = get_format(target)
    x = fp32_draw(fmt, 200_000, rng)
    xf = x.astype(np.uint32).view(np.float32)
    ours = np.asarray(convert(NUMPY.input(x, 32), "fp32", fmt, "RNE").v).astype(np.uint64)
    x_nan = np.isnan(xf)
    x_neg = np.signbit(xf)

    if name == "tf32_ref":
        # independent reference: RNE to 10 fraction bits via float64 arithmetic on the same
        # exponent grid (tf32 has fp32's exponent range, so only the significand is rounded)
        xd = xf.astype(np.float64)
        finite = np.isfinite(xd) & (xd != 0)
        ex = np.frexp(np.where(finite, xd, 1.0))[1] - 1                # exponent of the leading 1
        ex = np.maximum(ex, -126)
        q = np.ldexp(1.0, (ex - 10).astype(np.int32))
        r = np.where(finite, np.round(xd / q) * q, xd)                # np.round is RNE
        ref_vals = r.astype(np.float32)                                # exact unless overflow
        ref = ref_vals.view(np.uint32).astype(np.uint64)
        ok = ~x_nan
        assert np.array_equal(ours[ok], ref[ok])
        assert np.all(ours[x_nan] == 0x7FC00000)
        return

    if name == "ue4m3":
        theirs = numpy_to_bits(xf.astype(ml_dtypes.float8_e4m3fn), "fp8e4m3")
        tv = theirs.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
        pos = ~x_nan & ~x_neg
        assert np.array_equal(ours[pos], np.where(np.isnan(tv[pos]), 0x7F, theirs[pos]))
        to_zero = x_neg & ~x_nan & (tv == 0)
        assert np.all(ours[to_zero] == 0)
        assert np.all(ours[x_neg & ~to_zero] == 0x7F)                # negatives (and -NaN, NaN)
        assert np.all(ours[x_nan] == 0x7F)
        return

    theirs_v = xf.astype(numpy_dtype(fmt))
    theirs = numpy_to_bits(theirs_v, fmt)
    theirs_f = theirs_v.astype(np.float64)
    t_nan = np.isnan(theirs_f)
    if fmt.has_nan:
        # NaN in exactly the same places; ours is always the canonical NaN
        assert np.array_equal(np.isnan(twin_values(fmt, ours)), t_nan)
        assert np.all(ours[t_nan] == fmt.canonical_nan)
        ok = ~t_nan
    else:
        # no NaN: ours saturates a NaN input to +-max (NaN's sign); ml_dtypes gives -+0
        maxb = np.uint64(((1 << (fmt.ebits + fmt.mbits)) - 1))
        sgn = np.uint64(1 << (fmt.width - 1))
        assert np.array_equal(ours[x_nan], np.where(x_neg[x_nan], maxb | sgn, maxb))
        assert np.array_equal(theirs[x_nan], np.where(x_neg[x_nan], np.uint64(0), sgn))
        ok = ~x_nan
    bad = ok & (ours != theirs)
    assert not bad.any(), [(hex(int(a)), hex(int(o)), hex(int(t))) for a, o, t in
                           zip(x[bad], ours[bad], theirs[bad])][:8]


def test_ml_dtypes_difference_notes_exist():
    assert "opposite sign" in ML_DTYPES_DIFFERENCES.lower()


def test_e8m0_ml_dtypes_behaviour_documented():
    """ml_dtypes' e8m0 cast: powers of two by rounding, zero/negatives -> NaN (we refuse)."""
    v = np.array([1.0, 3.0, 0.0, -1.0, 1e9], np.float32).astype(ml_dtypes.float8_e8m0fnu)
    assert list(v.view(np.uint8)) == [127, 129, 255, 255, 157]
    with pytest.raises(FormatError):
        convert(NUMPY.input(np.array([0x3F800000], np.uint64), 32), "fp32", "e8m0")


# ---- the one dtype <-> format adapter (NumPy / ml_dtypes / torch names) --------------------------

def test_dtype_names_map_both_ways():
    """Every format with a NumPy / ml_dtypes type names it, and the name (also as torch prints it,
    and mmaemu's short FP8 names) maps back; float32 is fp32's, not TF32's. Expected names: the
    ml_dtypes and torch documentation."""
    from smtmodel.formats import dtype_name, format_of_dtype
    want = {"fp32": "float32", "fp64": "float64", "fp16": "float16", "bf16": "bfloat16",
            "fp8e4m3": "float8_e4m3fn", "fp8e5m2": "float8_e5m2", "fp8e4m3fnuz": "float8_e4m3fnuz",
            "fp8e5m2fnuz": "float8_e5m2fnuz", "e8m0": "float8_e8m0fnu"}
    for f, name in want.items():
        assert dtype_name(f) == name
        assert format_of_dtype(name).name == f == format_of_dtype(f"torch.{name}").name
    assert dtype_name("tf32") == "float32" and format_of_dtype(np.float32).name == "fp32"
    assert format_of_dtype("e4m3").name == "fp8e4m3" and format_of_dtype("e5m2").name == "fp8e5m2"
    with pytest.raises(FormatError, match="no format has the dtype 'complex64'"):
        format_of_dtype(np.complex64)


def test_bits_survive_the_torch_round_trip():
    """Raw bits -> torch tensor -> raw bits is the identity for every format torch has a dtype of,
    NaN payloads and -0 included; torch's own reading of the tensor agrees with ml_dtypes'."""
    torch = pytest.importorskip("torch")
    from smtmodel.formats import bits_to_numpy, bits_to_torch, dtype_name, torch_to_bits
    for f in ("fp32", "fp16", "bf16", "fp64", "fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz"):
        w = get_format(f).width
        bits = np.unique(np.random.default_rng(w).integers(0, 1 << min(w, 62), 4000, dtype=np.uint64))
        t = bits_to_torch(bits, f)
        assert t.dtype == getattr(torch, dtype_name(f))
        assert np.array_equal(torch_to_bits(t).astype(np.uint64), bits), f
        np.testing.assert_array_equal(t.to(torch.float64).numpy(), bits_to_numpy(bits, f).astype(np.float64))
    with pytest.raises(FormatError, match="torch has no dtype with the layout of fp6e2m3"):
        bits_to_torch(np.zeros(2, np.uint64), "fp6e2m3")
