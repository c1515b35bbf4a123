"""The project's one file writer: atomic (a temporary file beside the target, renamed into place),
so a file appears complete or not at all, even when a run is interrupted."""

from __future__ import annotations

import contextlib
import gzip
import os
import secrets
from pathlib import Path


@contextlib.contextmanager
def atomic_open(path, mode: str = "w", gz: bool | None = None):
    """Open a temporary file beside ``path`` for writing (``"w"`` UTF-8 text or ``"wb"``; gzip
    when ``gz``, by default when the name ends in ``.gz``); on a clean exit it replaces ``path``,
    on an exception it is removed and ``path`` is left as it was."""
    path = Path(path)
    gz = path.suffix == ".gz" if gz is None else gz
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)     # the umask applies, as for open()
    text = "b" not in mode
    try:
        with os.fdopen(fd, "wb") as raw:
            if gz:
                with gzip.open(raw, "wt" if text else "wb", encoding="utf-8" if text else None) as fh:
                    yield fh
            elif text:
                with open(raw.fileno(), "w", encoding="utf-8", closefd=False) as fh:
                    yield fh
            else:
                yield raw
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
