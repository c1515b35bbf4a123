"""identify on block-scaled units (MX: E8M0 per 32, NVFP4: UE4M3 per 16).

Expected values: the hidden devices are catalog models (seed 000 Tables 4-5, Algorithms 8-9) or
overrides of them, read by the twin; identify must name the device's own point (an independent
reading: ``Space.locate`` of the hidden model), or a class containing it, in <= 6 launches.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from queries.identify import Settings, identify
from queries.identify.cases import Cases
from queries.identify.devices import FileDevice, TwinDevice
from queries.identify.errors import NeedAnswers
from queries.identify.hypotheses import outputs
from queries.identify.pool import probe_pool, with_scales
from smtmodel.sampling import SCALE_KINDS
from smtmodel.catalog import all_models, get_model
from smtmodel.catalog.spaces import SpaceError, build_space
from smtmodel.formats import get_format
from smtmodel.vectors import VectorFile, make_header, write_vectors

SCALED = [m.id for m in all_models() if m.kind == "catalog" and m.scale_fmt and not m.mixed and m.validated]
# (the UNVALIDATED CDNA4 scaled hypotheses: test_cdna4.py, -m slow)


def _k(m) -> int:
    """The pair's largest catalog block (GST-FDPA's L = 64 on FP4; 32 otherwise)."""
    return 64 if m.in_fmt == "fp4e2m1" else 32


FITS = ("identified", "narrowed")
"""A fitting run ends "identified" (one point, or all proved alike) or "narrowed" (behaviours the
probes and the twin search do not split, not proved alike); both keep the device's own point."""


def _run(spec: str, narrow=None, verify: int = 1000):
    dev = TwinDevice(spec)
    space = build_space(dev.in_fmt, dev.out_fmt, narrow, scale=(dev.scale_fmt, dev.scale_block))
    out = identify(space, dev, Settings(k=_k(dev.model), verify=verify, solver_pairs=0, pool_random=256))
    return dev, space, out


def test_fourteen_scaled_models():
    assert len(SCALED) == 14          # 5 MX ST-FDPA + MXFP4 GST + NVFP4 GST, on two Blackwells
    for m in SCALED:                  # the two Blackwells' models of the same formats are one arithmetic
        if m.startswith("rtx-"):
            a, b = (dataclasses.asdict(get_model(x)) for x in (m.removeprefix("rtx-"), m))
            assert {k: v for k, v in a.items() if k not in _NOT_ARITHMETIC} == \
                   {k: v for k, v in b.items() if k not in _NOT_ARITHMETIC}, m


_NOT_ARITHMETIC = {"id", "arch", "sm", "gfx", "kernels", "description", "source", "instruction"}


# The RTX Blackwell (sm_120) models compute what the Blackwell (sm_100) models of the same formats
# compute (the same parameters; only the kernels differ): the same hidden twin, so -m slow.
@pytest.mark.parametrize("mid", [pytest.param(m, marks=pytest.mark.slow if m.startswith("rtx-") else ()) for m in SCALED])
def test_catalog_scaled_model_recovered(mid):
    dev, space, out = _run(mid)
    own = space.locate(dev.model)
    assert own is not None, f"{mid} is not a point of its pair's scaled space"
    assert out.status in FITS, out.message
    assert own in out.live
    assert out.launches <= 6
    assert out.verified == 1000


_OPEN_F = {"open": True, "families": [{"family": "st-fdpa", "params": {
    "L": [32], "F": [25, 28, 30, 33], "rho": ["RZ-FP32", "RNE-FP32"], "carry": [None, 3], "normalize": [False]}}]}


@pytest.mark.parametrize("spec, narrow", [
    ("blackwell-fp8e5m2-fp32-mx:F=24,carry=3,rho=RNE-FP32", None),       # a combination no catalog model has
    ("blackwell-fp4e2m1-fp32-nvfp4:G=8,F=34", None),                     # GST with groups of 8
    ("blackwell-fp6e2m3-fp32-mx:F=30", _OPEN_F),                          # F outside the default range
])
def test_off_catalog_scaled_point_recovered(spec, narrow):
    dev, space, out = _run(spec, narrow)
    own = space.locate(dev.model)
    assert own is not None
    assert out.status in FITS, out.message
    assert own in out.live and out.launches <= 6


