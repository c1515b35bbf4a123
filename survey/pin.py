"""The survey's ``pin`` part: deciding inputs for what the H100 captures leave open, and the
witnesses of every refuted property, run on the GPU.

Two kinds of cases, both read from committed files (``generated_tests/pin/``, written here by
:func:`generate` with the twin alone, so the GPU machine needs no solver and spends no time
searching):

- **Open parameters** (:data:`PARAMETERS`): per kernel of sm_90 whose formats leave a parameter
  open, one vector file per parameter whose header names the candidates (the kernel's own catalog
  model read at the instruction's K, :func:`smtmodel.catalog.model_for_kernel`, with one override:
  ``zero_align=-130``, ``flush_inputs=signed``, ``tf32_low=RNA``, ``specials=ieee``) and whose
  cases make the candidates answer differently. The cases come from the models themselves: the
  twin search (:func:`queries.distinguish.search.twin_search`) on each pair of neighbouring
  candidates, then on each pair its cases do not split yet, beside directed cases (fp32 registers
  with non-zero low bits and ties for ``tf32_low``, signed-zero sums for the sign of a zero
  result, subnormal operands for ``flush_inputs``). Judged on the GPU's outputs: the candidates
  that reproduce every output (``survivors``), grouped in classes the cases cannot split.
- **Witnesses** (``generated_tests/pin/witnesses.jsonl``): for each sm_90 catalog model with a
  property refuted in ``bench/results/properties.jsonl``, the property's witness
  (:func:`queries.properties.check_property`, the twin) at a k the model's kernels run (a
  multiple of the kernel's K), each copy's inputs and the model's outputs. On the GPU each copy
  runs on each kernel of that model; the property's own predicates
  (:meth:`Property.hypothesis`, :meth:`Property.violation`) are read on the GPU's outputs:
  ``observed`` (the GPU shows the violation), ``differs`` (the model predicts it for the kernel
  and the GPU does not: a finding about the model), ``not reachable`` (the kernel pads the copies
  so that the model itself predicts no violation there).

Beside them, ``chain-finite``: four chained instructions of the validation mix with every input
finite (the survey's ``chain`` sets are half NaN or infinity), judged by the kernel's own model.

Nothing here imports an SMT solver: :func:`generate` uses the twin only, and the run reads files.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hw_runner.errors import HarnessError
from hw_runner.kernels import KERNELS, arch_num
from hw_runner.runner import BATCH, agree, run_on_device
from smtmodel.catalog import get_model, model_for_kernel
from smtmodel.formats import get_format
from smtmodel.vectors import VectorFile, make_header, read_vectors, write_vectors

from .errors import SurveyError

ARCH = "sm_90"
FOLDER = "pin"
WITNESSES = "witnesses.jsonl"
WITNESS_SOLVER_S = 60.0
"""Seconds the portfolio may take for a witness the twin search does not find."""
CHAIN_CASES = 1024
"""Cases of the finite chain set per kernel (k = 4K)."""

FLOORS = {"bf16": list(range(-133, -123)), "tf32": list(range(-160, -123))}
"""The zero floors the H100 captures leave open (each reproduces every captured output)."""


@dataclass(frozen=True)
class Parameter:
    name: str            # the parameter's name in the card
    key: str             # the model's override key
    values: tuple        # candidate values (override text)
    what: str

    def catalog_value(self, m) -> str:
        v = {"zero_align": m.zero_align, "flush_inputs": m.flush_inputs, "tf32_low": m.tf32_low,
             "specials": m.specials}[self.key]
        return "none" if v is None else str(v)


def parameters(in_fmt: str, out_fmt: str) -> list[Parameter]:
    """The parameters a kernel of these formats leaves open on the H100 captures (module docstring)."""
    out = []
    if in_fmt in FLOORS and out_fmt == "fp32":
        out.append(Parameter("zero_floor", "zero_align", tuple(map(str, FLOORS[in_fmt])) + ("ignore", "seed000"),
                             "where a zero (product, c) aligns: e_zero, left out, or -126 + Exp(other)"))
    if in_fmt in ("bf16", "fp16", "tf32"):
        out.append(Parameter("flush_inputs", "flush_inputs", ("none", "signed", "positive"),
                             "subnormal inputs read as they are, or flushed to a signed / positive zero"))
    if in_fmt == "tf32":
        out.append(Parameter("tf32_low", "tf32_low", ("ignore", "RNE", "RNA", "nan"),
                             "the low 13 bits of an fp32 register: ignored, rounded (RNE, RNA), or NaN"))
    if in_fmt in ("bf16", "fp16", "tf32"):
        out.append(Parameter("specials", "specials", ("nvidia", "ieee"),
                             "special results: NVIDIA's (+0 for every zero result, NaN 0x7fffffff, RZ overflow) "
                             "or IEEE 754's; the set also holds sums of negative zeros and negative underflows, "
                             "whose -0 outputs are counted"))
    return out


def pin_kernels(arch: str = ARCH) -> list:
    """Kernels with open parameters (:func:`parameters`) on ``arch``."""
    return [s for s in KERNELS.values() if s.supports(arch) and not s.b_fmt and not s.satfinite
            and not s.block_scaled and parameters(s.in_fmt, s.out_fmt)]


def _spec(model_id: str, key: str, value: str) -> str:
    return f"{model_id}{',' if ':' in model_id else ':'}{key}={value}"


def own_model(spec, arch: str = ARCH):
    return model_for_kernel(spec.id, arch_num(arch), spec.k)


def file_name(spec, p: Parameter, arch: str = ARCH) -> str:
    """The vector file of parameter ``p`` for kernels whose own model is ``spec``'s (mma.sync and
    wgmma of the same formats and K share it)."""
    mid = own_model(spec, arch).id
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in mid) + f".{p.name}.jsonl"


# ---- generation (here, with the twin; the files are committed) ---------------------------------------

def _directed(p: Parameter, own, k: int) -> list[tuple]:
    """Cases aimed at a parameter (a, b, c raw bits), beside the twin search's."""
    fi, fc = get_format(own.in_fmt), get_format(own.c_fmt)
    one = int(fi.parse_hex(fi.hex(_bits_of(1.0, fi))))
    zero_row = [0] * k
    out = []

    def case(a0, b0, c, a1=None, b1=None):
        a, b = list(zero_row), list(zero_row)
        a[0], b[0] = a0, b0
        if a1 is not None:
            a[1], b[1] = a1, b1
        return a, b, c

    neg_i, neg_c = 1 << (fi.width - 1), 1 << (fc.width - 1)
    if p.key == "tf32_low":
        g = np.random.default_rng(41)
        for m_bits in (0x000, 0x001, 0x3FE, 0x3FF, 0x155):        # even and odd last TF32 bits
            for low in (0x1000, 0x0FFF, 0x1001, 0x0001, 0x1FFF):    # the tie, below, above, tiny, all
                x = (127 << 23) | (m_bits << 13) | low
                out.append(case(x, one, 0))
                out.append(case(x | (1 << 31), one, 0))
        for _ in range(16):
            e = int(g.integers(100, 150))
            x = (e << 23) | (int(g.integers(0, 1 << 10)) << 13) | int(g.integers(1, 1 << 13))
            y = (int(g.integers(100, 150)) << 23) | (int(g.integers(0, 1 << 10)) << 13) | int(g.integers(1, 1 << 13))
            out.append(case(x, y, 0))
    elif p.key == "specials":
        for sa, sb, sc in ((1, 0, 1), (0, 1, 1), (1, 0, 0), (0, 0, 1), (1, 1, 1)):
            a, b, c = [0] * k, [0] * k, (neg_c if sc else 0)
            for i in range(k):
                a[i] = neg_i if sa else 0
                b[i] = (one | neg_i) if sb else one
            out.append((a, b, c))
        # a product that underflows the output's subnormals, negative, beside c = -0
        tiny = 1 << fi.shift                           # the smallest subnormal input
        out.append(case(tiny | neg_i, tiny, neg_c))
        out.append(case(tiny | neg_i, tiny, 0))
        out.append(case(one, one, neg_c, one | neg_i, one))   # 1 - 1 + (-0): +0 under RNE either way
    elif p.key == "flush_inputs":
        for sub in (x << fi.shift for x in (1, 2, 3, (1 << fi.mbits) - 1, 1 << (fi.mbits - 1))):
            out.append(case(sub, one, 0))
            out.append(case(sub | neg_i, one, 0))
            out.append(case(one, sub, 0))
            out.append(case(sub | neg_i, one, neg_c))
    return out


