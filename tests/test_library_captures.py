"""The H100 survey's library captures (hwdata/survey/h100-sxm: real hardware outputs, the expected
values here) reproduced bit for bit by a named (model, dataflow): the recorded block and the
sha256 digest of the whole D that the journal records. The H100 torch dispatch rule predicts each
captured call's dataflow from its shape alone, and its batch-size changes.

Whole-D digests of large M (a sweep's M >= 512) run in the slow suite; every block, and every
digest of the smaller calls, in the default one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from smtmodel.catalog import get_model
from smtmodel.dataflow import hopper_gemmex as rule
from smtmodel.dataflow import parse_dataflow
from survey.library import digest, predict
from survey.library import inputs as _inputs
from survey.library_fit import library_captures

FOLDER = Path(__file__).resolve().parents[1] / "hwdata" / "survey" / "h100-sxm"
HEADER, CALLS = library_captures(FOLDER)
G = {g.name: g for g, _, _ in CALLS}
REC = {g.name: rec for g, rec, _ in CALLS}
ARR = {g.name: arr for g, _, arr in CALLS}
MAX_FAST_DIGEST = 256 * 1024 * 4096
"""The largest M*N*K whose whole-D digest the default suite computes (about a second)."""

_INPUTS: dict = {}


def inputs(g):
    """The call's seeded inputs, drawn once per call (a sweep's A is 4096 x 4096)."""
    if g.name not in _INPUTS:
        _INPUTS[g.name] = _inputs(g)
    return _INPUTS[g.name]


# (capture, M or None, model, dataflow): the dataflow that reproduces it, named here
REPRODUCED = [
    ("matmul-fp16", None, "hopper-fp16-fp32", "cutlass3-sm90:tile=64,S=2"),
    ("matmul-bf16", None, "hopper-bf16-fp32", "cutlass3-sm90:tile=64,S=2"),
    ("addmm-fp16", None, "hopper-fp16-fp32", "cutlass3-sm90:tile=64,S=2"),
    ("addmm-bf16", None, "hopper-bf16-fp32", "cutlass3-sm90:tile=64,S=2"),
    ("matmul-fp32-tf32", None, "hopper-tf32-fp32:tf32_low=RNE", "cutlass3-sm90:tile=32,S=12"),
    ("matmul-fp32", None, "hopper-fp32-fp32", "cutlass2:tile=8,S=16,assign=interleaved"),
    ("scaled_mm-e4m3-fast", None, "hopper-fp8e4m3-fp32", "cublaslt-hopper-fp8-fast"),
    ("scaled_mm-e4m3-slow", None, "hopper-fp8e4m3-fp32", "cublaslt-hopper-fp8-slow"),
    ("scaled_mm-e4m3-fast-longk", None, "hopper-fp8e4m3-fp32", "cublaslt-hopper-fp8-fast:S=6"),
    ("scaled_mm-e4m3-slow-longk", None, "hopper-fp8e4m3-fp32", "cublaslt-hopper-fp8-slow"),
    *(("batch-bf16", m, "hopper-bf16-fp32", f"cutlass3-sm90:tile=64,S={s}") for m, s in
      ((1, 3), (2, 3), (4, 3), (8, 3), (16, 3), (32, 3), (64, 2), (128, 1), (256, 1), (512, 1), (1024, 1), (2048, 1),
       (4096, 1))),
    *(("batch-e4m3", m, "hopper-fp8e4m3-fp32", "cublaslt-hopper-fp8-fast")
      for m in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)),
]


def _case(name, M, model, df):
    g = G[name]
    M = M or g.M
    flow = parse_dataflow(df)
    if flow.out == "model" and g.out_fmt != "fp32":
        flow = replace(flow, out=g.out_fmt)
    key = f"{name}/M{M}" if g.ms else name
    return g, M, get_model(model), flow.validate(), np.asarray(ARR[name][key], np.uint64)


def _ids(x):
    return f"{x[0]}{'' if x[1] is None else '/M' + str(x[1])}"


@pytest.mark.parametrize("case", REPRODUCED, ids=[_ids(c) for c in REPRODUCED])
def test_capture_reproduced(case):
    g, M, m, df, block = _case(*case)
    a, b, c = inputs(g)
    assert np.array_equal(predict(m, df, g, a, b, c, M), block)
    if M * g.N * g.K <= MAX_FAST_DIGEST:
        d = predict(m, df, replace(g, rows=M, cols=0), a, b, c, M)
        assert digest(d) == REC[g.name]["digests"][str(M)]


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in REPRODUCED if (c[1] or 0) * 1024 * 4096 > MAX_FAST_DIGEST],
                         ids=[_ids(c) for c in REPRODUCED if (c[1] or 0) * 1024 * 4096 > MAX_FAST_DIGEST])
def test_capture_digest_of_large_m(case):
    g, M, m, df, _ = _case(*case)
    a, b, c = inputs(g)
    assert digest(predict(m, df, replace(g, rows=M, cols=0), a, b, c, M)) == REC[g.name]["digests"][str(M)]


def test_a_split_the_capture_refutes():
    """The same calls under another split are refuted: the tests above can fail (M = 4 under S = 2,
    M = 64 under S = 3, the 256-square fp16 matmul unsplit)."""
    for name, M, model, df in (("batch-bf16", 4, "hopper-bf16-fp32", "cutlass3-sm90:tile=64,S=2"),
                               ("batch-bf16", 64, "hopper-bf16-fp32", "cutlass3-sm90:tile=64,S=3"),
                               ("matmul-fp16", None, "hopper-fp16-fp32", "cutlass3-sm90:tile=64")):
        g, M, m, flow, block = _case(name, M, model, df)
        a, b, c = inputs(g)
        got = predict(m, flow, replace(g, rows=M, cols=0), a, b, c, M)
        assert digest(got) != REC[g.name]["digests"][str(M)]


def test_rule_predicts_every_captured_call_from_its_shape():
    """The dispatch rule, from (M, N, K, format) alone, names the split the capture needs (the
    rule's own list, CAPTURED, and the tests' list above agree)."""
    named = {(n, m): df for n, m, _, df in REPRODUCED}
    for (fmt, M, N, K), pt in rule.POINTS.items():
        p = rule.predict(M, N, K, fmt)
        assert (p.model, p.dataflow.tile, p.dataflow.slices, p.dataflow.assign) == \
            (pt["model"], pt["tile"], pt["slices"], pt["assign"]) and p.basis == "captured"
        if (pt["capture"], None) in named:
            want = parse_dataflow(named[(pt["capture"], None)])
            assert (want.tile, want.slices, want.assign) == (pt["tile"], pt["slices"], pt["assign"])
    for cap, M, N, K, fmt, S in rule.CAPTURED:
        p = rule.predict(M, N, K, fmt)
        assert p.splitk == S and not p.validated and p.basis == "captured"
        name, _, mm = cap.partition("/M")
        want = parse_dataflow(named[(name, int(mm) if mm else None)])
        assert (p.dataflow.slices, p.dataflow.tile, p.dataflow.epilogue) == (want.slices, want.tile, want.epilogue)
        assert p.model == f"hopper-{fmt}-fp32"


def test_rule_bounds_and_refusals():
    from smtmodel.dataflow.dispatch import DispatchError
    assert rule.predict(1, 1024, 128, "bf16").splitk == 2          # capped at the k-tile count
    assert rule.predict(1, 1024, 256, "bf16").splitk == 2          # 3 slices of 4 k-tiles: the third empty
    assert rule.predict(16, 1024, 4096, "bf16", workspace=128 << 10).splitk == 1   # partials do not fit
    assert rule.predict(8, 1024, 4096, "bf16", workspace=128 << 10).splitk == 3
    assert rule.predict(8, 64, 8192, "fp16").basis == "rule, K extrapolated"
    for args, what in (((256, 256, 2048, "tf32"), "captured shapes only"), ((256, 256, 4096, "bf16", "fp32"), "output"),
                       ((256, 256, 4096, "fp32", "bf16"), "returns fp32"), ((8, 8, 8, "fp8e4m3"), "outside the rule"),
                       ((256, 255, 4096, "bf16"), "not a multiple of 8"), ((0, 8, 8, "bf16"), "positive")):
        with pytest.raises(DispatchError, match=what):
            rule.predict(*args)


def test_batch_sweep_changes_predicted():
    """The rule's dataflow by M over the bf16 sweep (N = 1024, K = 4096) changes exactly where the
    captured whole-D digests change split (S = 3 up to M = 63, 2 up to 127, then 1), and every
    change of row 0's bits among the captured M lies across one of them."""
    from queries.invariance import _segments
    from smtmodel.dataflow.tables import get_table
    got = get_table(rule.NAME).lookup_m(range(1, 4097), 1024, 4096, "bf16", "bf16", "bf16")
    segs, _ = _segments(got)
    assert [(lo, hi, d.splitk) for lo, hi, d in segs] == [(1, 63, 3), (64, 127, 2), (128, 4096, 1)]
    g = G["batch-bf16"]
    rows = {M: np.asarray(ARR["batch-bf16"][f"batch-bf16/M{M}"], np.uint64)[0] for M in g.ms}
    changes = [(x, y) for x, y in zip(g.ms, g.ms[1:]) if not np.array_equal(rows[x], rows[y])]
    assert changes == [(64, 128)]
    assert all(any(x <= hi < y for _, hi, _ in segs[:-1]) for x, y in changes)


