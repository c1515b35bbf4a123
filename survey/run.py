"""The survey's plan and its run under a time budget.

Steps, in priority order (the GPU first, the CPU after, the long identify runs last):

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

from hw_runner.kernels import KERNELS, arch_num
from hw_runner.runner import BATCH
from smtmodel.catalog import model_for_kernel

from . import card as card_mod
from . import kernels as kparts
from . import library as lib
from . import library_fit
from .cases import case_sets, hypotheses, redraw
from .device import Target
from .errors import SurveyError
from .store import Store

PARTS = ("pin", "kernels", "library", "identify")
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

    def pin_plan(self) -> list:
        """(kernel spec, pin sets) of the pin part (:mod:`survey.pin`)."""
        from . import pin
        return [(s, pin.plan(s, self.suite_path(), self.settings.seed, self.target.arch))
                for s in pin.kernels_of(self.target.arch, self.suite_path(), self.settings.kernels)]

    def library_plan(self) -> list:
        return lib.plan(self.settings.quick)

    def identify_plan(self) -> list:
        from .identify import targets
        t = targets(self.target.arch)
        return t[:1] if self.settings.quick else t

    def plan_rows(self) -> list[tuple]:
        """(part, steps, launches, cases) of the whole plan (printed before a run, and by --plan)."""
        rows = []
        if "pin" in self.settings.parts:
            pp = self.pin_plan()
            sets = [x for _, ss in pp for x in ss]
            rows.append(("pin: open parameters, witnesses, finite chains", len(pp),
                         sum(-(-x.n // BATCH) for x in sets), sum(x.n for x in sets)))
        if "kernels" in self.settings.parts:
            n_launch = n_cases = 0
            specs = self.kernel_specs()
            for spec in specs:
                sets = self.sets(spec)
                n_launch += 1 + sum(-(-s.n // BATCH) for s in sets)
                n_cases += spec.k * spec.k + sum(s.n for s in sets)
            rows.append(("kernels: capture and judge", len(specs), n_launch, n_cases))
        if "library" in self.settings.parts:
            from .grid import estimate_seconds
            from .torch_lib import VARIANTS, variants_for
            gs = self.library_plan()
            est = sum(estimate_seconds(g) for g in gs)
            rows.append((f"library GEMMs (cases: output elements; ~{est:.0f} s)", len(gs),
                         sum(g.launches for g in gs), sum(g.N * sum(g.ms or (g.M,)) for g in gs)))
            var = [(g, g.ms or (g.M,) if g.variant_ms is None else g.variant_ms, len(variants_for(g.in_fmt)))
                   for g in gs if g.op != "seed003"]
            rows.append((f"  of which variants ({', '.join(VARIANTS)})", sum(len(v) for _, v, _ in var),
                         sum(n * len(v) for _, v, n in var), sum(n * g.N * sum(v) for g, v, n in var)))
            grid = [g for g in gs if g.draw == "grid"]
            rows.append((f"  of which shape grid ({sum(len(g.held_out) for g in grid)} points held out)", len(grid),
                         sum(g.launches for g in grid), sum(g.N * sum(g.ms or (g.M,)) for g in grid)))
            from .emulation import plan_row
            rows.append(plan_row(self.settings.quick))
        if "identify" in self.settings.parts:
            t = self.identify_plan()
            rows.append(("identify (<= 6 design launches + verification each)", len(t), len(t) * (6 + 3),
                         len(t) * (6 * 256 + self.settings.verify)))
            from .identify import gemm_targets
            gt = gemm_targets(self.target.arch, self.settings.quick)
            rows.append(("identify --gemm through torch (addmm, matmul)", len(gt), len(gt) * 7,
                         len(gt) * 4 * 50 * 6))
        return rows

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

    def run_pin(self) -> None:
        """The pin part (:mod:`survey.pin`): each kernel's pin sets captured, then judged."""
        from . import pin
        pp = self.pin_plan()
        if pp:
            self.say(f"pin: {len(pp)} kernels, {sum(x.n for _, ss in pp for x in ss)} cases")
        for spec, ss in pp:
            rec = self.step(f"pin/capture/{spec.id}", "capture",
                            lambda: pin.capture(self.target.launcher, spec, ss), "kernels")
            if rec and rec["status"] != "captured":
                self.say(f"pin capture {spec.id}: {rec['status']} ({rec['reason']})")
        for spec, ss in pp:
            cap = self.store.done(f"pin/capture/{spec.id}")
            if not cap or cap["status"] != "captured":
                continue
            self.step(f"pin/judge/{spec.id}", "judge",
                      lambda: (pin.judge(spec, ss, self.store.arrays["kernels"], self.suite_path(),
                                         self.target.arch), {}))
        for line in pin.summary_lines(pin.card_part(self)):
            self.say(line)

    def run(self) -> dict:
        st = self.settings
        if "pin" in st.parts:
            self.run_pin()
        specs = self.kernel_specs() if "kernels" in st.parts else []
        sets = {}
        if specs:
            self.say(f"{len(specs)} instruction kernels on {self.target.name} ({self.target.arch})")
        for spec in specs:
            sets[spec.id] = self.sets(spec)
            rec = self.step(f"capture/kernel/{spec.id}", "capture",
                            lambda: kparts.capture(self.target.launcher, spec, sets[spec.id]), "kernels")
            if rec:
                self.say(f"capture {spec.id}: {rec['status']}"
                         + (f", {sum(v['cases'] for v in rec['sets'].values())} cases, {rec['launches']} launches"
                            if rec["status"] == "captured" else f" ({rec['reason']})") + f" ({rec['seconds']:.1f} s)")
        gemms = self.library_plan() if "library" in st.parts else []
        inputs = self.capture_library(gemms)
        from . import emulation
        emu_inputs = emulation.capture_all(self) if "library" in st.parts else {}
        predictor = kparts.Predictor(jobs=st.jobs)
        try:
            for spec in specs:
                cap = self.store.done(f"capture/kernel/{spec.id}")
                if not cap or cap["status"] != "captured":
                    continue
                ss = sets[spec.id]
                own = model_for_kernel(spec.id, arch_num(self.target.arch), spec.k)
                models = hypotheses(spec, ss, own.id if own else None)
                rec = self.step(f"judge/{spec.id}", "judge",
                                lambda: (kparts.judge(spec, ss, self.store.arrays["kernels"], models, predictor), {}))
                if rec:
                    alive = [m for m, v in rec["verdicts"].items() if v.get("survives")]
                    self.say(f"judge {spec.id}: {len(alive)}/{len(models)} hypotheses survive ({rec['seconds']:.1f} s)")
        finally:
            predictor.close()
        for g in gemms:
            cap = self.store.done(f"capture/library/{g.name}")
            if not cap or cap["status"] != "captured":
                continue
            if g.name not in inputs:
                inputs[g.name] = lib.inputs(g)
            rec = self.step(f"analyse/{g.name}", "analyse",
                            lambda: (library_fit.analyse(g, self.target.arch, self.store.arrays["library"],
                                                         *inputs[g.name], cap.get("digests")), {}))
            if rec:
                self.say(f"analyse {g.name}: " + card_mod.library_line(g, rec))
        if "library" in st.parts:
            emulation.analyse_all(self, emu_inputs)
        if "identify" in st.parts:
            from .identify import run_identify
            for spec in self.identify_plan():
                rec = self.step(f"identify/{spec.id}", "identify",
                                lambda: (run_identify(self.target.launcher, spec, st.verify, st.seed, st.space), {}))
                if rec:
                    self.say(f"identify {spec.id}: {card_mod.identify_line(rec)}")
            from .identify import gemm_line, gemm_targets, run_identify_gemm
            for fmt in gemm_targets(self.target.arch, st.quick):
                rec = self.step(f"identify/torch-gemm-{fmt}", "identify",
                                lambda: (run_identify_gemm(self.target, fmt, st.seed, st.quick), {}))
                if rec:
                    self.say(f"identify torch-gemm {fmt}: {gemm_line(rec)}")
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


