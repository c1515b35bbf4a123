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

from smtmodel.catalog import alias_models, all_models
from smtmodel.catalog.products import arch_of
from smtmodel.dataflow import PROFILES, Dataflow, DataflowError
from smtmodel.formats import get_format
from smtmodel.gemm import epilogue_format, gemm_bits, output_format, to_bits
from smtmodel.io import NpyError, read_npy
from smtmodel.model import Model, ModelError

from .spec import Problem
from .structure import InputError

SPLITS = (2, 3, 4, 8)
ASSIGNS = ("contiguous", "interleaved")
COMBINES = ("serial", "pairwise")
INTERVALS = (32, 64, 128, 256)
C_SCALES = ("none", "beta", "beta/alpha")

FEATURES = ("C entry", "epilogue", "split-K", "restart interval", "beta=0")
"""What a device's fitting hypotheses are summarised by (:func:`features`)."""


def features(df: Dataflow) -> dict:
    """The dataflow's choices in the words of :data:`FEATURES`."""
    tile = f"{df.tile}-wide tiles" if df.tile else "model blocks"
    return {
        "C entry": "epilogue" if df.c_entry == "epilogue" else f"accumulator (C pre-scaled: {df.c_scale})",
        "epilogue": {"fma_acc": "fma(alpha, acc, RN(beta*C))", "fma_c": "fma(beta, C, RN(alpha*acc))",
                     "alpha_acc": "RN(alpha*acc)"}[df.epilogue],
        "split-K": "none" if df.slices == 1 else f"S={df.slices} {df.assign} over {tile}, combine {df.combine}",
        "restart interval": "none" if not df.restart else f"every {df.restart} x {tile}",
        "beta=0": df.beta0,
    }


# ---- the space ------------------------------------------------------------------------------------

def applicable(df: Dataflow) -> bool:
    """Profiles without FP8 scales (this explain takes no scale arguments) and with the model's
    output format."""
    return (not df.alpha_from_scales and df.combine_op == "fadd" and df.scale_a == "tensor"
            and df.scale_b == "tensor" and df.out == "model")


def default_dataflows(intervals: tuple = INTERVALS) -> list[Dataflow]:
    """The named profiles that apply, then the grid on the default profile (module docstring)."""
    base = PROFILES["cutlass2"]
    out = [p for p in PROFILES.values() if applicable(p)]
    out += [replace(base, name="", c_entry="accumulator", epilogue="alpha_acc", c_scale=s) for s in C_SCALES]
    out += [replace(base, name="", slices=S, assign=a, combine=c) for S in SPLITS for a in ASSIGNS for c in COMBINES]
    out += [replace(base, name="", tile=n, restart=1) for n in intervals]
    seen, uniq = set(), []
    for d in out:                  # named profiles kept even when two are alike (cutlass3-sm90, tensile);
        d = d.validate()           # a grid point alike a profile is the profile
        key = fields_key(d)
        if key not in seen or d.name:
            seen.add(key)
            uniq.append(d)
    return uniq


def fields_key(df: Dataflow) -> Dataflow:
    """The dataflow without its name and citation: equal keys compute the same bits."""
    return replace(df, name="", source="")


def default_models(in_fmt: str, c_fmt: str) -> list[Model]:
    """Catalog models and rivals taking the problem's formats (no block scales)."""
    fi, fc = get_format(in_fmt).name, get_format(c_fmt).name
    return [m for m in all_models() if get_format(m.in_fmt).name == fi and get_format(m.c_fmt).name == fc
            and not m.scale_fmt and not m.mixed]


# ---- observations -------------------------------------------------------------------------------

@dataclass
class Observation:
    """One device's output: ``value`` (every element; float) or ``matrix`` (raw bits (M, N))."""

    device: str
    value: float | None = None
    matrix: np.ndarray | None = None
    text: str = ""
    arch: str | None = None           # the device's architecture (``NAME@ARCH`` or a known product)


def parse_observation(text: str, shape: tuple[int, int] | None = None, out_fmt: str = "fp32") -> Observation:
    """``DEVICE[@ARCH]=VALUE`` or ``DEVICE[@ARCH]=PATH.npy`` (an (M, N) matrix of outputs). The
    architecture is ARCH, else that of a known GPU product (:mod:`smtmodel.catalog.products`)."""
    dev, eq, val = text.partition("=")
    if not eq or not dev.strip() or not val.strip():
        raise InputError(f"--observe {text!r}: use DEVICE=VALUE or DEVICE=OUTPUT.npy, e.g. H100=191.875")
    dev, val = dev.strip(), val.strip()
    dev, at, arch = dev.partition("@")
    if at:
        archs = sorted({m.arch for m in all_models() + alias_models()})
        if arch not in archs:
            raise InputError(f"--observe {text!r}: unknown architecture {arch!r}; one of {', '.join(archs)}")
    else:
        arch = arch_of(dev)
    obs = _parse_value(dev, val, text, shape, out_fmt)
    obs.arch = arch or None
    return obs


