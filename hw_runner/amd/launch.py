"""Launching MFMA kernels on an AMD GPU through the HIP runtime (``hip-python``, imported lazily;
the optional ``.[rocm]`` extra).

:class:`HipLauncher` loads the linked code object of :mod:`hw_runner.amd.build` with
``hipModuleLoadData`` and launches one 64-lane wavefront per case (four per 256-lane workgroup).
It cannot run without an AMD GPU; tests replace it with a stand-in that computes through the twin.
"""

from __future__ import annotations

import ctypes
import re

import numpy as np

from ..errors import HarnessError
from .build import check_gfx, code_object_for
from .kernels import MfmaSpec

WAVES_PER_GROUP = 4


def parse_rocm_device(device: str) -> int:
    m = re.fullmatch(r"rocm(?::(\d+))?", device)
    if not m:
        raise HarnessError(f"bad device {device!r}: expected rocm, rocm:N or twin:MODEL_ID")
    return int(m.group(1) or 0)


def _import_hip():
    try:
        from hip import hip
    except ImportError:
        raise HarnessError("hip-python is not installed: pip install 'mmaprobe[rocm]' (hip-python matching "
                           "your ROCm) to run on an AMD GPU, or use --device twin:MODEL") from None
    except Exception as exc:            # the package is there but libamdhip64 is not
        raise HarnessError(f"the HIP runtime does not load (is ROCm installed?): {str(exc).splitlines()[0]}") from None
    return hip


class HipLauncher:
    """Runs MFMA kernels on HIP device ``index``; ``arch`` is its gfx target (gfx908, ...)."""

    def __init__(self, index: int = 0, check_isa: bool = True):
        hip = _import_hip()
        self._hip = hip
        count = self._call("hipGetDeviceCount", hip.hipGetDeviceCount(), "no usable AMD GPU")
        if not 0 <= index < count:
            raise HarnessError(f"rocm:{index} does not exist ({count} HIP device(s) visible)")
        props = self._properties(index)
        name, arch = props.name, props.gcnArchName
        self.name = (name.decode() if isinstance(name, bytes) else str(name)).strip() or f"rocm:{index}"
        self.arch = check_gfx(arch.decode() if isinstance(arch, bytes) else str(arch))
        self.index, self.check_isa = index, check_isa
        self._functions: dict[str, object] = {}

    def _properties(self, index: int):
        """``hipDeviceProp_t`` of device ``index``: hip-python >= 7 returns it
        (``hipGetDeviceProperties(id) -> (err, props)``), 6.x fills one passed in."""
        hip = self._hip
        try:
            return self._call("hipGetDeviceProperties", hip.hipGetDeviceProperties(index))
        except TypeError:
            props = hip.hipDeviceProp_t()
            self._call("hipGetDeviceProperties", hip.hipGetDeviceProperties(props, index))
            return props

    def _call(self, what, result, prefix: str | None = None):
        """hip-python returns ``(err, *values)``; raise a one-line error unless ``err`` is success."""
        res = result if isinstance(result, tuple) else (result,)
        err, values = res[0], res[1:]
        if err != self._hip.hipError_t.hipSuccess:
            msg = f"{what} failed: {err}"
            raise HarnessError(f"{prefix}: {msg}" if prefix else msg)
        return values[0] if len(values) == 1 else values

    def _function(self, spec: MfmaSpec):
        if spec.id not in self._functions:
            hip = self._hip
            data = code_object_for(spec, self.arch, check=self.check_isa).read_bytes()
            self._call("hipSetDevice", hip.hipSetDevice(self.index))
            module = self._call("hipModuleLoadData", hip.hipModuleLoadData(data),
                                f"the HIP runtime rejected the code object of {spec.id} for {self.arch}")
            self._functions[spec.id] = self._call("hipModuleGetFunction",
                                                  hip.hipModuleGetFunction(module, spec.function.encode()))
        return self._functions[spec.id]

    def launch(self, spec: MfmaSpec, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               sa: np.ndarray | None = None, sb: np.ndarray | None = None) -> np.ndarray:
        """D of ``spec`` on buffers A, B, C (and a scaled kernel's SA, SB, in its argument order)."""
        hip = self._hip
        if not spec.supports(self.arch):
            raise HarnessError(f"kernel {spec.id} does not run on {self.name} ({self.arch})")
        if (sa is not None) != spec.scaled:
            raise HarnessError(f"kernel {spec.id} {'takes' if spec.scaled else 'takes no'} scale buffers")
        cases, chunks = a.shape[:2]
        fn = self._function(spec)
        host = [np.ascontiguousarray(x) for x in ((a, b, sa, sb, c) if spec.scaled else (a, b, c))]
        out = np.empty_like(host[-1])
        bufs = []
        try:
            for h in host + [out]:
                bufs.append(self._call("hipMalloc", hip.hipMalloc(max(1, h.nbytes))))
            for h, d in zip(host, bufs):
                self._call("hipMemcpy", hip.hipMemcpy(d, h, h.nbytes, hip.hipMemcpyKind.hipMemcpyHostToDevice))
            grid = max(1, -(-cases // WAVES_PER_GROUP))
            self._call(f"launching {spec.id}", hip.hipModuleLaunchKernel(
                fn, grid, 1, 1, 64 * WAVES_PER_GROUP, 1, 1, sharedMemBytes=0, stream=None, kernelParams=None,
                extra=(*bufs, ctypes.c_int32(cases), ctypes.c_int32(chunks))))
            self._call("hipDeviceSynchronize", hip.hipDeviceSynchronize(), f"kernel {spec.id} failed on {self.name}")
            self._call("hipMemcpy", hip.hipMemcpy(out, bufs[-1], out.nbytes, hip.hipMemcpyKind.hipMemcpyDeviceToHost))
        finally:
            for d in bufs:
                hip.hipFree(d)
        return out