def _bits_of(x: float, fmt) -> int:
    from smtmodel.sampling import round_to
    return int(round_to(np.array([x]), fmt.name)[0])


def _rows(cases: list, k: int | None = None) -> tuple:
    if not cases:
        return np.zeros((0, k or 1), np.uint64), np.zeros((0, k or 1), np.uint64), np.zeros(0, np.uint64)
    a = np.array([c[0] for c in cases], np.uint64)
    b = np.array([c[1] for c in cases], np.uint64)
    c = np.array([c[2] for c in cases], np.uint64)
    return a, b, c


def signatures(models: list, a, b, c) -> list[bytes]:
    if not len(c):
        return [b""] * len(models)
    return [np.asarray(m.evaluate(a, b, c, jobs=1), np.uint64).tobytes() for m in models]


def classes(values: list, sigs: list[bytes]) -> list[list]:
    """Candidates grouped by identical outputs on the cases."""
    by: dict = {}
    for v, s in zip(values, sigs):
        by.setdefault(s, []).append(v)
    return list(by.values())


def generate_parameter(spec, p: Parameter, arch: str = ARCH, seed: int = 0, rounds: int = 6,
                       per_pair: int = 2) -> tuple[list, list, list]:
    """(cases, classes, unsplit pairs): deciding cases of parameter ``p`` on kernel ``spec`` from the
    twin search between candidates and the directed cases; the classes of candidates the cases
    do not split, and the pairs the twin search did not split either."""
    from queries.distinguish.constraints import Constraints
    from queries.distinguish.search import twin_search
    own = own_model(spec, arch)
    k = spec.k
    models = [get_model(_spec(own.id, p.key, v)) for v in p.values]
    cons = Constraints(finite=p.key not in ("tf32_low", "specials"))
    cases = _directed(p, own, k)
    probes = len(cases) if p.key == "specials" else 0     # the signed-zero sums are kept whatever they split

    def search(i, j):
        r = twin_search(models[i], models[j], k, cons, timeout=60.0, want=per_pair, seed=seed, rounds=rounds)
        if r.status != "sat":
            return False
        for vals in r.extra["models"][:per_pair]:
            cases.append(([int(vals[f"a{t}"]) for t in range(k)], [int(vals[f"b{t}"]) for t in range(k)],
                          int(vals["c"])))
        return True

    for i in range(len(models) - 1):
        search(i, i + 1)
    unsplit = []
    tried = set()
    while True:
        sigs = signatures(models, *_rows(cases))
        cls = [cl for cl in classes(list(range(len(models))), sigs) if len(cl) > 1]
        todo = [(cl[0], x) for cl in cls for x in cl[1:] if (cl[0], x) not in tried]
        if not todo:
            break
        for pair in todo:
            tried.add(pair)
            if not search(*pair):
                unsplit.append([p.values[pair[0]], p.values[pair[1]]])
            break
    # keep only the cases that split some pair of candidates
    if not cases:
        return [], [list(p.values)], unsplit
    a, b, c = _rows(cases)
    outs = np.stack([np.asarray(m.evaluate(a, b, c, jobs=1), np.uint64) for m in models])
    keep = np.flatnonzero((outs != outs[0]).any(axis=0) | (np.arange(len(cases)) < probes))
    keep = keep[np.unique(np.column_stack([a[keep], b[keep], c[keep, None]]), axis=0, return_index=True)[1]]
    keep.sort()
    cases = [cases[i] for i in keep]
    sigs = signatures(models, *_rows(cases))
    return cases, classes(list(p.values), sigs), unsplit