def _parse_value(dev, val, text, shape, out_fmt) -> Observation:
    if val.endswith(".npy"):
        try:
            x = read_npy(val)
        except NpyError as exc:
            raise InputError(f"--observe {dev}: {exc}") from None
        if shape is not None and x.shape != tuple(shape):
            raise InputError(f"--observe {dev}: {val} is {'x'.join(map(str, x.shape)) or 'a scalar'}, "
                             f"but the GEMM's D is {shape[0]}x{shape[1]}")
        w = get_format(out_fmt).width
        if x.dtype.kind == "u" and w < 64 and x.size and int(x.max()) >> w:
            raise InputError(f"--observe {dev}: {val}: a pattern 0x{int(x.max()):x} does not fit "
                             f"{get_format(out_fmt).name} ({w} bits)")
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


def evaluate(problem: Problem, hyps: list[Hypothesis], progress=None, backend: str = "tabulated"):
    """Output bits of every hypothesis on the reduced GEMM: list of (R*, Q*) arrays or error
    strings (a dataflow that does not fit the shapes). ``backend``: the GEMM reading
    (``tabulated`` suits few distinct elements over long repeated chains, ``auto`` random
    inputs); per-tensor fp32 scales in ``problem.params`` (``scale_a_bits``, ``scale_b_bits``)
    go to the dataflows that take them (``alpha_from_scales``)."""
    A, B, C, _, _ = problem.inputs.reduced()
    sa, sb = problem.params.get("scale_a_bits"), problem.params.get("scale_b_bits")
    out = []
    for i, h in enumerate(hyps):
        E = epilogue_format(h.model, h.dataflow)
        try:
            al, be = _epi_bits_exact(problem.alpha, E), _epi_bits_exact(problem.beta, E)
            scales = dict(scale_a_bits=sa, scale_b_bits=sb) if h.dataflow.alpha_from_scales and sa is not None else {}
            d = gemm_bits(h.model, A, B, C, alpha_bits=al, beta_bits=be, dataflow=h.dataflow, backend=backend,
                          **scales)
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
        if np.any(vs[s:e] != vs[s]):
            mixed.append((r, q))
    return val, mixed


def explain_gemm(problem: Problem, observations: list[Observation], models: list[Model] | None = None,
                 dataflows: list[Dataflow] | None = None, progress=None, backend: str = "tabulated") -> Result:
    """Every (model, dataflow) of the space that reproduces each device's observation (module
    docstring). ``models``/``dataflows``: the space (default: :func:`default_models` ×
    :func:`default_dataflows`); ``backend``: :func:`evaluate`'s."""
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
    for m in models:
        if (get_format(m.in_fmt).name, get_format(m.c_fmt).name) != (problem.in_fmt, problem.c_fmt) or m.scale_fmt:
            raise InputError(f"model {m.id} takes {m.in_fmt} A/B and {m.c_fmt} C"
                             f"{' with block scales' if m.scale_fmt else ''}; the GEMM has {problem.in_fmt} "
                             f"and {problem.c_fmt}")
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
    values = evaluate(problem, hyps, progress, backend)
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
    fs = [features(hyps[i].dataflow) for i in idxs]
    return {key: sorted({f[key] for f in fs}) for key in FEATURES}


