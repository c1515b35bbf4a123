"""A GPU stand-in whose instruction kernels answer with catalog models (dry runs of the survey).

:class:`TwinLauncher` takes the very buffers a kernel would read (:mod:`hw_runner.pack`, in the
kernel's fragment layouts), unpacks them with the kernels' own layouts, evaluates the model it
is given for that kernel on each case (row 0 of A, column 0 of B, C[0][0], the chunks joined
back into one product list, the padding +0 included) and packs D as the kernel would store it.
So a dry run goes through packing, chunking and unpacking exactly as a GPU run does; only the
arithmetic is a model's. ``answer(spec)`` picks the model per kernel: the catalog's model of
the kernel on the stand-in's architecture (:func:`catalog_answer`), or a deliberately wrong one
to show that the survey reports mismatches.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .errors import HarnessError
from .kernels import KernelSpec, arch_num


def catalog_answer(arch: str) -> Callable[[KernelSpec], object]:
    """Per kernel: the catalog model (not a rival) of that kernel on ``arch``."""
    from smtmodel.catalog import model_for_kernel

    def answer(spec: KernelSpec):
        m = model_for_kernel(spec.id, arch_num(arch))
        if m is None:
            raise HarnessError(f"the catalog names no model for kernel {spec.id} on {arch}")
        return m
    return answer


class TwinLauncher:
    """A launcher (:class:`hw_runner.launch.Launcher`) for ``arch`` whose kernels answer with
    ``answer(spec)``'s model; ``name`` is the device name written in the device key."""

    def __init__(self, arch: str, answer: Callable[[KernelSpec], object] | None = None,
                 name: str | None = None, jobs: int | None = None, backend: str = "auto"):
        arch_num(arch)
        self.arch = arch
        self.name = name or f"twin GPU ({arch})"
        self.answer = answer or catalog_answer(arch)
        self.jobs, self.backend = jobs, backend
        self.launches = 0

    def cases(self, spec: KernelSpec, a: np.ndarray, b: np.ndarray, c: np.ndarray):
        """The kernel buffers back as cases: a, b ``(N, chunks * K)`` and c ``(N,)`` raw bits,
        and the unpacked C matrices (the D buffer starts from them)."""
        n, ch = a.shape[:2]
        m, nn, k = spec.shape
        fa, fb, fd = spec.fragments
        if spec.family == "wgmma":
            A = fa.unpack(a.reshape(n * ch, -1)).reshape(n, ch, m, k)[:, :, 0, :]
            B = fb.unpack(b.reshape(n * ch, -1)).reshape(n, ch, nn, k)[:, :, 0, :]     # K-major: B^T
        else:
            A = fa.unpack(a.reshape(n * ch, *a.shape[2:])).reshape(n, ch, fa.n_mats, m, k)[:, :, 0, 0, :]
            B = fb.unpack(b.reshape(n * ch, *b.shape[2:])).reshape(n, ch, fb.n_mats, k, nn)[:, :, 0, :, 0]
        C = fd.unpack(c)
        return A.reshape(n, ch * k), B.reshape(n, ch * k), C[:, 0, 0, 0].copy(), C

    def launch(self, spec: KernelSpec, a, b, c):
        self.launches += 1
        model = self.answer(spec)
        av, bv, cv, D = self.cases(spec, a, b, c)
        D = D.copy()
        D[:, 0, 0, 0] = np.asarray(model.evaluate(av, bv, cv, backend=self.backend, jobs=self.jobs), dtype=np.uint64)
        return spec.fragments[2].pack(D)
