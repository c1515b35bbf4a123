"""An output that cannot be written is one line naming the user's path and the reason in words:
no ``[Errno N]``, no temporary file's name, exit 2, nothing left behind."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from mmaprobe.cli import main

ROOT = Path(__file__).resolve().parents[1]
SURVEY = ROOT / "hwdata" / "survey" / "h100-sxm"


def _run(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    return rc, err.getvalue().splitlines()


CASES = {
    "--smt2 under a file": (["distinguish", "volta-fp16-fp32", "turing-fp16-fp32", "--smt2", "{file}/q.smt2"],
                            "{file}/q.smt2"),
    "--smt2 a folder": (["distinguish", "volta-fp16-fp32", "turing-fp16-fp32", "--smt2", "{dir}"], "{dir}"),
    "survey -o under a file": (["survey", "--device", "dry:sm_90", "--quiet", "-o", "{file}/s"], "{file}/s"),
    "survey --export -o under a file": (["survey", "--export", str(SURVEY), "mma_m16n8k16_f16_f32",
                                         "-o", "{file}/x.jsonl"], "{file}"),
    "survey --export -o a folder": (["survey", "--export", str(SURVEY), "mma_m16n8k16_f16_f32", "-o", "{dir}"],
                                    "{dir}"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_unwritable_output_is_one_line_in_words(tmp_path, name):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    sub = {"{file}": str(tmp_path / "afile"), "{dir}": str(tmp_path / "adir")}

    def fill(text):
        for k, v in sub.items():
            text = text.replace(k, v)
        return text

    argv, names = CASES[name]
    rc, lines = _run([fill(a) for a in argv])
    assert (rc, len(lines)) == (2, 1), (rc, lines)
    line = lines[0]
    assert line.startswith("mmaprobe: error: ") and fill(names) in line, line
    assert "[Errno" not in line and ".tmp" not in line and "'" not in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile"]
    assert list((tmp_path / "adir").iterdir()) == []
