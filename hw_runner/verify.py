"""The harness's verification plan: which kernel runs a model, the chunks of the validation mix,
and one chunk's comparison of a device's outputs with the model's twin (``mmaprobe verify``:
:func:`plan_verify` checks the formats, runs the layout self-test and the GPU side of every chunk;
the command line runs the twin side, :meth:`VerifyPlan.tasks`, as campaign tasks and
:meth:`VerifyPlan.gather` sums their results).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from smtmodel.formats import get_format
from smtmodel.limits import CASES_MAX, cases_memory, check_at_most, check_memory, check_positive
from smtmodel.sampling import KINDS, scale_mix, validation_mix
from smtmodel.vectors import VectorFile, case_rows, make_header

from . import runner
from .errors import HarnessError
from .kernels import default_kernel, get_kernel, kernels_for, preferred


def kernel_for(model, arch: str):
    """The instruction a model says it runs on (its ``kernels``) where one exists on ``arch``,
    else the default kernel of its formats (e.g. the wgmma model of Hopper FP8 -> wgmma)."""
    fmts = (getattr(model, "in_key", model.in_fmt), model.c_fmt, model.out_fmt)     # stand-ins: one format
    sf = getattr(model, "scale_fmt", None)
    scale = (get_format(sf).name, int(model.scale_block)) if sf else None           # block-scaled models
    mine = [s for s in kernels_for(*fmts, arch, scale=scale) if s.id in getattr(model, "kernels", ())]
    return preferred(mine) if mine else default_kernel(*fmts, arch, scale=scale)


VERIFY_CHUNK = 1 << 18     # cases per campaign task of verify


def verify_draw(in_fmt: str, c_fmt: str, k: int, seed: int, chunk: int, n: int, b_fmt: str | None = None):
    """Chunk ``chunk`` of verify's validation mix: the first chunk is ``validation_mix(..., seed)``
    itself, chunk i > 0 draws from the seed sequence ``[seed, i]`` (independent streams); b in
    ``b_fmt`` where it differs (mixed operands)."""
    return validation_mix(in_fmt, c_fmt, k, n, seed if chunk == 0 else [seed, chunk], b_fmt=b_fmt)


def verify_scales(model, k: int, seed: int, chunk: int, n: int):
    """The block scales of chunk ``chunk`` for a block-scaled model (raw bits ``(n,
    model.scale_count(k))`` for a and for b, every kind of :data:`smtmodel.sampling.SCALE_KINDS`
    in turn, drawn from the seed sequence ``[seed, chunk, 1]``, apart from the elements); (None,
    None) for an unscaled model."""
    if not getattr(model, "scale_fmt", None):
        return None, None
    return scale_mix(model.scale_fmt, n, model.scale_count(k), [seed, chunk, 1])


def verify_task(model_id: str, other: str | None, k: int, seed: int, chunk: int, n: int, hw_d, nan_equal: bool,
                key: str, size: int = VERIFY_CHUNK, keep: int | None = None, twin: dict | None = None) -> dict:
    """One chunk of ``verify`` (a campaign task): the twin of ``model_id`` on the chunk's cases
    against the device's outputs ``hw_d`` (or, for ``--device twin:OTHER``, the twin of
    ``other``); per-kind counts, and the first ``keep`` mismatching cases (all if None)."""
    model = runner.default_model_lookup(model_id)
    fa, fb = getattr(model, "operand_fmts", (model.in_fmt, model.in_fmt))     # stand-ins have one format
    a, b, c, kinds = verify_draw(fa, model.c_fmt, k, seed, chunk, n, b_fmt=fb)
    sa, sb = verify_scales(model, k, seed, chunk, n)
    sc = {} if sa is None else {"a_scale": sa, "b_scale": sb}
    tw = np.asarray(model.evaluate(a, b, c, **sc, **(twin or {})), dtype=np.uint64)
    hw = (np.asarray(runner.default_model_lookup(other).evaluate(a, b, c, **sc, **(twin or {})), dtype=np.uint64)
          if other else np.asarray(hw_d, dtype=np.uint64))
    mism = ~runner.agree(hw, tw, get_format(model.out_fmt), nan_equal)
    base = chunk * size
    idx = np.flatnonzero(mism)[:keep]
    pick = (lambda x: None if x is None else x[idx])
    cases = case_rows((fa, fb, model.c_fmt), a[idx], b[idx], c[idx],
                      ids=[f"verify-{kinds[i]}-{base + i}" for i in idx], a_scale=pick(sa), b_scale=pick(sb),
                      scale_fmt=model.scale_fmt if sa is not None else None, out_fmt=model.out_fmt,
                      expect={model.id: tw[idx]}, observed={key: hw[idx]},
                      extra=[{"kind": str(kinds[i])} for i in idx])
    return {"status": "done", "cases": cases, "mismatches": int(mism.sum()),
            "kinds": {kind: [int(mism[kinds == kind].sum()), int((kinds == kind).sum())] for kind in KINDS}}


@dataclass
class VerifyResult:
    """The chunks' results summed: the mismatching cases kept, ``[mismatches, cases]`` per kind of
    the validation mix, and the chunks that were not verified (one line each)."""

    cases: list
    counts: dict
    lost: list[str]
    mismatches: int

    @property
    def total(self) -> int:
        return sum(n for _, n in self.counts.values())


@dataclass
class VerifyPlan:
    """``verify``'s campaign: the model, the device key it is compared with (a GPU's, whose
    outputs per chunk are ``hw_d``, or ``twin:OTHER``), K, the chunks ``(index, cases)`` and the
    layout self-test's probe count (0 for a twin)."""

    model: object
    other: str | None
    key: str
    kernel: str | None
    k: int
    seed: int
    cases: int
    chunk: int
    chunks: list[tuple[int, int]]
    nan_equal: bool = False
    keep: int | None = None
    twin: dict | None = None
    probes: int = 0
    hw_d: dict = field(default_factory=dict)

    def tasks(self) -> list[tuple[str, object, tuple]]:
        """(key, function, arguments) of each chunk's campaign task (:func:`verify_task`)."""
        return [(f"chunk-{i}", verify_task, (self.model.id, self.other, self.k, self.seed, i, n, self.hw_d.get(i),
                                             self.nan_equal, self.key, self.chunk, self.keep, self.twin))
                for i, n in self.chunks]

    def params(self) -> dict:
        """The campaign's parameters (its journal's header)."""
        return {"model": self.model.id, "device": self.key, "kernel": self.kernel, "k": self.k, "seed": self.seed,
                "cases": self.cases, "chunk": self.chunk, "nan_equal": self.nan_equal, "keep": self.keep}

    def gather(self, results: dict) -> VerifyResult:
        """The tasks' ``results`` (by task key) summed, in chunk order."""
        cases, counts, lost, n_mism = [], {kind: [0, 0] for kind in KINDS}, [], 0
        for key, _, _ in self.tasks():
            r = results[key]
            if r.get("status") != "done":
                lost.append(f"{key}: {r.get('status')} ({r.get('reason', '')})")
                continue
            cases += r["cases"]
            n_mism += r["mismatches"]
            for kind, (m, n) in r["kinds"].items():
                counts[kind][0] += m
                counts[kind][1] += n
        return VerifyResult(cases, counts, lost, n_mism)

    def vector_file(self, res: VerifyResult) -> VectorFile:
        """The mismatching cases as a vector file, with the model's prediction and the device's output."""
        model = self.model
        scale_fmt = getattr(model, "scale_fmt", None)           # block-scaled models (stand-ins: none)
        scaled = {"scale_fmt": get_format(scale_fmt).name, "scale_block": int(model.scale_block)} if scale_fmt else {}
        header = make_header(model.in_fmt, model.c_fmt, model.out_fmt, self.k, models=[model.id], **scaled,
                             source={"tool": "mmaprobe verify", "kernel": self.kernel, "device": self.key,
                                     "seed": self.seed, "cases": self.cases})
        return VectorFile(header, res.cases)


