"""A campaign's journal: an append-only JSON-lines file next to its output, one record per
finished task, so that a killed run (SIGKILL included) resumes without losing or repeating work.

Layout: line 1 is the header ``{"journal": "mmaprobe", "version": 1, "campaign": NAME,
"params": {...}}`` -- what the campaign computes; a journal whose header differs belongs to
another campaign and is refused. Every other line is ``{"key": KEY, "result": {...}}``, written
with one ``write`` and ``fsync``-ed before the next task's result is taken, and a last line
``{"complete": true, "tasks": N}`` once every task is in.

Damage: a last line without its newline is a record the writer did not finish (the process was
killed, or the disk filled): it is dropped on resume. A complete line that is not a record, or
a key seen twice, means the file was edited or mixed up: refused with its path and line. A
failed write (``ENOSPC``) truncates the file back to its last complete record before the error
goes on.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from smtmodel import journal

from ..errors import CliError

MAGIC = "mmaprobe"
VERSION = 1


class JournalError(CliError):
    """A journal that cannot be continued: foreign, corrupt, or unfinished without ``--resume``."""


def journal_path(output) -> Path:
    """The journal beside an output file ``X``: ``X.journal`` (JSON lines; a name that globs of
    ``*.jsonl`` vector files do not pick up)."""
    out = Path(output)
    return out.with_name(out.name + ".journal")


def header(campaign: str, params: dict) -> dict:
    return {"journal": MAGIC, "version": VERSION, "campaign": campaign, "params": params}


def _canonical(obj) -> str:
    return journal.dumps(obj, canonical=True)


def read_journal(path) -> tuple[dict, dict, bool, int]:
    """``(header, {key: result}, complete, good_bytes)`` of a journal (the one journal reader,
    :mod:`smtmodel.journal`); ``good_bytes`` is the length of its complete lines (a torn last line
    is not counted). Raises :class:`JournalError` naming the path and line of the first damaged
    record."""
    read = journal.read(path, lambda h: h.get("journal") == MAGIC, "an mmaprobe journal", JournalError)
    head = read.header
    if head.get("version") != VERSION:
        raise JournalError(f"{read.path}:1: journal version {head.get('version')!r}, this mmaprobe reads {VERSION}")
    results: dict = {}
    complete = False
    for n, rec in read.records:
        if complete:
            raise JournalError(f"{read.path}:{n}: record after the completion line")
        if rec.get("complete") is True:
            complete = True
            continue
        if not (set(rec) == {"key", "result"} and isinstance(rec["key"], str)):
            raise JournalError(f"{read.path}:{n}: not a journal record (want {{\"key\": ..., \"result\": ...}})")
        if rec["key"] in results:
            raise JournalError(f"{read.path}:{n}: task {rec['key']!r} recorded twice")
        results[rec["key"]] = rec["result"]
    return head, results, complete, read.good


class Journal:
    """An open journal. ``Journal.open(path, campaign, params, resume=..., restart=...)``:

    * no file: a new journal with its header;
    * a file and ``resume``: its header must match ``campaign``/``params``; its records are
      :attr:`done`; a torn last line is cut off; new records are appended;
    * a file, no ``resume``: refused if unfinished (it holds work), unless ``restart``;
      a complete journal (or ``restart``) is replaced by a new one.
    """

    def __init__(self, path: Path, fd: int, head: dict, done: dict):
        self.path, self._fd, self.header, self.done = path, fd, head, done

    @classmethod
    def memory(cls, campaign: str, params: dict) -> "Journal":
        """A journal kept in memory only (a campaign with no output file: nothing to resume)."""
        return cls(None, None, header(campaign, params), {})

    @classmethod
    def open(cls, path, campaign: str, params: dict, *, resume: bool = False, restart: bool = False) -> "Journal":
        path = Path(path)
        want = header(campaign, params)
        done: dict = {}
        if path.exists() and not restart:
            head, done, complete, good = read_journal(path)
            if _canonical(head) != _canonical(json.loads(_canonical(want))):
                raise JournalError(f"{path}:1: journal of another campaign ({head.get('campaign')} "
                                   f"{_canonical(head.get('params'))}); this run is {campaign} {_canonical(params)}")
            if not resume:
                if not complete:
                    raise JournalError(f"{path}: an unfinished run's journal ({len(done)} results): "
                                       f"--resume to continue it, or --restart to discard it")
                done = {}
            else:
                fd = os.open(path, os.O_RDWR)
                os.ftruncate(fd, good)              # a torn last record, and a completion line, go
                if complete:
                    os.ftruncate(fd, _without_last_line(path, good))
                os.lseek(fd, 0, os.SEEK_END)
                os.fsync(fd)
                return cls(path, fd, head, done)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)
        j = cls(path, fd, want, {})
        j._append(want)
        return j

    def _append(self, obj) -> None:
        """One line, written in full and fsync-ed, or (on an error) not at all."""
        if self.path is not None:
            journal.append(self.path, obj, canonical=True, fd=self._fd)

    def record(self, key: str, result) -> None:
        """Append a finished task's result."""
        if key in self.done:
            raise JournalError(f"{self.path}: task {key!r} is already recorded")
        rec = json.loads(_canonical({"key": key, "result": result}))   # as a resumed run will read it
        self._append(rec)
        self.done[key] = rec["result"]

    def complete(self) -> None:
        """Mark the campaign complete (a later run without ``--resume`` may replace the journal)."""
        self._append({"complete": True, "tasks": len(self.done)})

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _without_last_line(path: Path, good: int) -> int:
    """Byte length of ``path``'s first ``good`` bytes without their last line."""
    with open(path, "rb") as fh:
        data = fh.read(good)
    return data[:-1].rfind(b"\n") + 1
