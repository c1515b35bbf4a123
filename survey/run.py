"""The survey's plan and its run under a time budget.

The parts (:mod:`survey.parts`) are walked once for the plan and once for the run. Steps, in
priority order (the GPU first, the CPU after, the long identify runs last):

0. ``pin/capture/ID``, ``pin/judge/ID``: the pin part, when asked for (:mod:`survey.pin`);
1. ``capture/kernel/ID``: each instruction kernel of the GPU's architecture on its case sets
   (:mod:`survey.cases`, :func:`survey.kernels.capture`);
2. ``capture/library/NAME``: the library GEMMs (:mod:`survey.library`);
3. ``judge/ID``: every hypothesis of the kernel's formats against its captures;
4. ``analyse/NAME``: the library captures against the GEMM twin's (model, dataflow) pairs;
5. ``identify/ID``: identify on the main kernels (:mod:`survey.identify`);
6. the card (:mod:`survey.card`), always, naming every step not run and why.

A step starts only while the budget has at least its minimum left (:data:`MIN_SECONDS`); what
is skipped is named in the card and runs on ``--resume``. Each finished step is in the journal
(:mod:`survey.store`), so a killed survey loses at most the step it was in.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from hw_runner.kernels import KERNELS
from smtmodel.catalog import model_for_kernel
from smtmodel.limits import check_cases

from . import card as card_mod
from . import kernels as kparts
from . import library as lib
from .cases import case_sets, redraw
from .device import Target
from .errors import SurveyError
from .parts import PART_TYPES, make_parts
from .store import Store

PARTS = tuple(PART_TYPES)
DEFAULT_PARTS = ("kernels", "library", "identify")
"""The parts run without ``--parts``; ``pin`` (:mod:`survey.pin`) is asked for by name and runs first."""
DEFAULT_BUDGET = 420.0
"""Seconds: one 10-minute command on the GPU machine with 3 minutes of margin."""
MIN_SECONDS = {"capture": 2.0, "judge": 3.0, "analyse": 3.0, "identify": 45.0}
DEFAULT_SUITE = Path(__file__).resolve().parents[1] / "generated_tests"


@dataclass
class Settings:
    cases: int = 10_000           # cases of the validation mix per kernel (the other sets in proportion)
    seed: int = 0
    budget: float = DEFAULT_BUDGET
    parts: tuple = DEFAULT_PARTS
    verify: int = 20_000          # identify's verification cases
    quick: bool = False           # small library shapes and one identify target (dry runs)
    suite: str | None = None      # the deciding-vector folder (default: the project's generated_tests)
    kernels: tuple = ()           # only these kernel ids (default: every kernel of the GPU)
    space: str | None = None      # identify's hypothesis space (None: the default space)
    jobs: int | None = None

    def journal_view(self) -> dict:
        d = asdict(self)
        d.pop("budget")
        d.pop("jobs")
        d["parts"] = list(self.parts)
        d["kernels"] = list(self.kernels)
        return d


@dataclass
class Survey:
    target: Target
    settings: Settings
    store: Store
    progress: object = None
    t0: float = field(default_factory=time.monotonic)
    skipped: list = field(default_factory=list)

    # ---- the plan -------------------------------------------------------------------------------
    def kernel_specs(self) -> list:
        """The kernels surveyed: every kernel the GPU runs (``--kernels``: those named)."""
        return [s for s in KERNELS.values() if s.supports(self.target.arch)
                and (not self.settings.kernels or s.id in self.settings.kernels)]

    def suite_path(self) -> Path:
        return Path(self.settings.suite) if self.settings.suite else DEFAULT_SUITE

    def sets(self, spec):
        return case_sets(spec, self.target.arch, self.settings.cases, self.settings.seed, self.suite_path())

    def library_plan(self) -> list:
        return lib.plan(self.settings.quick)

    def identify_plan(self) -> list:
        from .identify import targets
        t = targets(self.target.arch)
        return t[:1] if self.settings.quick else t

    def plan_rows(self) -> list[tuple]:
        """(part, steps, launches, cases) of the whole plan (printed before a run, and by --plan)."""
        return [row for part in make_parts(self.settings.parts) for row in part.plan(self)]

    # ---- running --------------------------------------------------------------------------------
    def capture_library(self, gemms: list) -> dict:
        """The library part's captures: the environment once, then each GEMM (kernel names,
        digests, variants, held-out flags: :func:`survey.library.capture`); returns the inputs drawn."""
        inputs = {}
        if not gemms:
            return inputs
        try:
            library = self.target.open_library()
        except SurveyError as exc:
            for g in gemms:
                self.skipped.append({"step": f"capture/library/{g.name}", "why": str(exc)})
            self.say(f"library part not run: {exc}")
            return inputs
        rec = self.step("capture/library/environment", "capture", lambda: (_environment(library), {}), "library")
        if rec:
            self.say("library environment: " + ", ".join(f"{k}={rec.get(k)}" for k in
                                                         ("torch", "cuda", "cublas", "CUBLAS_WORKSPACE_CONFIG")))
        for g in gemms:
            if self.store.done(f"capture/library/{g.name}") is None and self.left() < MIN_SECONDS["capture"]:
                self.skipped.append({"step": f"capture/library/{g.name}", "why": "budget"})
                continue
            inputs[g.name] = lib.inputs(g)
            rec = self.step(f"capture/library/{g.name}", "capture",
                            lambda: lib.capture(library, g, *inputs[g.name]), "library")
            if rec:
                self.say(f"library {g.name}: {rec['status']}" + ("" if rec["status"] == "captured"
                                                                   else f" ({rec['reason']})")
                         + f" ({rec['seconds']:.1f} s)")
            if g.draw == "grid":
                inputs.pop(g.name, None)       # redrawn for analysis: the grid's inputs are large
        return inputs

    def left(self) -> float:
        return self.settings.budget - (time.monotonic() - self.t0)

    def say(self, text: str) -> None:
        if self.progress:
            self.progress(f"[{time.monotonic() - self.t0:6.1f} s] {text}")

    def step(self, name: str, kind: str, fn, part: str | None = None):
        """Run step ``name`` unless it is done or the budget is too short; return its record."""
        rec = self.store.done(name)
        if rec is not None:
            return rec
        if self.left() < MIN_SECONDS[kind]:
            self.skipped.append({"step": name, "why": f"budget: {max(0.0, self.left()):.0f} s left of "
                                                      f"{self.settings.budget:.0f} s"})
            return None
        result, arrays = fn()
        self.store.record(name, result, arrays, part)
        return self.store.done(name)

    def run(self) -> dict:
        """Every part's capture phase, then every part's analysis (:mod:`survey.parts`), then the card."""
        parts = make_parts(self.settings.parts)
        for part in parts:
            part.capture(self)
        for part in parts:
            part.analyse(self)
        from . import emulation
        card = card_mod.build(self)
        gemm_ident = {k.split("/", 1)[1]: {x: v for x, v in r.items() if x != "step"}
                      for k, r in ((f"identify/torch-gemm-{f}", self.store.done(f"identify/torch-gemm-{f}"))
                                   for f in ("bf16", "fp16")) if r}
        card["identify_gemm"], card["emulation"] = gemm_ident, emulation.card_part(self)
        md = card_mod.to_markdown(card)
        extra = emulation.markdown(card["emulation"], gemm_ident)
        head, sep, tail = md.partition("\n## Not run")
        md = head.rstrip("\n") + "\n" + extra + (sep + tail if sep else "") if extra else md
        self.store.write_text("card.json", card_mod.to_json(card))
        self.store.write_text("card.md", md)
        card["files"] = self.store.files()
        self.store.write_text("card.json", card_mod.to_json(card))
        return card


def _environment(library) -> dict:
    env = getattr(library, "environment", None)
    return {"status": "captured", **(env() if env else {"backend": getattr(library, "name", None)})}


def open_survey(target: Target, out: "str | Path", settings: Settings, resume: bool = False, progress=None) -> Survey:
    """A survey of ``target`` into folder ``out`` (new, or resumed; None: checked, for its plan only)."""
    if settings.cases < 1:
        raise SurveyError(f"--cases must be at least 1 (got {settings.cases})")
    if not settings.budget == settings.budget or settings.budget in (float("inf"), float("-inf")):
        raise SurveyError(f"--budget {settings.budget}: a finite number of seconds")
    if settings.budget < min(MIN_SECONDS.values()):
        raise SurveyError(f"--budget {settings.budget:g} s is too short for anything: the shortest step needs "
                          f"{min(MIN_SECONDS.values()):g} s")
    bad = [p for p in settings.parts if p not in PARTS]
    if bad or not settings.parts:
        raise SurveyError(f"--parts: unknown part(s) {', '.join(bad) or '(none given)'}; choose from {', '.join(PARTS)}")
    unknown = [k for k in settings.kernels if k not in KERNELS]
    if unknown:
        raise SurveyError(f"--kernels: unknown kernel(s) {', '.join(unknown)}; 'mmaprobe harness list' shows them")
    absent = [k for k in settings.kernels if not KERNELS[k].supports(target.arch)]
    if absent:
        raise SurveyError(f"--kernels: {', '.join(absent)}: does not run on {target.arch}")
    if settings.suite and not Path(settings.suite).is_dir():
        raise SurveyError(f"--suite {settings.suite}: no such folder")
    # sizes before the work: a kernel's case sets (the validation mix and the others in proportion,
    # about 4x) at the largest K of the kernels surveyed; identify's verification cases
    k_max = max((KERNELS[k].k for k in settings.kernels), default=max(s.k for s in KERNELS.values()))
    check_cases("--cases", settings.cases, k_max, "the survey's kernel captures", arrays=32)
    if settings.verify < 0:
        raise SurveyError(f"--verify must be 0 or more (got {settings.verify})")
    if settings.verify:
        check_cases("--verify", settings.verify, k_max, "the survey's identify part", arrays=4)
    header = {"device": target.text, "arch": target.arch, "name": target.name, "settings": settings.journal_view()}
    store = None if out is None else Store(out, header, resume)      # None: the plan only
    return Survey(target, settings, store, progress)


def _load(folder: "str | Path"):
    """(header, steps, kernel arrays) of a survey folder; a damaged journal or kernels.npz is one
    error line naming the file."""
    from smtmodel.io import read_npz

    from .store import read_journal
    folder = Path(folder)
    if not (folder / "journal.jsonl").is_file() or not (folder / "kernels.npz").is_file():
        raise SurveyError(f"{folder}: not a survey folder with kernel captures (journal.jsonl, kernels.npz)")
    header, steps = read_journal(folder)
    return header, steps, read_npz(folder / "kernels.npz")


def captured_kernels(steps: dict) -> list[str]:
    """The kernels a survey journal's steps captured, in order."""
    return [name.split("/", 2)[2] for name, rec in steps.items()
            if name.startswith("capture/kernel/") and rec.get("status") == "captured"]


