"""``mmaprobe identify --gemm``: recover the instruction model AND the dataflow of a device that
runs whole GEMMs, from its outputs on a few probe GEMMs (:mod:`.probes`).

The live set starts as every (model, dataflow) of the space (:func:`queries.gemm.explain.
default_models` × :func:`~queries.gemm.explain.default_dataflows`). Each launch is one probe GEMM
run on the device; every live hypothesis computes the same GEMM with the twin
(``smtmodel.gemm.gemm_bits``, chains shared between dataflows that differ only after them) and
stays only if every output bit agrees. After the four designed launches, a fresh random probe
(at 2K) is computed by the survivors alone: if they disagree on it, it is launched (it splits
them); if they agree and span several models, the discriminating suite's inputs between those
models (``generated_tests/``) are tried the same way; then the survivors form one class and the
run stops. A last random probe verifies the answer on the
device. Devices (:mod:`.devices`): ``twin-gemm:MODEL:DATAFLOW`` (a hidden pair),
``file:CAPTURE.npz`` (GEMMs run elsewhere), ``cuda-gemm`` (cuBLAS ``gemmEx`` through CuPy) and
``torch-gemm`` (torch's aten GEMM), both in ``hw_runner``.

**The split is per launch.** A library picks its split-K (S slices, the k-tile they are cut in)
per GEMM shape: cuBLAS on an H100 runs the 50x6x128 bf16 probes unsplit and the 12x6x256
verification GEMM in S = 4 slices of 64. So where a launch (a probe or the verification) refutes
every hypothesis still live, each of them is read again with its dataflow's split replaced by
every point of :data:`SPLIT_GRID`; those that reproduce the launch with some split stay, and the
splits that did are recorded for that launch's shape (:attr:`GemmOutcome.splits`). The model and
the rest of the dataflow (C entry, epilogue, restarts) must fit every launch; only (S, tile,
combine) may change from shape to shape.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from smtmodel.dataflow import Dataflow, DataflowError
from smtmodel.formats import get_format
from smtmodel.gemm import epilogue_format, gemm_bits, to_bits
from smtmodel.limits import check_memory, check_positive
from smtmodel.model import Model, ModelError

from ..identify.errors import IdentifyError
from .explain import Hypothesis, default_dataflows, default_models, fields_key
from .probes import Probe, design, extra, suite_probe

K_DEFAULT = 128
"""Terms per probe: 8 k-tiles of the widest fp16/bf16 block (16), so every split of the grid
(S <= 8, contiguous) has a tile per slice, and restart intervals of 32 and 64 restart."""
INTERVALS = (32, 64)
"""Restart intervals of identify's grid: those below K (an interval >= K never restarts: it is
the plain chain on every probe)."""
SPLIT_GRID = tuple((S, tile, comb) for S in (2, 3, 4, 6, 8) for tile in (0, 32, 64, 128)
                   for comb in ("serial", "pairwise"))
"""The splits a launch that refutes every live hypothesis is searched over (module docstring):
S slices (contiguous), k-tiles of the model's block (0) or 32/64/128 elements (H100 nvjet kernels
take k-blocks of 64), combined serially or pairwise in fp32."""


@dataclass
class GemmOutcome:
    status: str                       # identified | no-fit | max-launches
    live: list                        # surviving hypotheses
    launches: int = 0
    matrices: int = 0                 # output elements read from the device
    verify_elements: int = 0
    verified: bool | None = None
    seconds: float = 0.0              # the whole run
    device_seconds: float = 0.0
    log: list = field(default_factory=list)   # per launch: (name, live before, live after)
    splits: list = field(default_factory=list)  # per launch whose shape took another split (module docstring)
    named_shapes: list = field(default_factory=list)  # shapes of the launches the dataflows fit as named

    def labels(self) -> list[str]:
        return [h.label for h in self.live]

    @property
    def verdict(self) -> str:
        """What the run can say, as plain identify says it: ``identified`` where one (model,
        dataflow) pair survives, ``narrowed`` where several give the same bits on every probe
        (nothing proves them alike), else the status (no-fit, max-launches)."""
        if self.status == "identified" and len(set(self.labels())) > 1:
            return "narrowed"
        return self.status

    def split_lines(self) -> list[str]:
        """One line per launch whose shape took a split of its own: the shape and the splits that
        reproduce it (common to every surviving hypothesis)."""
        if not self.splits:
            return []
        out = [f"launches of {', '.join('x'.join(map(str, s)) for s in self.named_shapes)}: the dataflow as named"]
        for r in self.splits:
            M, N, K = r["shape"]
            fits = "; ".join(r["fits"]) or "none common to the survivors"
            out.append(f"{r['launch']} ({M}x{N}x{K}, M x N x K): {fits}")
        return out

    def recovered(self, hidden: Hypothesis) -> bool:
        """Whether the hidden pair is among the survivors (dataflows compared by their fields)."""
        return any(h.model.id == hidden.model.id and fields_key(h.dataflow) == fields_key(hidden.dataflow)
                   for h in self.live)


def simulate(h: Hypothesis, p: Probe, cache: dict | None = None) -> np.ndarray | None:
    """The hypothesis's output bits on the probe GEMM (None: the dataflow cannot run it)."""
    E = epilogue_format(h.model, h.dataflow)
    try:
        al = int(to_bits(np.array(p.alpha, dtype=np.float64), E))
        be = int(to_bits(np.array(p.beta, dtype=np.float64), E))
        return gemm_bits(h.model, p.a, p.b, p.c, alpha_bits=al, beta_bits=be, dataflow=h.dataflow, cache=cache)
    except (ModelError, DataflowError):
        return None