def test_recheck_judges_library_calls_by_prediction(monkeypatch):
    """survey.library_fit on the 256-square calls: each reproduced by the dispatch's prediction,
    block and digest. A block with one bit flipped (no GPU computed it) fits nothing: a finding that
    names what was searched (the split search shrunk to S = 2 here, for time)."""
    import survey.library_fit as fit
    for name in ("matmul-bf16", "addmm-fp16", "matmul-fp32-tf32"):
        g = G[name]
        r = fit.analyse(g, HEADER["arch"], ARR[name], *inputs(g), REC[name]["digests"])
        assert r["reproduced"] and r["by"]["how"] == "prediction" and r["prediction"]["digest"] is True, r
    monkeypatch.setattr(fit, "SPLITS", (2,))
    g = G["matmul-bf16"]
    block = np.array(ARR["matmul-bf16"]["matmul-bf16"])
    block[1, 5] ^= 1
    r = fit.analyse(g, HEADER["arch"], {"matmul-bf16": block}, *inputs(g), REC["matmul-bf16"]["digests"])
    assert not r["reproduced"] and r["prediction"]["block"] is False
    assert "refuted" in r["finding"] and "to decide" in r["finding"] and r["tried"] > 10


@pytest.mark.slow
def test_recheck_cli_library(capsys):
    """mmaprobe survey --recheck on the H100 folder: every library line printed; seed 003 from the
    library-rerun subfolder."""
    from mmaprobe.cli import main
    main(["survey", "--recheck", str(FOLDER), "--quiet"])
    out = capsys.readouterr().out
    for name in G:
        assert name in out
    assert "[library-rerun]" in out


