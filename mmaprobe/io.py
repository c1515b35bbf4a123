"""The command line's JSON output, written through the project's one atomic writer
(:func:`smtmodel.io.atomic_open`)."""

from __future__ import annotations

import json
import sys

from smtmodel.io import atomic_open

__all__ = ["atomic_open", "write_json"]


def write_json(path, obj, *, sort_keys: bool = False, announce: bool = True) -> None:
    """``obj`` as indented JSON to ``path``, atomically; ``wrote PATH`` on stderr if ``announce``."""
    with atomic_open(path) as fh:
        json.dump(obj, fh, indent=1, sort_keys=sort_keys, default=str)
        fh.write("\n")
    if announce:
        print(f"wrote {path}", file=sys.stderr)