def generate(folder: "str | Path", arch: str = ARCH, progress=print, kernels: tuple = ()) -> list[Path]:
    """Write the pin part's files into ``folder``: per kernel and open parameter a vector file,
    and the witnesses. Here, with the twin (a few minutes); the files are committed."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written, done = [], set()
    for spec in pin_kernels(arch):
        if kernels and spec.id not in kernels:
            continue
        own = own_model(spec, arch)
        for p in parameters(spec.in_fmt, spec.out_fmt):
            if (own.id, p.name) in done:
                continue
            done.add((own.id, p.name))
            t0 = time.perf_counter()
            cases, cls, unsplit = generate_parameter(spec, p, arch)
            models = [_spec(own.id, p.key, v) for v in p.values]
            a, b, c = _rows(cases)
            # a tf32 file cannot hold registers with low bits: the tf32_low cases are fp32 registers
            container = "fp32" if p.key == "tf32_low" else spec.in_fmt
            h = make_header(container, spec.c_fmt, spec.out_fmt, spec.k, models=models,
                            source={"tool": "survey.pin.generate", "own_model": own.id,
                                    "parameter": p.name, "key": p.key, "values": list(p.values),
                                    "catalog": p.catalog_value(own), "classes": cls, "unsplit": unsplit,
                                    "what": p.what,
                                    **({"container": "a and b are the fp32 registers the tf32 kernel reads (low "
                                                     "13 bits set): in_fmt fp32"} if p.key == "tf32_low" else {})})
            vf = VectorFile.from_arrays(h, a, b, c, ids=p.name)
            for mid in models:
                vf.set_expect(mid, get_model(mid).evaluate(a, b, c, jobs=1))
            path = folder / file_name(spec, p, arch)
            write_vectors(path, vf)
            written.append(path)
            progress(f"{path.name}: {len(cases)} cases, {len(cls)} classes"
                     + (f", unsplit {unsplit}" if unsplit else "") + f" ({time.perf_counter() - t0:.1f} s)")
    path = folder / WITNESSES
    rows = witnesses(arch, progress)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    written.append(path)
    return written


def refuted_cells(arch: str = ARCH, journal: "str | Path | None" = None) -> list[tuple]:
    """(catalog model, property, journal row) of every sm_XX catalog model with a refuted property
    in the properties table (a model sharing its parameters with the checked one takes its row)."""
    from queries.properties.catalog import listing, parameter_groups, read_journal
    from smtmodel.catalog import all_models
    journal = journal or Path(__file__).resolve().parents[1] / "bench" / "results" / "properties.jsonl"
    rows = read_journal(journal)
    out = []
    for m, same in listing(parameter_groups(all_models())):
        if m.kind != "catalog" or m.sm != arch_num(arch):
            continue
        for (mid, prop), r in rows.items():
            if mid == (same or m.id) and r["status"] == "refuted":
                out.append((m, prop, r))
    return out


def witness_kernels(m, arch: str = ARCH) -> list:
    """The kernels of ``arch`` whose own model (read at the kernel's K) computes what ``m`` does."""
    from queries.distinguish.api import same_parameters
    out = []
    for kid in m.kernels:
        spec = KERNELS.get(kid)
        if spec is None or not spec.supports(arch):
            continue
        own = own_model(spec, arch)
        if own is not None and same_parameters(own, m):
            out.append(spec)
    return out


def witnesses(arch: str = ARCH, progress=print) -> list[dict]:
    """Per refuted (catalog model, property) and per K of the model's kernels: the property's
    witness at a k those kernels run (the table's k, else the least multiple of both), found by the
    twin (:func:`queries.properties.check_property`, ``solver="twin"``, seed 0), else by the
    portfolio within :data:`WITNESS_SOLVER_S` (the restricted question and the solvers)."""
    from queries.properties import check_property, get_property
    out = []
    for m, prop, row in refuted_cells(arch):
        specs = witness_kernels(m, arch)
        by_k: dict = {}
        for s in specs:
            by_k.setdefault(s.k, []).append(s.id)
        for K, kids in sorted(by_k.items()):
            k0 = row.get("k") or get_property(prop).default_k(m)
            k = k0 if k0 % K == 0 else math.lcm(k0, K)
            r = check_property(prop, m.id, k=k, timeout=20, solver="twin", seed=0, simplify_seconds=2.0)
            if r.status != "refuted":     # a solver's witness (the table's refutation came from one)
                r = check_property(prop, m.id, k=k, timeout=WITNESS_SOLVER_S, seed=0, simplify_seconds=2.0)
            if r.status != "refuted":
                progress(f"witness {m.id} {prop} k={k}: {r.status} ({r.reason})")
                continue
            fa, fb = (get_format(f) for f in m.operand_fmts)
            fc, fo = get_format(m.c_fmt), get_format(m.out_fmt)
            w = r.witness
            out.append({"model": m.id, "property": prop, "k": k, "table_k": k0, "kernels": kids,
                        "values": {n: int(v) for n, v in w.values.items()},
                        "copies": [{"label": cp["label"], "a": [fa.hex(x) for x in cp["a"]],
                                    "b": [fb.hex(x) for x in cp["b"]], "c": fc.hex(cp["c"]), "d": fo.hex(cp["d"])}
                                   for cp in w.copies],
                        "notes": w.notes})
            progress(f"witness {m.id} {prop} k={k} on {', '.join(kids)}")
    return out


# ---- the run --------------------------------------------------------------------------------------

@dataclass
class PinSet:
    name: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    k: int
    source: dict
    parameter: Parameter | None = None
    models: list = field(default_factory=list)
    rows: list = field(default_factory=list)      # witnesses: (witness index, copy index) per case

    @property
    def n(self) -> int:
        return self.a.shape[0]


def _pad(x: np.ndarray, K: int) -> np.ndarray:
    full = -(-x.shape[1] // K) * K
    return x if full == x.shape[1] else np.concatenate([x, np.zeros((x.shape[0], full - x.shape[1]), np.uint64)], 1)


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()[:16]


def read_witnesses(folder: Path) -> list[dict]:
    p = folder / WITNESSES
    if not p.is_file():
        return []
    try:
        return [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
    except ValueError as exc:
        raise SurveyError(f"{p}: not a witness file ({exc})") from None


def finite_chain(spec, seed: int, n: int = CHAIN_CASES) -> PinSet:
    """``n`` cases of the validation mix's normal and cancelling kinds with k = 4K, every input
    finite (four times as many drawn, the others dropped; redrawn from ``source``)."""
    src = {"generator": "smtmodel.sampling.validation_mix", "finite": True, "in_fmt": spec.in_fmt,
           "b_fmt": spec.b_fmt, "c_fmt": spec.c_fmt, "out_fmt": spec.out_fmt, "k": 4 * spec.k, "n": n,
           "seed": [seed, 0x9147], "kinds": ["normal", "cancel"]}
    key = json.dumps(src)
    if key not in _CHAINS:              # drawn once per survey (the plan and the run read it)
        _CHAINS[key] = redraw_finite(src)
    a, b, c = _CHAINS[key]
    return PinSet("chain-finite", a, b, c, 4 * spec.k, src)


_CHAINS: dict = {}


def redraw_finite(src: dict):
    from smtmodel.bv import NUMPY
    from smtmodel.fp.classify import is_special
    from smtmodel.sampling import validation_mix
    a, b, c, kinds = validation_mix(src["in_fmt"], src["c_fmt"], src["k"], 4 * src["n"], src["seed"],
                                b_fmt=src.get("b_fmt"))

    def special(x, fmt):
        f = get_format(fmt)
        flat = np.asarray(x, np.uint64).reshape(-1)
        v = np.asarray(is_special(NUMPY.input(flat, f.width), f).v, bool)
        return np.broadcast_to(v, flat.shape).reshape(np.shape(x))

    ok = ~(special(a, src["in_fmt"]).any(axis=1) | special(b, src.get("b_fmt") or src["in_fmt"]).any(axis=1)
           | special(c, src["c_fmt"]))
    ok &= np.isin(kinds, ("normal", "cancel"))       # the wide and raw kinds overflow into inf and NaN
    idx = np.flatnonzero(ok)[:src["n"]]
    return a[idx], b[idx], c[idx]


def plan(spec, suite: Path, seed: int, arch: str = ARCH) -> list[PinSet]:
    """The pin sets of kernel ``spec``: its open parameters' files, the witnesses of models it runs,
    the finite chain."""
    folder = suite / FOLDER
    root = suite.parent
    out = []
    for p in parameters(spec.in_fmt, spec.out_fmt) if spec in pin_kernels(arch) else []:
        path = folder / file_name(spec, p, arch)
        if not path.is_file():
            continue
        vf = read_vectors(path)
        a, b, c = vf.arrays()
        out.append(PinSet(f"param-{p.name}", _pad(a, spec.k), _pad(b, spec.k), c, vf.k,
                          {"file": str(path.relative_to(root)) if path.is_relative_to(root) else str(path),
                           "sha256": _digest(path), **vf.header["source"]}, p, list(vf.header["models"])))
    ws = [(i, w) for i, w in enumerate(read_witnesses(folder)) if spec.id in w["kernels"]]
    by_k: dict = {}
    for i, w in ws:
        fa, fb = (get_format(f) for f in get_model(w["model"]).operand_fmts)
        fc = get_format(get_model(w["model"]).c_fmt)
        for j, cp in enumerate(w["copies"]):
            by_k.setdefault(len(cp["a"]), []).append(((i, j), [fa.parse_hex(x) for x in cp["a"]],
                                                      [fb.parse_hex(x) for x in cp["b"]], fc.parse_hex(cp["c"])))
    for k, rows in sorted(by_k.items()):
        a = np.array([r[1] for r in rows], np.uint64)
        b = np.array([r[2] for r in rows], np.uint64)
        c = np.array([r[3] for r in rows], np.uint64)
        wp = folder / WITNESSES
        out.append(PinSet(f"witness-k{k}", _pad(a, spec.k), _pad(b, spec.k), c, k,
                          {"file": str(wp.relative_to(root)) if wp.is_relative_to(root) else str(wp),
                           "sha256": _digest(wp)}, rows=[r[0] for r in rows]))
    if spec in pin_kernels(arch) or ws:
        out.append(finite_chain(spec, seed))
    return out


def kernels_of(arch: str, suite: Path, only: tuple = ()) -> list:
    """The kernels the pin part runs: those with open parameters or a witness."""
    ws = {k for w in read_witnesses(suite / FOLDER) for k in w["kernels"]}
    pk = {s.id for s in pin_kernels(arch)}
    return [s for s in KERNELS.values() if s.supports(arch) and (s.id in pk or s.id in ws)
            and (not only or s.id in only)]


def capture(launcher, spec, sets: list[PinSet]) -> tuple[dict, dict]:
    """(result, arrays): each pin set's outputs on ``launcher`` (``pin/KERNEL/SET``)."""
    t0 = time.perf_counter()
    arrays, launches = {}, 0
    dt = _dtype(spec.out_fmt)
    try:
        for s in sets:
            d = run_on_device(launcher, spec, s.a, s.b, s.c).d
            launches += -(-s.n // BATCH)
            arrays[f"pin/{spec.id}/{s.name}"] = d.astype(dt)
    except HarnessError as exc:
        return {"status": "failed", "reason": str(exc), "seconds": round(time.perf_counter() - t0, 3)}, {}
    return ({"status": "captured", "launches": launches,
             "sets": {s.name: {"cases": s.n, "k": s.k, "source": s.source} for s in sets},
             "seconds": round(time.perf_counter() - t0, 3)}, arrays)


def _dtype(fmt: str):
    w = get_format(fmt).width
    return np.uint8 if w <= 8 else np.uint16 if w <= 16 else np.uint32 if w <= 32 else np.uint64


def judge(spec, sets: list[PinSet], outputs: dict, suite: Path, arch: str = ARCH) -> dict:
    """Per open parameter the surviving candidates (with counts), per witness what the GPU shows,
    and the finite chain against the kernel's own model."""
    t0 = time.perf_counter()
    fo = get_format(spec.out_fmt)
    own = own_model(spec, arch)
    res: dict = {"own_model": own.id if own else None, "parameters": {}, "witnesses": [], "chain_finite": None}
    ws = read_witnesses(suite / FOLDER)
    wit: dict = {}
    for s in sets:
        hw = np.asarray(outputs[f"pin/{spec.id}/{s.name}"], np.uint64)
        if s.parameter is not None:
            p = s.parameter
            counts = {}
            for v, mid in zip(p.values, s.models):
                pred = np.asarray(get_model(mid).evaluate(s.a, s.b, s.c, jobs=1), np.uint64)
                counts[v] = int(agree(pred, hw, fo).sum())
            surv = [v for v in p.values if counts[v] == s.n]
            cls = [[v for v in cl if v in surv] for cl in s.source.get("classes", [])]
            cls = [cl for cl in cls if cl]
            cat = s.source.get("catalog")
            status = "pinned" if len(cls) == 1 else "none survive" if not surv else "open"
            neg0 = int(np.count_nonzero(hw == (1 << (fo.width - 1)))) if fo.has_neg_zero else 0
            res["parameters"][p.name] = {
                "cases": s.n, "file": s.source.get("file"), "catalog": cat, "survivors": surv,
                "survivor_classes": cls, "matches": counts, "status": status,
                "agrees_with_catalog": status == "pinned" and cat in cls[0],
                "unsplit_by_search": s.source.get("unsplit", []), "negative_zero_outputs": neg0}
        elif s.name.startswith("witness-"):
            pred = np.asarray(own.evaluate(s.a, s.b, s.c, jobs=1), np.uint64)
            for row, (i, j) in enumerate(s.rows):
                wit.setdefault(i, {})[j] = (int(hw[row]), int(pred[row]))
        elif s.name == "chain-finite":
            pred = np.asarray(own.evaluate(s.a, s.b, s.c, jobs=1), np.uint64)
            ok = agree(pred, hw, fo)
            from smtmodel.bv import NUMPY
            from smtmodel.fp.classify import is_special
            spec_out = np.asarray(is_special(NUMPY.input(hw, fo.width), fo).v, bool)
            first = None
            if not ok.all():
                i = int(np.flatnonzero(~ok)[0])
                first = {"case": i, "c": get_format(spec.c_fmt).hex(int(s.c[i])), "expected": fo.hex(int(pred[i])),
                         "observed": fo.hex(int(hw[i]))}
            res["chain_finite"] = {"cases": s.n, "k": s.k, "matches": int(ok.sum()),
                                   "special_outputs": int(np.broadcast_to(spec_out, hw.shape).sum()),
                                   "first_contradiction": first}
    for i, got in sorted(wit.items()):
        res["witnesses"].append(_witness_verdict(ws[i], got, spec))
    res["seconds"] = round(time.perf_counter() - t0, 3)
    return res


def violation(w: dict, outs: list[int]) -> bool:
    """The witness's property read on outputs ``outs`` (one per copy): hypothesis and violation."""
    from queries.properties import get_property
    from smtmodel.bv import NUMPY, all_of
    prop = get_property(w["property"])
    m = get_model(w["model"])
    k = w["k"]
    names = prop.variables(m, k)
    v = {nm: NUMPY.input(np.array([w["values"][nm]], np.uint64), wd) for nm, wd in names.items()}
    cps = prop.copies(m, k, v)
    hyp = all_of(prop.hypothesis(m, k, v, cps))
    wo = get_format(m.out_fmt).width
    d = [NUMPY.input(np.array([o], np.uint64), wo) for o in outs]
    bad = hyp & prop.violation(m, k, v, cps, d)
    return bool(np.broadcast_to(np.asarray(bad.v, bool), (1,))[0])


def _witness_verdict(w: dict, got: dict, spec) -> dict:
    fo = get_format(get_model(w["model"]).out_fmt)
    n = len(w["copies"])
    hw = [got[j][0] for j in range(n)]
    pred = [got[j][1] for j in range(n)]
    model_d = [fo.parse_hex(cp["d"]) for cp in w["copies"]]
    on_gpu = violation(w, hw)
    reachable = violation(w, pred)
    status = "observed" if on_gpu else "differs" if reachable else "not reachable"
    return {"model": w["model"], "property": w["property"], "k": w["k"], "kernel": spec.id, "status": status,
            "gpu": [fo.hex(x) for x in hw], "model_on_kernel": [fo.hex(x) for x in pred],
            "model_outputs": [fo.hex(x) for x in model_d],
            "gpu_equals_model": hw == pred, "notes": w.get("notes", [])}


# ---- the card -----------------------------------------------------------------------------------

def card_part(survey) -> dict:
    """Per kernel the pin judgement (from the journal), and a summary per parameter and witness."""
    out = {}
    for spec in kernels_of(survey.target.arch, survey.suite_path(), survey.settings.kernels):
        rec = survey.store.done(f"pin/judge/{spec.id}")
        cap = survey.store.done(f"pin/capture/{spec.id}")
        if rec:
            out[spec.id] = {k: v for k, v in rec.items() if k != "step"}
        elif cap:
            out[spec.id] = {"capture": cap.get("status"), "reason": cap.get("reason")}
    return out


def markdown(part: dict) -> str:
    if not part:
        return ""
    L = ["", "## Pinned on silicon: open parameters and property witnesses", "",
         "| kernel | parameter | cases | catalog | survivors (classes) | verdict |", "|---|---|---|---|---|---|"]
    for kid, e in part.items():
        if "parameters" not in e:
            L.append(f"| `{kid}` | — | — | — | not captured: {e.get('reason')} | |")
            continue
        for name, r in e["parameters"].items():
            cls = "; ".join(", ".join(c) for c in r["survivor_classes"]) or "none"
            verdict = (("pinned, as the catalog" if r["agrees_with_catalog"] else "**pinned, not the catalog's**")
                       if r["status"] == "pinned" else "**none survive**" if r["status"] == "none survive"
                       else f"open ({len(r['survivor_classes'])} classes)")
            L.append(f"| `{kid}` | {name} | {r['cases']} | {r['catalog']} | {cls} | {verdict} |")
    rows = [(kid, w) for kid, e in part.items() for w in e.get("witnesses", [])]
    if rows:
        L += ["", "Witnesses of refuted properties (bench/results/properties.jsonl), run on the kernel:", "",
              "| model | property | k | kernel | GPU | note |", "|---|---|---|---|---|---|"]
        for kid, w in rows:
            note = "" if w["gpu_equals_model"] else f"GPU {', '.join(w['gpu'])} vs model {', '.join(w['model_on_kernel'])}"
            st = w["status"] if w["status"] != "differs" else "**differs** (a finding about the model)"
            L.append(f"| {w['model']} | {w['property']} | {w['k']} | `{kid}` | {st} | {note} |")
    ch = [(kid, e["chain_finite"]) for kid, e in part.items() if e.get("chain_finite")]
    if ch:
        L += ["", "Finite chains (k = 4K, every input finite) against the kernel's own model: "
              + ", ".join(f"`{kid}` {c['matches']}/{c['cases']}" + (f" ({c['special_outputs']} NaN/inf out)"
                                                                   if c["special_outputs"] else "")
                          for kid, c in ch)]
    return "\n".join(L) + "\n"


def summary_lines(part: dict) -> list[str]:
    """Progress lines: a parameter per line, then the witnesses' counts."""
    out = []
    for kid, e in part.items():
        for name, r in e.get("parameters", {}).items():
            cls = "; ".join(", ".join(c) for c in r["survivor_classes"]) or "none"
            out.append(f"pin {kid} {name}: {r['status']} ({cls}; catalog {r['catalog']})")
    st: dict = {}
    for e in part.values():
        for w in e.get("witnesses", []):
            st[w["status"]] = st.get(w["status"], 0) + 1
    if st:
        out.append("pin witnesses: " + ", ".join(f"{k} {v}" for k, v in sorted(st.items())))
    return out


def main(argv=None) -> int:
    """``python -m survey.pin --write generated_tests/pin``: write the pin part's files (the twin;
    minutes)."""
    import argparse
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--write", required=True, metavar="DIR")
    ap.add_argument("--kernels", default="")
    args = ap.parse_args(argv)
    generate(args.write, kernels=tuple(k for k in args.kernels.split(",") if k))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
