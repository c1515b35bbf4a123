"""GEMM devices for ``mmaprobe identify --gemm``: ``launch(probe) -> (M, N) output bits``, with
``name``, ``in_fmt``, ``c_fmt``, ``out_fmt``.

* ``twin-gemm:MODEL[:OVERRIDES]:DATAFLOW`` -- a hidden (model, dataflow) pair answering like a
  library (``smtmodel.gemm``): the stand-in for hardware. DATAFLOW is any text form
  (``cutlass2``, ``cutlass-splitk-serial:S=3``, ``S=4,assign=interleaved``); OVERRIDES (model
  ``key=value`` pairs) come before it only when a dataflow follows.
* ``file:CAPTURE.npz`` -- GEMMs run elsewhere: arrays ``a{i}``, ``b{i}``, ``c{i}`` (raw bits),
  ``alpha{i}``, ``beta{i}`` and the device's ``d{i}``, plus ``in_fmt``/``c_fmt``/``out_fmt``. A
  probe without an answer there is written, with the others identify will ask for, to a file
  of the same layout without ``d`` (the caller's ``next_path``; by default ``CAPTURE.next.npz``
  in a new temporary folder, never beside the capture) and the run stops until they are filled
  in. Formats given by the caller must be the capture's.
* ``cuda-gemm`` -- cuBLAS through CuPy on an NVIDIA GPU, ``torch-gemm`` -- torch's aten GEMM
  (``torch.addmm`` with an fp32 C) on a CUDA GPU (``hw_runner.gemm_device``; the command line
  passes them in, this layer does not import the harness).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from smtmodel.catalog import get_model
from smtmodel.dataflow import DataflowError, parse_dataflow
from smtmodel.io import read_npz
from smtmodel.model import ModelError

from ..identify.errors import IdentifyError, NeedAnswers
from .identify import Hypothesis, simulate
from .probes import Probe


def parse_twin(rest: str) -> Hypothesis:
    """``MODEL[:OVERRIDES]:DATAFLOW`` -> the hidden pair."""
    parts = rest.split(":")
    if len(parts) < 2 or not parts[0] or not parts[-1]:
        raise IdentifyError(f"device twin-gemm:{rest}: use twin-gemm:MODEL:DATAFLOW, e.g. "
                            f"twin-gemm:hopper-fp16-fp32:cutlass2")
    model, df = parts[0], ":".join(parts[1:])
    if len(parts) >= 3 and "=" in parts[1]:
        model, df = f"{parts[0]}:{parts[1]}", ":".join(parts[2:])
    try:
        return Hypothesis(get_model(model), parse_dataflow(df))
    except (ModelError, DataflowError) as exc:
        raise IdentifyError(f"device twin-gemm:{rest}: {exc}") from None


class TwinGemmDevice:
    """A hidden (model, dataflow) pair (module docstring)."""

    def __init__(self, rest: str):
        self.hidden = parse_twin(rest)
        m = self.hidden.model
        self.name = f"twin-gemm:{rest}"
        self.in_fmt, self.c_fmt, self.out_fmt = m.in_fmt, m.c_fmt, m.out_fmt
        self.launches = 0

    def launch(self, p: Probe) -> np.ndarray:
        self.launches += 1
        d = simulate(self.hidden, p)
        if d is None:
            raise IdentifyError(f"{self.name}: the dataflow does not run a {p.shape[0]}x{p.shape[1]}x{p.shape[2]} GEMM")
        return d


class FileGemmDevice:
    """GEMMs captured elsewhere (module docstring)."""

    def __init__(self, path: str, in_fmt: str | None = None, c_fmt: str | None = None, out_fmt: str | None = None,
                 next_path: "str | Path | None" = None):
        self.path = Path(path)
        self.next_path = Path(next_path) if next_path else None     # None: a temporary folder, made when needed
        self.name = f"file:{path}"
        self.answers: list[tuple[Probe, np.ndarray]] = []
        self.pending: list[Probe] = []
        fm = {}
        if self.path.exists():
            z = read_npz(self.path)
            fm = {k: str(z[k]) for k in ("in_fmt", "c_fmt", "out_fmt") if k in z}
            i = 0
            while f"a{i}" in z:
                try:
                    p = Probe(f"capture{i}", z[f"a{i}"].astype(np.uint64), z[f"b{i}"].astype(np.uint64),
                              z[f"c{i}"].astype(np.uint64), float(z[f"alpha{i}"]), float(z[f"beta{i}"]))
                except KeyError as exc:
                    raise IdentifyError(f"{path}: capture {i} lacks {exc.args[0]}") from None
                except (TypeError, ValueError) as exc:
                    raise IdentifyError(f"{path}: capture {i} is not a GEMM's raw bits "
                                        f"({' '.join(str(exc).split())})") from None
                if f"d{i}" in z:
                    self.answers.append((p, z[f"d{i}"].astype(np.uint64)))
                i += 1
        elif not (in_fmt and out_fmt):
            raise IdentifyError(f"{path}: no such file (a new file device needs --in and --out)")
        self.in_fmt = in_fmt or fm.get("in_fmt")
        self.c_fmt = c_fmt or fm.get("c_fmt") or "fp32"
        self.out_fmt = out_fmt or fm.get("out_fmt")
        if not self.in_fmt or not self.out_fmt:
            raise IdentifyError(f"{path}: the capture does not say its formats (in_fmt, out_fmt)")
        for opt, given, key in (("--in", in_fmt, "in_fmt"), ("--out", out_fmt, "out_fmt")):
            if given and key in fm and _fmt_name(given) != _fmt_name(fm[key]):
                raise IdentifyError(f"{path} holds {fm.get('in_fmt')} -> {fm.get('out_fmt')} GEMMs, not {opt} {given}")

    def launch(self, p: Probe) -> np.ndarray:
        for q, d in self.answers:
            if (q.alpha, q.beta) == (p.alpha, p.beta) and all(np.array_equal(x, y) for x, y in
                                                              ((q.a, p.a), (q.b, p.b), (q.c, p.c))):
                return d
        self.pending.append(p)
        self.write_pending()
        raise NeedAnswers(f"probe GEMM {p.name} has no answer in {self.path}: run the GEMMs of {self.next_path} "
                          f"on the device, add their outputs as d0, d1, ... and rerun", str(self.next_path),
                          len(self.pending))

    def write_pending(self) -> None:
        if self.next_path is None:
            import tempfile
            folder = Path(tempfile.mkdtemp(prefix="mmaprobe-identify-gemm-"))
            self.next_path = folder / (self.path.name.removesuffix(".npz") + ".next.npz")
        write_capture(self.next_path, self, [(p, None) for p in self.pending])


def _fmt_name(text: str) -> str:
    from smtmodel.formats import FormatError, get_format
    try:
        return get_format(text).name
    except FormatError:
        return text


def write_capture(path: "str | Path", device, items) -> None:
    """A capture in the ``file:`` layout (module docstring), written atomically: ``items`` are
    (probe, the device's output bits or None)."""
    from smtmodel.io import atomic_open
    arrs = {"in_fmt": np.array(device.in_fmt), "c_fmt": np.array(device.c_fmt), "out_fmt": np.array(device.out_fmt)}
    for i, (p, d) in enumerate(items):
        arrs |= {f"a{i}": p.a, f"b{i}": p.b, f"c{i}": p.c, f"alpha{i}": np.array(p.alpha),
                 f"beta{i}": np.array(p.beta)}
        if d is not None:
            arrs[f"d{i}"] = np.asarray(d, np.uint64)
    with atomic_open(path, "wb") as fh:
        np.savez(fh, **arrs)


class RecordingGemmDevice:
    """A GEMM device whose launches are kept: every probe and the device's output, rewritten to
    ``path`` (the ``file:`` layout) after each launch, so a run on a GPU leaves what it measured
    to study, or to replay with ``--device file:PATH``, whatever the answer."""

    def __init__(self, device, path: "str | Path"):
        self.device, self.path, self.records = device, Path(path), []

    def __getattr__(self, name):            # name, formats, a twin's hidden pair
        return getattr(self.device, name)

    def launch(self, p: Probe) -> np.ndarray:
        d = self.device.launch(p)
        self.records.append((p, d))
        write_capture(self.path, self.device, self.records)
        return d


def open_gemm_device(text: str, *, in_fmt: str | None = None, out_fmt: str | None = None, adapters=None,
                     next_path: "str | Path | None" = None):
    """``twin-gemm:...``, ``file:PATH.npz`` (probes without answers to ``next_path``) or an
    adapter's name (``cuda-gemm``, ``torch-gemm``)."""
    kind, _, rest = text.partition(":")
    if kind == "twin-gemm":
        return TwinGemmDevice(rest)
    if kind == "file":
        if not rest:
            raise IdentifyError("device file: needs a path, e.g. file:capture.npz")
        return FileGemmDevice(rest, in_fmt, None, out_fmt, next_path)
    if adapters and kind in adapters:
        return adapters[kind](text, in_fmt=in_fmt, out_fmt=out_fmt)
    raise IdentifyError(f"unknown GEMM device {text!r}: use twin-gemm:MODEL:DATAFLOW, file:CAPTURE.npz, cuda-gemm or torch-gemm")
