"""identify's run is planned in the queries layer (queries.identify.plan), so that the acceptance
bench runs what the command line runs without importing the command line's handlers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mmaprobe.cli import build_parser
from queries.identify import IdentifyError, plan
from smtmodel.catalog import all_models

ROOT = Path(__file__).resolve().parents[1]


def test_bench_and_survey_import_no_command_handler():
    for f in [*(ROOT / "bench").rglob("*.py"), *(ROOT / "survey").rglob("*.py")]:
        assert not re.search(r"^\s*(from|import)\s+mmaprobe\.commands\b", f.read_text(), re.M), f


def test_default_k_is_the_largest_block_of_the_pair():
    # independently: the L of every unscaled fp16 -> fp32 catalog model (none takes the FP8 halves path)
    ks = [m.L or 1 for m in all_models() if (m.in_key, m.out_fmt) == ("fp16", "fp32") and not m.scale_fmt]
    assert ks and plan.default_k("fp16", "fp32") == max(ks)


def test_prepare_plans_from_the_parsed_options(tmp_path):
    args = build_parser().parse_args(["identify", "--device", "twin:hopper-fp16-fp32", "--journal",
                                      str(tmp_path / "j.jsonl"), "--quiet"])
    p = plan.prepare(args)
    assert (p.in_fmt, p.out_fmt) == ("fp16", "fp32") and p.settings.k == plan.default_k("fp16", "fp32")
    assert p.fallback is not None and p.notes == ()


def test_prepare_refuses_gemm_options_in_its_own_words(tmp_path):
    args = build_parser().parse_args(["identify", "--device", "twin:hopper-fp16-fp32", "--models", "x",
                                      "--journal", str(tmp_path / "j.jsonl"), "--quiet"])
    with pytest.raises(IdentifyError, match="--models belongs to identify --gemm"):
        plan.prepare(args)


def test_the_default_journal_is_kept_out_of_the_current_folder(tmp_path, monkeypatch, capsys):
    """identify -o id.json writes id.json where asked and its journal in $MMAPROBE_STATE (named on
    stderr), nothing else in the current folder; --resume with the same -o finds that journal."""
    from mmaprobe.cli import main
    work, state = tmp_path / "work", tmp_path / "state"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("MMAPROBE_STATE", str(state))
    argv = ["identify", "--device", "twin:cdna1-fp16-fp32", "--in", "fp16", "--out", "fp32", "--space", "e-fdpa",
            "--solver-pairs", "0", "--verify", "100", "-o", "id.json"]      # a 4-point space: the journal is the point
    assert main(argv) == 0
    assert sorted(p.name for p in work.iterdir()) == ["id.json"]
    journals = list(state.rglob("*.journal.jsonl"))
    assert len(journals) == 1 and f"journal {journals[0]}" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0
    assert list(state.rglob("*.journal.jsonl")) == journals
    assert sorted(p.name for p in work.iterdir()) == ["id.json"]
