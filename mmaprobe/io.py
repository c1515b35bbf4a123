"""The command line's JSON output, written through the project's one atomic writer
(:func:`smtmodel.io.atomic_open`), and the check of every output path before a command works.

A command declares its output options (:func:`declare_outputs`; :func:`mmaprobe.args.add_output`
does it for ``-o``) and :func:`check_outputs` checks them before the command's handler runs: a
path that names a folder where a file is written (or a file where a folder is), a folder on the
way that is a file, or a folder that cannot be written is a user error naming the user's path,
said before any work. Missing folders are created when the output is written."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from smtmodel.io import atomic_open

from .errors import CliError

__all__ = ["atomic_open", "check_output", "check_outputs", "declare_outputs", "write_json"]

KINDS = ("file", "dir", "prefix")
"""file: one file at the path; dir: a folder of files; prefix: files PATH.png, PATH.json, ..."""


def write_json(path, obj, *, sort_keys: bool = False, announce: bool = True) -> None:
    """``obj`` as indented JSON to ``path``, atomically; ``wrote PATH`` on stderr if ``announce``."""
    with atomic_open(path) as fh:
        json.dump(obj, fh, indent=1, sort_keys=sort_keys, default=str)
        fh.write("\n")
    if announce:
        print(f"wrote {path}", file=sys.stderr)


def check_output(path, what: str = "-o", kind: str = "file") -> None:
    """Raise :class:`CliError` (naming ``what`` and ``path``) unless ``path`` can be written as
    ``kind``: a file path that is no folder, a folder path that is no file, and the nearest
    existing folder above it writable (missing folders between are created on writing)."""
    p = Path(os.fspath(path))
    if str(path) == "":
        raise CliError(f"{what}: an empty path")
    if kind == "file" and p.is_dir():
        raise CliError(f"{what} {path}: is a folder; give a file name")
    if kind == "dir" and p.exists() and not p.is_dir():
        raise CliError(f"{what} {path}: is a file; give a folder")
    start = p if kind == "dir" else p.parent
    up = start.absolute()
    while not up.exists():
        if up.is_symlink():
            raise CliError(f"{what} {path}: {up} is a broken link")
        up = up.parent
    if not up.is_dir():
        raise CliError(f"{what} {path}: {up} is a file, not a folder")
    if not os.access(up, os.W_OK | os.X_OK):
        raise CliError(f"{what} {path}: cannot write in {up}")


def declare_outputs(parser, **kinds: str) -> None:
    """Declare a parser's output options: ``output="file"``, ``save="file"``, ... (the
    namespace attribute and its :data:`KINDS`), checked by :func:`check_outputs`."""
    have = dict(parser.get_default("out_paths") or {})
    have.update(kinds)
    parser.set_defaults(out_paths=have)


def check_outputs(args) -> None:
    """Check every declared output option that was given (:func:`check_output`)."""
    for attr, kind in (getattr(args, "out_paths", None) or {}).items():
        path = getattr(args, attr, None)
        if path is not None:
            check_output(path, "--" + attr.replace("_", "-") if attr != "output" else "-o", kind)