def test_scaled_space_is_chosen_by_the_scales():
    """The format pair alone does not say whether a unit is scaled: fp4e2m1 -> fp32 has no
    unscaled catalog model, MX and NVFP4 spaces differ in their families (MX: also the scaled
    GTR-FDPA reading of the CDNA4 hypotheses)."""
    mx = build_space("fp4e2m1", "fp32", scale="mx")
    nv = build_space("fp4e2m1", "fp32", scale=("ue4m3", 16))
    assert {p.family.name for p in mx.parts} == {"st-fdpa", "gst-fdpa", "gtr-fdpa"}
    assert {p.family.name for p in nv.parts} == {"gst-fdpa"}
    assert (nv.base.scale_fmt, nv.base.scale_block) == ("ue4m3", 16)
    with pytest.raises(SpaceError):
        build_space("fp8e4m3", "fp32", "st-fdpa")          # unscaled: the family sits out
    with pytest.raises(SpaceError):
        build_space("fp8e4m3", "fp32", scale="e8m0/16")


def test_scale_probes_vary_scales_alone():
    """Every kind of scale appears, the elements are left as they were."""
    base = get_model("blackwell-fp4e2m1-fp32-nvfp4")
    pool = probe_pool(base, 64, seed=3, structured=1, random=64)
    assert pool.scaled and pool.sa.shape == (len(pool), 4)
    flat = np.concatenate([pool.sa.ravel(), pool.sb.ravel()])
    assert 0x7F in flat and 0x00 in flat and 0x01 in flat and 0x7E in flat      # NaN, zero, extremes (UE4M3)
    c = Cases(pool.a[:70], pool.b[:70], pool.c[:70])
    s = with_scales(c, "e8m0", 2, seed=1)
    assert np.array_equal(s.a, c.a) and np.array_equal(s.c, c.c)
    kinds = np.arange(70) % len(SCALE_KINDS)
    push = s.sa[kinds == SCALE_KINDS.index("push")].astype(int) + s.sb[kinds == SCALE_KINDS.index("push")].astype(int)
    assert (push.max(axis=1) > 2 * 127).all()           # one block above 2^0 * 2^0
    assert 0xFF in s.sa[kinds == SCALE_KINDS.index("nan")] or 0xFF in s.sb[kinds == SCALE_KINDS.index("nan")]


def test_scaled_cases_round_trip_through_hex():
    base = get_model("blackwell-fp8e4m3-fp32-mx")
    pool = probe_pool(base, 32, seed=0, structured=1, random=16).take(np.arange(40))
    rows = pool.to_json(base.in_key, base.c_fmt, base.scale_fmt)
    assert "a_scale" in rows[0] and len(rows[0]["b_scale"]) == 1
    back = Cases.from_json(rows, base.in_key, base.c_fmt, base.scale_fmt)
    assert np.array_equal(back.sa, pool.sa) and np.array_equal(back.sb, pool.sb) and back.keys() == pool.keys()


def test_file_device_answers_scaled_probes(tmp_path):
    """A capture with scales (../shared/spec/vectors.md: a_scale, b_scale) prunes the scaled
    space; probes it lacks are written with their scales."""
    m = get_model("rtx-blackwell-fp4e2m1-fp32-nvfp4")
    cases = probe_pool(m, 64, seed=5, structured=1, random=128)
    d = outputs(m, cases)
    fo = get_format(m.out_fmt)
    rows = [dict(cases.case_dict(i, m.in_key, m.c_fmt, m.scale_fmt), id=f"c{i}", observed={"twin": fo.hex(int(d[i]))})
            for i in range(len(cases))]
    path = tmp_path / "nvfp4.jsonl"
    write_vectors(path, VectorFile(make_header(m.in_fmt, m.c_fmt, m.out_fmt, 64, scale_fmt="ue4m3", scale_block=16),
                                   rows))
    dev = FileDevice(str(path))
    assert (dev.scale_fmt, dev.scale_block) == ("ue4m3", 16)
    got = dev.launch(cases.take(np.arange(10)))
    assert np.array_equal(got, d[:10])
    space = build_space(dev.in_fmt, dev.out_fmt, scale=(dev.scale_fmt, dev.scale_block))
    out = identify(space, dev, Settings(k=64, verify=0, solver_pairs=0, pool_random=256))
    assert space.locate(m) in out.live
    new = with_scales(Cases(cases.a[:2], cases.b[:2], cases.c[:2]), "ue4m3", 4, seed=99)
    with pytest.raises(NeedAnswers):
        dev.launch(new)
    from smtmodel.vectors import read_vectors
    nxt = read_vectors(dev.next_path)
    assert nxt.header["scale_fmt"] == "ue4m3" and "a_scale" in nxt.cases[0]