def test_fp8_sweep_invariance_predicted():
    """The borrowed H100 PCIe table puts one dataflow (unsplit fast accumulation) on every M of the
    e4m3 sweep it holds (M = 4096 it does not hold: no claim), and the capture's row 0 is indeed
    the same for every M, each M's whole D reproduced by that dataflow (test_capture_reproduced)."""
    from smtmodel.dataflow.tables import get_table
    g = G["batch-e4m3"]
    got = get_table("cublaslt-h100pcie-fp8").lookup_m(g.ms, g.N, g.K, "fp8e4m3", "fp8e4m3", "bf16", True)
    assert sorted(got) == [m for m in g.ms if m != 4096]
    assert {d.dataflow.text() for d in got.values()} == {"cublaslt-hopper-fp8-fast:out=bf16"}
    rows = [np.asarray(ARR["batch-e4m3"][f"batch-e4m3/M{M}"], np.uint64)[0] for M in g.ms]
    assert all(np.array_equal(rows[0], r) for r in rows[1:])


@pytest.mark.slow
def test_invariance_batch_on_the_h100_rule(capsys):
    """mmaprobe invariance batch on the rule over the captured sweep's shape: the two changes of
    dataflow (63 -> 64, 127 -> 128), each with a witness the twin confirms (exit 1: bits change)."""
    from mmaprobe.cli import main
    rc = main(["invariance", "batch", "--profile", rule.NAME, "--a", "bf16", "--b", "bf16", "--out", "bf16",
               "--n", "1024", "--k", "4096", "--m", "1:4096", "--limit", "256"])
    out = capsys.readouterr().out
    assert rc == 1 and "between M 63->64" in out and "between M 127->128" in out
    assert out.count("bits change: witness found") == 2 and "UNVALIDATED" in out
