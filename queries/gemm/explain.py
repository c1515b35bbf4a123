"""``mmaprobe explain`` for GEMMs: which (instruction model, dataflow) pairs reproduce the outputs
devices gave on one GEMM.

Inputs: a :class:`~queries.gemm.spec.Problem` (A, B, C, α, β) and per device an observation: one
value every element equals (``V100=0``; a reported 0 matches +0 and -0) or a whole output matrix.
The space: the catalog models (and rivals) of the problem's formats × the named dataflow profiles
that apply (no scales) × a grid of chain choices (C in the accumulator with each pre-scale rule;
split-K S slices, contiguous or interleaved, combined serially or pairwise; restart intervals
N_C). Each hypothesis is evaluated on one representative per distinct (row, column) class
(:mod:`.structure`) with ``smtmodel.gemm.gemm_bits`` (the tabulated reading for long repeated
chains, :mod:`smtmodel.chains`), so seed 003 §V's 2^13 GEMM costs one dot product per hypothesis.

Per device the result lists every hypothesis that fits, the dataflow features no fitting
hypothesis has (ruled out), the element that decides each rejection, and the conflicts: a device
no hypothesis fits, a device only rival hypotheses fit (a disagreement between the seeds: the
rival's ``source`` says which).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from smtmodel.catalog import all_models, get_model
from smtmodel.dataflow import PROFILES, Dataflow, DataflowError, parse_dataflow
from smtmodel.formats import get_format, numpy_to_bits
from smtmodel.gemm import epilogue_format, gemm_bits, output_format, to_bits
from smtmodel.model import Model, ModelError

from .spec import Problem
from .structure import InputError

SPLITS = (2, 3, 4, 8)
ASSIGNS = ("contiguous", "interleaved")
COMBINES = ("serial", "pairwise")
INTERVALS = (32, 64, 128, 256)
C_SCALES = ("none", "beta", "beta/alpha")

FEATURES = ("c_entry", "c_scale", "epilogue", "slices", "assign", "combine", "restart", "tile")
"""Dataflow fields whose values a device's fitting hypotheses are summarised by."""


# ---- the space ------------------------------------------------------------------------------------

def applicable(df: Dataflow) -> bool:
    """Profiles without FP8 scales (this explain takes no scale arguments) and with the model's
    output format."""
    return (not df.alpha_from_scales and df.combine_op == "fadd" and df.scale_a == "tensor"
            and df.scale_b == "tensor" and df.out == "model")


def default_dataflows() -> list[Dataflow]:
    """The named profiles that apply, then the grid on the default profile (module docstring)."""
    base = PROFILES["cutlass2"]
    out = [p for p in PROFILES.values() if applicable(p)]
    out += [replace(base, name="", c_entry="accumulator", epilogue="alpha_acc", c_scale=s) for s in C_SCALES]
    out += [replace(base, name="", slices=S, assign=a, combine=c) for S in SPLITS for a in ASSIGNS for c in COMBINES]
    out += [replace(base, name="", tile=n, restart=1) for n in INTERVALS]
    seen, uniq = set(), []
    for d in out:
        d = d.validate()
        if d.text() not in seen:
            seen.add(d.text())
            uniq.append(d)
    return uniq


def default_models(in_fmt: str, c_fmt: str) -> list[Model]:
    """Catalog models and rivals taking the problem's formats (no block scales)."""
    fi, fc = get_format(in_fmt).name, get_format(c_fmt).name
    return [m for m in all_models() if get_format(m.in_fmt).name == fi and get_format(m.c_fmt).name == fc
            and not m.scale_fmt and not getattr(m, "a_fmt", None)]


# ---- observations -------------------------------------------------------------------------------

@dataclass
class Observation:
    """One device's output: ``value`` (every element; float) or ``matrix`` (raw bits (M, N))."""

    device: str
    value: float | None = None
    matrix: np.ndarray | None = None
    text: str = ""


