"""smtmodel.workers: the one pool (thread and spawned-process kinds). Expected values are
computed here (squares of the inputs)."""

from __future__ import annotations

import os

from smtmodel.workers import default_jobs, process_map, thread_pool


def _square_and_pid(x):
    return x * x, os.getpid()


def test_process_map_keeps_order_and_runs_elsewhere():
    """Results come in the input order, from other processes when jobs > 1, and here when one job
    or one item is asked for."""
    out = list(process_map(_square_and_pid, range(7), 2))
    assert [v for v, _ in out] == [x * x for x in range(7)]
    assert all(pid != os.getpid() for _, pid in out)
    assert list(process_map(_square_and_pid, range(3), 1)) == [(x * x, os.getpid()) for x in range(3)]
    assert list(process_map(_square_and_pid, [5], 4)) == [(25, os.getpid())]


def test_process_map_closed_early_cancels_the_rest():
    """Closing the iterator after the first result shuts the pool down (no hang, no leftover)."""
    it = process_map(_square_and_pid, range(50), 2)
    assert next(it)[0] == 0
    it.close()


def test_thread_pool_is_shared_per_size():
    assert thread_pool(3) is thread_pool(3) and thread_pool(3) is not thread_pool(2)
    assert default_jobs() >= 1 and list(thread_pool(2).map(abs, [-1, 2])) == [1, 2]


def test_the_environment_names_the_default_count(monkeypatch):
    """$MMAPROBE_JOBS sets default_jobs (a shared machine; the parallel test run sets 1); a value
    that is not a positive integer is refused in words."""
    import pytest
    monkeypatch.setenv("MMAPROBE_JOBS", "3")
    assert default_jobs() == 3
    for bad in ("0", "-2", "two"):
        monkeypatch.setenv("MMAPROBE_JOBS", bad)
        with pytest.raises(ValueError, match="MMAPROBE_JOBS must be a positive integer"):
            default_jobs()
    monkeypatch.delenv("MMAPROBE_JOBS")
    assert default_jobs() == len(os.sched_getaffinity(0))