@pytest.mark.parametrize("fi, scale, narrow", [("fp4e2m1", "mx", None), ("fp4e2m1", "nvfp4", None),
                                               ("fp8e4m3", "mx", "open")])
def test_scaled_groups_read_like_points(fi, scale, narrow):
    """Batched ST-FDPA (F, carry, ρ at run time) and GST-FDPA (ρ) groups give the bits the
    point-by-point twin gives (the independent reading: one model per point)."""
    from queries.identify.batched import evaluate
    from queries.identify.hypotheses import try_outputs
    space = build_space(fi, "fp32", narrow, scale=scale)
    k = 64 if fi == "fp4e2m1" else 32
    pool = probe_pool(space.base, k, seed=1, structured=1, random=64)
    pool = pool.take(np.arange(0, len(pool), max(1, len(pool) // 60)))
    idx = np.arange(space.size) if space.size < 300 else np.random.default_rng(0).choice(space.size, 60, replace=False)
    d, ok = evaluate(space, idx, pool)
    for j, i in enumerate(idx):
        want = try_outputs(space.spec(int(i)), pool)
        assert ok[j] == (want is not None)
        if want is not None:
            assert np.array_equal(d[j], want), space.spec(int(i))


@pytest.mark.parametrize("scale", ["mx", "nvfp4"])
def test_scaled_groups_compiled_read_like_numpy(scale, monkeypatch):
    """A compiled group kernel (run-time F, carry, ρ as inputs after the scales) gives the NumPy
    reading's bits on scaled probes (two readings of one semantics)."""
    from queries.identify import batched
    space = build_space("fp4e2m1", "fp32", None, scale=scale)
    pool = probe_pool(space.base, 64, seed=1, structured=1, random=64)
    pool = pool.take(np.arange(0, len(pool), len(pool) // 300))
    groups = [g for g in batched.groups(space, np.arange(space.size))
              if g[0] is not None and g[0].family.name in ("st-fdpa", "gst-fdpa")]   # run-time F, carry, rho
    idx = np.concatenate([groups[0][2], groups[-1][2]])           # two structural groups
    monkeypatch.setattr(batched, "_COMPILED", set())
    monkeypatch.setattr(batched, "NATIVE_MIN_WORK", 1 << 62)
    ref, ok = batched.evaluate(space, idx, pool)
    monkeypatch.setattr(batched, "NATIVE_MIN_WORK", 0)
    got, ok2 = batched.evaluate(space, idx, pool)
    assert len(batched._COMPILED) == 2                            # both groups read compiled
    assert ok.any() and np.array_equal(ok, ok2) and np.array_equal(ref, got)


def test_open_st_fdpa_point_outside_every_catalog_value():
    """F = 37, carry = 6, RU, L = 8: no catalog value, from the open st-fdpa space (42,624 points)."""
    dev, space, out = _run("blackwell-fp8e4m3-fp32-mx:F=37,carry=6,rho=RU-FP32,L=8", "open")
    assert space.size > 40_000
    assert out.status in FITS, out.message
    assert space.locate(dev.model) in out.live and out.launches <= 6


def test_journal_keeps_scales_and_resume_finishes(tmp_path):
    import json

    from queries.identify.errors import DeviceError
    from queries.identify.journal import Journal
    hidden = "blackwell-fp4e2m1-fp32-nvfp4"
    space = build_space("fp4e2m1", "fp32", scale="nvfp4")
    header = {"space": space.to_dict(), "device": "twin", "k": 64, "seed": 0, "in_fmt": space.in_fmt,
              "c_fmt": space.base.c_fmt, "out_fmt": space.out_fmt, "scale_fmt": "ue4m3", "scale_block": 16}
    s = Settings(k=64, verify=500, solver_pairs=0, pool_random=256)
    path = tmp_path / "j.jsonl"
    with pytest.raises(DeviceError):
        identify(space, TwinDevice(hidden, fail_after=1), s, Journal(path, header, resume=False))
    recs = [json.loads(x) for x in path.read_text().splitlines()]
    launch = next(r for r in recs if r.get("cases"))
    assert len(launch["cases"][0]["a_scale"]) == 4                     # UE4M3 per 16 at k = 64
    dev2 = TwinDevice(hidden)
    out = identify(space, dev2, s, Journal(path, header, resume=True))
    assert out.status in FITS and space.locate(get_model(hidden)) in out.live
    assert dev2.launches == out.launches - 1 + out.verify_launches     # launch 1 came from the journal


def test_cli_identifies_a_scaled_twin(tmp_path, capsys):
    from mmaprobe.cli import main
    out = tmp_path / "unit.json"
    rc = main(["identify", "--device", "twin:rtx-blackwell-fp6e3m2-fp32-mx", "-o", str(out), "--verify", "500",
               "--solver-pairs", "0", "--quiet"])
    assert rc == 0
    assert "e8m0 scales per 32" in capsys.readouterr().out
    m, want = get_model(str(out)), get_model("rtx-blackwell-fp6e3m2-fp32-mx")
    assert (m.op, m.L, m.F, m.rho, m.scale_fmt, m.scale_block) == (want.op, want.L, want.F, want.rho, "e8m0", 32)


def test_cli_offline_file_device_with_scales(tmp_path, capsys):
    """A new file device of an NVFP4 unit (--scale nvfp4): identify writes scaled probes, a twin
    (standing in for the GPU) fills in 'observed', --resume continues until identified."""
    import json

    from mmaprobe.cli import main
    from smtmodel.vectors import read_vectors
    hidden = get_model("blackwell-fp4e2m1-fp32-nvfp4")
    dev_path, nxt, out = tmp_path / "gpu.jsonl", tmp_path / "gpu.next.jsonl", tmp_path / "unit.json"
    args = ["identify", "--device", f"file:{dev_path}", "--in", "fp4e2m1", "--out", "fp32", "--scale", "nvfp4",
            "--next", str(nxt), "-o", str(out), "--verify", "300", "--solver-pairs", "0", "--quiet"]
    rc = main(args)
    for _ in range(6):
        if rc != 3:
            break
        vf = read_vectors(nxt)
        assert vf.header["scale_fmt"] == "ue4m3"
        c = Cases.from_json(vf.cases, "fp4e2m1", "fp32", "ue4m3")
        d = outputs(hidden, c)
        rows = [dict(r, observed={"twin": f"0x{int(x):08x}"}) for r, x in zip(vf.cases, d)]
        nxt.write_text("\n".join(json.dumps(x) for x in [vf.header] + rows) + "\n")
        rc = main(args + ["--resume"])
    assert rc == 0
    m = get_model(str(out))
    assert (m.op, m.G, m.F, m.scale_fmt, m.scale_block) == ("gstfdpa", 16, 35, "ue4m3", 16)
    assert main(["identify", "--device", "twin:blackwell-fp8e4m3-fp32-mx", "--scale", "nvfp4", "--quiet",
                 "--journal", str(tmp_path / "j.jsonl")]) == 2
    assert "not --scale ue4m3/16" in capsys.readouterr().err


def test_open_gst_fdpa_point_outside_every_catalog_value():
    """G = 4, F = 22, RU, zeros ignored: no catalog value, from the open gst-fdpa NVFP4 space."""
    dev, space, out = _run("blackwell-fp4e2m1-fp32-nvfp4:G=4,F=22,rho=RU-FP32,e_zero=ignore", "open:gst-fdpa")
    assert space.size > 4000
    assert out.status in FITS, out.message
    assert space.locate(dev.model) in out.live and out.launches <= 6
