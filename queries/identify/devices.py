"""Devices: what answers a batch of probes with output bits.

The protocol is duck-typed: ``name`` (text), ``in_fmt``, ``c_fmt``, ``out_fmt``, ``k`` (None: any),
optionally ``scale_fmt`` and ``scale_block`` (a block-scaled unit: its probes carry scale arrays),
``launch(cases) -> uint64 array`` (one launch), and optionally ``prior() -> (cases, answers)``
(answers known before any launch: a capture). Here: :class:`TwinDevice` (a hidden model standing
in for hardware) and :class:`FileDevice` (answers captured elsewhere, ../shared/spec/vectors.md).
A GPU device lives beside the harness (``hw_runner``) and is passed in by the command line.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from smtmodel.catalog import get_model
from smtmodel.formats import get_format, operand_formats, operand_key
from smtmodel.model import ModelError
from smtmodel.vectors import VectorFile, VectorFileError, make_header, read_vectors, write_vectors

from .cases import Cases
from .errors import DeviceError, IdentifyError, NeedAnswers
from .hypotheses import outputs


class TwinDevice:
    """A hidden model (``twin:ID[:overrides]``) answering like hardware; ``fail_after`` makes it
    fail on that launch (tests of the journal)."""

    def __init__(self, spec: str, fail_after: int | None = None):
        try:
            self.model = get_model(spec)
        except ModelError as exc:
            raise IdentifyError(f"device twin:{spec}: {exc}") from None
        self.name = f"twin:{spec}"
        self.in_fmt, self.c_fmt, self.out_fmt = self.model.in_key, self.model.c_fmt, self.model.out_fmt
        self.scale_fmt, self.scale_block = self.model.scale_fmt, self.model.scale_block
        self.k = None
        self.launches = 0
        self.fail_after = fail_after

    def launch(self, cases: Cases) -> np.ndarray:
        if self.fail_after is not None and self.launches >= self.fail_after:
            raise DeviceError(f"{self.name}: launch {self.launches + 1} failed (injected)")
        self.launches += 1
        return outputs(self.model, cases)


def _observed(case: dict):
    obs = case.get("observed")
    if isinstance(obs, dict) and obs:
        return next(iter(obs.values()))
    return None


class FileDevice:
    """Answers read from vector files: the capture ``path`` and the file of probes identify asked
    for (``next_path``). A launch whose cases all have answers returns them; otherwise the missing
    cases are written to ``next_path`` (with the ones already waiting) and :class:`NeedAnswers`
    stops the run until a user fills in ``observed``."""

    def __init__(self, path: str, next_path: str | None = None, in_fmt: str | None = None,
                 out_fmt: str | None = None, scale: tuple | None = None):
        self.path = Path(path)
        self.next_path = Path(next_path) if next_path else self.path.with_name(
            self.path.name.split(".jsonl")[0] + ".next.jsonl")
        self.answers: dict[bytes, int] = {}
        self.next_rows: list[dict] = []      # every case of next_path, answered or not
        self.launches = 0
        self._prior = None
        header = None
        if self.path.exists():
            vf = self._read(self.path)
            header = vf.header
            self._prior = self._absorb(vf)
        if self.next_path.exists() and self.next_path != self.path:
            vf = self._read(self.next_path)
            header = header or vf.header
            self._absorb(vf)
            self.next_rows = vf.cases
        if header is None:
            if not (in_fmt and out_fmt):
                raise IdentifyError(f"{path}: no such file (a new file device needs --in and --out)")
            c_fmt = get_model_formats(in_fmt, out_fmt)
            header = make_header(tuple(f.name for f in operand_formats(in_fmt)), c_fmt, out_fmt, 1)
            header["k"] = None
            if scale:               # a new file of a block-scaled unit: its probes carry scales
                header.update(scale_fmt=scale[0], scale_block=scale[1])
        self.in_fmt, self.c_fmt, self.out_fmt = _in_key(header), header["c_fmt"], header["out_fmt"]
        self.scale_fmt, self.scale_block = header.get("scale_fmt"), header.get("scale_block")
        if scale and (self.scale_fmt, self.scale_block) != tuple(scale):
            have = f"{self.scale_fmt}/{self.scale_block}" if self.scale_fmt else "no scales"
            raise IdentifyError(f"{path}: the file has {have}, not {scale[0]}/{scale[1]}")
        for want, have, what in ((in_fmt, self.in_fmt, "in"), (out_fmt, self.out_fmt, "out")):
            if want and operand_key(*operand_formats(want)) != operand_key(*operand_formats(have)):
                raise IdentifyError(f"{path}: the file's {what} format is {have}, not {want}")
        self.k = header.get("k")
        self.name = f"file:{path}"
        self.description = header.get("device", "")

    @staticmethod
    def _read(path: Path) -> VectorFile:
        try:
            return read_vectors(path)
        except VectorFileError as exc:
            raise IdentifyError(str(exc)) from None

    def _absorb(self, vf: VectorFile):
        """Record the answered cases; return them as (cases, answers) (None if there are none)."""
        rows = [c for c in vf.cases if _observed(c) is not None]
        if not rows:
            return None
        cases = Cases.from_json(rows, _in_key(vf.header), vf.header["c_fmt"], vf.header.get("scale_fmt"))
        fo = get_format(vf.header["out_fmt"])
        d = np.array([fo.parse_hex(_observed(c)) for c in rows], dtype=np.uint64)
        self.answers.update(zip(cases.keys(), (int(x) for x in d)))
        return cases, d

    def prior(self):
        return self._prior

    def launch(self, cases: Cases) -> np.ndarray:
        keys = cases.keys()
        missing = [i for i, key in enumerate(keys) if key not in self.answers]
        if not missing:
            self.launches += 1
            return np.array([self.answers[key] for key in keys], dtype=np.uint64)
        rows = [dict(cases.case_dict(i, self.in_fmt, self.c_fmt, self.scale_fmt), id=f"identify-{i}")
                for i in missing]
        keep = self.next_rows if self.next_path != self.path else []
        have = {_row_key(r) for r in keep}
        rows = keep + [r for r in rows if _row_key(r) not in have]
        self.next_rows = rows
        vf = VectorFile(make_header(tuple(f.name for f in operand_formats(self.in_fmt)), self.c_fmt, self.out_fmt, cases.k,
                                    source={"tool": "mmaprobe identify", "note": "fill in 'observed' per case"},
                                    **({"scale_fmt": self.scale_fmt, "scale_block": self.scale_block}
                                       if self.scale_fmt else {})),
                        rows)
        write_vectors(self.next_path, vf)
        raise NeedAnswers(f"{len(missing)} probes need answers: run {self.next_path} on the device, fill in each "
                          f"case's 'observed' and rerun with --resume", str(self.next_path), len(missing))


def _row_key(r: dict) -> tuple:
    return (tuple(r["a"]), tuple(r["b"]), r["c"], tuple(r.get("a_scale", ())), tuple(r.get("b_scale", ())))


def _in_key(header: dict) -> str:
    """A vector file header's operand key: in_fmt, or AxB from a_fmt/b_fmt (mixed operands)."""
    ins = header.get("in_fmt")
    return operand_key(header.get("a_fmt") or ins, header.get("b_fmt") or ins)


