"""Capture a module's linear layers where it really runs (a GPU), and replay each recorded call on
the CPU through :class:`~mmaprobe.torch.emulate.emulate` (docs/torch.md, "Checking against a GPU").

:func:`capture` runs ``module(*inputs)`` once with a forward hook on every ``nn.Linear`` and writes
what each call took and gave: the layer's weight and bias (once per layer) and each call's input
(with its strides) and output, as raw bits, into two files, ``capture.npz`` and ``capture.json``
(the device, torch's version and the cuBLAS flags that change a matmul's bits), within a byte
budget (16 MiB by default: calls past it are left out and counted). On CPU tensors with
``emulate_as="h100"`` the forward runs under ``emulate``: a dry run of the same step, whose replay
compares the mode with itself and must match 100 %.

:func:`replay` runs each recorded call again as ``F.linear`` under ``emulate(gpu=...)`` on the
CPU, with the recorded input layout and flags, and compares the bits with the recorded output:
per layer, the share of calls and of outputs that match and the largest ulp distance.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from smtmodel.io import atomic_open
from smtmodel.model import ModelError

from .adapter import fmt_of, from_bits, raw_bits
from .diff import ulp_distance
from .emulate import GPUS, emulate

MAX_BYTES = 16 * 2 ** 20
FILES = ("capture.npz", "capture.json")


def _flags() -> dict:
    m = torch.backends.cuda.matmul
    out = {}
    for k in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        try:
            out[k] = bool(getattr(m, k))
        except (RuntimeError, AttributeError):
            out[k] = None
    return out


def _device_text(device) -> dict:
    d = torch.device(device)
    info = {"device": str(d), "torch": torch.__version__}
    if d.type == "cuda":
        info["name"] = torch.cuda.get_device_name(d)
        info["capability"] = list(torch.cuda.get_device_capability(d))
        info["cuda"] = torch.version.cuda
        info["hip"] = getattr(torch.version, "hip", None)
    return info


def gpu_of(name: str) -> str | None:
    """The :data:`~mmaprobe.torch.emulate.GPUS` name in a device name ("NVIDIA H100 80GB HBM3" ->
    "h100", "AMD Instinct MI300X" -> "mi300x"), the longest that appears; None if none does."""
    words = "".join(ch if ch.isalnum() else " " for ch in str(name).lower()).split()
    hits = [g for g in GPUS if g.isalnum() and any(w == g or w.startswith(g) for w in words)]
    return max(hits, key=len) if hits else None


def capture(module, inputs, out_dir, *, device=None, emulate_as: str | None = None, max_bytes: int = MAX_BYTES,
            layers=None) -> dict:
    """Run ``module(*inputs)`` once (on ``device`` if given: the module and inputs are moved there),
    recording every ``nn.Linear`` call (or those whose name is in ``layers``), and write
    ``capture.npz`` and ``capture.json`` into ``out_dir``. ``emulate_as``: on the CPU, run the
    forward under ``emulate(gpu=emulate_as)`` (the dry run). Returns the manifest."""
    if max_bytes <= 0:
        raise ModelError(f"capture: a byte budget > 0, got {max_bytes}")
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    if device is not None:
        module = module.to(device)
        args = tuple(a.to(device) for a in args)
    dev = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
    if emulate_as is not None and dev.type != "cpu":
        raise ModelError(f"capture: emulate_as runs on CPU tensors; the inputs are on {dev}")
    arrays: dict[str, np.ndarray] = {}
    calls: list[dict] = []
    weights: dict[str, dict] = {}
    state = {"bytes": 0, "left_out": 0}
    names = {m: n for n, m in module.named_modules() if isinstance(m, torch.nn.Linear)}
    if layers is not None:
        names = {m: n for m, n in names.items() if n in set(layers)}
    if not names:
        raise ModelError("capture: the module has no nn.Linear layer to record")

    def put(key, t):
        a = raw_bits(t.detach().cpu())
        arrays[key] = a
        return a.nbytes

    def hook(mod, a, y):
        name = names[mod]
        x = a[0]
        if not isinstance(y, torch.Tensor) or not isinstance(x, torch.Tensor) or fmt_of(x.dtype) is None:
            state["left_out"] += 1
            return
        need = (x.numel() * x.element_size() + y.numel() * y.element_size()
                + (0 if name in weights else sum(p.numel() * p.element_size() for p in (mod.weight, mod.bias)
                                                 if p is not None)))
        if state["bytes"] + need > max_bytes:
            state["left_out"] += 1
            return
        if name not in weights:
            state["bytes"] += put(f"w:{name}", mod.weight)
            if mod.bias is not None:
                state["bytes"] += put(f"b:{name}", mod.bias)
            weights[name] = {"weight": list(mod.weight.shape), "dtype": str(mod.weight.dtype).removeprefix("torch."),
                             "bias": mod.bias is not None}
        i = len(calls)
        state["bytes"] += put(f"x:{i}", x) + put(f"y:{i}", y)
        calls.append({"index": i, "layer": name, "x_shape": list(x.shape), "x_stride": list(x.stride()),
                      "x_dtype": str(x.dtype).removeprefix("torch."), "y_shape": list(y.shape),
                      "y_dtype": str(y.dtype).removeprefix("torch.")})

    hooks = [m.register_forward_hook(hook) for m in names]
    t0 = time.perf_counter()
    try:
        with torch.no_grad():
            if emulate_as is not None:
                with emulate(gpu=emulate_as, warn=False):
                    module(*args)
            else:
                module(*args)
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
    finally:
        for h in hooks:
            h.remove()
    manifest = {"what": "mmaprobe.torch.capture: the nn.Linear calls of one forward, raw bits in capture.npz",
                **_device_text(dev), "flags": _flags(), "emulated_as": emulate_as, "seconds": time.perf_counter() - t0,
                "layers": weights, "calls": calls, "left_out": state["left_out"], "bytes": state["bytes"],
                "max_bytes": max_bytes}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_open(out / FILES[0], "wb") as fh:
        np.savez(fh, **arrays)
    with atomic_open(out / FILES[1]) as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
    return manifest


@dataclass
class LayerReplay:
    layer: str
    calls: int = 0
    calls_equal: int = 0
    outputs: int = 0
    outputs_equal: int = 0
    max_ulp: float = 0.0
    dataflows: set = field(default_factory=set)

    @property
    def share(self) -> float:
        """The share of this layer's recorded outputs the replay reproduces bit for bit."""
        return self.outputs_equal / self.outputs if self.outputs else 0.0


