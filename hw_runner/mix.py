"""The harness's own input: a layout self-test. The validation mix and every other input
sampler live in :mod:`smtmodel.sampling` (re-exported here for existing callers)."""

from __future__ import annotations

import numpy as np

from smtmodel.sampling import KINDS, boundary_patterns, round_to, validation_mix

specials = boundary_patterns
"""Old name of :func:`smtmodel.sampling.boundary_patterns`."""

__all__ = ["KINDS", "layout_probe", "round_to", "specials", "validation_mix"]


def layout_probe(in_fmt: str, c_fmt: str, out_fmt: str, k: int, b_fmt: str | None = None):
    """Exact cases that any correct run reproduces whatever the arithmetic model: a = e_i,
    b = 2 e_j, c = 1, so d = 3 when i == j and 1 otherwise, for all i, j < k. A wrong fragment
    layout or chunking shows up as a wrong d. ``b_fmt``: B's format where it differs from A's.
    Returns (a, b, c, expected d bits)."""
    one, two = round_to(np.array([1.0]), in_fmt)[0], round_to(np.array([2.0]), b_fmt or in_fmt)[0]
    i, j = np.divmod(np.arange(k * k), k)
    a = np.zeros((k * k, k), dtype=np.uint64)
    b = np.zeros((k * k, k), dtype=np.uint64)
    a[np.arange(k * k), i] = one
    b[np.arange(k * k), j] = two
    c = np.full(k * k, round_to(np.array([1.0]), c_fmt)[0], dtype=np.uint64)
    d = round_to(np.where(i == j, 3.0, 1.0), out_fmt)
    return a, b, c, d
