"""The one executor of campaigns: independent tasks run on a Dask cluster (``dask.distributed``),
their results go to a journal as they finish, progress goes to stderr.

Where tasks run (:class:`Options`):

* ``--scheduler tcp://HOST:PORT`` (or ``MMAPROBE_SCHEDULER``): an existing cluster (e.g. one
  started by dask-jobqueue on Slurm, docs/campaigns.md); an unreachable scheduler is one error
  line after ``--connect-timeout`` seconds, never a hang;
* ``--workers N``: a ``LocalCluster`` of N single-threaded worker processes;
* ``--workers auto`` (default): a ``LocalCluster`` with one worker per core for campaigns of
  :data:`AUTO_MIN_TASKS` tasks or more; smaller ones run in this process (starting worker
  processes, each importing the solvers, costs more than a handful of tasks gain);
* ``--workers 0``: in this process, one task after another (debugging).

A task is a module-level function and its arguments, returning a JSON-able dict. A task that
raises is recorded ``{"status": "error", "reason": ...}``; a task whose worker dies (killed,
out of memory, a solver crash) is rescheduled by the Dask scheduler on another worker, and after
``allowed-failures`` deaths recorded ``{"status": "unknown", "reason": "the workers running this task died ..."}``.
Each task keeps its own solver time limit (the callers pass it in the task's arguments).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..errors import CliError
from .journal import Journal
from .progress import Progress

AUTO_MIN_TASKS = 8
ALLOWED_FAILURES = 3
CONNECT_TIMEOUT = 10.0


class SchedulerError(CliError):
    """The Dask scheduler cannot be reached (a user error: exit 2)."""


@dataclass
class Task:
    key: str
    fn: Callable
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


@dataclass
class Options:
    scheduler: str | None = None
    workers: int | str = "auto"
    resume: bool = False
    restart: bool = False
    quiet: bool = False
    connect_timeout: float = CONNECT_TIMEOUT

    @classmethod
    def from_args(cls, args) -> "Options":
        return cls(scheduler=getattr(args, "scheduler", None), workers=getattr(args, "workers", "auto"),
                   resume=getattr(args, "resume", False), restart=getattr(args, "restart", False),
                   quiet=getattr(args, "quiet", False),
                   connect_timeout=getattr(args, "connect_timeout", CONNECT_TIMEOUT))

    def address(self) -> str | None:
        return self.scheduler or os.environ.get("MMAPROBE_SCHEDULER") or None


@dataclass
class Stats:
    """What a run cost: tasks run here, the wall time, the tasks' own time, where they ran."""
    tasks: int = 0
    kept: int = 0
    wall: float = 0.0             # the whole run, the cluster's start included
    startup: float = 0.0          # starting (or connecting to) the cluster
    task_seconds: float = 0.0
    longest: tuple = (0.0, "")    # (seconds, key) of the longest task run here
    workers: int = 0
    where: str = ""


