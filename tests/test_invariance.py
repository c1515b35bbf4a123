"""Batch, split-K and accumulation invariance of torch._scaled_mm (queries.invariance, the
``invariance`` and ``dispatch`` commands).

Expected values: the dispatch tables (mmaemu's records) say where the dataflow changes; that a
witness changes the row is checked independently here by the GEMM twin on whole GEMMs of the two
batch sizes, the witness as one row of A among random rows (elements are independent: seed 000
§3.1.1). Identical-dataflow proofs need no computation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mmaprobe import cli
from queries.invariance import InvarianceError, against, batch, fast, parse_m, settle, splitk
from smtmodel.catalog import get_model
from smtmodel.dataflow import parse_dataflow
from smtmodel.dataflow.dispatch import get_table
from smtmodel.gemm import gemm_bits
from smtmodel.sampling import round_to

ADA, H100 = "cublaslt-rtx4060-fp8", "cublaslt-h100pcie-fp8"
ONE = 0x3F800000


def _row0(t, M, N, K, a_row, b_col, seed):
    """Output (0, 0) of a whole M x N x K call at the dataflow the table records for M, with the
    witness as row 0 of A and column 0 of B, the rest random normal FP8."""
    rng = np.random.default_rng(seed)
    A = round_to(rng.standard_normal((M, K)), "fp8e4m3")
    B = round_to(rng.standard_normal((K, N)), "fp8e4m3")
    A[0], B[:, 0] = a_row, b_col
    d = t.lookup(M, N, K)
    D = gemm_bits(get_model(t.model_id("fp8e4m3", "fp8e4m3")), A, B, None, beta_bits=0, dataflow=d.dataflow,
                  scale_a_bits=ONE, scale_b_bits=ONE)
    return int(D[0, 0])


def test_batch_groups_split_changes_with_witnesses_that_change_the_row():
    """RTX 4060, N=128 K=1920 (the table holds 32 of M 1..256): unsplit up to M=24, S=3 pairwise
    from 31 to 128, unsplit again from 129; the row changes at both transitions."""
    r = batch(ADA, 128, 1920, (1, 256))
    assert [(lo, hi, d.splitk, d.scheme) for lo, hi, d in r.segments] == \
        [(1, 24, 1, "none"), (31, 128, 3, "pairwise"), (129, 256, 1, "none")]
    assert len(r.covered) == 32 and len(r.missing) == 224
    (g,) = r.groups
    assert g.where == [(24, 31), (128, 129)] and g.verdict.status == "differ"
    t = get_table(ADA)
    a, b = np.array(g.verdict.a, np.uint64), np.array(g.verdict.b, np.uint64)
    for M0, M1 in g.where:
        d0, d1 = _row0(t, M0, 128, 1920, a, b, 1), _row0(t, M1, 128, 1920, a, b, 2)
        assert d0 != d1 and {d0, d1} == set(g.verdict.d)


def test_one_dataflow_over_the_table_is_proved_invariant():
    """H100 PCIe, Llama-3-8B's 4096 x 4096 projection: every recorded M up to 480 is unsplit
    with fast accumulation -- one dataflow, so no M changes the row (no search runs)."""
    r = batch(H100, 4096, 4096, (1, 480))
    assert len(r.covered) == 480 and r.groups == [] and r.kernel_changes > 0
    s = splitk(H100, 4096, 4096, (1, 480))
    assert [g.verdict.status for g in s.groups] == ["same"] and "identical dataflow" in s.groups[0].verdict.how


def test_splitk_on_against_off():
    s = splitk(ADA, 128, 1920, (24, 31))
    assert sorted(g.verdict.status for g in s.groups) == ["differ", "same"]


def test_fast_against_slow():
    f = fast(ADA, 128, 1920, (24, 31))
    assert {g.verdict.status for g in f.groups} == {"differ"}
    assert all(not g.left.dataflow.restart and g.right.dataflow.restart == 2 for g in f.groups)


def test_against_a_fixed_cutlass_dataflow():
    x = against(ADA, "cutlass3-sm90", 128, 1920, (24, 31), limit=256)
    # unsplit fast accumulation is one chain over K like CUTLASS's at alpha = 1: no witness (unknown)
    assert [(g.left.splitk, g.right.out, g.verdict.status) for g in x.groups] == \
        [(1, "bf16", "unknown"), (3, "bf16", "differ")]


def test_a_pair_without_witness_is_unknown_not_equal():
    """Fast unsplit cuBLASLt (64-wide k-tiles, fma(alpha, acc, +0)) and CUTLASS 3's epilogue over
    one chain (RN(alpha*acc) at beta = 0) meet no witness at alpha = 1; the search cannot prove
    them equal and says unknown with the count, never 'same'."""
    v = settle("ada-fp8e4m3-fp32:zero_align=ignore", parse_dataflow("cublaslt-ada-fp8-fast:out=bf16"),
               parse_dataflow("cutlass3-sm90:out=bf16"), 256, "fp8e4m3", "fp8e4m3", limit=256)
    assert v.status == "unknown" and v.tried > 0 and v.a is None


@pytest.mark.slow
def test_two_slices_serial_or_pairwise_are_proved_equal():
    """S = 2 serial (p0 + p1) against pairwise (p1 + p0): equal exactly when the core's fp32
    addition commutes, proved by a solver (about 13 s with Bitwuzla on 2 cores; cached after)."""
    v = settle("ada-fp8e4m3-fp32:zero_align=ignore", parse_dataflow("cublaslt-ada-fp8-fast:S=2,combine=serial"),
               parse_dataflow("cublaslt-ada-fp8-fast:S=2,combine=pairwise"), 256, "fp8e4m3", "fp8e4m3")
    assert v.status == "same" and "commutative" in v.how and v.tried == 0


def test_bad_ranges():
    assert parse_m("7") == (7, 7) and parse_m("1:4096") == (1, 4096)
    for bad in ("0:5", "9:3", "1:70000", "a:b"):
        with pytest.raises(InvarianceError):
            parse_m(bad)


def _cli(args, capsys):
    rc = cli.main(args)
    return rc, capsys.readouterr()


@pytest.mark.parametrize("args, what", [
    (["invariance", "batch", "--profile", "cublaslt-a100-fp8", "--n", "4096", "--k", "4096"], "invalid choice"),
    (["invariance", "batch", "--profile", H100, "--n", "4097", "--k", "4096"], "not in the table"),
    (["invariance", "batch", "--profile", H100, "--n", "4096", "--k", "4096", "--m", "20000:30000"], "not in the table"),
    (["invariance", "batch", "--profile", H100, "--n", "4096", "--k", "4096", "--m", "1:100000"], "at most"),
    (["invariance", "against", "--profile", H100, "--n", "4096", "--k", "4096"], "--dataflow"),
    (["dispatch", "--profile", ADA, "--n", "4096", "--k", "4096", "--m", "481"], "not in the table"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(args, what, tmp_path, capsys):
    out = tmp_path / "r.json"
    try:
        rc, cap = _cli(args + ["-o", str(out)], capsys)
    except SystemExit as e:                    # argparse's own refusal (a bad choice)
        rc, cap = e.code, capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("mmaprobe: error: ") and what in err[0]
    assert not out.exists()


def test_cli_report_and_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc, cap = _cli(["invariance", "batch", "--profile", ADA, "--n", "128", "--k", "1920", "--m", "1:256",
                    "-o", str(out)], capsys)
    assert rc == 1 and "bits change" in cap.out and "between M 24->31, 128->129" in cap.out
    j = json.loads(out.read_text())
    g = j["groups"][0]
    assert j["covered"] == 32 and g["status"] == "differ" and len(g["witness"]["a"]) == 1920
    rc, cap = _cli(["invariance", "batch", "--profile", H100, "--n", "4096", "--k", "4096", "--m", "1:64"], capsys)
    assert rc == 0 and "proof by identical dataflow" in cap.out
    rc, cap = _cli(["dispatch", "--profile", H100, "--n", "2048", "--k", "8192", "--m", "40:41"], capsys)
    assert rc == 0 and "M=40: split-K S=2 contiguous" in cap.out and "M=41: unsplit" in cap.out
