"""Per-call differences between two GPU choices: the same module and inputs run under two
:class:`~mmaprobe.torch.emulate.emulate` modes, each emulated call's output compared with its
counterpart (in forward order): the share of outputs that differ, the largest distance in units
in the last place, where the first difference is (docs/torch.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

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
        lines.append(f"{'#':>4}  {'module':<28} {'op':<12} {'shape':<16} {'dtype':<9} {'differ':>8} {'max ulp':>9}")
        for c in self.calls:
            lines.append(f"{c.index:4d}  {(c.scope or '-')[:28]:<28} {c.op[:12]:<12} {c.shape[:16]:<16} {c.dtype:<9} "
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


def _mode_kwargs(choice) -> dict:
    if isinstance(choice, str):
        return {"gpu": choice}
    if isinstance(choice, dict) and "gpu" in choice:
        return dict(choice)
    raise ModelError(f"a GPU choice is a gpu name or a dict of emulate() arguments with 'gpu', got {choice!r}")


def _label(choice) -> str:
    kw = _mode_kwargs(choice)
    rest = ",".join(f"{k}={v}" for k, v in kw.items() if k != "gpu")
    return kw["gpu"] + (f"[{rest}]" if rest else "")


def _run(module, inputs, choice, common):
    kw = {**common, **_mode_kwargs(choice)}
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    with torch.no_grad(), emulate(module=module, keep_outputs=True, **kw) as mode:
        out = module(*args)
    return out, mode.report()


def diff(module, inputs, gpu_a, gpu_b, **common) -> DiffResult:
    """Run ``module(*inputs)`` under ``emulate(gpu_a)`` and ``emulate(gpu_b)`` and compare every
    emulated call's output with its counterpart, in forward order, labelled by the submodule that
    made it. ``gpu_a``/``gpu_b``: a gpu name, or a dict of :class:`emulate` arguments (``{"gpu":
    "h100", "tf32": True}``) to compare flags on one GPU. ``common``: arguments both modes take
    (``jobs``, ``backend``, ...). The two runs must make the same sequence of calls."""
    out_a, ra = _run(module, inputs, gpu_a, common)
    out_b, rb = _run(module, inputs, gpu_b, common)
    la, lb = _label(gpu_a), _label(gpu_b)
    if [(c.op, c.shape_text()) for c in ra.emulated] != [(c.op, c.shape_text()) for c in rb.emulated]:
        k = next((i for i, (x, y) in enumerate(zip(ra.emulated, rb.emulated))
                  if (x.op, x.shape_text()) != (y.op, y.shape_text())), min(len(ra.emulated), len(rb.emulated)))
        raise ModelError(f"diff: the two runs made different emulated calls from call {k} on "
                         f"({len(ra.emulated)} and {len(rb.emulated)} calls): the forward pass depends on the values")
    res = DiffResult(la, lb, reports=(ra, rb))
    for x, y in zip(ra.emulated, rb.emulated):
        res.calls.append(_compare(x.index, ra, rb, x.output, y.output, f"{x.model} {x.dataflow}",
                                  f"{y.model} {y.dataflow}", x.op, x.scope, x.shape_text()))
    if isinstance(out_a, torch.Tensor) and isinstance(out_b, torch.Tensor) and out_a.is_floating_point():
        res.output = _compare(-1, ra, rb, out_a, out_b, la, lb, "output", "", "x".join(map(str, out_a.shape)))
    return res
