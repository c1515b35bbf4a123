"""identify on the committed H100 survey captures (hwdata/survey/h100-sxm): the deciding inputs
committed under probes/ decide what the captures cannot (every point they name reproduces every
captured one-block answer of its kernel, and each case's pair differs on it as its expect says),
and a run on one kernel's export ends identified or narrowed by the captured data, its pairs those
of the committed file. Expected values come from the captures (the twin reading them), not from
a recorded table."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest

from smtmodel.catalog import get_model
from smtmodel.vectors import read_vectors

H100 = Path(__file__).resolve().parent.parent / "hwdata" / "survey" / "h100-sxm"
DECIDING = sorted((H100 / "probes").glob("identify-*.deciding.jsonl"))


@functools.lru_cache(maxsize=1)
def _captures() -> dict:
    survey = pytest.importorskip("survey.run")
    _, caps = survey.captured_sets(str(H100))
    return {x[0].id: x for x in caps}


def _one_block(kernel: str):
    """(a, b, c, observed) of a kernel's one-block sets, as ``survey --export`` writes them."""
    spec, sets, _, arrays = _captures()[kernel]
    rows = [s for s in sets if s.a.shape[1] == spec.k]
    a, b, c = (np.concatenate([getattr(s, x) for s in rows]).astype(np.uint64) for x in "abc")
    d = np.concatenate([arrays[f"{spec.id}/{s.name}"].astype(np.uint64)[:len(s.a)] for s in rows])
    return a, b, c, d


def test_deciding_files_name_survey_targets():
    names = {p.name.removeprefix("identify-").removesuffix(".deciding.jsonl") for p in DECIDING}
    assert names, "no deciding inputs committed"
    from survey.identify import targets
    assert names <= {s.id for s in targets("sm_90")}


@pytest.mark.slow
@pytest.mark.parametrize("path", DECIDING, ids=lambda p: p.name)
def test_deciding_inputs_split_what_the_capture_cannot(path):
    kernel = path.name.removeprefix("identify-").removesuffix(".deciding.jsonl")
    vf = read_vectors(str(path))
    a, b, c, d = _one_block(kernel)
    assert vf.k == a.shape[1]
    for m in vf.header["models"]:          # every point named reproduces every captured answer
        got = np.asarray(get_model(m).evaluate(a, b, c), np.uint64)
        assert (got == d).all(), f"{m}: {(got != d).sum()} captured answers differ"
    da, db, dc = vf.arrays()
    fo = vf.out_fmt
    for i, case in enumerate(vf.cases):
        x, y = case["pair"]
        outs = {m: fo.hex(int(get_model(m).evaluate(da[i:i + 1], db[i:i + 1], dc[i:i + 1])[0])) for m in (x, y)}
        assert outs == {m: case["expect"][m] for m in (x, y)} and outs[x] != outs[y], case["id"]


@pytest.mark.slow
def test_bf16_mma_export_ends_narrowed_by_the_capture(tmp_path, capsys):
    """mma_m16n8k16_bf16_f32's export on a file device: every point left reproduces the capture,
    the catalog models named among them do too, and where it ends narrowed, the pairs left are the
    committed file's."""
    survey = pytest.importorskip("survey")
    from mmaprobe.cli import main
    kernel = "mma_m16n8k16_bf16_f32"
    cap = tmp_path / "cap.jsonl"
    survey.export(str(H100), kernel, str(cap))
    o = tmp_path / "id.json"
    rc = main(["identify", "--device", f"file:{cap}", "--solver-budget", "0", "--verify", "0", "-o", str(o),
               "--journal", str(tmp_path / "j.jsonl"), "--quiet"])
    assert rc == 0, capsys.readouterr().out
    obj = json.loads(o.read_text())
    a, b, c, d = _one_block(kernel)
    for m in set(obj["class"]) | set(obj["catalog_match"]):
        assert (np.asarray(get_model(m).evaluate(a, b, c), np.uint64) == d).all(), m
    if obj["status"] == "identified":
        return
    assert obj["ending"] == "captured"
    assert all(p["same"] == p["answers"] == len(d) for p in obj["pairs"])
    committed = read_vectors(str(H100 / "probes" / f"identify-{kernel}.deciding.jsonl"))
    assert {tuple(x["pair"]) for x in committed.cases} == {(p["a"], p["b"]) for p in obj["pairs"] if p.get("case")}


def _bench():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "bench_identify_h100", Path(__file__).resolve().parent.parent / "bench" / "identify_h100.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_chained_sets_read_as_four_instructions():
    """The chained sets (4K products) are four K-product instructions through the accumulator:
    the kernel's own catalog model (the card's) read as that chain reproduces every chained
    capture of the fp8 wgmma kernel, and so does its own 4K reading there (L = K); for fp16
    mma (K = 16) the point with L = 32, alike at k = 16, reproduces the chain but not as one
    64-product reading, so a 4K export identified with --k would decide L from a misreading."""
    bench = _bench()
    card = json.loads((H100 / "card.json").read_text())
    for kernel in ("wgmma_m64n8k32_e4m3_f32", "mma_m16n8k16_f16_f32"):
        spec, sets, _, arrays = _captures()[kernel]
        s = next(s for s in sets if s.a.shape[1] == 4 * spec.k)
        hw = arrays[f"{spec.id}/{s.name}"].astype(np.uint64)[:len(s.a)]
        own = card["kernels"][kernel]["own_model"]
        assert (bench.chained(own, s.a, s.b, s.c, spec.k) == hw).all(), own
        m = get_model(own)
        if m.L == spec.k:
            assert (np.asarray(m.evaluate(s.a, s.b, s.c), np.uint64) == hw).all()
        if kernel.startswith("mma_m16n8k16_f16"):
            wide = f"{own}:L={2 * spec.k}"
            assert (bench.chained(wide, s.a, s.b, s.c, spec.k) == hw).all()
            assert (np.asarray(get_model(wide).evaluate(s.a, s.b, s.c), np.uint64) != hw).any()


def test_committed_result_matches_its_probes():
    """bench/results/identify_h100.json: the ten kernels, each narrowed pair shown alike on every
    captured answer, and a probes file for each kernel with a deciding input (as many cases)."""
    res = json.loads((Path(__file__).resolve().parent.parent / "bench" / "results" / "identify_h100.json").read_text())
    from survey.identify import targets
    assert [r["kernel"] for r in res["kernels"]] == [s.id for s in targets("sm_90")]
    for r in res["kernels"]:
        assert r["status"] in ("identified", "narrowed")
        assert all(p["same"] == p["answers"] for p in r["pairs"])
        path = H100 / "probes" / f"identify-{r['kernel']}.deciding.jsonl"
        if r["status"] == "narrowed" and r["pairs_with_deciding_input"]:
            assert len(read_vectors(str(path)).cases) == r["pairs_with_deciding_input"]
