"""``identify --gemm`` with a file device: the capture's formats against --in/--out, where the
probes still needing answers are written (never beside the capture), and the headline's word for
survivors nothing proves alike."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from mmaprobe.cli import main

# two models of identical arithmetic (the B300 alias of a B200 model): both survive every probe
PAIR = ["--models", "blackwell-fp16-fp32,blackwell-ultra-fp16-fp32", "--dataflow", "cutlass2", "--quiet"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gemm")
    (tmp / "hw").mkdir()
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main(["identify", "--gemm", "--device", "twin-gemm:blackwell-fp16-fp32:cutlass2", *PAIR,
                   "--capture", str(tmp / "hw" / "cap.npz"), "-o", str(tmp / "a.json")])
    return tmp, rc, out.getvalue()


def test_survivors_not_proved_alike_are_narrowed(run):
    tmp, rc, text = run
    assert rc == 0
    head = [line for line in text.splitlines() if "hypothesis(es) give the same bits" in line]
    assert len(head) == 1 and head[0].startswith("narrowed: 2 ") and "identified" not in head[0]
    assert json.loads((tmp / "a.json").read_text())["status"] == "narrowed"


def test_capture_formats_are_checked_against_in_and_out(run, capsys):
    tmp = run[0]
    cap = tmp / "hw" / "cap.npz"
    assert str(np.load(cap)["in_fmt"]) == "fp16"
    for opt, fmt in (("--in", "bf16"), ("--out", "fp16")):
        assert main(["identify", "--gemm", "--device", f"file:{cap}", opt, fmt, *PAIR]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("mmaprobe: error: ") and f"not {opt} {fmt}" in err[0], err
    assert sorted(p.name for p in (tmp / "hw").iterdir()) == ["cap.npz"]


def test_probes_needing_answers_are_never_written_beside_the_capture(tmp_path, capsys):
    hw = tmp_path / "hw"
    hw.mkdir()
    argv = ["identify", "--gemm", "--device", f"file:{hw / 'new.npz'}", "--in", "fp16", "--out", "fp32",
            "--models", "hopper-fp16-fp32", "--dataflow", "cutlass2", "--quiet"]
    assert main(argv) == 3                                  # no answer yet
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("next probes: ")]
    nxt = Path(re.match(r"next probes: (\S+)", line[0]).group(1))
    assert nxt.is_file() and nxt.parent != hw and list(hw.iterdir()) == []
    shutil.rmtree(nxt.parent)                               # the temporary folder the run made
    assert main([*argv, "-o", str(tmp_path / "id.json")]) == 3
    assert (tmp_path / "id.next.npz").is_file() and list(hw.iterdir()) == []
    assert main([*argv, "--next", str(tmp_path / "mine.npz")]) == 3
    assert (tmp_path / "mine.npz").is_file() and list(hw.iterdir()) == []
