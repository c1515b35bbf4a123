"""Per-call differences between two GPU choices: the same module and inputs run under two
:class:`~mmaprobe.torch.emulate.emulate` modes, each emulated call's output compared with its
counterpart (in forward order): the share of outputs that differ, the largest distance in units
in the last place, where the first difference is (docs/torch.md)."""

from __future__ import annotations

import importlib.util
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from smtmodel.model import ModelError

from .adapter import raw_bits
from .emulate import emulate


def _ordered(t: "torch.Tensor") -> np.ndarray:
    """The raw bits of a float tensor mapped to integers in the order of the values (-0 and +0
    both 0), so that the difference of two is a distance in ulps."""
    u = raw_bits(t).astype(np.int64)
    w = 8 * t.element_size()
    mag = u & ((1 << (w - 1)) - 1)
    return np.where((u >> (w - 1)) & 1, -mag, mag)


def ulp_distance(a: "torch.Tensor", b: "torch.Tensor") -> np.ndarray:
    """|a - b| in ulps of their (common) format, element by element; inf where exactly one is a
    NaN, 0 where both are."""
    if a.dtype != b.dtype or a.shape != b.shape:
        raise ModelError(f"ulp_distance: {a.dtype}{tuple(a.shape)} and {b.dtype}{tuple(b.shape)} differ in type or shape")
    d = np.abs(_ordered(a) - _ordered(b)).astype(np.float64)
    na, nb = torch.isnan(a).numpy(), torch.isnan(b).numpy()
    d[na & nb] = 0.0
    d[na ^ nb] = np.inf
    return d


@dataclass
class CallDiff:
    """One emulated call compared under the two choices."""
    index: int
    op: str
    scope: str
    shape: str
    dtype: str
    n: int
    differ: int
    max_ulp: float
    first: "tuple | None"          # the index of the first differing output element (row-major)
    choice_a: str
    choice_b: str

    @property
    def share(self) -> float:
        return self.differ / self.n if self.n else 0.0


