"""A command given what another command takes says which one: an Ozaki scheme in ``scheme
claim`` (and the other tensor-core scheme commands), a survey export without predictions in
``verdict``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmaprobe.cli import main
from smtmodel.vectors import read_vectors, write_vectors

ROOT = Path(__file__).resolve().parents[1]
SURVEY = ROOT / "hwdata" / "survey" / "h100-sxm"


@pytest.mark.parametrize("argv, hint", [
    (["scheme", "claim", "ozaki1-s3", "markidis"], "mmaprobe scheme ozaki-claim ozaki1-s3"),
    (["scheme", "claim", "markidis", "ozaki2-n8"], "mmaprobe scheme ozaki-claim ozaki2-n8"),
    (["scheme", "stats", "ozaki1-s3"], "ozaki-claim"),
    (["scheme", "bound", "ozaki1-s3"], "ozaki-claim"),
])
def test_an_ozaki_scheme_points_to_its_command(argv, hint, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "is an Ozaki scheme" in err[0] and hint in err[0], err


def test_verdict_on_an_export_says_eval_first_and_eval_then_verdict_works(tmp_path, capsys):
    exp, ev = tmp_path / "x.jsonl", tmp_path / "e.jsonl"
    assert main(["survey", "--export", str(SURVEY), "mma_m16n8k16_f16_f32", "-o", str(exp)]) == 0
    capsys.readouterr()
    assert main(["verdict", str(exp)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and f"mmaprobe eval {exp} --model MODEL" in err[0], err
    vf = read_vectors(exp)                         # the first 300 captures are enough to judge
    vf.cases = vf.cases[:300]
    write_vectors(exp, vf)
    assert main(["eval", str(exp), "--model", "hopper-fp16-fp32", "--model", "ampere-fp16-fp32", "-o", str(ev)]) == 0
    assert main(["verdict", str(ev)]) == 0
    assert "surviving hypotheses:" in capsys.readouterr().out
