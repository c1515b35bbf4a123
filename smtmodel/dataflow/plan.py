"""How a dataflow cuts K into chains: k-tiles, slices, restarts (docs/dataflow.md).

:func:`chains` returns, per slice, the chunks (each chained from +0, or from C for the first
chunk of slice 0 when C enters the accumulator) as index arrays into K; -1 marks a zero element
(the zero-padding of the last tile, or whole zero tiles of an interleaved slice).
"""

from __future__ import annotations

import numpy as np

from .spec import Dataflow, DataflowError


def tile_width(df: Dataflow, m, K: int) -> int:
    """The k-tile width: the dataflow's, or the model's block for K (``Model.block``)."""
    return df.tile if df.tile else m.block(max(K, 1))


def slice_tiles(df: Dataflow, T: int) -> list[list[int]]:
    """The k-tiles of each slice, in chain order (tiles >= T are zero tiles).

    ``contiguous``: slice s owns tiles [s*q, (s+1)*q), q = ceil(T/S) (CUTLASS serial split-K's
    gemm_k_size); ``interleaved``: tile t belongs to slice t mod S, every slice running
    ceil(T/S) tiles (the last ones zero where T is not a multiple of S: cuBLASLt's Ada FP8
    kernels, mmaemu's plan); ``explicit``: the slices between the given boundaries (stream-K)."""
    S = df.slices
    if S == 1:
        return [list(range(T))]
    if df.assign == "interleaved":
        n = -(-T // S)
        return [[s + S * j for j in range(n)] for s in range(S)]
    if df.assign == "contiguous":
        q = -(-T // S)
        out = [list(range(s * q, min((s + 1) * q, T))) for s in range(S)]
        if not out[-1]:
            raise DataflowError(f"dataflow does not fit: {S} contiguous slices of {T} k-tiles "
                                f"(ceil({T}/{S}) = {q} each) leave slice {S - 1} empty (S > number of k-tiles)")
        return out
    b = (0,) + tuple(df.bounds) + (T,)
    if b[-2] >= T:
        raise DataflowError(f"dataflow does not fit: explicit bounds {'/'.join(map(str, df.bounds))} "
                            f"reach past the {T} k-tiles of K")
    return [list(range(b[s], b[s + 1])) for s in range(S)]


def chains(df: Dataflow, m, K: int) -> list[list[np.ndarray]]:
    """Per slice, its chunks as int64 index arrays into K (-1: a zero element). K = 0: one
    slice with no chunk (the accumulator stays +0, or C). The arrays are shared between calls
    (remembered per dataflow, tile width and K): read them, never write them."""
    if df.k_multiple and K % df.k_multiple:
        raise DataflowError(f"dataflow does not fit: K={K} is not a multiple of {df.k_multiple} "
                            f"({df.name or 'the dataflow'} requires it: k_multiple={df.k_multiple})")
    if K == 0:
        return [[] for _ in range(df.slices)]
    w = tile_width(df, m, K)
    key = (df, w, K)
    got = _CHAINS.get(key)
    if got is None:
        if len(_CHAINS) > 4096:
            _CHAINS.clear()
        got = _CHAINS[key] = _chains(df, w, K)
    return got


_CHAINS: dict = {}


def _chains(df: Dataflow, w: int, K: int) -> list[list[np.ndarray]]:
    T = -(-K // w)
    if df.slices > 1 and df.assign != "interleaved" and df.slices > T:
        raise DataflowError(f"dataflow does not fit: S={df.slices} slices but K={K} has only {T} "
                            f"k-tile{'s' if T > 1 else ''} of {w}")
    out = []
    for tiles in slice_tiles(df, T):
        n = df.restart or max(len(tiles), 1)
        chunks = []
        for j in range(0, len(tiles), n):
            idx = np.concatenate([np.arange(t * w, (t + 1) * w) for t in tiles[j:j + n]])
            idx = np.where(idx < K, idx, -1)
            if df.pad == "block":
                idx = idx[idx >= 0]
            idx.setflags(write=False)
            chunks.append(idx)
        out.append(chunks)
    return out


def is_range(idx: np.ndarray) -> tuple[int, int] | None:
    """(k0, k1) when ``idx`` is the plain range k0..k1-1 (no gather needed), else None."""
    if len(idx) == 0 or idx[0] < 0:
        return None
    k0 = int(idx[0])
    if np.array_equal(idx, np.arange(k0, k0 + len(idx))):
        return k0, k0 + len(idx)
    return None
