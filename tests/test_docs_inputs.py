"""docs/inputs.md runs as written: its ```python blocks (one namespace) and ```sh blocks
(``mmaprobe ...`` lines, run in-process by ``mmaprobe.cli.main``; ``# exit N`` states the exit
status, 0 otherwise) in order, in a fresh folder; each ```text block's lines must appear in what
the block before it printed. The expected values in the doc come from NumPy / ml_dtypes casts
(fp32 nearest to 0.3) and the Python API on the in-memory arrays."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from mmaprobe import cli

DOC = Path(__file__).parent.parent / "docs" / "inputs.md"


def blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"```(\w+)\n(.*?)```", text, re.S)


def test_docs_inputs_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    found = blocks(DOC.read_text(encoding="utf-8"))
    assert [k for k, _ in found].count("sh") >= 4 and [k for k, _ in found].count("text") >= 2
    ns: dict = {}
    printed = ""
    for kind, body in found:
        if kind == "python":
            capsys.readouterr()
            exec(compile(body, f"{DOC.name}:python", "exec"), ns)
            printed = capsys.readouterr().out
        elif kind == "sh":
            printed = ""
            for line in body.splitlines():
                if not line.strip():
                    continue
                cmd, _, comment = line.partition("#")
                want = int(m.group(1)) if (m := re.search(r"exit (\d+)", comment)) else 0
                argv = shlex.split(cmd)
                assert argv[0] == "mmaprobe", line
                capsys.readouterr()
                assert cli.main(argv[1:]) == want, line
                out, err = capsys.readouterr()
                printed += out + err
                if want == 2:
                    assert len(err.strip().splitlines()) == 1 and not list(tmp_path.glob("Dx.npy*")), line
        elif kind == "text":
            for line in body.splitlines():
                if line.strip():
                    assert line in printed, f"{line!r} not in:\n{printed}"