def captured_sets(folder: "str | Path"):
    """Per captured kernel of a survey folder: (spec, [CaseSet ...], device key, arrays), the
    random sets redrawn from their seeds, the file sets read back from the captures."""
    from .cases import CaseSet
    header, steps, arrays = _load(folder)
    out = []
    for name, rec in steps.items():
        if not name.startswith("capture/kernel/") or rec.get("status") != "captured":
            continue
        spec = KERNELS.get(name.split("/", 2)[2])
        if spec is None:
            raise SurveyError(f"{folder}: kernel {name.split('/', 2)[2]} is not in this version's harness")
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
    return header, out


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
    header, kernels = captured_sets(folder)
    found = [x for x in kernels if x[0].id == kernel]
    if not found:
        raise SurveyError(f"{folder}: no capture of kernel {kernel!r}; captured: "
                          f"{', '.join(x[0].id for x in kernels) or 'none'}")
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
        if getattr(spec, "block_scaled", False) else {}
    h = make_header((fa, fb), spec.c_fmt, spec.out_fmt, spec.k, **scaled,
                    source={"tool": "mmaprobe survey", "kernel": spec.id, "device": key,
                            "dry_run": str(header.get("device", "")).startswith("dry:")})
    write_vectors(path, VectorFile(h, cases))
    return len(cases)
