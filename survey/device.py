"""What the survey runs on: a CUDA GPU, or a twin GPU for a dry run.

- ``cuda`` / ``cuda:N``: the instruction kernels through CuPy (:class:`hw_runner.launch.CupyLauncher`,
  prebuilt cubins where ``$MMAPROBE_PREBUILT`` or ``hw_runner/prebuilt`` has them), the library
  GEMMs through torch (:class:`survey.library.TorchLibrary`);
- ``dry:sm_XX``: every kernel answered by its catalog model on that architecture through the
  kernels' own packing (:class:`hw_runner.twin_launcher.TwinLauncher`), the library by the
  GEMM twin; ``dry:sm_XX:wrong``: answered by other models (the first other catalog model of
  the kernel's formats that is not this GPU's; another architecture's GEMM model and a split-K
  dataflow at large M), so the survey's reports of mismatches can be seen without a GPU.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hw_runner.kernels import arch_num
from hw_runner.twin_launcher import TwinLauncher, catalog_answer

from .errors import SurveyError



@dataclass
class Target:
    text: str
    launcher: object
    arch: str
    name: str
    dry: bool
    library: object = None           # opened lazily (torch is slow to import)
    wrong: bool = False

    def open_library(self):
        if self.library is None:
            from .library import TorchLibrary, TwinLibrary
            self.library = TwinLibrary(self.arch, self.wrong) if self.dry else TorchLibrary(self.index)
        return self.library

    @property
    def index(self) -> int:
        return getattr(self.launcher, "index", 0)


def _wrong_answer(arch: str):
    from smtmodel.catalog import all_models, integer_models
    from smtmodel.formats import is_int_format
    right = catalog_answer(arch)

    def answer(spec):
        own = right(spec)
        pool = integer_models() if is_int_format(spec.in_fmt) else all_models()
        scaled = own.scale_fmt
        # another GPU's catalog model; a block-scaled kernel: the other vendor's model of the same
        # scales, else a rival (the other NVIDIA GPUs' block-scaled models compute what this one does)
        other = [m for m in pool if (m.in_key, m.c_fmt, m.out_fmt) == (own.in_key, own.c_fmt, own.out_fmt)
                 and m.id != own.id and (m.scale_fmt, m.scale_block)
                 == (scaled, own.scale_block)
                 and (m.gfx or m.kind == "rival" if scaled
                      else m.sm != arch_num(arch) and m.kind == "catalog")]
        return sorted(other, key=lambda m: (m.kind != "catalog", m.id))[0] if other else own
    return answer


def _catalog_sms() -> set:
    from smtmodel.catalog import alias_models, all_models
    return {m.sm for m in all_models() + alias_models() if m.sm}


def open_target(text: str, jobs: int | None = None) -> Target:
    """The survey's device from its ``--device`` text (module docstring)."""
    m = re.fullmatch(r"dry:(sm_\d+[af]?)(:wrong)?", text)
    if m:
        arch = m.group(1)
        known = _catalog_sms()
        if arch_num(arch) not in known:
            raise SurveyError(f"--device {text}: no catalog model is of {arch}; a dry run takes one of "
                              f"{', '.join(f'sm_{n}' for n in sorted(known))}")
        wrong = bool(m.group(2))
        launcher = TwinLauncher(arch, _wrong_answer(arch) if wrong else catalog_answer(arch),
                                name=f"twin GPU{' (wrong answers)' if wrong else ''}", jobs=jobs, backend="numpy")
        return Target(text, launcher, arch, launcher.name, True, wrong=wrong)
    if re.fullmatch(r"cuda(:\d+)?", text):
        from hw_runner.errors import HarnessError
        from hw_runner.launch import CupyLauncher, parse_cuda_device
        try:
            launcher = CupyLauncher(parse_cuda_device(text))
        except HarnessError as exc:
            msg = str(exc).split(", or use --device")[0]
            raise SurveyError(f"{msg} (a dry run needs no GPU: --device dry:sm_90)") from None
        return Target(text, launcher, launcher.arch, launcher.name, False)
    raise SurveyError(f"bad --device {text!r}: cuda, cuda:N, or dry:sm_XX[:wrong] for a dry run "
                      "(e.g. dry:sm_90)")