def parse_observation(text: str, shape: tuple[int, int] | None = None, out_fmt: str = "fp32") -> Observation:
    """``DEVICE=VALUE`` or ``DEVICE=PATH.npy`` (an (M, N) matrix of outputs)."""
    dev, eq, val = text.partition("=")
    if not eq or not dev.strip() or not val.strip():
        raise InputError(f"--observe {text!r}: use DEVICE=VALUE or DEVICE=OUTPUT.npy, e.g. H100=191.875")
    dev, val = dev.strip(), val.strip()
    if val.endswith(".npy"):
        try:
            x = np.load(val, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"--observe {dev}: {val}: {exc}") from None
        if shape is not None and x.shape != tuple(shape):
            raise InputError(f"--observe {dev}: {val} is {'x'.join(map(str, x.shape)) or 'a scalar'}, "
                             f"but the GEMM's D is {shape[0]}x{shape[1]}")
        bits = x.astype(np.uint64) if x.dtype.kind == "u" else _exact(x, out_fmt, f"--observe {dev}")
        return Observation(dev, matrix=bits, text=text)
    try:
        v = float(val)
    except ValueError:
        raise InputError(f"--observe {text!r}: {val!r} is neither a number nor a .npy file") from None
    _exact(np.array(v), out_fmt, f"--observe {dev}={val}")
    return Observation(dev, value=v, text=text)


def _exact(x, fmt, what):
    try:
        return to_bits(x, fmt).astype(np.uint64)
    except ModelError as exc:
        raise InputError(f"{what}: {exc}") from None


# ---- evaluation -----------------------------------------------------------------------------------

@dataclass
class Hypothesis:
    model: Model
    dataflow: Dataflow

    @property
    def label(self) -> str:
        return f"{self.model.id} | {self.dataflow.text()}"


@dataclass
class Result:
    problem: str
    shape: tuple
    elements: int
    hypotheses: list                  # [{"model", "dataflow", "values" or "error"}]
    devices: list                     # per device: dict (see explain())
    seconds: float = 0.0
    space: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"problem": self.problem, "shape": list(self.shape), "distinct_elements": self.elements,
                "space": self.space, "seconds": round(self.seconds, 3), "devices": self.devices,
                "hypotheses": self.hypotheses}


def _epi_bits(x: float, fmt: str) -> int:
    return int(numpy_to_bits(np.asarray(x, dtype=np.float64).astype(np.float64), get_format(fmt)))


def evaluate(problem: Problem, hyps: list[Hypothesis], progress=None):
    """Output bits of every hypothesis on the reduced GEMM: list of (R*, Q*) arrays or error
    strings (a dataflow that does not fit the shapes)."""
    A, B, C, _, _ = problem.inputs.reduced()
    out = []
    for i, h in enumerate(hyps):
        E = epilogue_format(h.model, h.dataflow)
        try:
            al, be = _epi_bits_exact(problem.alpha, E), _epi_bits_exact(problem.beta, E)
            d = gemm_bits(h.model, A, B, C, alpha_bits=al, beta_bits=be, dataflow=h.dataflow, backend="tabulated")
            out.append(d)
        except (ModelError, DataflowError) as exc:
            out.append(str(exc))
        if progress and (i + 1) % 50 == 0:
            progress(f"{i + 1}/{len(hyps)} hypotheses evaluated")
    return out


def _epi_bits_exact(x: float, fmt: str) -> int:
    return int(to_bits(np.array(x, dtype=np.float64), fmt))


def _zero_mask(fmt: str) -> int:
    f = get_format(fmt)
    return ((1 << f.width) - 1) >> 1 if f.signed else (1 << f.width) - 1


