"""The suite of every catalog pair: one distinguishing vector or equivalence proof per pair of
models with the same formats and scales (``mmaprobe suite`` runs :func:`pair_task` once per pair
of :func:`suite_pairs` as a campaign task)."""

from __future__ import annotations

import itertools
import time
import traceback

from smtmodel.formats import FormatError
from smtmodel.io import DataFileError
from smtmodel.limits import LimitError
from smtmodel.model import ModelError
from smtmodel.solve import SolverError

from .api import distinguish
from .errors import QueryError, TwinDisagreement
from .vectors import vector_file

PAIR_ERRORS = (FormatError, ModelError, DataFileError, LimitError, QueryError, SolverError, OSError)
"""What makes one pair unaskable (a user error, not a bug): recorded, and the other pairs go on."""


def formats_key(m) -> tuple:
    """The key the suite groups models by: operand, C and output formats, and block scales."""
    return (m.in_key,) + m.formats[2:] + (m.scale_fmt or "", m.scale_block or 0)


def suite_pairs(models):
    """Pairs of models with the same formats and scales. An UNVALIDATED model (a hypothesis no
    capture backs: ``Model.validated`` False) is paired only with the models of its own
    architecture, its rivals: its vectors against another GPU's models would decide nothing."""
    groups: dict = {}
    for m in models:
        groups.setdefault(formats_key(m), []).append(m)
    for key, ms in groups.items():
        for a, b in itertools.combinations(ms, 2):
            if (a.validated and b.validated) or a.arch == b.arch:
                yield key, a, b


def pair_task(a_id: str, b_id: str, formats: list, solver: str, timeout: float, simple: bool) -> dict:
    """One pair of the suite (a campaign task): its index entry, with the vector file's content
    under ``vectors`` when the pair is distinguished (the client writes the file)."""
    t = time.perf_counter()
    entry = {"a": a_id, "b": b_id, "formats": formats}
    try:
        res = distinguish(a_id, b_id, solver=solver, timeout=timeout, simple=simple)
        entry.update(status=res.status, solver=res.solver, seconds=round(res.seconds, 3), k=res.k,
                     reason=res.reason)
        if res.status == "sat":
            vf = vector_file(res, "mmaprobe suite")
            entry["vectors"] = {"header": vf.header, "cases": vf.cases}
        elif res.status == "unsat":
            entry["proof"] = f"equivalent for k={res.k}: proved UNSAT by {res.solver}" + (
                f" ({res.cached})" if res.cached else "")
    except TwinDisagreement as exc:
        entry.update(status="twin-disagreement", reason=str(exc), bug=f"the twin contradicts a solver: {_line(exc)}")
    except PAIR_ERRORS as exc:       # this pair cannot be asked: recorded, the others go on
        entry.update(status="error", reason=f"{type(exc).__name__}: {exc}")
    except Exception as exc:         # a bug: recorded, the others go on, the exit status says so
        entry.update(status="error", reason=f"internal error: {type(exc).__name__}: {exc}",
                     bug=f"{type(exc).__name__}: {_line(exc)} (a bug in mmaprobe; rerun with --debug for the traceback)",
                     traceback=traceback.format_exc())
    entry.setdefault("seconds", round(time.perf_counter() - t, 3))
    return entry


def _line(exc) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