def probe_memory(K: int) -> int:
    """Bytes the probe GEMMs at ``K`` need at least, an estimate: about 64 rows and columns of
    2K values (the extra probes double K), 16 float64 copies each while a hypothesis is simulated."""
    return 8 * 64 * 2 * K * 16


def identify_gemm(device, models: list[Model] | None = None, dataflows: list[Dataflow] | None = None,
                  K: int = K_DEFAULT, seed: int = 0, max_launches: int = 8, verify: bool = True,
                  progress=None) -> GemmOutcome:
    """The loop of the module docstring."""
    check_positive("--k", K)
    check_memory(probe_memory(K), f"identify --gemm at K = {K}", "lower --k")
    t0 = time.perf_counter()
    in_fmt, c_fmt = get_format(device.in_fmt).name, get_format(device.c_fmt).name
    models = models if models is not None else default_models(in_fmt, c_fmt)
    dataflows = dataflows if dataflows is not None else default_dataflows(INTERVALS)
    if not models:
        raise IdentifyError(f"no catalog model takes {in_fmt} A/B with {c_fmt} C")
    live = [Hypothesis(m, d) for m in models for d in dataflows]
    out = GemmOutcome("max-launches", live)
    try:
        probes = design(in_fmt, c_fmt, K, seed)
    except ValueError as exc:
        raise IdentifyError(str(exc)) from None
    queue = list(probes)
    extra_seed = seed
    suite_tried = False
    while out.launches < max_launches:
        if not queue:
            nxt = extra(in_fmt, c_fmt, 2 * K, extra_seed)     # another K: splits and restarts that
            #                                                  coincide at K (S=4 of 128 = every 32) part
            extra_seed += 1
            cache: dict = {}
            sims = [simulate(h, nxt, cache) for h in live]
            if _one_class(sims):
                ids = list(dict.fromkeys(h.model.id for h in live))
                sp = None if suite_tried or len(ids) < 2 else suite_probe(ids, in_fmt, c_fmt, K)
                suite_tried = True
                if sp is None or _one_class([simulate(h, sp) for h in live]):
                    out.status = "identified"
                    break
                nxt = sp                  # the suite's inputs split models random probes did not
            queue.append(nxt)
        p = queue.pop(0)
        d = _launch(device, p, out)
        before = len(live)
        kept = _filter(live, p, d)
        if not kept and live:
            kept = split_search(live, p, d, out)
        elif kept and list(p.shape) not in out.named_shapes:
            out.named_shapes.append(list(p.shape))
        live = kept
        out.log.append((p.name, before, len(live)))
        if progress:
            progress(f"launch {out.launches} ({p.name}): {before} -> {len(live)} hypotheses")
        if not live:
            out.status = "no-fit"
            break
    out.live = live
    if out.status == "identified" and verify:
        v = extra(in_fmt, c_fmt, 2 * K, 99_991 + seed)
        d = _launch(device, v, out, verify=True)
        out.verified = all(_same(simulate(h, v), d) for h in live)
        if not out.verified:
            live = split_search(live, v, d, out)
            out.live = live
            out.verified = bool(live)
        if not out.verified:
            out.status = "no-fit"
    out.seconds = time.perf_counter() - t0
    return out