def _observed_classes(obs: Observation, out_fmt: str, row_of, col_of, n_rows: int, n_cols: int):
    """(value per reduced element as bits or None, mixed classes): the observed value of each
    (row class, column class), and the classes whose elements differ."""
    if obs.matrix is None:
        v = int(to_bits(np.array(obs.value), out_fmt))
        return np.full((n_rows, n_cols), v, np.uint64), []
    mat = obs.matrix
    first = np.full((n_rows, n_cols), -1, np.int64)
    val = np.zeros((n_rows, n_cols), np.uint64)
    mixed = []
    key = row_of[:, None] * n_cols + col_of[None, :]
    flat_k, flat_v = key.reshape(-1), mat.reshape(-1)
    order = np.argsort(flat_k, kind="stable")
    ks, vs = flat_k[order], flat_v[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    for s, e in zip(starts, np.r_[starts[1:], len(ks)]):
        r, q = divmod(int(ks[s]), n_cols)
        val[r, q] = vs[s]
        first[r, q] = order[s]
        if np.any(vs[s:e] != vs[s]):
            mixed.append((r, q))
    return val, mixed


def explain_gemm(problem: Problem, observations: list[Observation], models: list[Model] | None = None,
                 dataflows: list[Dataflow] | None = None, progress=None) -> Result:
    """Every (model, dataflow) of the space that reproduces each device's observation (module
    docstring). ``models``/``dataflows``: the space (default: :func:`default_models` ×
    :func:`default_dataflows`)."""
    t0 = time.perf_counter()
    M, N, K = problem.shape
    if not observations:
        raise InputError("explain needs at least one --observe DEVICE=VALUE")
    names = [o.device for o in observations]
    if len(set(names)) != len(names):
        raise InputError(f"a device is observed twice: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    models = models if models is not None else default_models(problem.in_fmt, problem.c_fmt)
    dataflows = dataflows if dataflows is not None else default_dataflows()
    if not models:
        raise InputError(f"no catalog model takes {problem.in_fmt} A/B with {problem.c_fmt} C")
    outs = {output_format(m, d) for m in models for d in dataflows}
    if len(outs) != 1:
        raise InputError(f"the space mixes output formats {sorted(outs)}: observations are of one format")
    out_fmt = outs.pop()
    for o in observations:
        if o.matrix is not None and o.matrix.shape != (M, N):
            raise InputError(f"--observe {o.device}: the output is {o.matrix.shape[0]}x{o.matrix.shape[1]}, "
                             f"but the GEMM's D is {M}x{N}")
    A, B, C, row_of, col_of = problem.inputs.reduced()
    R, Q = A.shape[0], B.shape[1]
    hyps = [Hypothesis(m, d) for m in models for d in dataflows]
    values = evaluate(problem, hyps, progress)
    fo = get_format(out_fmt)
    zmask = np.uint64(_zero_mask(out_fmt))
    rows_rep = np.unique(row_of, return_index=True)[1]
    cols_rep = np.unique(col_of, return_index=True)[1]

    hyp_rows = []
    for h, v in zip(hyps, values):
        row = {"model": h.model.id, "dataflow": h.dataflow.text(), "kind": h.model.kind}
        if isinstance(v, str):
            row["error"] = v
        else:
            row["values"] = sorted({fo.hex(int(x)) for x in v.reshape(-1)})
        hyp_rows.append(row)

    devices = []
    for o in observations:
        want, mixed = _observed_classes(o, out_fmt, row_of, col_of, R, Q)
        fits, rejected = [], []
        for idx, (h, v) in enumerate(zip(hyps, values)):
            if isinstance(v, str):
                continue
            same = (v == want) | (((v & zmask) == 0) & ((want & zmask) == 0) & (o.matrix is None))
            if mixed:
                same[tuple(np.array(mixed).T)] = False
            if same.all():
                fits.append(idx)
            else:
                r, q = np.argwhere(~same)[0]
                rejected.append((idx, int(r), int(q), int(v[r, q])))
        dev = _summarise(o, hyps, fits, rejected, want, mixed, fo, rows_rep, cols_rep)
        devices.append(dev)
    space = {"models": [m.id for m in models], "dataflows": [d.text() for d in dataflows],
             "hypotheses": len(hyps), "out_fmt": out_fmt}
    return Result(problem.describe(), (M, N, K), R * Q, hyp_rows, devices, time.perf_counter() - t0, space)


def _features(hyps, idxs) -> dict:
    out = {}
    for key in FEATURES:
        vals = sorted({str(getattr(hyps[i].dataflow, key)) for i in idxs})
        out[key] = vals
    return out


def _summarise(o, hyps, fits, rejected, want, mixed, fo, rows_rep, cols_rep) -> dict:
    all_idx = list(range(len(hyps)))
    seen = _features(hyps, [i for i in all_idx])
    have = _features(hyps, fits)
    ruled_out = {k: [v for v in seen[k] if v not in have[k]] for k in FEATURES}
    ruled_out = {k: v for k, v in ruled_out.items() if v and len(seen[k]) > 1}
    fit_rows = [{"model": hyps[i].model.id, "dataflow": hyps[i].dataflow.text(), "kind": hyps[i].model.kind}
                for i in fits]
    deciding = {}
    for idx, r, q, got in rejected:
        key = (int(rows_rep[r]), int(cols_rep[q]))
        deciding.setdefault(key, 0)
        deciding[key] += 1
    conflicts = []
    if mixed:
        conflicts.append(f"{len(mixed)} class(es) of identical inputs have differing outputs (e.g. row "
                         f"{int(rows_rep[mixed[0][0]])}, column {int(cols_rep[mixed[0][1]])}): no dataflow that "
                         f"treats every element alike fits them")
    if not fits:
        conflicts.append("no hypothesis of the space reproduces this device")
    kinds = {hyps[i].model.kind for i in fits}
    rivals = sorted({hyps[i].model.id for i in fits if hyps[i].model.kind == "rival"})
    if fits and kinds == {"rival"}:
        srcs = sorted({f"{hyps[i].model.id} (rival of {hyps[i].model.rival_of}: {hyps[i].model.source})" for i in fits})
        conflicts.append("explained only by rival hypotheses, a disagreement between the seeds: " + "; ".join(srcs))
    return {"device": o.device, "observed": o.text, "value": (None if o.value is None else o.value),
            "fits": fit_rows, "fit_models": sorted({r["model"] for r in fit_rows}),
            "ruled_out": ruled_out, "deciding_elements": [{"row": r, "col": c, "rejects": n}
                                                           for (r, c), n in sorted(deciding.items())],
            "rejected": len(rejected), "conflicts": conflicts, "only_rivals": bool(fits) and kinds == {"rival"},
            "rivals": rivals}


def table(res: Result) -> str:
    """The readable summary: per device the fitting models with their dataflows, what is ruled
    out, and the conflicts."""
    lines = [res.problem, f"space: {res.space['hypotheses']} hypotheses ({len(res.space['models'])} models x "
             f"{len(res.space['dataflows'])} dataflows), {res.elements} distinct element(s) each; "
             f"{res.seconds:.1f} s"]
    for d in res.devices:
        lines.append("")
        lines.append(f"{d['observed']}: {len(d['fits'])} hypothesis(es) fit")
        by_model: dict[str, list] = {}
        for r in d["fits"]:
            by_model.setdefault(r["model"], []).append(r["dataflow"])
        for mid, dfs in by_model.items():
            shown = ", ".join(dfs[:6]) + (f", ... ({len(dfs)})" if len(dfs) > 6 else "")
            lines.append(f"  {mid:<32} {shown}")
        for k, v in d["ruled_out"].items():
            lines.append(f"  ruled out: {k} = {', '.join(v)}")
        if d["deciding_elements"]:
            e = d["deciding_elements"]
            lines.append("  deciding element(s): " + ", ".join(f"D[{x['row']},{x['col']}] ({x['rejects']} rejected)"
                                                               for x in e[:4]))
        for c in d["conflicts"]:
            lines.append(f"  CONFLICT: {c}")
    return "\n".join(lines)
