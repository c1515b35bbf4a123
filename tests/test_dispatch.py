"""The cuBLASLt FP8 dispatch tables (smtmodel.dataflow.dispatch, mmaemu 0.1.0's records).

Expected values: mmaemu's own metadata (row counts, sha256, its confirmed split combinations),
and the RTX 4060 hardware recordings in ../shared/hwdata/rtx4060_mmaemu (the split cuBLASLt
logged for each recorded ``torch._scaled_mm`` call) -- data independent of the table's rows.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from smtmodel.formats import dtype_name
from smtmodel.dataflow.dispatch import (DATA, FMTS, OUTS, DispatchError, derive, get_table,
                                        verified_combos)

HW = Path(__file__).resolve().parents[1] / ".." / "shared" / "hwdata" / "rtx4060_mmaemu"
H100, ADA = "cublaslt-h100pcie-fp8", "cublaslt-rtx4060-fp8"


def test_tables_load_checked_with_the_issue_row_counts():
    """Row counts as mmaemu states them (1,767,416 H100 PCIe, 1,228,448 RTX 4060 rows)."""
    h, a = get_table(H100), get_table(ADA)
    assert len(h.cols["M"]) == 1_767_416 and len(a.cols["M"]) == 1_228_448
    assert h.meta["profile_device"]["gpu"] == "NVIDIA H100 PCIe" and a.meta["profile_device"]["sm_count"] == 24


def test_a_damaged_copy_is_refused(tmp_path):
    for f in DATA.iterdir():
        shutil.copy(f, tmp_path / f.name)
    p = tmp_path / "heur_rtx4060_lt12.8.3.14.npz"
    raw = bytearray(p.read_bytes())
    raw[-100] ^= 1
    p.write_bytes(bytes(raw))
    with pytest.raises(DispatchError, match="sha256"):
        get_table(ADA, data_dir=tmp_path)


def _split_combos(name):
    t = get_table(name)
    c = t.cols
    sp = c["splitK"] > 1
    keys = set(zip(*(c[k][sp].tolist() for k in ("fast", "splitK", "custom", "out", "fa", "fb"))))
    return {(bool(f), S, t.scheme_of(S, cu), dtype_name(OUTS[o]), f"{FMTS[fa][3:]}x{FMTS[fb][3:]}")
            for f, S, cu, o, fa, fb in keys}


@pytest.mark.parametrize("name,n_table,n_all", [(H100, 140, 444), (ADA, 486, 520)])
def test_every_confirmed_split_combination_is_the_tables(name, n_table, n_all):
    """mmaemu's verified_split_combos*.json: every (fast, S, scheme, out, format pair) confirmed by
    a live call and marked in the table is exactly a split the table's rows predict (scheme by
    mmaemu's customOption rule), and the table predicts no split combination that is not
    confirmed. The file carries combinations, not shapes; combinations confirmed off the table's
    rows (explicit splits, other shapes) are not predictions of the table."""
    v = verified_combos(name)
    assert len(v) == n_all and all(x["verified"] for x in v)
    confirmed = {(x["fast"], x["S"], x["scheme"], x["out"], x["fmt_pair"]) for x in v if x["in_table"]}
    assert len(confirmed) == n_table
    assert _split_combos(name) == confirmed


def test_lookup_gives_the_profile_and_says_not_in_the_table():
    h = get_table(H100)
    d = h.lookup(16, 2048, 8192)                     # Llama-3.2-1B down projection, decode batch
    assert (d.splitk, d.scheme) == (2, "contiguous")
    assert d.dataflow.name == "cublaslt-hopper-fp8-fast" and d.dataflow.slices == 2 and d.dataflow.out == "bf16"
    assert h.lookup(41, 2048, 8192, fast=False).dataflow.name == "cublaslt-hopper-fp8-slow"
    a = get_table(ADA)
    c = a.cols
    j = int(np.nonzero((c["splitK"] > 1) & (c["custom"] == 1) & (c["ws"] == 1))[0][0])
    d = a.lookup(int(c["M"][j]), int(c["N"][j]), int(c["K"][j]), FMTS[c["fa"][j]], FMTS[c["fb"][j]], OUTS[c["out"][j]],
                 bool(c["fast"][j]))
    assert d.scheme == "pairwise" and d.dataflow.combine == "pairwise" and d.dataflow.assign == "interleaved"
    for bad in [(481, 4096, 4096), (1, 4097, 4096)]:
        with pytest.raises(DispatchError, match="^not in the table: .*nothing is inferred"):
            h.lookup(*bad)
    with pytest.raises(DispatchError, match="rejected"):
        h.lookup(1, 4096, 4096, out="fp8e5m2")
    with pytest.raises(DispatchError, match="unknown dispatch table"):
        get_table("cublaslt-h100-fp8")


# ---- the RTX 4060 recordings ---------------------------------------------------------------------

_OUT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float8_e4m3fn": "fp8e4m3", "float8_e5m2": "fp8e5m2"}


@pytest.fixture(scope="module")
def hw():
    if not (HW / "index.json").is_file():
        pytest.skip("no ../shared/hwdata/rtx4060_mmaemu")
    from smtmodel.mmaemu import open_hwmini
    return open_hwmini(HW)


def _predict(t, M, N, K, fa, fb, out, fast):
    try:
        d = t.lookup(M, N, K, fa, fb, out, fast)
    except DispatchError:
        return None
    return d.splitk, d.scheme


def test_recorded_calls_with_cuBLASLt_s_own_split_are_predicted(hw):
    """``gemm_call`` recordings: torch._scaled_mm calls whose metadata hold M, N, K and no
    algorithm or split (torch 2.7.1 cannot force one: the split is cuBLASLt's heuristic choice, at
    torch's 1 MiB workspace), the split as cuBLASLt logged it. Every logged split in the table is
    predicted, and the table predicts no split where none was logged."""
    t = get_table(ADA)
    logged, unlogged, off = 0, 0, 0
    for o in hw.gemm_outputs():
        if o.kind != "gemm_call":
            continue
        c = o.call
        pred = _predict(t, c["M"], c["N"], c["K"], o.fmt_a, o.fmt_b, o.out_fmt, bool(o.fast))
        if pred is None:
            off += 1
        elif o.splitk is not None:
            assert pred == tuple(o.splitk), (o.id, pred, o.splitk)
            logged += 1
        else:
            assert pred == (1, "none"), (o.id, pred)
            unlogged += 1
    assert (logged, unlogged, off) == (71, 188, 1024)


def test_recorded_scaled_mm_outputs_with_their_shape_are_predicted(hw):
    """``gemm`` recordings keep only some rows of A and B, so their call shape is not in their
    metadata; COVERAGE.txt names one recorded output with its (M, N, K) per split combination.
    Those whose ``api`` is ``scaled_mm`` (a torch._scaled_mm call: cuBLASLt's own split) are all
    predicted at torch's workspace. Those replayed through ``accumulate`` include cuBLASLt calls
    with a forced algorithm configuration (recordings named ``*forced*``, ``unverified_split_combos``)
    and calls at other workspaces: they are not predictions of the table, and some differ."""
    t = get_table(ADA)
    by = {f"{o.case_id}/{o.name}": o for o in hw.gemm_outputs()}
    pat = re.compile(r"^\s+\((True|False), (\d+), '(\w+)', '(\w+)', '(\w+)', '(\w+)'\): (\S+) \((\d+), (\d+), (\d+)\)$")
    agree, acc = 0, {"agree": 0, "differ": 0, "no row": 0}
    for line in (HW / "COVERAGE.txt").read_text().splitlines():
        m = pat.match(line)
        if not m or m.group(7) not in by:
            continue
        fast, S, scheme, out, fa, fb, path, M, N, K = m.groups()
        o = by[path]
        assert (bool(o.fast), o.splitk) == (fast == "True", (int(S), scheme))
        pred = _predict(t, int(M), int(N), int(K), "fp8" + fa, "fp8" + fb, _OUT[out], fast == "True")
        if o.api == "scaled_mm":
            assert pred == (int(S), scheme), (path, pred)
            agree += 1
        else:
            acc["no row" if pred is None else "agree" if pred == (int(S), scheme) else "differ"] += 1
    assert agree == 13 and acc == {"agree": 86, "differ": 52, "no row": 85}


@pytest.mark.skipif(not os.environ.get("MMAEMU_WHEEL"), reason="set MMAEMU_WHEEL to the mmaemu 0.1.0 wheel")
def test_derive_reproduces_the_committed_data(tmp_path):
    derive(os.environ["MMAEMU_WHEEL"], tmp_path)
    for f in DATA.iterdir():
        assert (tmp_path / f.name).read_bytes() == f.read_bytes(), f.name
