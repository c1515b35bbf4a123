"""The run's journal: append-only JSON Lines, one line per launch and one per its answers, so an
interrupted run (a device that errors or times out, Ctrl-C, a file device waiting for answers)
resumes with every answer it had (``identify --resume``).

Line 1 is the header (the run's settings: space, device, k, seed); then ``{"launch": n,
"purpose": ..., "count": N, "digest": ..., "cases": [...]}`` before the device is asked and
``{"answers": n, "d": [...]}`` after. Verification cases (10^5) are regenerated from their seed
instead of being stored. On resume the run replays: each launch it designs again must match the
journal's (same digest); recorded answers are used instead of the device."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from smtmodel.io import atomic_open

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
        if resume:
            if not self.path.exists():
                raise IdentifyError(f"--resume: no journal at {self.path}")
            old_header, records = self._read()
            for key in ("space", "device", "k", "seed", "in_fmt", "out_fmt"):
                if old_header.get(key) != header.get(key):
                    raise IdentifyError(f"{self.path}: the journal's {key} ({old_header.get(key)!r}) differs from "
                                        f"this run's ({header.get(key)!r}); resume with the same options")
            self.replay = records
        else:
            if self.path.exists():
                raise IdentifyError(f"{self.path} exists: continue it with --resume, or remove it to start over")
            with atomic_open(self.path) as fh:
                fh.write(json.dumps(dict(header, kind=KIND, version=1)) + "\n")
        self.header = header
        self.n = sum(1 for r in self.replay if "launch" in r)

    def _read(self):
        try:
            lines = [json.loads(x) for x in self.path.read_text(encoding="utf-8").splitlines() if x.strip()]
        except (OSError, json.JSONDecodeError) as exc:
            # a line cut short by a crash is the only thing that may be lost; say so plainly
            raise IdentifyError(f"{self.path}: unreadable journal ({exc})") from None
        if not lines or lines[0].get("kind") != KIND:
            raise IdentifyError(f"{self.path}: not an identify journal")
        launches, answers = {}, {}
        for r in lines[1:]:
            if "launch" in r:
                launches[r["launch"]] = r
            elif "answers" in r:
                answers[r["answers"]] = r["d"]
        records = []
        for n in sorted(launches):
            rec = dict(launches[n])
            rec["d"] = answers.get(n)
            records.append(rec)
        return lines[0], records

    def peek(self) -> dict | None:
        """The next launch the journal will replay (None when it is not replaying)."""
        return self.replay[0] if self.replay else None

    def _append(self, obj: dict) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(obj, separators=(",", ":")) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

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
                return parse_bits(rec["d"], out_fmt), False
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
