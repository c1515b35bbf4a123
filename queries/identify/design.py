"""Experiment design: the batch of probes that splits the live hypotheses best in the worst case.

Greedy: each step adds the pool probe whose answers, together with the probes already chosen,
leave the largest group of hypotheses that no answer could tell apart smallest (ties: the most
groups). It stops when no probe refines the partition further or the batch is full. Hypotheses
are rows, probes columns of a matrix of predicted output bits."""

from __future__ import annotations

import numpy as np


def _ranks(out: np.ndarray) -> np.ndarray:
    """Per column, each row's output replaced by a small code (equal outputs, equal codes)."""
    order = np.argsort(out, axis=0, kind="stable")
    srt = np.take_along_axis(out, order, axis=0)
    new = np.vstack([np.ones((1, out.shape[1]), bool), srt[1:] != srt[:-1]])
    codes_sorted = np.cumsum(new, axis=0) - 1
    codes = np.empty_like(codes_sorted)
    np.put_along_axis(codes, order, codes_sorted, axis=0)
    return codes.astype(np.int64)


def _score(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(largest group, number of groups) per column of integer keys."""
    h = keys.shape[0]
    srt = np.sort(keys, axis=0)
    bnd = np.vstack([np.ones((1, keys.shape[1]), bool), srt[1:] != srt[:-1]])
    idx = np.arange(h)[:, None]
    start = np.maximum.accumulate(np.where(bnd, idx, 0), axis=0)
    return (idx - start + 1).max(axis=0), bnd.sum(axis=0)


def partition(out: np.ndarray) -> np.ndarray:
    """Group labels of the rows: rows with equal outputs on every column share a label."""
    if out.shape[1] == 0:
        return np.zeros(out.shape[0], np.int64)
    return np.unique(out, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def choose(out: np.ndarray, budget: int) -> list[int]:
    """Up to ``budget`` column indices of ``out`` (H hypotheses x P probes), greedily."""
    h, p = out.shape
    if h < 2 or p == 0:
        return []
    codes = _ranks(out)
    cells = np.zeros(h, np.int64)
    best = (h, 1)
    chosen: list[int] = []
    while len(chosen) < budget:
        keys = cells[:, None] * (h + 1) + codes
        big, n = _score(keys)
        j = int(np.lexsort((-n, big))[0])
        if (int(big[j]), -int(n[j])) >= (best[0], -best[1]):
            break
        best = (int(big[j]), int(n[j]))
        chosen.append(j)
        cells = np.unique(keys[:, j], return_inverse=True)[1].reshape(-1)
        if best[0] == 1:
            break
    return chosen


def pad(out: np.ndarray, chosen: list[int], budget: int) -> list[int]:
    """``chosen`` filled up to ``budget`` with the probes on which the hypotheses give the most
    distinct answers (a launch carries many probes: the extra ones prune hypotheses the design
    did not see, e.g. outside a sample of a large space)."""
    if out.shape[0] == 0 or len(chosen) >= budget:
        return chosen
    _, n = _score(_ranks(out))
    order = [int(j) for j in np.argsort(-n, kind="stable") if n[j] > 1 and int(j) not in set(chosen)]
    return chosen + order[:budget - len(chosen)]
