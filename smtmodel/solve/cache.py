"""The proof cache: an ``unsat`` answer kept on disk under a hash of the exact formula text, the
solver and the solver's version, so that a proof already done is not done again.

Only proofs are kept: a ``sat`` answer is cheap to find again and is re-checked by the twin
anyway. An answer read from the cache says so (:func:`label`: "cached, proved by bitwuzla 0.9.1
on 2026-11-23"), never passes for a fresh proof. The key covers every byte of the formula as the
solver reads it (the SMT-LIB2 text, or the solver's own printing of its terms), so a change to a
model, a constraint or the encoding is a new key, and a new solver version starts over.

Where: ``$MMAPROBE_CACHE/proofs`` (an empty ``MMAPROBE_CACHE``: no disk cache, as for the
compiled twin), else ``~/.cache/mmaprobe/proofs``; off where ``MMAPROBE_PROOF_CACHE=0`` (the
command line's ``--no-cache`` sets it, so that portfolio children and local campaign workers
inherit it). Entries are small JSON files written atomically (:func:`smtmodel.io.atomic_open`),
so parallel writers (pytest-xdist workers, portfolio children) never leave a half-written entry;
two writers of one key write the same facts and the last rename wins.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os

from ..io import atomic_open

ENV_OFF = "MMAPROBE_PROOF_CACHE"


def cache_dir() -> str | None:
    """The proof cache's folder, or None where it is off."""
    if os.environ.get(ENV_OFF, "1") == "0":
        return None
    d = os.environ.get("MMAPROBE_CACHE")
    if d == "":
        return None
    return os.path.join(d or os.path.join(os.path.expanduser("~"), ".cache", "mmaprobe"), "proofs")


def set_enabled(on: bool) -> None:
    """Turn the cache on or off for this process and the processes it starts."""
    os.environ[ENV_OFF] = "1" if on else "0"


def solver_version(solver: str) -> str:
    """The installed version of a solver's Python package (part of every key)."""
    from importlib.metadata import PackageNotFoundError, version
    if " + " in solver:        # a pipeline ("z3 fpa2bv + bitwuzla"): every package it runs
        return "+".join(solver_version(part.split()[0]) for part in solver.split(" + "))
    try:
        return version({"z3": "z3-solver"}.get(solver, solver))
    except PackageNotFoundError:
        return "?"


def key(text: str, solver: str, options: str = "") -> str:
    """The hash of (formula text, solver, solver version, the solver's options)."""
    h = hashlib.sha256()
    for part in (solver, solver_version(solver), options, text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _path(d: str, k: str) -> str:
    return os.path.join(d, k[:2], k + ".json")


def lookup(k: str) -> dict | None:
    """The cached entry of key ``k`` (``{"status": "unsat", "solver", "version", "date",
    "seconds"}``), or None."""
    d = cache_dir()
    if d is None:
        return None
    try:
        with open(_path(d, k), encoding="utf-8") as fh:
            entry = json.load(fh)
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and entry.get("status") == "unsat" else None


def store(k: str, solver: str, seconds: float) -> None:
    """Record that ``solver`` proved the formula of key ``k`` (unsat) in ``seconds``; a cache
    that cannot be written is skipped silently (the proof itself stands)."""
    d = cache_dir()
    if d is None:
        return
    entry = {"status": "unsat", "solver": solver, "version": solver_version(solver),
             "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
             "seconds": round(float(seconds), 3)}
    try:
        with atomic_open(_path(d, k)) as fh:
            json.dump(entry, fh)
    except OSError:
        pass


def label(entry: dict) -> str:
    """How an answer read from the cache is reported."""
    return (f"cached, proved by {entry.get('solver', '?')} {entry.get('version', '?')} on {entry.get('date', '?')}"
            f" in {entry.get('seconds', 0):.2f} s")
