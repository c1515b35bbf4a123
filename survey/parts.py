"""The survey's parts as objects: each says what it will do (:meth:`Part.plan`: rows of part,
steps, launches, cases) and does it in two phases (:meth:`Part.capture` on the GPU, then
:meth:`Part.analyse` on the CPU). :class:`survey.run.Survey` walks the same list for the plan it
prints and for the run, so a part is listed once (docs/survey.md).

A run walks every part's capture phase before any analysis phase, so the GPU's work comes first
under the time budget; ``pin`` (:mod:`survey.pin`) judges its own captures at once, as it runs
first and decides what the rest may leave open.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from hw_runner.kernels import arch_num
from hw_runner.runner import BATCH
from smtmodel.catalog import model_for_kernel

from . import card as card_mod
from . import kernels as kparts
from . import library as lib
from . import library_fit
from .cases import hypotheses


class Part(ABC):
    """One part of the survey (``--parts NAME``); state between its phases lives on the object."""
    name = ""

    @abstractmethod
    def plan(self, sv) -> list[tuple]:
        """(what, steps, launches, cases) rows of this part's plan."""

    def capture(self, sv) -> None:
        """The GPU side (captures), in priority order."""

    def analyse(self, sv) -> None:
        """The CPU side (judging the captures), after every part's capture."""