def _launch(device, p: Probe, out: GemmOutcome, verify: bool = False) -> np.ndarray:
    t = time.perf_counter()
    d = np.asarray(device.launch(p), dtype=np.uint64)
    out.device_seconds += time.perf_counter() - t
    M, N, _ = p.shape
    if d.shape != (M, N):
        raise IdentifyError(f"{device.name}: answered {d.shape} for a {M}x{N} GEMM")
    if verify:
        out.verify_elements += d.size
    else:
        out.launches += 1
        out.matrices += d.size
    return d


STAGES = (2, 12)
"""Rows of a probe checked first: most wrong hypotheses fail on the first rows (the random ones,
:func:`.probes.design`), so the exact-sum models (NumPy, ~75 ms per block of 300 elements) run
the whole probe only while they still fit."""


def _filter(live: list, p: Probe, d: np.ndarray) -> list:
    """The hypotheses that reproduce the device's answer d to probe p, checked in row stages."""
    M = p.shape[0]
    for r in [x for x in STAGES if x < M] + [M]:
        sub = Probe(p.name, p.a[:r], p.b, p.c[:r], p.alpha, p.beta)
        cache: dict = {}
        live = [h for h in live if _same(simulate(h, sub, cache), d[:r])]
    return live


def split_variant(h: Hypothesis, S: int, tile: int, combine: str) -> Hypothesis | None:
    """h with its dataflow's split replaced (None: not a valid dataflow)."""
    try:
        df = replace(h.dataflow, slices=S, tile=tile, combine=combine, assign="contiguous", bounds=()).validate()
    except DataflowError:
        return None
    return Hypothesis(h.model, df)


def _split_label(df: Dataflow) -> str:
    tile = f"{df.tile}-wide k-tiles" if df.tile else "k-tiles of the model's block"
    return f"S={df.slices} over {tile}, combine {df.combine}"


def split_search(live: list, p: Probe, d: np.ndarray, out: GemmOutcome) -> list:
    """The live hypotheses that reproduce launch p with a split of :data:`SPLIT_GRID` (module
    docstring); the splits that did are recorded in ``out.splits``. Returns them with their
    dataflows as named (the split belongs to the launch's shape, not to the hypothesis)."""
    kept, per = [], []
    for h in live:
        variants = [v for v in (split_variant(h, *x) for x in SPLIT_GRID) if v is not None]
        fit = _filter(variants, p, d)
        if fit:
            kept.append(h)
            per.append({_split_label(v.dataflow) for v in fit})
    common = sorted(set.intersection(*per), key=lambda t: (int(t.split()[0][2:]), t)) if per else []
    out.splits.append({"launch": p.name, "shape": list(p.shape), "fits": common, "hypotheses": len(kept),
                       "of": len(live), "searched": "S in {2, 3, 4, 6, 8} x tile in {model block, 32, 64, 128} "
                                                     "x combine serial|pairwise, contiguous slices"})
    return kept


def _same(sim, d) -> bool:
    return sim is not None and sim.shape == d.shape and bool(np.array_equal(sim, d))


def _one_class(sims) -> bool:
    ok = [s for s in sims if s is not None]
    return len(ok) == len(sims) and all(np.array_equal(ok[0], s) for s in ok[1:])
