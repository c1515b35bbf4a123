"""The validation mix (smtmodel.sampling) and the harness's layout probe."""

from __future__ import annotations

import numpy as np
import pytest

from hw_runner.mix import layout_probe
from smtmodel.sampling import KINDS, boundary_patterns, round_to, validation_mix
from smtmodel.formats import bits_to_numpy, get_format

PAIRS = [("fp16", "fp32"), ("fp16", "fp16"), ("bf16", "fp32"), ("tf32", "fp32"),
         ("fp8e4m3", "fp32"), ("fp8e5m2", "fp16"), ("fp64", "fp64")]


def _vals(bits, fmt):
    with np.errstate(invalid="ignore"):
        return bits_to_numpy(bits, fmt).astype(np.float64)


@pytest.mark.parametrize("in_fmt,c_fmt", PAIRS)
def test_mix_is_valid_and_reproducible(in_fmt, c_fmt):
    a, b, c, kinds = validation_mix(in_fmt, c_fmt, 16, 400, seed=3)
    fi, fc = get_format(in_fmt), get_format(c_fmt)
    assert a.shape == b.shape == (400, 16) and c.shape == (400,) and a.dtype == np.uint64
    assert set(kinds) == set(KINDS) and all((kinds == k).sum() == 100 for k in KINDS)
    for bits, f in ((a, fi), (b, fi), (c, fc)):
        assert int(bits.max()) < 1 << f.width
        assert not np.any(bits & np.uint64((1 << f.shift) - 1))          # TF32: low 13 bits zero
    a2, b2, c2, _ = validation_mix(in_fmt, c_fmt, 16, 400, seed=3)
    assert np.array_equal(a, a2) and np.array_equal(b, b2) and np.array_equal(c, c2)


@pytest.mark.parametrize("in_fmt,c_fmt", PAIRS)
def test_mix_kinds_have_their_character(in_fmt, c_fmt):
    a, b, c, kinds = validation_mix(in_fmt, c_fmt, 16, 800, seed=5)
    va, vb = _vals(a, in_fmt), _vals(b, in_fmt)
    wide = kinds == "wide"
    assert np.all(np.isfinite(va[wide])) and np.all(va[wide] != 0)
    assert np.ptp(np.log2(np.abs(va[wide]))) > get_format(in_fmt).emax          # spans the range
    raw = kinds == "raw"
    sp = set(boundary_patterns(in_fmt).tolist())
    assert np.mean([int(x) in sp for x in a[raw].ravel()]) > 0.15
    canc = kinds == "cancel"
    with np.errstate(invalid="ignore", over="ignore"):
        prods = va[canc] * vb[canc]
    big, total = np.abs(prods).sum(axis=1), np.abs(prods.sum(axis=1))
    assert np.median(total / big) < 0.1                                          # heavy cancellation


def test_boundary_patterns_of_fp8_e4m3_follow_fn_policy():
    sp = boundary_patterns("fp8e4m3").tolist()
    assert 0x7F in sp and 0x7E in sp and 0x7C not in sp                           # NaN, max finite, no inf
    assert {0x00, 0x80, 0x01, 0x07, 0x08}.issubset(sp)


def test_round_to_tf32_is_nearest_even():
    x = np.array([1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -11 + 2.0 ** -20])
    assert [hex(int(v)) for v in round_to(x, "tf32")] == ["0x3f800000", "0x3f804000", "0x3f802000"]
    special = round_to(np.array([np.inf, -np.nan, np.finfo(np.float32).max]), "tf32")
    # a NaN becomes tf32's canonical NaN, as smtmodel.fp.convert gives it (the old hand rounding
    # kept the sign and payload: 0xffc00000)
    assert [hex(int(v)) for v in special] == ["0x7f800000", "0x7fc00000", "0x7f800000"]


def test_round_to_tf32_rounds_once_from_float64():
    """One rounding from float64, not two through float32: x lies just above the midpoint of two
    tf32 neighbours and rounds to float32 exactly onto that midpoint (then to even, down)."""
    x = np.array([1.0 + 2.0 ** -11 + 2.0 ** -40])
    assert hex(int(round_to(x, "tf32")[0])) == "0x3f802000"
    assert hex(int(round_to(x.astype(np.float32).astype(np.float64), "tf32")[0])) == "0x3f800000"


@pytest.mark.parametrize("in_fmt,c_fmt,out_fmt", [("fp16", "fp32", "fp32"), ("fp8e4m3", "fp16", "fp16"),
                                                  ("tf32", "fp32", "fp32"), ("fp64", "fp64", "fp64")])
def test_layout_probe_is_exact(in_fmt, c_fmt, out_fmt):
    a, b, c, d = layout_probe(in_fmt, c_fmt, out_fmt, 4)
    got = _vals(c, c_fmt) + (_vals(a, in_fmt) * _vals(b, in_fmt)).sum(axis=1)
    assert np.array_equal(round_to(got, out_fmt), d)
    assert sorted(set(_vals(d, out_fmt).tolist())) == [1.0, 3.0] and (_vals(d, out_fmt) == 3).sum() == 4
