"""A GPU stand-in whose instruction kernels answer with catalog models (dry runs of the survey).

:class:`TwinLauncher` takes the very buffers a kernel would read (:mod:`hw_runner.pack`, in the
kernel's fragment layouts), unpacks them with the kernels' own layouts, evaluates the model it
is given for that kernel on each case (row 0 of A, column 0 of B, C[0][0], the chunks joined
back into one product list, the padding +0 included; a block-scaled kernel's scales from row 0 of
scale_A and column 0 of scale_B) and packs D as the kernel would store it.
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
        m = model_for_kernel(spec.id, arch_num(arch), spec.k)
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

    def matrices(self, spec: KernelSpec, a: np.ndarray, b: np.ndarray, c: np.ndarray,
                 sa: np.ndarray | None = None, sb: np.ndarray | None = None) -> dict:
        """The kernel buffers unpacked with the kernel's layouts: A ``(N, chunks, mats, M, K)``,
        B ``(N, chunks, mats, K, N)``, C ``(N, mats, M, N)``; a block-scaled kernel's scale_A
        ``(N, chunks, M, S)`` and scale_B ``(N, chunks, S, N)`` (else None)."""
        n, ch = a.shape[:2]
        m, nn, k = spec.shape
        fa, fb, fd = spec.fragments
        if spec.family in ("wgmma", "tcgen05"):        # shared-memory images, K-major (B stored as B^T)
            A = fa.unpack(a.reshape(n * ch, -1)).reshape(n, ch, 1, m, k)
            B = np.swapaxes(fb.unpack(b.reshape(n * ch, -1)).reshape(n, ch, 1, nn, k), -1, -2)
        else:
            A = fa.unpack(a.reshape(n * ch, *a.shape[2:])).reshape(n, ch, fa.n_mats, m, k)
            B = fb.unpack(b.reshape(n * ch, *b.shape[2:])).reshape(n, ch, fb.n_mats, k, nn)
        out = {"A": A, "B": B, "C": fd.unpack(c), "SA": None, "SB": None}
        if sa is not None:
            sfa, sfb = spec.scale_fragments
            out["SA"] = sfa.unpack(sa.reshape(n * ch, -1)).reshape(n, ch, sfa.rows, sfa.cols)
            out["SB"] = sfb.unpack(sb.reshape(n * ch, -1)).reshape(n, ch, sfb.rows, sfb.cols)
        return out

    def cases(self, spec: KernelSpec, a: np.ndarray, b: np.ndarray, c: np.ndarray,
              sa: np.ndarray | None = None, sb: np.ndarray | None = None):
        """The kernel buffers back as cases: a, b ``(N, chunks * K)`` and c ``(N,)`` raw bits,
        the unpacked C matrices (the D buffer starts from them), and the scales ``{"a_scale",
        "b_scale"}`` ``(N, chunks * S)`` of a block-scaled kernel (else empty)."""
        mx = self.matrices(spec, a, b, c, sa, sb)
        n = a.shape[0]
        scales = {}
        if mx["SA"] is not None:
            scales = {"a_scale": mx["SA"][:, :, 0, :].reshape(n, -1), "b_scale": mx["SB"][:, :, :, 0].reshape(n, -1)}
        return (mx["A"][:, :, 0, 0, :].reshape(n, -1), mx["B"][:, :, 0, :, 0].reshape(n, -1),
                mx["C"][:, 0, 0, 0].copy(), mx["C"], scales)

    def launch(self, spec: KernelSpec, a, b, c, sa=None, sb=None):
        """D[0][0] of each case from the model; every other entry of D whose row of A, column
        of B, c (and scales) equal D[0][0]'s gets the same answer (replicate mode: all of D),
        the rest keeps its c (single mode: +0 products onto +0)."""
        self.launches += 1
        model = self.answer(spec)
        mx = self.matrices(spec, a, b, c, sa, sb)
        av, bv, cv, C, scales = self.cases(spec, a, b, c, sa, sb)
        d00 = np.asarray(model.evaluate(av, bv, cv, **scales, backend=self.backend, jobs=self.jobs), dtype=np.uint64)
        A, B = mx["A"], mx["B"]
        rows = np.all(A == A[:, :, :1, :1, :], axis=(1, 4))                    # (N, mats, M)
        cols = np.all(B == B[:, :, :1, :, :1], axis=(1, 3))                    # (N, mats, N)
        if mx["SA"] is not None:
            rows &= np.all(mx["SA"] == mx["SA"][:, :, :1, :], axis=(1, 3))[:, None, :]
            cols &= np.all(mx["SB"] == mx["SB"][:, :, :, :1], axis=(1, 2))[:, None, :]
        same = rows[..., :, None] & cols[..., None, :] & (C == C[:, :1, :1, :1])
        D = np.where(same, d00[:, None, None, None], C)
        return spec.fragments[2].pack(D)