@dataclass
class ReplayResult:
    gpu: str
    source: dict
    layers: list = field(default_factory=list)

    @property
    def share(self) -> float:
        n = sum(x.outputs for x in self.layers)
        return sum(x.outputs_equal for x in self.layers) / n if n else 0.0

    @property
    def all_equal(self) -> bool:
        return all(x.calls_equal == x.calls for x in self.layers)

    def text(self) -> str:
        s = self.source
        where = s.get("name") or s.get("device", "?")
        if s.get("emulated_as"):
            where += f" (dry run: emulated as {s['emulated_as']})"
        w = max([5] + [len(x.layer) for x in self.layers])
        lines = [f"replay of {sum(x.calls for x in self.layers)} recorded call(s) from {where} as emulate(gpu="
                 f"{self.gpu!r}): {100 * self.share:.2f}% of outputs equal"
                 + (f"; {s['left_out']} call(s) left out of the capture (byte budget)" if s.get("left_out") else ""),
                 f"{'layer':<{w}}  {'calls':>5} {'equal':>5} {'outputs':>8} {'equal %':>8} {'max ulp':>8}  dataflow"]
        for x in self.layers:
            lines.append(f"{x.layer:<{w}}  {x.calls:5d} {x.calls_equal:5d} {x.outputs:8d} {100 * x.share:7.2f}% "
                         f"{x.max_ulp:8.0f}  {'; '.join(sorted(x.dataflows))}")
        return "\n".join(lines)

    __str__ = text

    def to_json(self) -> dict:
        return {"gpu": self.gpu, "source": {k: v for k, v in self.source.items() if k not in ("calls", "layers")},
                "share": self.share, "all_equal": self.all_equal,
                "layers": [{"layer": x.layer, "calls": x.calls, "calls_equal": x.calls_equal, "outputs": x.outputs,
                            "outputs_equal": x.outputs_equal, "share": x.share,
                            "max_ulp": x.max_ulp if np.isfinite(x.max_ulp) else None,
                            "dataflows": sorted(x.dataflows)} for x in self.layers]}