@dataclass
class DiffResult:
    """:func:`diff`'s answer: per call (forward order), and the module's outputs."""
    a: str
    b: str
    calls: list = field(default_factory=list)
    output: "CallDiff | None" = None
    reports: tuple = ()
    seconds: tuple = ()            # wall seconds of the two emulated forwards

    def to_json(self) -> dict:
        """The comparison as plain data (``mmaprobe torch diff -o``): per call its op, module, shape,
        dtype, both choices' (model, dataflow), outputs compared and differing, the largest ulp
        distance (None for inf) and the first differing element; the module's output likewise."""
        def row(c):
            d = asdict(c)
            d["share"] = c.share
            d["max_ulp"] = c.max_ulp if np.isfinite(c.max_ulp) else None
            d["first"] = list(c.first) if c.first is not None else None
            return d
        f = self.first_call
        return {"a": self.a, "b": self.b, "calls": [row(c) for c in self.calls],
                "first_difference": None if f is None else {"call": f.index, "op": f.op, "module": f.scope,
                                                            "element": list(f.first)},
                "output": None if self.output is None else row(self.output),
                "seconds": list(self.seconds),
                "native_calls": [dict(r.native) for r in self.reports],
                "unsupported_calls": [{f"{k[0]}: {k[1]}": n for k, n in r.unsupported.items()} for r in self.reports]}

    @property
    def first_call(self) -> "CallDiff | None":
        """The first call of the forward pass whose outputs differ."""
        return next((c for c in self.calls if c.differ), None)

    def text(self) -> str:
        lines = [f"{self.a} vs {self.b}: {len(self.calls)} emulated call(s), "
                 f"{sum(1 for c in self.calls if c.differ)} with differing outputs"]
        f = self.first_call
        lines.append(f"first difference: call {f.index} {f.op} in {f.scope or '(top level)'} at element {f.first}"
                     if f else "first difference: none (every emulated call gives the same bits)")
        w = min(48, max([12] + [len(c.scope) for c in self.calls]))
        lines.append(f"{'#':>4}  {'module':<{w}} {'op':<12} {'shape':<16} {'dtype':<9} {'differ':>8} {'max ulp':>9}")
        for c in self.calls:
            lines.append(f"{c.index:4d}  {(c.scope or '-')[:w]:<{w}} {c.op[:12]:<12} {c.shape[:16]:<16} {c.dtype:<9} "
                         f"{100 * c.share:7.2f}% {c.max_ulp:9.0f}")
        if self.output is not None:
            o = self.output
            lines.append(f"module output {o.shape} {o.dtype}: {100 * o.share:.2f}% differ, max {o.max_ulp:.0f} ulp")
        return "\n".join(lines)

    __str__ = text

    def plot(self, path: str) -> str:
        """A figure of the per-call differences (share differing, largest ulp distance), written
        with matplotlib's Agg backend to ``path``. Needs matplotlib (the ``report`` extra)."""
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise ModelError("DiffResult.plot needs matplotlib: pip install -e '.[report]'") from None
        x = np.arange(len(self.calls))
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(6.0, 0.25 * len(x) + 2), 5.5), sharex=True)
        ax1.bar(x, [100 * c.share for c in self.calls], color="tab:blue")
        ax1.set_ylabel("outputs differing (%)")
        ax1.set_title(f"{self.a} vs {self.b}, per emulated call (forward order)")
        ax2.bar(x, [c.max_ulp if np.isfinite(c.max_ulp) else 0 for c in self.calls], color="tab:red")
        ax2.set_yscale("symlog", linthresh=1)
        ax2.set_ylabel("largest distance (ulp)")
        ax2.set_xticks(x, [f"{c.scope or c.op}" for c in self.calls], rotation=90, fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path


def _compare(i, ra, rb, ta, tb, choice_a, choice_b, op, scope, shape) -> CallDiff:
    d = ulp_distance(ta, tb)
    bad = np.flatnonzero(d.reshape(-1))
    first = tuple(int(v) for v in np.unravel_index(bad[0], d.shape)) if len(bad) else None
    return CallDiff(i, op, scope, shape, str(ta.dtype).removeprefix("torch."), int(d.size), int(len(bad)),
                    float(d.max()) if d.size else 0.0, first, choice_a, choice_b)


def _output_tensor(out):
    """The tensor a module's output stands for: itself, a ``logits`` field (a transformers
    ``ModelOutput``), else the first floating tensor of a dict, tuple or list; None if none."""
    if isinstance(out, torch.Tensor):
        return out if out.is_floating_point() else None
    if isinstance(out, dict):
        if isinstance(out.get("logits"), torch.Tensor):
            return out["logits"]
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        for v in out:
            t = _output_tensor(v)
            if t is not None:
                return t
    return None


_CHOICE = re.compile(r"^\s*([\w.-]+)\s*(?:\[(.*)\])?\s*$")
_BOOL = {"on": True, "true": True, "1": True, "yes": True, "off": False, "false": False, "0": False, "no": False}


def parse_choice(text: str):
    """A GPU choice as text: ``h100``, or ``h100[tf32=off]``, ``h100[reduced=on,workspace=33554432]``
    (the flags of :class:`emulate`: ``tf32``, ``reduced`` on/off, ``workspace`` bytes) -> a gpu name
    or a dict of :class:`emulate` arguments, as :func:`diff` takes them. The labels :func:`diff`
    prints read back the same way."""
    m = _CHOICE.match(str(text))
    if not m:
        raise ModelError(f"a GPU choice is NAME or NAME[flag=value,...] (tf32, reduced, workspace), got {text!r}")
    from .emulate import gpu_arch
    gpu_arch(m.group(1))                 # an unknown name: one line listing the names
    if m.group(2) is None:
        return m.group(1)
    kw = {"gpu": m.group(1)}
    for item in filter(None, (x.strip() for x in m.group(2).split(","))):
        key, eq, val = item.partition("=")
        key, val = key.strip(), val.strip().lower()
        if not eq or key not in ("tf32", "reduced", "workspace"):
            raise ModelError(f"{text!r}: {item!r} is not one of tf32=on|off, reduced=on|off, workspace=BYTES")
        if key == "workspace":
            if not val.isdigit():
                raise ModelError(f"{text!r}: workspace is a number of bytes, got {val!r}")
            kw[key] = int(val)
        elif val in _BOOL:
            kw[key] = _BOOL[val]
        else:
            raise ModelError(f"{text!r}: {key} is on or off, got {val!r}")
    return kw


def load_build(path, func: str = "build", **kwargs):
    """Run ``func(**kwargs)`` of the Python file ``path`` and return its ``(module, inputs)``:
    ``inputs`` a tensor or a tuple of tensors the module is called with (``module(*inputs)``).
    The protocol of ``mmaprobe torch diff`` / ``capture`` (docs/torch.md). Errors in the file
    are one line."""
    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{path}: no such file (a Python file defining {func}() -> (module, inputs))")
    name = f"_mmaprobe_build_{abs(hash(str(p.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, p)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod                # dataclasses and pickling look the module up
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        raise ModelError(f"{path}: loading it raised {type(e).__name__}: {e}") from None
    fn = getattr(mod, func, None)
    if not callable(fn):
        raise ModelError(f"{path} defines no function {func}() returning (module, inputs)")
    try:
        got = fn(**kwargs)
    except ModelError:
        raise
    except Exception as e:
        raise ModelError(f"{path}: {func}() raised {type(e).__name__}: {e}") from None
    if not (isinstance(got, tuple) and len(got) == 2 and callable(got[0])):
        raise ModelError(f"{path}: {func}() must return (module, inputs), got {type(got).__name__}")
    module, inputs = got
    ins = inputs if isinstance(inputs, tuple) else (inputs,)
    if not all(isinstance(t, torch.Tensor) for t in ins):
        raise ModelError(f"{path}: {func}()'s inputs must be a tensor or a tuple of tensors")
    return module, inputs


def _mode_kwargs(choice) -> dict:
    if isinstance(choice, str):
        return {"gpu": choice}
    if isinstance(choice, dict) and "gpu" in choice:
        return dict(choice)
    raise ModelError(f"a GPU choice is a gpu name or a dict of emulate() arguments with 'gpu', got {choice!r}")


def _label(choice) -> str:
    kw = _mode_kwargs(choice)
    rest = ",".join(f"{k}={({True: 'on', False: 'off'}.get(v, v) if isinstance(v, bool) else v)}"
                    for k, v in kw.items() if k != "gpu")
    return kw["gpu"] + (f"[{rest}]" if rest else "")


def _run(module, inputs, choice, common):
    kw = {**common, **_mode_kwargs(choice)}
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    t0 = time.perf_counter()
    with torch.no_grad(), emulate(module=module if isinstance(module, torch.nn.Module) else None,
                                  keep_outputs=True, **kw) as mode:
        out = module(*args)
    return _output_tensor(out), mode.report(), time.perf_counter() - t0


def diff(module, inputs, gpu_a, gpu_b, **common) -> DiffResult:
    """Run ``module(*inputs)`` under ``emulate(gpu_a)`` and ``emulate(gpu_b)`` and compare every
    emulated call's output with its counterpart, in forward order, labelled by the submodule that
    made it. ``gpu_a``/``gpu_b``: a gpu name, or a dict of :class:`emulate` arguments (``{"gpu":
    "h100", "tf32": True}``) to compare flags on one GPU. ``common``: arguments both modes take
    (``jobs``, ``backend``, ...). The two runs must make the same sequence of calls."""
    out_a, ra, sa = _run(module, inputs, gpu_a, common)
    out_b, rb, sb = _run(module, inputs, gpu_b, common)
    la, lb = _label(gpu_a), _label(gpu_b)
    if [(c.op, c.shape_text()) for c in ra.emulated] != [(c.op, c.shape_text()) for c in rb.emulated]:
        k = next((i for i, (x, y) in enumerate(zip(ra.emulated, rb.emulated))
                  if (x.op, x.shape_text()) != (y.op, y.shape_text())), min(len(ra.emulated), len(rb.emulated)))
        raise ModelError(f"diff: the two runs made different emulated calls from call {k} on "
                         f"({len(ra.emulated)} and {len(rb.emulated)} calls): the forward pass depends on the values")
    res = DiffResult(la, lb, reports=(ra, rb), seconds=(sa, sb))
    for x, y in zip(ra.emulated, rb.emulated):
        res.calls.append(_compare(x.index, ra, rb, x.output, y.output, f"{x.model} {x.dataflow}",
                                  f"{y.model} {y.dataflow}", x.op, x.scope, x.shape_text()))
    if out_a is not None and out_b is not None and out_a.dtype == out_b.dtype and out_a.shape == out_b.shape:
        res.output = _compare(-1, ra, rb, out_a, out_b, la, lb, "output", "", "x".join(map(str, out_a.shape)))
    return res