def _timed(fn, args, kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


class Cluster:
    """A Dask client: to the scheduler named in ``options``, or to a new ``LocalCluster``.
    ``Cluster(None)`` runs tasks in this process."""

    def __init__(self, options: Options | None, n_tasks: int = 0):
        self.client = self._local = None
        self.workers, self.where = 0, "this process"
        if options is None:
            return
        addr = options.address()
        if addr:
            self._connect(addr, options.connect_timeout)
            return
        n = options.workers
        if n == "auto":
            if n_tasks < AUTO_MIN_TASKS:
                return
            n = os.cpu_count() or 1
        n = int(n)
        if n > 0:
            self._start_local(n)

    def _connect(self, addr: str, timeout: float) -> None:
        import dask
        from distributed import Client
        try:
            with dask.config.set({"distributed.comm.timeouts.connect": f"{timeout}s"}):
                self.client = Client(addr, timeout=f"{timeout}s", set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            msg = " ".join(str(exc).split()) or type(exc).__name__
            raise SchedulerError(f"cannot reach the Dask scheduler {addr} (waited {timeout:g} s): {msg}") from None
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            self.close()
            raise SchedulerError(f"the Dask scheduler {addr} has no workers (waited {timeout:g} s)") from exc
        self.workers = len(self.client.scheduler_info().get("workers", {}))
        self.where = f"scheduler {addr} ({self.workers} workers)"

    def _start_local(self, n: int) -> None:
        import dask
        from distributed import Client, LocalCluster
        with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                              "distributed.worker.daemon": False}):
            self._local = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=logging.CRITICAL)  # any free port
            self.client = Client(self._local, set_as_default=False)
        self.workers, self.where = n, f"LocalCluster of {n} worker process{'es' * (n > 1)}"

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self._local is not None:
            self._local.close()
        self.client = self._local = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run(self, tasks: list[Task]) -> Iterable[tuple[str, dict, float]]:
        """Yield ``(key, result, seconds)`` for each task as it finishes (any order)."""
        if self.client is None:
            for t in tasks:
                t0 = time.perf_counter()
                try:
                    out, sec = _timed(t.fn, t.args, t.kwargs)
                except Exception as exc:
                    out, sec = _failure(exc), time.perf_counter() - t0
                yield t.key, out, sec
            return
        from distributed import as_completed
        from distributed.scheduler import KilledWorker
        prefix = f"mmaprobe-{os.getpid()}-{time.time_ns()}-"
        futures = {self.client.submit(_timed, t.fn, t.args, t.kwargs, key=prefix + t.key, pure=False): t.key
                   for t in tasks}
        try:
            for fut in as_completed(list(futures), loop=self.client.loop):
                key = futures[fut]
                try:
                    out, sec = fut.result()
                except KilledWorker as exc:
                    out, sec = {"status": "unknown", "reason": "the workers running this task died (killed, out of "
                                "memory or a crash) more often than the scheduler's allowed-failures: "
                                + " ".join(str(exc).split())}, 0.0
                except Exception as exc:
                    out, sec = _failure(exc), 0.0
                fut.release()
                yield key, out, sec
        finally:
            for fut in futures:
                if not fut.done():
                    fut.cancel()


def _failure(exc: BaseException) -> dict:
    return {"status": "error", "reason": f"{type(exc).__name__}: {' '.join(str(exc).split())}"}


def run_campaign(name: str, params: dict, tasks: list[Task], journal_path, options: Options | None,
                 log: Callable[[str, dict], None] | None = None, stats: Stats | None = None) -> dict[str, dict]:
    """Run the tasks not already in the journal at ``journal_path`` (None: no journal) and
    return every task's result, in the order of ``tasks``. ``log(key, result)`` is called as each finishes (here,
    in the client). The journal is marked complete when every task is in."""
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):
        raise CliError(f"campaign {name}: duplicate task keys")
    options = options or Options(workers=0)
    stats = stats if stats is not None else Stats()
    journal = (Journal.memory(name, params) if journal_path is None else
               Journal.open(journal_path, name, params, resume=options.resume, restart=options.restart))
    with journal:
        # records of tasks not in this run (another subset of the same campaign) stay in the
        # journal and out of the results
        todo = [t for t in tasks if t.key not in journal.done]
        stats.kept = len(tasks) - len(todo)
        t0 = time.perf_counter()
        with Cluster(options if todo else None, len(todo)) as cluster, \
                Progress(len(tasks), name, quiet=options.quiet, done=stats.kept) as bar:
            stats.workers, stats.where = cluster.workers, cluster.where
            stats.startup = time.perf_counter() - t0
            for key, out, sec in cluster.run(todo):
                journal.record(key, out)
                stats.tasks += 1
                stats.task_seconds += sec
                stats.longest = max(stats.longest, (sec, key))
                if log:
                    log(key, out)
                bar.update()
        stats.wall = time.perf_counter() - t0
        journal.complete()
        return {k: journal.done[k] for k in keys}
