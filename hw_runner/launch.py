"""Launching kernels on a CUDA device through CuPy (imported lazily).

A launcher turns the packed buffers of :mod:`hw_runner.pack` into the D buffer. Only
:class:`CupyLauncher` touches a GPU; it cannot run on a machine without one, so its code path
is exercised here only up to the point of import (tests inject a NumPy stand-in instead).
"""

from __future__ import annotations

import re
from typing import Protocol

import numpy as np

from .build import cubin_for
from .errors import HarnessError
from .kernels import KernelSpec

MAX_GRID = 4096


class Launcher(Protocol):
    """What the runner needs from a device: ``name``, ``arch`` (``sm_XX``) and :meth:`launch`."""

    name: str
    arch: str

    def launch(self, spec: KernelSpec, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               sa: np.ndarray | None = None, sb: np.ndarray | None = None) -> np.ndarray:
        """Run ``spec`` on buffers a, b ``(N, chunks, ...)`` and c ``(N, threads, regs)`` (a
        block-scaled kernel also sa, sb ``(N, chunks, threads)``); return D."""


def parse_cuda_device(device: str) -> int:
    m = re.fullmatch(r"cuda(?::(\d+))?", device)
    if not m:
        raise HarnessError(f"bad device {device!r}: expected cuda, cuda:N or twin:MODEL_ID")
    return int(m.group(1) or 0)


class CupyLauncher:
    """Runs kernels on CUDA device ``index`` via CuPy's RawModule (cubins from :mod:`build`)."""

    def __init__(self, index: int = 0, check_sass: bool = True):
        try:
            import cupy
        except ImportError:
            raise HarnessError("CuPy is not installed: pip install cupy-cuda12x (or cupy-cuda13x) "
                               "to run on a GPU, or use --device twin:MODEL") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # CUDA driver missing, no device, ...
            raise HarnessError(f"no usable CUDA GPU: {str(exc).splitlines()[0]}") from None
        if not 0 <= index < count:
            raise HarnessError(f"cuda:{index} does not exist ({count} CUDA device(s) visible)")
        props = cupy.cuda.runtime.getDeviceProperties(index)
        name = props["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.arch = f"sm_{props['major']}{props['minor']}"
        self.index, self.check_sass = index, check_sass
        self._cp = cupy
        self._functions: dict[str, object] = {}

    def _function(self, spec: KernelSpec):
        if spec.id not in self._functions:
            cubin = cubin_for(spec, self.arch, check=self.check_sass)
            with self._cp.cuda.Device(self.index):
                module = self._cp.RawModule(path=str(cubin))
                self._functions[spec.id] = module.get_function(spec.function)
        return self._functions[spec.id]

    def launch(self, spec, a, b, c, sa=None, sb=None):
        cp = self._cp
        cases, chunks = a.shape[:2]
        per_block = 4 if spec.family in ("mma", "ffma") else 1   # four warps / one warpgroup (CTA) of 128 threads
        grid = max(1, min(MAX_GRID, -(-cases // per_block)))
        try:
            fn = self._function(spec)
            with cp.cuda.Device(self.index):
                ga, gb, gc = (cp.asarray(np.ascontiguousarray(x)) for x in (a, b, c))
                gd = cp.empty_like(gc)
                scales = () if sa is None else tuple(cp.asarray(np.ascontiguousarray(x)) for x in (sa, sb))
                fn((grid,), (128,), (ga, gb, gc, gd, *scales, np.int32(cases), np.int32(chunks)))
                cp.cuda.runtime.deviceSynchronize()
                return cp.asnumpy(gd)
        except (cp.cuda.driver.CUDADriverError, cp.cuda.runtime.CUDARuntimeError) as exc:
            raise HarnessError(f"kernel {spec.id} failed on {self.name}: {exc}") from None
