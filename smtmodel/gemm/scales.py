"""A GEMM's scales: per-tensor scales folded into alpha (``alpha_from_scales``), per-block scales
as a function of a chunk (DeepGEMM's 1x128 / 128x128 blocks), scale_result where it applies."""

from __future__ import annotations

import numpy as np

from ..bv import NUMPY
from ..dataflow import Dataflow
from ..dataflow.compose import scale_result_applies
from ..formats import get_format
from ..model import Model, ModelError

def applied_scale_result(df: Dataflow, out: str, sr_bits):
    """scale_result's bits where the dataflow applies it to this output, else None."""
    if sr_bits is None or not scale_result_applies(df, out):
        return None
    return int(sr_bits)


def scales(m: Model, df: Dataflow, E: str, M: int, N: int, K: int, alpha_bits: int, sa, sb):
    """alpha with per-tensor scales folded in (``alpha_from_scales``: alpha = RN(RN(sa*sb)*alpha)),
    and for per-block scales a function chunk -> (M,N) scale bits RN(sa[i,t] * sb[j//128, t])."""
    from ..fp.exact import fp_mul
    per_block = df.scale_a != "tensor" or df.scale_b != "tensor"
    if not per_block:
        if sa is None and sb is None:
            return alpha_bits, None
        if not df.alpha_from_scales:
            raise ModelError("scale_a/scale_b given but the dataflow does not take per-tensor scales "
                             "(alpha_from_scales=no)")
        if sa is None or sb is None or np.size(sa) != 1 or np.size(sb) != 1:
            raise ModelError("per-tensor scales: give both scale_a and scale_b as scalars")
        s = fp_mul(NUMPY.input(np.array([int(np.ravel(sa)[0])], np.uint64), 32),
                   NUMPY.input(np.array([int(np.ravel(sb)[0])], np.uint64), 32), "fp32")
        s = int(np.ravel(np.asarray(s.v, dtype=np.uint64))[0])
        if E != "fp32":
            from ..fp import convert
            s = int(np.ravel(np.asarray(convert(NUMPY.input(np.array([s], np.uint64), 32), "fp32", E).v))[0])
        wE = get_format(E).width
        r = fp_mul(NUMPY.input(np.array([s], np.uint64), wE), NUMPY.input(np.array([alpha_bits], np.uint64), wE), E)
        return int(np.ravel(np.asarray(r.v, dtype=np.uint64))[0]), None
    nk = -(-K // 128)
    sa = np.ones((M, nk), np.uint64) * np.uint64(0x3F800000) if sa is None else np.asarray(sa, np.uint64)
    nb = -(-N // 128) if df.scale_b == "128x128" else 1
    sb = np.ones((nb, nk), np.uint64) * np.uint64(0x3F800000) if sb is None else np.asarray(sb, np.uint64)
    if df.scale_a == "tensor":
        sa = np.broadcast_to(sa.reshape(1, 1) if sa.size == 1 else sa, (M, nk))
    if df.scale_b == "tensor":
        sb = np.broadcast_to(sb.reshape(1, 1) if sb.size == 1 else sb, (1, nk))
    if sa.shape != (M, nk) or sb.shape != (nb, nk):
        raise ModelError(f"per-block scales: scale_a must be ({M}, {nk}) and scale_b ({nb}, {nk}) for "
                         f"M={M}, N={N}, K={K} (got {sa.shape} and {sb.shape})")
    if E != "fp32":
        raise ModelError("per-block scales are multiplied in fp32 (epi_fmt fp32)")

    cols = np.arange(N) // 128 if df.scale_b == "128x128" else np.zeros(N, int)

    def blocks(idx, mul, compact: bool = False):
        """RN(sa[i, t] * sb[j // 128, t]) for the chunk's k-tile t: multiplied once per distinct
        pair (M x column blocks), then spread over the columns (``compact``: (M, column blocks);
        ``idx`` a list of chunks and ``compact``: (M, column blocks, chunks)). ``mul(x, y)``:
        the fp32 products of two uint64 arrays (the GEMM's elementwise reading)."""
        many = isinstance(idx, list)
        ts = [int(i[i >= 0][0]) // 128 for i in (idx if many else [idx])]
        n = len(ts)
        x = np.ascontiguousarray(np.broadcast_to(sa[:, ts][:, None, :], (M, nb, n))).reshape(-1)
        y = np.ascontiguousarray(np.broadcast_to(sb[:, ts][None, :, :], (M, nb, n))).reshape(-1)
        r = mul(x, y).reshape(M, nb, n)
        if many:
            return r
        return r[:, :, 0] if compact else np.ascontiguousarray(r[:, cols, 0])
    return alpha_bits, blocks