def _load(d: Path):
    try:
        manifest = json.loads((d / FILES[1]).read_text())
        arrays = np.load(d / FILES[0])
    except FileNotFoundError:
        raise ModelError(f"{d}: not a capture folder (needs {' and '.join(FILES)})") from None
    except (ValueError, OSError) as e:
        raise ModelError(f"{d}: a damaged capture ({type(e).__name__}: {e})") from None
    return manifest, arrays


def replay(capture_dir, gpu: str | None = None, **emulate_kw) -> ReplayResult:
    """Each call recorded by :func:`capture` run again as ``F.linear`` under ``emulate(gpu=...)`` on
    the CPU (``gpu``: default the captured device's name, or the dry run's ``emulated_as``), with the
    recorded input strides and the recorded TF32 / reduced-precision flags unless ``emulate_kw``
    sets them; compared bit for bit with the recorded outputs, per layer."""
    d = Path(capture_dir)
    man, arrays = _load(d)
    gpu = gpu or man.get("emulated_as") or gpu_of(man.get("name", ""))
    if gpu is None:
        raise ModelError(f"{d}: the captured device {man.get('name', man.get('device'))!r} names no known GPU; give gpu=")
    flags = man.get("flags", {})
    if "tf32" not in emulate_kw and flags.get("allow_tf32") is not None:
        emulate_kw["tf32"] = flags["allow_tf32"]
    res = ReplayResult(str(gpu), man)
    per: dict[str, LayerReplay] = {}
    for c in man["calls"]:
        name, i = c["layer"], c["index"]
        try:
            dt = getattr(torch, c["x_dtype"])
            x = from_bits(arrays[f"x:{i}"], fmt_of(dt)).reshape(c["x_shape"])
            w = from_bits(arrays[f"w:{name}"], fmt_of(dt)).reshape(man["layers"][name]["weight"])
            b = (from_bits(arrays[f"b:{name}"], fmt_of(dt)) if man["layers"][name]["bias"] else None)
            y = from_bits(arrays[f"y:{i}"], fmt_of(getattr(torch, c["y_dtype"]))).reshape(c["y_shape"])
        except KeyError as e:
            raise ModelError(f"{d}: a damaged capture: call {i} ({name}) lacks {e}") from None
        xs = torch.empty_strided(c["x_shape"], c["x_stride"], dtype=dt)
        xs.copy_(x)
        kw = dict(emulate_kw)
        if "reduced" not in kw and dt in (torch.float16, torch.bfloat16):
            r = flags.get(f"allow_{'fp16' if dt == torch.float16 else 'bf16'}_reduced_precision_reduction")
            if r is not None:
                kw["reduced"] = r
        with torch.no_grad(), emulate(gpu=gpu, warn=False, **kw) as mode:
            got = F.linear(xs, w, b)
        lr = per.setdefault(name, LayerReplay(name))
        rep = mode.report()
        lr.dataflows |= {f"{e.model} {e.dataflow}" for e in rep.emulated}
        if rep.unsupported:
            lr.dataflows |= {f"native: {why}" for (_, why) in rep.unsupported}
        lr.calls += 1
        if got.dtype != y.dtype or got.shape != y.shape:
            lr.outputs += y.numel()
            lr.max_ulp = float("inf")
            continue
        u = ulp_distance(got, y)
        lr.outputs += u.size
        lr.outputs_equal += int((u == 0).sum())
        lr.calls_equal += int(not u.any())
        lr.max_ulp = max(lr.max_ulp, float(u.max()) if u.size else 0.0)
    res.layers = list(per.values())
    return res


def files_in(out_dir) -> list[tuple[str, int]]:
    """(file, bytes) of a capture folder: what a lent GPU sends back."""
    d = Path(out_dir)
    return [(f, os.path.getsize(d / f)) for f in FILES if (d / f).exists()]