def get_model_formats(in_fmt: str, out_fmt: str) -> str:
    """The accumulator (c) format of a format pair: that of its base catalog model."""
    from smtmodel.catalog.spaces import base_model
    return base_model(in_fmt, out_fmt).c_fmt


def open_device(text: str, *, in_fmt: str | None = None, out_fmt: str | None = None,
                next_path: str | None = None, adapters: dict | None = None, scale: tuple | None = None, **options):
    """``twin:ID[:overrides]``, ``file:PATH`` or an adapter's name (``cuda[:N]``: the command line
    passes the harness's adapter in ``adapters``; the queries layer does not import hw_runner)."""
    kind, _, rest = text.partition(":")
    if kind == "twin":
        if not rest:
            raise IdentifyError("device twin: needs a model, e.g. twin:hopper-fp16-fp32")
        return TwinDevice(rest)
    if kind == "file":
        if not rest:
            raise IdentifyError("device file: needs a path, e.g. file:observed.jsonl")
        return FileDevice(rest, next_path, in_fmt, out_fmt, scale)
    if adapters and kind in adapters:
        return adapters[kind](text, in_fmt=in_fmt, out_fmt=out_fmt, **options)
    raise IdentifyError(f"unknown device {text!r}: use twin:MODEL[:overrides], file:PATH, cuda[:N] or rocm[:N]")


class Timed:
    """A device wrapper that turns any failure of ``launch`` into :class:`DeviceError` and counts
    launches and seconds."""

    def __init__(self, device):
        self.device = device
        self.launches = 0
        self.seconds = 0.0

    def launch(self, cases: Cases) -> np.ndarray:
        t0 = time.perf_counter()
        try:
            d = self.device.launch(cases)
        except (NeedAnswers, DeviceError):
            raise
        except Exception as exc:
            raise DeviceError(f"{self.device.name}: launch failed: {type(exc).__name__}: {exc}") from exc
        finally:
            self.seconds += time.perf_counter() - t0
        d = np.asarray(d, dtype=np.uint64)
        if d.shape != (len(cases),):
            raise DeviceError(f"{self.device.name}: answered {d.shape} for {len(cases)} cases")
        self.launches += 1
        return d