def _check_chunk_memory(chunk: int, k: int) -> None:
    """A chunk's cases of ``k`` products, the device's outputs and the twin's, within memory."""
    check_memory(cases_memory(chunk, k), f"verify with chunks of {chunk} cases at k = {k}",
                 "lower --chunk or --k")


def plan_verify(model_id: str, device: str, *, cases: int, chunk: int = VERIFY_CHUNK, k: int | None = None,
                kernel: str | None = None, seed: int = 0, nan_equal: bool = False, keep: int | None = None,
                check_sass: bool = True, twin: dict | None = None) -> VerifyPlan:
    """``verify``'s plan for ``model_id`` on ``device`` (``cuda[:N]``, ``rocm[:N]`` or
    ``twin:OTHER``): the formats (and block scales) checked against the kernel or the other model,
    ``cases`` cut into chunks of ``chunk``; on a GPU the layout self-test (exact probes; a failure
    is a :class:`HarnessError`) and every chunk's device outputs, run here, before the twin side."""
    model = runner.default_model_lookup(model_id)
    fmts = (model.in_fmt, model.c_fmt, model.out_fmt)
    other = device[len("twin:"):] if device.startswith("twin:") else None
    fa, fb = getattr(model, "operand_fmts", (model.in_fmt, model.in_fmt))     # stand-ins have one format
    scale_fmt = getattr(model, "scale_fmt", None)           # block-scaled models (stand-ins: none)
    size = chunk
    if size < 1 or cases < 1:
        raise HarnessError(f"--cases and --chunk must be positive (got {cases}, {size})")
    check_at_most("--cases", cases, CASES_MAX, "the twin's time grows with the cases")
    if k is not None:
        check_positive("--k", k)
    chunks = [(i, min(size, cases - i * size)) for i in range(-(-cases // size))]
    hw_d, probes = {}, 0
    if other:
        om = runner.default_model_lookup(other)
        if getattr(om, "formats", fmts) != getattr(model, "formats", fmts) or (om.in_fmt, om.c_fmt, om.out_fmt) != fmts:
            raise HarnessError(f"twin:{other} does not compute the formats of model {model.id}: {fmts}")
        if (getattr(om, "scale_fmt", None), getattr(om, "scale_block", None)) != (scale_fmt, getattr(model, "scale_block", None)):
            raise HarnessError(f"twin:{other} reads other block scales than model {model.id}: "
                               f"{getattr(om, 'scale_fmt', None) or 'none'} vs {scale_fmt or 'none'}")
        k, key, kernel_id = k or (max(model.scale_block, model.L) if scale_fmt else 16), f"twin:{om.id}", None
        if scale_fmt and k % model.scale_block:
            raise HarnessError(f"{model.id}: k={k} is not a multiple of the scale block {model.scale_block}")
        _check_chunk_memory(min(size, cases), k)
    else:
        launcher = runner.make_launcher(device, check_sass=check_sass)
        spec = get_kernel(kernel) if kernel else kernel_for(model, launcher.arch)
        if (spec.operand_fmts, spec.c_fmt, spec.out_fmt) != ((fa, fb), *fmts[1:]):
            raise HarnessError(f"kernel {spec.id} does not compute the formats of model {model.id}: "
                               f"{fa} x {fb} + {fmts[1]} -> {fmts[2]}")
        k = k or spec.k
        _check_chunk_memory(min(size, cases), k)
        probes = runner.layout_self_test(launcher, spec, k, (scale_fmt, model.scale_count(k)) if scale_fmt else None)
        key, kernel_id = f"{launcher.name} / {launcher.arch} / {spec.instruction_for(launcher.arch)}", spec.id
        for i, n in chunks:            # the one GPU runs here; the twin side runs in the campaign's tasks
            a, b, c, _ = verify_draw(fa, model.c_fmt, k, seed, i, n, b_fmt=fb)
            sa, sb = verify_scales(model, k, seed, i, n)
            hw_d[i] = runner.run_on_device(launcher, spec, a, b, c, a_scale=sa, b_scale=sb).d
    return VerifyPlan(model, other, key, kernel_id, k, seed, cases, size, chunks, nan_equal, keep, twin, probes, hw_d)
