"""Cases -> instruction operands -> kernel buffers, and back (no GPU needed).

``operands`` places each case into the instruction's matrices (../shared/spec/vectors.md:
a = row 0 of A, b = column 0 of B, c = C[0][0], all else +0; or, with ``replicate``, CLFP
step 1 of seed 000 §3.1.1: a in every row, b in every column, c everywhere, in every one of
the warp's independent MMAs). A case's k products are cut into chunks of the instruction's K,
the last padded with +0 (see :mod:`hw_runner.kernels` on chaining).

Block-scaled kernels take the case's scales the same way: a_scale is row 0 of scale_A, b_scale
column 0 of scale_B (every other scale +0; replicate: the case's scales in every row / column),
cut into the chunks' ``K / scale_block`` scales, padded blocks with +0 scales.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import HarnessError
from .kernels import KernelSpec


@dataclass
class Operands:
    """Matrices of raw bits: A ``(N, chunks, mats, M, K)``, B ``(N, chunks, mats, K, N)``,
    C ``(N, mats, M, N)``; block scaling: scale_A ``(N, chunks, M, S)``, scale_B ``(N, chunks, S, N)``."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    sa: np.ndarray | None = None
    sb: np.ndarray | None = None


def n_chunks(spec: KernelSpec, k: int) -> int:
    return -(-k // spec.k)


def operands(spec: KernelSpec, a: np.ndarray, b: np.ndarray, c: np.ndarray, replicate: bool = False,
             a_scale: np.ndarray | None = None, b_scale: np.ndarray | None = None) -> Operands:
    """Place cases (a, b: ``(N, k)``; c: ``(N,)`` uint64 bits; block-scaled kernels: a_scale,
    b_scale ``(N, k / scale_block)``) into instruction matrices."""
    m, n, kk = spec.shape
    mats = spec.fragments[2].n_mats
    cases, k = a.shape
    ch = n_chunks(spec, k)
    pa = np.zeros((cases, ch * kk), dtype=np.uint64)
    pb = np.zeros((cases, ch * kk), dtype=np.uint64)
    pa[:, :k], pb[:, :k] = a, b
    pa, pb = pa.reshape(cases, ch, kk), pb.reshape(cases, ch, kk)
    A = np.zeros((cases, ch, mats, m, kk), dtype=np.uint64)
    B = np.zeros((cases, ch, mats, kk, n), dtype=np.uint64)
    C = np.zeros((cases, mats, m, n), dtype=np.uint64)
    if replicate:
        A[:] = pa[:, :, None, None, :]
        B[:] = pb[:, :, None, :, None]
        C[:] = np.asarray(c, dtype=np.uint64)[:, None, None, None]
    else:
        A[:, :, 0, 0, :] = pa
        B[:, :, 0, :, 0] = pb
        C[:, 0, 0, 0] = c
    if not spec.block_scaled:
        return Operands(A, B, C)
    blk, vec = spec.scale_block, spec.scale_vec
    ps = [np.zeros((cases, ch * vec), dtype=np.uint64) for _ in range(2)]
    for p, s in zip(ps, (a_scale, b_scale)):
        s = np.asarray(s, dtype=np.uint64).reshape(cases, -1)
        if s.shape[1] != -(-k // blk):
            raise HarnessError(f"kernel {spec.id}: {s.shape[1]} scales per case for k = {k}, expected {-(-k // blk)}")
        p[:, :s.shape[1]] = s
    psa, psb = (p.reshape(cases, ch, vec) for p in ps)
    SA = np.zeros((cases, ch, m, vec), dtype=np.uint64)
    SB = np.zeros((cases, ch, vec, n), dtype=np.uint64)
    if replicate:
        SA[:] = psa[:, :, None, :]
        SB[:] = psb[:, :, :, None]
    else:
        SA[:, :, 0, :] = psa
        SB[:, :, :, 0] = psb
    return Operands(A, B, C, SA, SB)


def kernel_buffers(spec: KernelSpec, ops: Operands) -> tuple[np.ndarray, ...]:
    """The A, B, C buffers in the memory order the kernel reads (see :mod:`hw_runner.kernels`),
    and for a block-scaled kernel the scale_A and scale_B registers (``mma``) or shared-memory
    images (``tcgen05``), ``(N, chunks, 32 or 128)``."""
    cases, ch = ops.a.shape[:2]
    if spec.family in ("wgmma", "tcgen05"):
        sa, sb, fd = spec.fragments
        a_img = sa.pack(ops.a[:, :, 0].reshape(cases * ch, *ops.a.shape[3:]))
        b_img = sb.pack(np.swapaxes(ops.b[:, :, 0], -1, -2).reshape(cases * ch, ops.b.shape[4], ops.b.shape[3]))
        a_regs, b_regs, fc = a_img.reshape(cases, ch, -1), b_img.reshape(cases, ch, -1), fd
    else:
        fa, fb, fc = spec.fragments
        a_regs = fa.pack(ops.a.reshape(cases * ch, *ops.a.shape[2:])).reshape(cases, ch, fa.threads, fa.n_regs)
        b_regs = fb.pack(ops.b.reshape(cases * ch, *ops.b.shape[2:])).reshape(cases, ch, fb.threads, fb.n_regs)
    if ops.sa is None:
        return a_regs, b_regs, fc.pack(ops.c)
    sfa, sfb = spec.scale_fragments
    sa_regs = sfa.pack(ops.sa.reshape(cases * ch, *ops.sa.shape[2:])).reshape(cases, ch, sfa.threads)
    sb_regs = sfb.pack(ops.sb.reshape(cases * ch, *ops.sb.shape[2:])).reshape(cases, ch, sfb.threads)
    return a_regs, b_regs, fc.pack(ops.c), sa_regs, sb_regs


def unpack_d(spec: KernelSpec, d_regs: np.ndarray) -> np.ndarray:
    """Kernel D buffer ``(N, threads, regs)`` -> D matrices ``(N, mats, M, N)`` of raw bits."""
    return spec.fragments[2].unpack(d_regs)
