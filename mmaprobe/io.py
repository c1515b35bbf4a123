"""The command line's one file writer: atomic (a temporary file beside the target, renamed into
place), so a file appears complete or not at all, even when a command is interrupted."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import secrets
from pathlib import Path


@contextlib.contextmanager
def atomic_open(path, mode: str = "w"):
    """Open a temporary file beside ``path`` for writing; on a clean exit it replaces ``path``,
    on an exception it is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)     # the umask applies, as for open()
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path, obj, *, sort_keys: bool = False, announce: bool = True) -> None:
    """``obj`` as indented JSON to ``path``, atomically; ``wrote PATH`` on stderr if ``announce``."""
    with atomic_open(path) as fh:
        json.dump(obj, fh, indent=1, sort_keys=sort_keys, default=str)
        fh.write("\n")
    if announce:
        print(f"wrote {path}", file=sys.stderr)