def captured_sets(folder: "str | Path"):
    """Per captured kernel of a survey folder: (spec, [CaseSet ...], device key, arrays), the
    random sets redrawn from their seeds, the file sets read back from the captures."""
    header, steps, arrays = _load(folder)
    return header, _sets(folder, header, steps, arrays, None)


def _sets(folder, header: dict, steps: dict, arrays, only: "set[str] | None") -> list:
    from .cases import CaseSet
    out = []
    for kid in captured_kernels(steps):
        if only is not None and kid not in only:
            continue
        rec = steps[f"capture/kernel/{kid}"]
        spec = KERNELS.get(kid)
        if spec is None:
            raise SurveyError(f"{folder}: kernel {kid} is not in this version's harness")
        sets = []
        for set_name, info in rec["sets"].items():
            src = info["source"]
            if "seed" in src:
                a, b, c, sa, sb = redraw(src, spec.k)
            else:
                a, b, c = (arrays[f"{spec.id}/{set_name}/{x}"].astype(np.uint64) for x in "abc")
                sa, sb = (arrays[f"{spec.id}/{set_name}/{x}_scale"].astype(np.uint64)
                          if f"{spec.id}/{set_name}/{x}_scale" in arrays else None for x in "ab")
            sets.append(CaseSet(set_name, a, b, c, info["k"], src, sa=sa, sb=sb))
        key = f"{header.get('name')} / {header['arch']} / {spec.ptx}"
        out.append((spec, sets, key, arrays))
    return out


