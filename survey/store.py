"""The survey's output folder: a journal of finished steps and the captured bits, resumable.

Files (at most :data:`MAX_FILES`, the GPU machine's limit on what comes back):

- ``journal.jsonl``: a header line (device, settings), then one line per finished step with its
  result; a torn last line (a run killed while writing it) is dropped on resume;
- ``kernels.npz``: per kernel and case set the outputs as raw bits (``KERNEL/SET``), and the
  inputs of sets read from files (random sets are redrawn from the seed in the journal);
- ``library.npz``: the library GEMMs' recorded outputs (``NAME``), inputs drawn from seeds;
- ``card.json`` and ``card.md``: the numerics card (:mod:`survey.card`).

Arrays are written atomically before the journal line that says their step is done, so a run
killed at any point resumes (``--resume``) with everything it recorded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from smtmodel import journal
from smtmodel.io import atomic_open, read_npz

from .errors import SurveyError

MAX_FILES = 8
MAX_BYTES = 16 << 20
JOURNAL = "journal.jsonl"
NPZ = {"kernels": "kernels.npz", "library": "library.npz"}


def _is_header(h: dict) -> bool:
    return h.get("kind") == "mmaprobe.survey"


def _read(path: Path) -> journal.Lines:
    return journal.read(path, _is_header, "a survey journal", SurveyError)


def read_journal(folder: "str | Path") -> tuple[dict, dict]:
    """(header, {step: record}) of a survey folder's journal, read back (``--recheck``,
    ``--export``) by the one journal reader (:mod:`smtmodel.journal`): a torn last line is
    dropped; a missing, damaged or headerless journal is one error line naming the file."""
    read = _read(Path(folder) / JOURNAL)
    return read.header, {r["step"]: r for _, r in read.records if "step" in r}


class Store:
    """The folder ``path``: ``header`` (the run's settings) is written on a new run and must
    match the journal's on ``resume``."""

    def __init__(self, path: "str | Path", header: dict, resume: bool = False):
        self.path = Path(path)
        self.steps: dict[str, dict] = {}
        self.arrays: dict[str, dict[str, np.ndarray]] = {k: {} for k in NPZ}
        path = self.path / JOURNAL
        if self.path.exists() and not self.path.is_dir():
            raise SurveyError(f"{self.path} exists and is not a folder")
        if resume:
            if not path.is_file():
                raise SurveyError(f"nothing to resume: {path} does not exist")
            self._load(path, header)
        else:
            if self.path.exists() and any(self.path.iterdir()):
                raise SurveyError(f"{self.path} exists and is not empty: pass --resume to continue that survey, "
                                  "or choose a new folder")
            self.path.mkdir(parents=True, exist_ok=True)
            journal.create(path, {"kind": "mmaprobe.survey", **header})
        self.header = header

    def _load(self, path: Path, header: dict) -> None:
        read = _read(path)
        old = {k: v for k, v in read.header.items() if k != "kind"}
        for key in ("device", "arch", "settings"):
            if old.get(key) != header.get(key):
                raise SurveyError(f"{path}: the journal's {key} is {old.get(key)!r}, this run's is "
                                  f"{header.get(key)!r}; resume with the same device and options")
        for _, rec in read.records:
            if "step" in rec:
                self.steps[rec["step"]] = rec
        for part, name in NPZ.items():
            p = self.path / name
            if p.is_file():
                self.arrays[part] = read_npz(p)
        journal.cut_torn(read)             # appends start on a complete line

    def done(self, step: str) -> dict | None:
        return self.steps.get(step)

    def record(self, step: str, result: dict, arrays: dict[str, np.ndarray] | None = None, part: str | None = None) -> None:
        """Finish ``step``: its arrays (into ``part``'s npz, written atomically) and then its journal line."""
        if arrays:
            self.arrays[part].update(arrays)
            self._write_npz(part)
        rec = {"step": step, **result}
        self.steps[step] = rec
        journal.append(self.path / JOURNAL, rec)

    def _write_npz(self, part: str) -> None:
        with atomic_open(self.path / NPZ[part], "wb", gz=False) as fh:
            np.savez_compressed(fh, **self.arrays[part])
        size = (self.path / NPZ[part]).stat().st_size
        if size > MAX_BYTES:
            raise SurveyError(f"{NPZ[part]} is {size / 2**20:.1f} MiB, over the {MAX_BYTES >> 20} MiB a file may have; "
                              "run with fewer --cases")

    def write_text(self, name: str, text: str) -> None:
        with atomic_open(self.path / name) as fh:
            fh.write(text)

    def files(self) -> list[tuple[str, int]]:
        """(name, bytes) of every file in the folder."""
        return sorted((p.name, p.stat().st_size) for p in self.path.iterdir() if p.is_file())
