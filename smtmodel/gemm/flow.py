"""A GEMM call's dataflow: the ``dataflow`` argument parsed (:func:`resolve_dataflow`) with the
``k_order`` shorthand for the default dataflow's chain fields on top."""

from __future__ import annotations

from dataclasses import replace

from ..dataflow import Dataflow, DataflowError, parse_dataflow
from ..dataflow.plan import chains
from ..model import Model, ModelError

K_ORDERS = ("plain", "split", "interval")


def parse_k_order(text: str) -> tuple[str, int]:
    """``plain`` | ``split:S`` | ``interval:N`` -> (kind, S or N; 0 for plain)."""
    kind, _, n = str(text).partition(":")
    if kind not in K_ORDERS or (kind == "plain") != (n == ""):
        raise ModelError(f"bad K order {text!r}: use plain, split:S or interval:N")
    if kind == "plain":
        return kind, 0
    try:
        v = int(n)
    except ValueError:
        v = 0
    if v < 1:
        raise ModelError(f"bad K order {text!r}: S and N are integers >= 1")
    return kind, v


def resolve_dataflow(dataflow=None, k_order: str | None = None) -> Dataflow:
    """The dataflow of a call: ``dataflow`` (text, JSON, dict or :class:`Dataflow`; None: the
    default) with ``k_order``'s chain fields on top (None or ``plain``: none)."""
    try:
        df = parse_dataflow(dataflow)
        if k_order is None:
            return df
        kind, n = parse_k_order(k_order)
        if kind == "split":
            df = replace(df, slices=n, assign="contiguous", bounds=(), tile=0, restart=0)
        elif kind == "interval":
            df = replace(df, tile=n, restart=1, pad="block")
        return df.validate()
    except DataflowError as e:
        raise ModelError(str(e)) from None


def k_chunks(m: Model, K: int, k_order: str = "plain") -> list[tuple[int, int]]:
    """The ranges of K chained separately under a ``k_order`` shorthand (one range: plain)."""
    out = []
    for sl in chains(resolve_dataflow(None, k_order), m, K):
        for idx in sl:
            real = idx[idx >= 0]
            out.append((int(real[0]), int(real[-1]) + 1))
    return out


def int_dataflow(dataflow, k_order) -> bool:
    """Integer models run as the instruction chains them (C in the s32 accumulator, one chain over
    K, no epilogue): the dataflow must be unset or the ``instruction`` profile."""
    return (dataflow is None or dataflow == "instruction" or getattr(dataflow, "name", None) == "instruction") \
        and k_order in (None, "plain")