def recheck(folder: "str | Path") -> dict:
    """Re-judge a survey folder's kernel captures with today's catalog (captures as ground truth):
    per kernel, whether its GPU's catalog model still reproduces every captured output."""
    header, kernels = captured_sets(folder)
    sm = int("".join(ch for ch in header["arch"].split("_")[1] if ch.isdigit()))
    out = {}
    for spec, sets, _, arrays in kernels:
        model = model_for_kernel(spec.id, sm, spec.k)
        if model is None:
            out[spec.id] = {"model": None}
            continue
        v = kparts.judge(spec, sets, arrays, [model.id])["verdicts"][model.id]
        out[spec.id] = {"model": model.id, "matches": v["matches"], "total": v["total"],
                        "matches_nan_blind": sum(x[1] for x in v["sets"].values()),
                        "first_contradiction": v["first_contradiction"]}
    return out


def export(folder: "str | Path", kernel: str, path: "str | Path") -> int:
    """Write one kernel's captures (the sets of K products, padding included) as a vector file with
    the outputs in ``observed`` (``mmaprobe verdict``, ``identify --device file:``); returns the
    number of cases."""
    from smtmodel.formats import get_format
    from smtmodel.vectors import VectorFile, case_rows, make_header, write_vectors
    header, steps, arrays = _load(folder)
    if kernel not in captured_kernels(steps):
        raise SurveyError(f"{folder}: no capture of kernel {kernel!r}; captured: "
                          f"{', '.join(captured_kernels(steps)) or 'none'}")
    found = _sets(folder, header, steps, arrays, {kernel})
    spec, sets, key, arrays = found[0]
    fa, fb = spec.operand_fmts
    cases = []
    for s in sets:
        if s.a.shape[1] != spec.k:
            continue                     # chained sets (4K products) go in no one-block file
        d = arrays[f"{spec.id}/{s.name}"].astype(np.uint64)
        cases += case_rows((fa, fb, spec.c_fmt), s.a, s.b, s.c, ids=s.name, a_scale=s.sa, b_scale=s.sb,
                           scale_fmt=spec.scale_fmt if s.sa is not None else None,
                           observed={key: d[:s.n]}, out_fmt=spec.out_fmt)
    scaled = {"scale_fmt": get_format(spec.scale_fmt).name, "scale_block": spec.scale_block} \
        if spec.block_scaled else {}
    h = make_header((fa, fb), spec.c_fmt, spec.out_fmt, spec.k, **scaled,
                    source={"tool": "mmaprobe survey", "kernel": spec.id, "device": key,
                            "dry_run": str(header.get("device", "")).startswith("dry:")})
    write_vectors(path, VectorFile(h, cases))
    return len(cases)
