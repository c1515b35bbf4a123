"""The command line's shared machinery: one registry, one range syntax, one error format, narrow
catches (a bug is an internal error with a traceback under --debug), one atomic writer."""

from __future__ import annotations

import json

import pytest

from mmaprobe import cli
from mmaprobe.args import exp_range, glue_negative_values
from mmaprobe.commands import COMMANDS, catalog
from mmaprobe.errors import EXIT_INTERNAL, EXIT_USAGE, CliError, run_command
from mmaprobe.io import atomic_open, write_json
from smtmodel.formats import FormatError

EVERY_COMMAND = ["formats", "models", "eval", "check", "distinguish", "equivalent", "features", "feature",
                 "suite", "scheme", "bound", "harness", "run", "verdict", "verify", "export-matlab",
                 "import-matlab", "gemm", "identify", "explain", "plot", "report"]


@pytest.mark.parametrize("name", EVERY_COMMAND)
def test_registry_builds_every_command(name, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args([name, "--help"])
    assert exc.value.code == 0 and f"usage: mmaprobe {name}" in capsys.readouterr().out


def test_registry_lists_each_module_once():
    """Every command module of mmaprobe/commands/ is registered, once."""
    from pathlib import Path
    import mmaprobe.commands as pkg
    files = {p.stem for p in Path(pkg.__file__).parent.glob("*.py")} - {"__init__", "ozaki"}   # ozaki: under scheme
    assert len(COMMANDS) == len(set(COMMANDS)) and {m.__name__.rsplit(".", 1)[1] for m in COMMANDS} == files


@pytest.mark.parametrize("text, want", [("-10:10", (-10, 10)), ("-10,10", (-10, 10)), ("3:3", (3, 3)),
                                        ("-15,-2", (-15, -2)), ("any", None), ("none", None)])
def test_exp_range_accepts_both_separators(text, want):
    assert exp_range(text) == want


@pytest.mark.parametrize("text", ["5", "1:2:3", "a:b", "10:-10", ""])
def test_exp_range_refuses(text):
    import argparse
    with pytest.raises(argparse.ArgumentTypeError):
        exp_range(text)


def test_negative_range_after_a_space():
    assert glue_negative_values(["x", "--exp-range", "-10:10", "--c-exp-range", "-3,4", "--k", "-1"]) == \
        ["x", "--exp-range=-10:10", "--c-exp-range=-3,4", "--k", "-1"]
    args = cli.build_parser().parse_args(glue_negative_values(
        ["distinguish", "a", "b", "--exp-range", "-10:10", "--c-exp-range", "-3,4"]))
    assert args.exp_range == (-10, 10) and args.c_exp_range == (-3, 4)
    args = cli.build_parser().parse_args(["scheme", "worst", "oy-fp16"])
    assert args.exp_range == (-15, 14) and args.c_exp_range == (-15, 14)


def test_usage_error_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["distinguish", "a", "b", "--exp-range", "1:0"])
    assert exc.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("mmaprobe: error: argument --exp-range") and err.count("\n") == 1


def _raiser(exc):
    def handler(args):
        raise exc
    return handler


@pytest.mark.parametrize("exc", [CliError("bad thing"), FormatError("bad\nformat"), FileNotFoundError("gone")])
def test_user_errors_one_line_exit_2(exc, capsys):
    assert run_command(_raiser(exc), None) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("mmaprobe: error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_internal_error_is_not_a_user_error(monkeypatch, capsys):
    """A width error from the core is a bug: one line naming it, exit 70; --debug (before or after
    the command) adds the traceback."""
    monkeypatch.setattr(catalog, "cmd_formats", _raiser(ValueError("width mismatch: 8 vs 16")))
    assert cli.main(["formats"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("mmaprobe: internal error: ValueError: width mismatch: 8 vs 16")
    assert "--debug" in err and err.count("\n") == 1 and "Traceback" not in err
    for argv in (["--debug", "formats"], ["formats", "--debug"]):
        assert cli.main(argv) == EXIT_INTERNAL
        err = capsys.readouterr().err
        assert "Traceback" in err and "width mismatch" in err


def test_cli_value_text_shows_specials(capsys):
    """Vectors print values through the format rules: ue4m3 0x7f is NaN (not 480.0), fp16 0x7c00 inf."""
    from mmaprobe.commands.query import value_text
    assert value_text(0x7F, "ue4m3") == "nan"
    assert value_text(0x7C00, "fp16") == "inf"
    assert value_text(0x3C00, "fp16") == "1.0"


def test_atomic_writer_keeps_the_old_file(tmp_path):
    path = tmp_path / "out.json"
    write_json(path, {"a": 1}, announce=False)
    with pytest.raises(RuntimeError):
        with atomic_open(path) as fh:
            fh.write("half")
            raise RuntimeError("interrupted")
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_atomic_writer_gzip_by_name(tmp_path):
    import gzip
    with atomic_open(tmp_path / "x.jsonl.gz") as fh:
        fh.write("é\n")
    assert gzip.decompress((tmp_path / "x.jsonl.gz").read_bytes()).decode() == "é\n"
    with atomic_open(tmp_path / "y.bin", "wb") as fh:
        fh.write(b"\x00\xff")
    assert (tmp_path / "y.bin").read_bytes() == b"\x00\xff"


def test_layers_do_not_import_the_cli():
    """The query layer and the harness never import the command line (lint-imports checks the
    whole contract; this is its cheap core, run by pytest alone)."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    for pkg in ("smtmodel", "queries", "hw_runner"):
        for f in (root / pkg).rglob("*.py"):
            assert not re.search(r"^\s*(from|import)\s+mmaprobe\b", f.read_text(), re.M), f


def test_suite_records_a_bug_and_goes_on(tmp_path, monkeypatch, capsys):
    """One pair hitting a bug does not lose the others; the index says so and the exit status is 70."""
    from queries.distinguish import QueryError
    from queries.distinguish import suite

    def fake(a, b, **kw):
        raise (ValueError("width mismatch: 8 vs 16") if b.endswith("carry4") else QueryError("cannot ask"))

    monkeypatch.setattr(suite, "distinguish", fake)
    rc = cli.main(["suite", "--models", "volta-fp16-fp32-carry2", "volta-fp16-fp32-carry3",
                   "volta-fp16-fp32-carry4", "-o", str(tmp_path)])
    assert rc == EXIT_INTERNAL
    index = json.loads((tmp_path / "index.json").read_text())["results"]
    reasons = {k.split("__vs__")[1]: v["reason"] for k, v in index.items()}
    assert len(index) == 3 and all(v["status"] == "error" for v in index.values())
    assert reasons["volta-fp16-fp32-carry3"] == "QueryError: cannot ask"
    assert reasons["volta-fp16-fp32-carry4"].startswith("internal error: ValueError: width mismatch")
    assert "mmaprobe: internal error in volta-fp16-fp32-carry2__vs__volta-fp16-fp32-carry4" in capsys.readouterr().err
