"""The GPU as an ``mmaprobe identify`` device (duck-typed; the queries layer never imports the
harness): each launch runs a batch of cases through one instruction kernel
(:func:`hw_runner.runner.run_on_device`) and returns D[0][0] per case."""

from __future__ import annotations

import numpy as np

from .errors import HarnessError
from .kernels import default_kernel, get_kernel
from . import runner


class CudaDevice:
    """``cuda[:N]`` or ``rocm[:N]`` with ``instruction`` (a harness kernel id; default: the formats' preferred
    ``mma.sync`` kernel on this GPU). ``launcher`` replaces the GPU (tests)."""

    def __init__(self, text: str = "cuda", *, in_fmt: str, out_fmt: str, c_fmt: str | None = None,
                 instruction: str | None = None, launcher=None, **_ignored):
        self.launcher = launcher or runner.make_launcher(text)
        c_fmt = c_fmt or out_fmt
        self.spec = get_kernel(instruction) if instruction else default_kernel(in_fmt, c_fmt, out_fmt,
                                                                               self.launcher.arch)
        if (self.spec.in_key, self.spec.c_fmt, self.spec.out_fmt) != (in_fmt, c_fmt, out_fmt):
            raise HarnessError(f"kernel {self.spec.id} computes {self.spec.in_key} + {self.spec.c_fmt} -> "
                               f"{self.spec.out_fmt}, not {in_fmt} + {c_fmt} -> {out_fmt}")
        if not self.spec.supports(self.launcher.arch):
            raise HarnessError(f"kernel {self.spec.id} does not run on {self.launcher.name} ({self.launcher.arch})")
        self.in_fmt, self.c_fmt, self.out_fmt = in_fmt, c_fmt, out_fmt
        self.k = self.spec.k
        self.name = f"{self.launcher.name} / {self.launcher.arch} / {self.spec.instruction_for(self.launcher.arch)}"
        self.launches = 0

    def launch(self, cases) -> np.ndarray:
        self.launches += 1
        return runner.run_on_device(self.launcher, self.spec, cases.a, cases.b, cases.c).d
