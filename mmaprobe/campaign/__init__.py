"""Campaigns: many independent tasks (the pairwise suite, ``bound all``, ``verify`` in chunks,
scheme error scans) on a Dask cluster, with an append-only journal (resume with ``--resume``)
and progress on stderr. ``executor`` runs, ``journal`` records, ``progress`` shows; the pure
computation of what the tasks return lives in ``queries`` (e.g. :mod:`queries.stats`)."""

from .executor import (AUTO_MIN_TASKS, Cluster, Options, SchedulerError, Stats, Task, run_campaign)
from .journal import Journal, JournalError, journal_path, read_journal
from .progress import Progress

__all__ = ["AUTO_MIN_TASKS", "Cluster", "Journal", "JournalError", "Options", "Progress", "SchedulerError",
           "Stats", "Task", "journal_path", "read_journal", "run_campaign"]
