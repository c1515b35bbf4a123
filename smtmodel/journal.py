"""Append-only JSON Lines journals: the one mechanism under the campaign, identify and survey
journals (each a schema of records on it: :mod:`mmaprobe.campaign.journal`,
:mod:`queries.identify.journal`, :mod:`survey.store`).

- :func:`create`: a new journal holding its header line, written atomically;
- :func:`append`: one record as one line, written with one ``write`` and ``fsync``-ed; a write
  that fails (``ENOSPC``) is cut back, so the file ends on its last complete line;
- :func:`read`: the header and the records with their line numbers. A last line without its
  newline is a record the writer did not finish (the process was killed mid-write): it is
  dropped and said (:attr:`Lines.torn`); :func:`cut_torn` cuts the file back before appending.
  Any other damage (a line that is not a JSON object, a header of another kind) is refused in one
  line naming the file and the line, as the caller's error type.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .io import DataFileError, atomic_open, json_objects


class JournalError(DataFileError):
    """A journal that cannot be read as one (one line naming the file and line)."""


@dataclass
class Lines:
    """A journal read back: ``header``, ``records`` as (line number, object), ``good`` bytes of
    complete lines and ``torn`` bytes of an unfinished last line (0: none)."""
    path: Path
    header: dict
    records: list
    good: int
    torn: int

    def note(self) -> str | None:
        """What reading dropped, in words (None when nothing was)."""
        if not self.torn:
            return None
        return (f"{self.path}: dropped its last line, a record the writer did not finish ({self.torn} bytes); "
                "resuming from the records before it")


def dumps(obj, canonical: bool = False) -> str:
    """One record as its line's text (``canonical``: sorted keys, anything else as ``str``)."""
    return json.dumps(obj, sort_keys=True, default=str) if canonical else json.dumps(obj)


def create(path, header: dict, canonical: bool = False) -> None:
    """A new journal at ``path`` holding only ``header`` (atomically: whole or absent)."""
    with atomic_open(Path(path)) as fh:
        fh.write(dumps(header, canonical) + "\n")


def append(path, obj, canonical: bool = False, fd: int | None = None) -> None:
    """Append ``obj`` as one line, written in full and fsync-ed, or (on an error) not at all;
    ``fd``: an open descriptor of the file (else it is opened for this line)."""
    data = (dumps(obj, canonical) + "\n").encode()
    own = fd is None
    if own:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        except BaseException:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass                        # reading drops a torn last line anyway
            raise
    finally:
        if own:
            os.close(fd)


def read(path, is_header, what: str, error: type = JournalError) -> Lines:
    """Read the journal at ``path``: its first line must satisfy ``is_header`` (else "not
    ``what``"); every other complete line must be a JSON object. Raises ``error`` in one line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read the journal ({exc.strerror or exc})") from None
    good = data.rfind(b"\n") + 1                     # complete lines end at the last newline
    torn = len(data) - good if data[good:].strip() else 0
    lines = json_objects(data[:good].split(b"\n")[:-1], path, error)
    if not lines:
        raise error(f"{path}:1: not {what} (empty: no header line)")
    if not is_header(lines[0][1]):
        raise error(f"{path}:{lines[0][0]}: not {what} (its first line is not its header)")
    return Lines(path, lines[0][1], lines[1:], good, torn)


def cut_torn(lines: Lines) -> None:
    """Cut the file back to its complete lines, so that appends start on a new line."""
    if lines.torn:
        os.truncate(lines.path, lines.good)
