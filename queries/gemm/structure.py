"""GEMM inputs kept by their distinct rows and columns: D[i, j] is a function of row i of A,
column j of B and C[i, j] alone (seed 000 §3.1.1: output elements are independent), so a GEMM
whose A has R distinct rows and B Q distinct columns needs R·Q dot products, not M·N.

:class:`Structured` holds A as its distinct rows and the row each of the M rows repeats (likewise
B's columns and C's rows and columns); a generator (``queries.gemm.spec``) builds it without
materialising 2^13 × 2^13 matrices, :func:`from_arrays` finds it in given arrays.
:meth:`Structured.reduced` gives the small GEMM of one representative per class and the maps
that spread its outputs back over (M, N).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..distinguish.errors import QueryError


class InputError(QueryError):
    """Inputs that do not fit together (shapes, formats, observations): one line, exit 2."""


def _classes(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(distinct slices along ``axis``, index of each slice's class), first occurrences first."""
    u, first, inv = np.unique(x, axis=axis, return_index=True, return_inverse=True)
    order = np.argsort(first)                     # classes numbered by first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return np.take(u, order, axis=axis), rank[inv.reshape(-1)]


@dataclass
class Structured:
    """A GEMM's raw input bits by classes. ``a_rows`` (R, K) with ``a_of`` (M,); ``b_cols`` (K, Q)
    with ``b_of`` (N,); ``c`` (Rc, Qc) with ``c_row_of`` (M,) and ``c_col_of`` (N,), or None."""

    a_rows: np.ndarray
    a_of: np.ndarray
    b_cols: np.ndarray
    b_of: np.ndarray
    c: np.ndarray | None = None
    c_row_of: np.ndarray | None = None
    c_col_of: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        """(M, N, K)."""
        return len(self.a_of), len(self.b_of), self.a_rows.shape[1]

    def validate(self) -> None:
        M, N, K = self.shape
        if self.b_cols.shape[0] != K:
            raise InputError(f"A has K = {K} columns but B has {self.b_cols.shape[0]} rows")
        if self.c is not None and (len(self.c_row_of) != M or len(self.c_col_of) != N):
            raise InputError(f"C is {len(self.c_row_of)} x {len(self.c_col_of)}, not M x N = {M} x {N}")

    def reduced(self):
        """(A (R*, K), B (K, Q*), C (R*, Q*) or None, row_of (M,), col_of (N,)): one
        representative of each distinct (row of A, row of C) and (column of B, column of C)."""
        rk = np.stack([self.a_of] + ([self.c_row_of] if self.c is not None else []), axis=1)
        ck = np.stack([self.b_of] + ([self.c_col_of] if self.c is not None else []), axis=1)
        rows, row_of = _classes(rk, 0)
        cols, col_of = _classes(ck, 0)
        A = self.a_rows[rows[:, 0]]
        B = self.b_cols[:, cols[:, 0]]
        C = None if self.c is None else self.c[np.ix_(rows[:, 1], cols[:, 1])]
        return A, B, C, row_of, col_of

    @property
    def elements(self) -> int:
        """Distinct dot products: the size of the reduced GEMM."""
        A, B, _, _, _ = self.reduced()
        return A.shape[0] * B.shape[1]


def from_arrays(a: np.ndarray, b: np.ndarray, c: np.ndarray | None) -> Structured:
    """The classes of raw bit matrices a (M, K), b (K, N), c (M, N) or None."""
    if a.ndim != 2 or b.ndim != 2:
        raise InputError(f"A and B must be matrices, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise InputError(f"A is {a.shape[0]} x {a.shape[1]} and B {b.shape[0]} x {b.shape[1]}: K differs")
    if c is not None and c.shape != (a.shape[0], b.shape[1]):
        raise InputError(f"C is {c.shape[0]} x {c.shape[1]}, not M x N = {a.shape[0]} x {b.shape[1]}")
    a_rows, a_of = _classes(a, 0)
    b_cols, b_of = _classes(b, 1)
    s = Structured(a_rows, a_of, b_cols, b_of)
    if c is not None:
        _, s.c_row_of = _classes(c, 0)
        _, s.c_col_of = _classes(c, 1)
        first_r = np.unique(s.c_row_of, return_index=True)[1]
        first_c = np.unique(s.c_col_of, return_index=True)[1]
        s.c = c[np.ix_(first_r, first_c)]
    return s


def spread(d_reduced: np.ndarray, row_of: np.ndarray, col_of: np.ndarray) -> np.ndarray:
    """The full (M, N) output from the reduced one."""
    return d_reduced[np.ix_(row_of, col_of)]