class PinPart(Part):
    """Deciding inputs for the parameters the captures leave open, and the refuted properties'
    witnesses (:mod:`survey.pin`)."""
    name = "pin"

    def _plan(self, sv) -> list:
        from . import pin
        return [(s, pin.plan(s, sv.suite_path(), sv.settings.seed, sv.target.arch))
                for s in pin.kernels_of(sv.target.arch, sv.suite_path(), sv.settings.kernels)]

    def plan(self, sv) -> list[tuple]:
        pp = self._plan(sv)
        sets = [x for _, ss in pp for x in ss]
        return [("pin: open parameters, witnesses, finite chains", len(pp),
                 sum(-(-x.n // BATCH) for x in sets), sum(x.n for x in sets))]

    def capture(self, sv) -> None:
        from . import pin
        pp = self._plan(sv)
        if pp:
            sv.say(f"pin: {len(pp)} kernels, {sum(x.n for _, ss in pp for x in ss)} cases")
        for spec, ss in pp:
            rec = sv.step(f"pin/capture/{spec.id}", "capture",
                          lambda: pin.capture(sv.target.launcher, spec, ss), "kernels")
            if rec and rec["status"] != "captured":
                sv.say(f"pin capture {spec.id}: {rec['status']} ({rec['reason']})")
        for spec, ss in pp:
            cap = sv.store.done(f"pin/capture/{spec.id}")
            if not cap or cap["status"] != "captured":
                continue
            sv.step(f"pin/judge/{spec.id}", "judge",
                    lambda: (pin.judge(spec, ss, sv.store.arrays["kernels"], sv.suite_path(), sv.target.arch), {}))
        for line in pin.summary_lines(pin.card_part(sv)):
            sv.say(line)


class KernelsPart(Part):
    """Every instruction kernel of the GPU on its case sets, judged against every hypothesis of
    its formats (:mod:`survey.kernels`)."""
    name = "kernels"

    def __init__(self):
        self.specs, self.sets = [], {}

    def plan(self, sv) -> list[tuple]:
        n_launch = n_cases = 0
        specs = sv.kernel_specs()
        for spec in specs:
            sets = sv.sets(spec)
            n_launch += 1 + sum(-(-s.n // BATCH) for s in sets)
            n_cases += spec.k * spec.k + sum(s.n for s in sets)
        return [("kernels: capture and judge", len(specs), n_launch, n_cases)]

    def capture(self, sv) -> None:
        self.specs = sv.kernel_specs()
        if self.specs:
            sv.say(f"{len(self.specs)} instruction kernels on {sv.target.name} ({sv.target.arch})")
        for spec in self.specs:
            self.sets[spec.id] = sv.sets(spec)
            rec = sv.step(f"capture/kernel/{spec.id}", "capture",
                          lambda: kparts.capture(sv.target.launcher, spec, self.sets[spec.id]), "kernels")
            if rec:
                sv.say(f"capture {spec.id}: {rec['status']}"
                       + (f", {sum(v['cases'] for v in rec['sets'].values())} cases, {rec['launches']} launches"
                          if rec["status"] == "captured" else f" ({rec['reason']})") + f" ({rec['seconds']:.1f} s)")

    def analyse(self, sv) -> None:
        predictor = kparts.Predictor(jobs=sv.settings.jobs)
        try:
            for spec in self.specs:
                cap = sv.store.done(f"capture/kernel/{spec.id}")
                if not cap or cap["status"] != "captured":
                    continue
                ss = self.sets[spec.id]
                own = model_for_kernel(spec.id, arch_num(sv.target.arch), spec.k)
                models = hypotheses(spec, ss, own.id if own else None)
                rec = sv.step(f"judge/{spec.id}", "judge",
                              lambda: (kparts.judge(spec, ss, sv.store.arrays["kernels"], models, predictor), {}))
                if rec:
                    alive = [m for m, v in rec["verdicts"].items() if v.get("survives")]
                    sv.say(f"judge {spec.id}: {len(alive)}/{len(models)} hypotheses survive ({rec['seconds']:.1f} s)")
        finally:
            predictor.close()


class LibraryPart(Part):
    """The library GEMMs (torch/cuBLAS; :mod:`survey.library`) with their variants and shape grid,
    analysed against the dispatch rule and the GEMM twin (:mod:`survey.library_fit`), and the
    JAX/Triton emulation modes (:mod:`survey.emulation`)."""
    name = "library"

    def __init__(self):
        self.gemms, self.inputs, self.emu_inputs = [], {}, {}

    def plan(self, sv) -> list[tuple]:
        from .emulation import plan_row
        from .grid import estimate_seconds
        from .torch_lib import VARIANTS, variants_for
        gs = sv.library_plan()
        est = sum(estimate_seconds(g) for g in gs)
        rows = [(f"library GEMMs (cases: output elements; ~{est:.0f} s)", len(gs),
                 sum(g.launches for g in gs), sum(g.N * sum(g.ms or (g.M,)) for g in gs))]
        var = [(g, g.ms or (g.M,) if g.variant_ms is None else g.variant_ms, len(variants_for(g.in_fmt)))
               for g in gs if g.op != "seed003"]
        rows.append((f"  of which variants ({', '.join(VARIANTS)})", sum(len(v) for _, v, _ in var),
                     sum(n * len(v) for _, v, n in var), sum(n * g.N * sum(v) for g, v, n in var)))
        grid = [g for g in gs if g.draw == "grid"]
        rows.append((f"  of which shape grid ({sum(len(g.held_out) for g in grid)} points held out)", len(grid),
                     sum(g.launches for g in grid), sum(g.N * sum(g.ms or (g.M,)) for g in grid)))
        rows.append(plan_row(sv.settings.quick))
        return rows

    def capture(self, sv) -> None:
        from . import emulation
        self.gemms = sv.library_plan()
        self.inputs = sv.capture_library(self.gemms)
        self.emu_inputs = emulation.capture_all(sv)

    def analyse(self, sv) -> None:
        from . import emulation
        for g in self.gemms:
            cap = sv.store.done(f"capture/library/{g.name}")
            if not cap or cap["status"] != "captured":
                continue
            if g.name not in self.inputs:
                self.inputs[g.name] = lib.inputs(g)
            rec = sv.step(f"analyse/{g.name}", "analyse",
                          lambda: (library_fit.analyse(g, sv.target.arch, sv.store.arrays["library"],
                                                       *self.inputs[g.name], cap.get("digests")), {}))
            if rec:
                sv.say(f"analyse {g.name}: " + card_mod.library_line(g, rec))
        emulation.analyse_all(sv, self.emu_inputs)


class IdentifyPart(Part):
    """identify on the main kernels and ``identify --gemm`` through torch (:mod:`survey.identify`);
    the long runs, last."""
    name = "identify"

    def plan(self, sv) -> list[tuple]:
        from .identify import gemm_targets
        t = sv.identify_plan()
        gt = gemm_targets(sv.target.arch, sv.settings.quick)
        return [("identify (<= 6 design launches + verification each)", len(t), len(t) * (6 + 3),
                 len(t) * (6 * 256 + sv.settings.verify)),
                ("identify --gemm through torch (addmm, matmul)", len(gt), len(gt) * 7, len(gt) * 4 * 50 * 6)]

    def analyse(self, sv) -> None:
        from .identify import gemm_line, gemm_targets, run_identify, run_identify_gemm
        st = sv.settings
        for spec in sv.identify_plan():
            rec = sv.step(f"identify/{spec.id}", "identify",
                          lambda: (run_identify(sv.target.launcher, spec, st.verify, st.seed, st.space), {}))
            if rec:
                sv.say(f"identify {spec.id}: {card_mod.identify_line(rec)}")
        for fmt in gemm_targets(sv.target.arch, st.quick):
            rec = sv.step(f"identify/torch-gemm-{fmt}", "identify",
                          lambda: (run_identify_gemm(sv.target, fmt, st.seed, st.quick), {}))
            if rec:
                sv.say(f"identify torch-gemm {fmt}: {gemm_line(rec)}")


PART_TYPES = {p.name: p for p in (PinPart, KernelsPart, LibraryPart, IdentifyPart)}
"""The parts in the order they run (``--parts`` names them)."""


def make_parts(names) -> list[Part]:
    """Fresh part objects for ``names``, in run order."""
    return [cls() for name, cls in PART_TYPES.items() if name in names]
