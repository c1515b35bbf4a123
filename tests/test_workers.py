"""smtmodel.workers: the one pool (thread and spawned-process kinds). Expected values are
computed here (squares of the inputs)."""

from __future__ import annotations

import os
from pathlib import Path

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


def test_pool_workers_end_when_their_parent_is_killed(tmp_path):
    """A parent that starts a pool and is then killed (SIGKILL: no clean-up runs) leaves no worker
    behind: each worker notices within about a second that its parent is gone and exits."""
    import signal
    import subprocess
    import sys
    import time
    pids = tmp_path / "pids"
    script = f"""
import os, time
from smtmodel.workers import process_pool
pool = process_pool(2)
futs = [pool.submit(time.sleep, 60) for _ in range(2)]
time.sleep(1.0)
open({str(pids)!r}, "w").write(" ".join(str(p) for p in pool._processes))
time.sleep(60)
"""
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=str(Path(__file__).resolve().parents[1]))
    t0 = time.monotonic()
    while not pids.exists() or not pids.read_text().strip():
        assert time.monotonic() - t0 < 60, "the pool did not start"
        time.sleep(0.1)
    workers = [int(p) for p in pids.read_text().split()]
    assert len(workers) == 2
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    t0 = time.monotonic()
    alive = workers
    while alive and time.monotonic() - t0 < 10:
        time.sleep(0.2)
        alive = [p for p in workers if _alive(p)]
    assert not alive, f"workers {alive} outlived their killed parent"


def _alive(pid: int) -> bool:
    import os
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:                                     # a zombie (exited, not yet reaped by init) is not alive
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
