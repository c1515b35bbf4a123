"""The project's one worker pool: how many workers, and the two kinds a job needs.

* :func:`thread_pool` — threads, for compiled twins whose calls release the GIL
  (:mod:`smtmodel.native`); one pool per size, kept for the process.
* :func:`process_pool` / :func:`process_map` — processes for Python-level work (identify's
  stream over a space, the survey's per-model predictions, the bench units). They are
  *spawned*, never forked: a fork beside a CUDA context, a solver's threads or a thread pool
  inherits locks held by threads that do not exist in the child.

Solver calls that must be killable at a deadline do not run here: they get a process each
(:func:`smtmodel.limits.run_within`, :mod:`smtmodel.solve.portfolio`).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator

_THREADS: dict[int, ThreadPoolExecutor] = {}
_LOCK = threading.Lock()


def default_jobs() -> int:
    """Workers a job takes when its caller names no count: ``$MMAPROBE_JOBS`` where set (a shared
    machine, or a test run that is itself parallel), else all cores this process may run on."""
    env = os.environ.get("MMAPROBE_JOBS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"MMAPROBE_JOBS must be a positive integer, got {env!r}")
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                                  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)


def thread_pool(jobs: int) -> ThreadPoolExecutor:
    """The process-wide thread pool of ``jobs`` workers (created on first use)."""
    with _LOCK:
        p = _THREADS.get(jobs)
        if p is None:
            p = _THREADS[jobs] = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="mmaprobe")
        return p


PARENT_POLL_S = 1.0
"""How often a pool worker checks that the process that started it is still alive."""


def _exit_with_parent(parent: int) -> None:
    """A pool worker's initializer: a daemon thread ends the worker once its parent is gone (a
    killed bench or command), so no orphan keeps computing or holding memory."""
    import time

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_S)
            if os.getppid() != parent:
                os._exit(1)
    threading.Thread(target=watch, daemon=True, name="mmaprobe-parent-watch").start()


def process_pool(jobs: int) -> ProcessPoolExecutor:
    """A new pool of ``jobs`` spawned worker processes (the caller shuts it down); a worker ends
    when its parent does, even if the parent was killed."""
    return ProcessPoolExecutor(max(1, jobs), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_exit_with_parent, initargs=(os.getpid(),))


def process_map(fn: Callable, items: Iterable, jobs: int) -> Iterator:
    """``fn`` over ``items``, results in order: in up to ``jobs`` spawned processes where there
    is more than one job and item, else in this process (``fn`` and the items must pickle).
    Closing the iterator early, or an exception, cancels what has not started."""
    items = list(items)
    if jobs <= 1 or len(items) <= 1:
        yield from map(fn, items)
        return
    ex = process_pool(min(jobs, len(items)))
    try:
        yield from ex.map(fn, items)
    finally:
        ex.shutdown(cancel_futures=True)