def _summarise(o, hyps, fits, rejected, want, mixed, fo, rows_rep, cols_rep) -> dict:
    """One device's answer: every fitting hypothesis; those of its architecture (when known);
    the dataflow feature values no fitting hypothesis of that architecture has (ruled out,
    among the values its models were tried with); the deciding elements; the conflicts."""
    own = [i for i in range(len(hyps)) if o.arch and hyps[i].model.arch == o.arch]
    scope = own if own else list(range(len(hyps)))
    fits_scope = [i for i in fits if i in set(scope)]
    seen = _features(hyps, scope)
    have = _features(hyps, fits_scope)
    ruled_out = {k: [v for v in seen[k] if v not in have[k]] for k in FEATURES}
    ruled_out = {k: v for k, v in ruled_out.items() if v and len(seen[k]) > 1}

    def row(i):
        m = hyps[i].model
        return {"model": m.id, "dataflow": hyps[i].dataflow.text(), "kind": m.kind, "arch": m.arch,
                "validated": m.validated}
    deciding = {}
    for idx, r, q, got in rejected:
        key = (int(rows_rep[r]), int(cols_rep[q]))
        deciding[key] = deciding.get(key, 0) + 1
    conflicts = []
    if mixed:
        conflicts.append(f"{len(mixed)} class(es) of identical inputs have differing outputs (e.g. row "
                         f"{int(rows_rep[mixed[0][0]])}, column {int(cols_rep[mixed[0][1]])}): no dataflow that "
                         f"treats every element alike fits them")
    if not fits:
        conflicts.append("no hypothesis of the space reproduces this device")
    elif own and not fits_scope:
        others = sorted({hyps[i].model.arch for i in fits})
        conflicts.append(f"no {o.arch} model fits (models of {', '.join(others)} do)")
    only_rivals = bool(fits_scope) and {hyps[i].model.kind for i in fits_scope} == {"rival"}
    if only_rivals:
        srcs = sorted({f"{hyps[i].model.id}, rival of {hyps[i].model.rival_of} ({hyps[i].model.source})"
                       for i in fits_scope})
        conflicts.append("explained only by rival hypotheses, a disagreement between the seeds: " + "; ".join(srcs))
    return {"device": o.device, "arch": o.arch, "observed": o.text, "value": o.value,
            "fits": [row(i) for i in fits_scope], "fits_other_archs": [row(i) for i in fits if i not in set(fits_scope)],
            "fit_models": sorted({hyps[i].model.id for i in fits_scope}),
            "ruled_out": ruled_out, "features_fit": {k: v for k, v in have.items() if k in ruled_out},
            "deciding_elements": [{"row": r, "col": c, "rejects": n}
                                                           for (r, c), n in sorted(deciding.items())],
            "rejected": len(rejected), "conflicts": conflicts, "only_rivals": only_rivals,
            "rivals": sorted({hyps[i].model.id for i in fits_scope if hyps[i].model.kind == "rival"})}


def table(res: Result) -> str:
    """The readable summary: per device the fitting models with their dataflows, what is ruled
    out, and the conflicts."""
    lines = [res.problem, f"space: {res.space['hypotheses']} hypotheses ({len(res.space['models'])} models x "
             f"{len(res.space['dataflows'])} dataflows), {res.elements} distinct element(s) each; "
             f"{res.seconds:.1f} s"]
    for d in res.devices:
        lines.append("")
        arch = f" ({d['arch']})" if d["arch"] else ""
        scope = f" of {d['arch']}" if d["arch"] and (d["fits"] or not d["fits_other_archs"]) else ""
        other = f"; {len(d['fits_other_archs'])} of other architectures" if d["arch"] else ""
        lines.append(f"{d['observed']}{arch}: {len(d['fits'])} hypothesis(es){scope} fit{other}")
        by_model: dict[str, list] = {}
        for r in d["fits"]:       # an UNVALIDATED model (CDNA4, B300 aliases) says so
            by_model.setdefault(r["model"] + ("" if r.get("validated", True) else " (UNVALIDATED)"), []).append(
                r["dataflow"])
        for mid, dfs in by_model.items():
            shown = ", ".join(dfs[:6]) + (f", ... ({len(dfs)})" if len(dfs) > 6 else "")
            lines.append(f"  {mid:<32} {shown}")
        for k, v in d["ruled_out"].items():
            shown = "; ".join(v[:2]) + (f"; ... ({len(v)} in all)" if len(v) > 2 else "")
            fit = "; ".join(d["features_fit"].get(k, [])) or "-"
            lines.append(f"  {k}: fits {fit} | ruled out {shown}")
        if d["deciding_elements"]:
            e = d["deciding_elements"]
            lines.append("  deciding element(s): " + ", ".join(f"D[{x['row']},{x['col']}] ({x['rejects']} rejected)"
                                                               for x in e[:4]))
        for c in d["conflicts"]:
            lines.append(f"  CONFLICT: {c}")
    return "\n".join(lines)


def global_conflicts(res: Result) -> list[str]:
    """Conflicts across devices: devices only rivals explain (each a seed disagreement)."""
    riv = [d for d in res.devices if d["only_rivals"]]
    out = [f"{d['device']} ({d['arch']}) is explained only by {', '.join(d['rivals'])}" for d in riv]
    if len(riv) > 1:
        out.append(f"{len(riv)} devices are explained only by rivals of the seeds' models")
    return out
