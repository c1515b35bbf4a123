"""Hypothesis spaces (smtmodel.catalog.spaces): lazy points, narrowing, every catalog model inside."""

import json

import numpy as np
import pytest

from smtmodel.catalog import all_models, get_model
from smtmodel.catalog.spaces import FAMILIES, SpaceError, build_space, families_for
from smtmodel.sampling import validation_mix


def _pairs():
    return sorted({(m.in_key, m.out_fmt) for m in all_models() if not m.scale_fmt})   # mixed: "AxB"


def test_default_space_is_the_union_of_vendors():
    s = build_space("fp16", "fp32")
    names = {p.family.name for p in s.parts}
    assert {"t-fdpa", "e-fdpa", "ftz-addmul", "tr-fdpa"} <= names     # NVIDIA and AMD alike
    assert 10**3 <= s.size <= 10**6
    assert s.spec(0).startswith(s.base.id + ":op=tfdpa")
    assert len({s.spec(i) for i in range(0, s.size, 97)}) == len(range(0, s.size, 97))


@pytest.mark.parametrize("pair", _pairs())
def test_every_catalog_model_is_a_point(pair):
    """Each (unscaled) catalog model or rival has a point of its pair's default space that
    computes the same bits (the point's model, re-read by get_model, on 256 mixed cases)."""
    s = build_space(*pair)
    for m in all_models():
        if (m.in_key, m.out_fmt) != pair or m.scale_fmt:
            continue
        i = s.locate(m)
        assert i is not None, f"{m.id} lies outside the {pair} space"
        h = get_model(s.spec(i))
        k = max(m.block(64), h.block(64), 8)
        fa, fb = m.operand_fmts
        a, b, c, _ = validation_mix(fa, m.c_fmt, k, 256, seed=3, b_fmt=fb)
        assert np.array_equal(m.evaluate(a, b, c), h.evaluate(a, b, c)), (m.id, s.spec(i))


def test_narrowing_by_name_and_file(tmp_path):
    s = build_space("bf16", "fp32", "e-fdpa,ftz-addmul")
    assert s.size == 4 + 3
    f = tmp_path / "sp.json"
    f.write_text(json.dumps({"families": [{"family": "t-fdpa", "params": {"L": [8], "carry": [None]}}],
                             "points": ["cdna1-bf16-fp32"]}))
    s = build_space("bf16", "fp32", str(f))
    g = tmp_path / "rho.json"          # output conversions that do not store the output format are left out
    g.write_text(json.dumps({"families": [{"family": "t-fdpa", "params": {"rho": ["RZ-FP32", "RNE-FP16"]}}]}))
    assert {get_model(build_space("fp16", "fp16", str(g)).spec(i)).rho for i in range(0, 1920, 37)} == {"RNE-FP16"}
    assert s.spec(s.size - 1) == "cdna1-bf16-fp32"
    assert all(":op=tfdpa" in s.spec(i) and "L=8" in s.spec(i) for i in range(s.size - 1))


@pytest.mark.parametrize("bad", ["nosuch", "gtr-fdpa", {"families": [{"family": "t-fdpa", "params": {"Q": [1]}}]},
                                 {"families": [{"family": "t-fdpa", "params": {"rho": ["XX"]}}]},
                                 {"families": [{"family": "t-fdpa", "params": {"L": []}}]}, {}])
def test_bad_spaces_are_errors(bad):
    with pytest.raises(SpaceError):
        build_space("fp16", "fp32", bad)


def test_families_by_format():
    assert [f.name for f in families_for("fp8e4m3fnuz", "fp32")] == ["gtr-fdpa"]
    assert "fma" in [f.name for f in families_for("fp64", "fp64")]
    assert set(FAMILIES) >= {"t-fdpa", "fp8-halves", "e-fdpa", "ftz-addmul", "tr-fdpa", "gtr-fdpa", "fma"}


def test_cdna1_pairwise_rival_differs_where_fp32_additions_round():
    """1 + 2^-24 + 2^-24 (+0): exact E-FDPA (seed 000 Table 6) gives 1 + 2^-23; pairwise fp32
    additions round 1 + 2^-24 to 1 (tie to even) twice. Expected values by NumPy float32 arithmetic."""
    one, t = 0x3C00, 0x0C00                  # fp16 1.0 and 2^-12
    a = np.array([[one, t, t, 0]], np.uint64)
    b = np.array([[one, t, t, 0]], np.uint64)
    c = np.array([0], np.uint64)
    f32 = np.float32
    pairwise = (f32(0) + ((f32(1) + f32(2.0 ** -24)) + (f32(2.0 ** -24) + f32(0))))
    exact = f32(1 + 2.0 ** -23)
    got_rival = get_model("cdna1-fp16-fp32-pairwise").evaluate(a, b, c)[0]
    got_base = get_model("cdna1-fp16-fp32").evaluate(a, b, c)[0]
    assert int(got_rival) == int(np.array([pairwise]).view(np.uint32)[0])
    assert int(got_base) == int(np.array([exact]).view(np.uint32)[0])
    assert got_rival != got_base


@pytest.mark.parametrize("how,want", [("ignore", 1.0), ("RNE", 1.0), ("RNA", 1 + 2.0 ** -10), ("nan", None)])
def test_tf32_low_bits_readings(how, want):
    """fp32 1 + 2^-11 in a TF32 container (a tie between TF32's 1 and 1 + 2^-10) times 1.0."""
    x = int(np.array([1 + 2.0 ** -11], np.float32).view(np.uint32)[0])
    one = int(np.array([1.0], np.float32).view(np.uint32)[0])
    a = np.array([[x, 0, 0, 0]], np.uint64)
    b = np.array([[one, 0, 0, 0]], np.uint64)
    d = get_model(f"ampere-tf32-fp32:tf32_low={how}").evaluate(a, b, np.array([0], np.uint64))[0]
    got = float(np.array([d], np.uint32).view(np.float32)[0])
    assert (got != got) if want is None else got == want


def test_every_family_has_open_ranges_for_every_catalog_pair():
    """`--space open` and `open:FAMILY` build for every format pair (and scales) a catalog model
    has: a family without open ranges (the fma-chain family once) made `identify --space open`
    stop with a KeyError on fp16/bf16 -> fp32."""
    pairs = {(m.in_key, m.out_fmt, (m.scale_fmt, m.scale_block) if m.scale_fmt else None) for m in all_models()}
    for fi, fo, sc in sorted(pairs, key=str):
        fams = families_for(fi, fo, sc)
        total = build_space(fi, fo, "open", scale=sc).size
        sizes = [build_space(fi, fo, f"open:{f.name}", scale=sc).size for f in fams]
        assert all(sizes) and total >= max(sizes), (fi, fo, sc)


def test_sample_ends_when_the_space_holds_fewer_points_than_asked():
    """A space just larger than the sample, with the included points on top: every point once
    (the loop must not wait for more distinct points than the space holds)."""
    s = build_space("fp4e2m1", "fp32", scale="mx")
    n = s.size - 3
    got = s.sample(n, include=tuple(range(10)))
    assert sorted(got) == list(range(s.size))
