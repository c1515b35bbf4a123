"""Which catalog models have a harness kernel whose SASS / ISA check passed here.

Every model of the catalog counts, as ``mmaprobe models`` lists them: the floating-point and
integer findings, the rival hypotheses and the B300 aliases (:func:`smtmodel.catalog.alias_models`,
architecture ``blackwell-ultra``, target sm_103). A model names its kernels in ``kernels``. It is
*covered* when one of them was built for the model's own target (``sm_XX`` by its ``sm``:
``sm_90`` and ``sm_90a`` alike; ``gfx...`` by its ``gfx``) and passed the check
(:func:`hw_runner.build.build` rows with status ``ok``; :func:`hw_runner.amd.build.build` rows
``ok`` or ``checked``, the ISA checked without a linker). Every model that is not covered is listed with the reason: no kernel named, a kernel the registry does
not hold, kernels that do not run on the target, not built, or the build row's status (skipped
for a toolchain that lacks the target, failed check).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .amd.kernels import MFMA_KERNELS
from .kernels import KERNELS, arch_num


@dataclass
class ArchCoverage:
    """One architecture: its catalog models, those covered, and why the others are not."""

    arch: str                     # catalog architecture name (hopper, cdna3, ...)
    target: str                   # sm_90, gfx942, ...
    models: list[str] = field(default_factory=list)
    covered: list[str] = field(default_factory=list)
    emulated: list[str] = field(default_factory=list)   # covered only through an emulating lowering
    missing: dict[str, str] = field(default_factory=dict)


def _target(m) -> str:
    return m.gfx if m.gfx else f"sm_{m.sm}"


def _order(target: str) -> tuple:
    return (1, target) if target.startswith("gfx") else (0, arch_num(target))


def catalog_models(vendors=("nvidia", "amd"), gfx: set[str] | None = None) -> list:
    """Every catalog model (floating-point, integer, rival, B300 alias) of the vendors, optionally
    of some gfx only; a model with neither an ``sm`` nor a ``gfx`` has no target and is left out."""
    from smtmodel.catalog import alias_models, all_models, integer_models
    out = []
    for m in all_models() + integer_models() + alias_models():
        if not (m.sm or m.gfx):
            continue
        if ("amd" if m.gfx else "nvidia") not in vendors or (m.gfx and gfx and m.gfx not in gfx):
            continue
        out.append(m)
    return out


def coverage(models, rows) -> list[ArchCoverage]:
    """Per architecture (oldest first): which of ``models`` have a checked kernel in ``rows``
    (build rows of either vendor); with ``rows`` None (nothing built), which name a kernel that
    runs on their target."""
    status: dict[tuple[str, str], list] = {}
    for r in rows or []:
        key = r.arch if r.arch.startswith("gfx") else f"sm_{arch_num(r.arch)}"
        status.setdefault((r.spec.id, key), []).append(r)
    per: dict[tuple[str, str], ArchCoverage] = {}
    for m in models:
        target = _target(m)
        cov = per.setdefault((m.arch, target), ArchCoverage(m.arch, target))
        cov.models.append(m.id)
        why = _why_not(m, target, status, rows is not None)
        if why is None:
            cov.covered.append(m.id)
        elif why.startswith("emulated"):
            cov.covered.append(m.id)
            cov.emulated.append(m.id)
        else:
            cov.missing[m.id] = why
    return sorted(per.values(), key=lambda c: _order(c.target))


def _why_not(m, target: str, status, built: bool) -> str | None:
    """None when ``m`` has a kernel checked on ``target``; "emulated" when its only checked kernels
    run an emulation there; else why not."""
    if not m.kernels:
        return "names no harness kernel"
    reg = MFMA_KERNELS if m.gfx else KERNELS
    unknown = [k for k in m.kernels if k not in reg]
    specs = [reg[k] for k in m.kernels if k in reg]
    runs = [s for s in specs if s.supports(target)]
    if not runs:
        return (f"names kernels the registry lacks: {', '.join(unknown)}" if unknown else
                f"its kernels ({', '.join(s.id for s in specs)}) do not run on {target}")
    if not built:                   # nothing built: a kernel that runs on the target is what can be said
        return None
    problems, emulated = [], False
    for s in runs:
        found = status.get((s.id, target), [])
        good = [r for r in found if r.status == "ok" or r.status.startswith("checked")]
        if good:
            if not getattr(s, "emulated_on", lambda a: False)(target):
                return None
            emulated = True
        problems += [f"{s.id} on {r.arch}: {r.status}" for r in found if r not in good]
        if not found:
            problems.append(f"{s.id} on {target}: not built")
    if emulated:
        return "emulated"
    return problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
