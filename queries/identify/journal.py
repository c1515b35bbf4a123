"""The run's journal: append-only JSON Lines, one line per launch and one per its answers, so an
interrupted run (a device that errors or times out, Ctrl-C, a file device waiting for answers)
resumes with every answer it had (``identify --resume``).

Line 1 is the header (the run's settings: space, device, k, seed); then ``{"launch": n,
"purpose": ..., "count": N, "digest": ..., "cases": [...]}`` before the device is asked and
``{"answers": n, "d": [...]}`` after. Verification cases (10^5) are regenerated from their seed
instead of being stored. On resume the run replays: each launch it designs again must match the
journal's (same digest); recorded answers are used instead of the device. Each line is written
with one write and fsync-ed; a last line without its newline (the process killed mid-write) is
dropped on resume, as campaign journals do (docs/campaigns.md)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from smtmodel import journal
from smtmodel.formats import FormatError

from .cases import Cases, hex_bits, parse_bits
from .errors import IdentifyError

KIND = "mmaprobe.identify.journal"


def digest(cases: Cases) -> str:
    h = hashlib.sha256()
    for x in (cases.a, cases.b, cases.c) + ((cases.sa, cases.sb) if cases.scaled else ()):
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()[:24]


class Journal:
    def __init__(self, path, header: dict, resume: bool):
        self.path = Path(path)
        self.replay: list[dict] = []
        self.notes: list[str] = []          # what reading the journal did (a torn last line dropped)
        self._torn = None
        if resume:
            if not self.path.exists():
                raise IdentifyError(f"--resume: no journal at {self.path}")
            old_header, records = self._read()
            for key in ("space", "device", "k", "seed", "in_fmt", "out_fmt"):
                if old_header.get(key) != header.get(key):
                    raise IdentifyError(f"{self.path}: the journal's {key} ({old_header.get(key)!r}) differs from "
                                        f"this run's ({header.get(key)!r}); resume with the same options")
            self.replay = records
            if self._torn is not None:
                journal.cut_torn(self._torn)                # appends start on a complete line
        else:
            if self.path.exists():
                raise IdentifyError(f"{self.path} exists: continue it with --resume, or remove it to start over")
            journal.create(self.path, dict(header, kind=KIND, version=1))
        self.header = header
        self.n = sum(1 for r in self.replay if "launch" in r)

    def _read(self):
        """(header, launch records with their answers ``d`` or None), through the one journal
        reader (:mod:`smtmodel.journal`): a torn last line is dropped, the file cut back to its
        complete lines and :attr:`notes` says so; any other damage is refused naming the line."""
        read = journal.read(self.path, lambda h: h.get("kind") == KIND, "an identify journal", IdentifyError)
        if read.torn:
            self._torn = read
            self.notes.append(read.note())
        launches, answers = {}, {}
        for no, r in read.records:
            if "launch" in r:
                if not isinstance(r["launch"], int) or not isinstance(r.get("digest"), str):
                    raise IdentifyError(f"{self.path}:{no}: a launch record needs an integer 'launch' and a "
                                        f"'digest'")
                launches[r["launch"]] = r
            elif "answers" in r:
                if not isinstance(r["answers"], int) or not isinstance(r.get("d"), list):
                    raise IdentifyError(f"{self.path}:{no}: an answers record needs an integer 'answers' and "
                                        f"a list 'd'")
                answers[r["answers"]] = r["d"]
            else:
                raise IdentifyError(f"{self.path}:{no}: not a journal record (neither 'launch' nor 'answers')")
        records = []
        for n in sorted(launches):
            rec = dict(launches[n])
            rec["d"] = answers.get(n)
            records.append(rec)
        return read.header, records

    def peek(self) -> dict | None:
        """The next launch the journal will replay (None when it is not replaying)."""
        return self.replay[0] if self.replay else None

    def _append(self, obj: dict) -> None:
        journal.append(self.path, obj)

    def launch(self, device, purpose: str, cases: Cases, *, regen: dict | None = None) -> tuple[np.ndarray, bool]:
        """The device's answers to ``cases`` (from the journal when replaying); True when a new
        device launch was made."""
        dg = digest(cases)
        out_fmt, in_fmt, c_fmt = self.header["out_fmt"], self.header["in_fmt"], self.header["c_fmt"]
        if self.replay:
            rec = self.replay[0]
            if rec.get("digest") != dg or rec.get("purpose") != purpose:
                raise IdentifyError(f"{self.path}: launch {rec['launch']} in the journal ({rec.get('purpose')}, "
                                    f"{rec.get('count')} cases) is not what this run asks; resume with the same options")
            self.replay.pop(0)
            if rec.get("d") is not None:
                try:
                    d = parse_bits(rec["d"], out_fmt)
                except FormatError as exc:
                    raise IdentifyError(f"{self.path}: answers {rec['launch']}: {exc}") from None
                if len(d) != len(cases):
                    raise IdentifyError(f"{self.path}: answers {rec['launch']}: {len(d)} answers for "
                                        f"{len(cases)} cases")
                return d, False
            n = rec["launch"]
        else:
            self.n += 1
            n = self.n
            rec = {"launch": n, "purpose": purpose, "count": len(cases), "digest": dg}
            rec.update({"regen": regen} if regen else
                       {"cases": cases.to_json(in_fmt, c_fmt, self.header.get("scale_fmt"))})
            self._append(rec)
        d = device.launch(cases)
        self._append({"answers": n, "d": hex_bits(d, out_fmt)})
        return d, True


class NoJournal:
    """The same interface without a file."""

    def peek(self):
        return None

    def launch(self, device, purpose: str, cases: Cases, *, regen: dict | None = None):
        return device.launch(cases), True
