"""A portfolio: engines raced in separate processes; the first definite answer wins.

Each child runs ``task(name, seconds_left)`` (building its own formula on its own engine's
backend); the others are killed when one answers sat or unsat. Starts are staggered
(:func:`default_stagger`) so that an easy query answered by the first engine never shares its
CPUs with the rest. A SIGTERM to the parent unwinds through the cleanup, which stops the
children. A child that raises reports the exception's name and message; a child that dies
without a word (a segfault in native code) is reported with its exit code.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue as _queue
import signal
import threading
import time
import traceback

from .result import SOLVERS, Engine, Result, Unknown


def default_stagger(n: int) -> float:
    """Seconds between portfolio starts: 0 where every engine has a CPU to itself, else 1 s."""
    return 0.0 if (os.cpu_count() or 1) >= 2 * n else 1.0


def available_solvers() -> tuple:
    out = []
    for s in SOLVERS:
        try:
            __import__(s)
            out.append(s)
        except ImportError:
            pass
    return tuple(out)


def default_pool() -> tuple:
    """All available SMT engines where there are >= 3 CPUs, else Bitwuzla and z3 (cvc5 is the
    slowest on these formulas, and racing more engines than cores only slows the winner down)."""
    order = {"bitwuzla": 0, "z3": 1, "cvc5": 2}      # fastest first on these formulas (bench/queries.py)
    av = tuple(sorted(available_solvers(), key=order.get))
    if (os.cpu_count() or 1) >= 3:
        return av
    return tuple(s for s in av if s != "cvc5") or av


def _child(task, name: str, left: float, q) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)       # the parent's handler (below) is not ours
    try:
        q.put(("done", name, task(name, left)))
    except BaseException as exc:  # noqa: BLE001  (the parent decides what an exception means)
        q.put(("raise", name, (type(exc).__name__, str(exc), traceback.format_exc(limit=3))))


def race_notes(answers: dict, names) -> list[str]:
    """One line per solver of a :func:`race` that crashed or died (its name, the error)."""
    notes = []
    for s in names:
        kind, payload = answers[s]
        if kind == "raise":
            notes.append(f"{s} crashed: {payload[0]}: {payload[1]}")
        elif kind == "died":
            notes.append(payload)
    return notes


def race(task, names: tuple, timeout: float, stagger: float | None = None,
         decided=lambda r: getattr(r, "status", None) in ("sat", "unsat")):
    """Run ``task(name, seconds_left)`` for every name in its own process, staggered.

    Returns ``(winner, answers)``: the name whose answer was ``decided`` first (or None) and
    ``{name: (kind, payload)}`` with kind ``done`` (payload: the task's return value), ``raise``
    ((exception name, message, traceback)), ``died`` (a message with the exit code) or
    ``timeout`` (never started, or no answer in time)."""
    t0 = time.perf_counter()
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    q = ctx.Queue()
    procs: dict = {}
    pending = list(names)
    stagger = default_stagger(len(names)) if stagger is None else stagger

    def launch():
        s = pending.pop(0)
        left = max(0.05, timeout - (time.perf_counter() - t0))
        p = ctx.Process(target=_child, args=(task, s, left, q), daemon=True)
        p.start()
        procs[s] = p

    prev_term = None
    if threading.current_thread() is threading.main_thread():
        # SIGTERM to the parent unwinds through the finally below, which stops the children
        def _on_term(signum, frame):
            raise SystemExit(128 + signum)
        prev_term = signal.signal(signal.SIGTERM, _on_term)
    answers: dict = {}
    winner = None
    hard = t0 + timeout + 5.0
    try:
        launch()
        while winner is None and len(answers) < len(names):
            if pending and (time.perf_counter() - t0 >= stagger * len(procs) or all(x in answers for x in procs)):
                if time.perf_counter() < t0 + timeout:
                    launch()
                else:
                    answers.update({x: ("timeout", None) for x in pending})
                    pending.clear()
            try:
                kind, s, payload = q.get(timeout=0.05)
            except _queue.Empty:
                if time.perf_counter() > hard:
                    break
                for s, p in procs.items():
                    if s not in answers and not p.is_alive():
                        try:   # its message may still be in the pipe
                            kind, s2, payload = q.get(timeout=0.5)
                            answers[s2] = (kind, payload)
                            if kind == "done" and decided(payload):
                                winner = s2
                        except _queue.Empty:
                            answers[s] = ("died", f"{s} crashed (exit code {p.exitcode})")
                        break
                continue
            answers[s] = (kind, payload)
            if kind == "done" and decided(payload):
                winner = s
    finally:
        for p in procs.values():
            if p.is_alive():
                p.terminate()
        for p in procs.values():
            p.join(1.0)
            if p.is_alive():
                p.kill()
                p.join(1.0)
        if prev_term is not None:
            signal.signal(signal.SIGTERM, prev_term)
    for s in names:
        answers.setdefault(s, ("timeout", None))
    return winner, answers


def solve_task(build):
    """A :func:`race` task: engine ``name`` decides ``build(B) -> (assertions, variables)`` on its
    own backend in the seconds left (building the formula counts too)."""
    def task(name: str, left: float) -> Result:
        from . import make_engine
        t0 = time.perf_counter()
        eng = make_engine(name)
        assertions, variables = build(eng.B)
        return eng.check(assertions, variables, max(0.05, left - (time.perf_counter() - t0)))
    return task


def run_engines(build, names: tuple, timeout: float, reraise: tuple = ()):
    """``build(B) -> (assertions, variables)`` decided by one engine in this process or by the
    engines of ``names`` raced (:func:`race`): (winner or None, its Result or None, notes). A lone
    engine's crash (an exception not in ``reraise``) is a note, not a traceback."""
    if len(names) == 1:
        try:
            r = solve_task(build)(names[0], timeout)
        except reraise:
            raise
        except Exception as exc:   # a solver or binding failure: reported, not a traceback
            return None, None, [f"{names[0]} crashed: {type(exc).__name__}: {exc}"]
        return (names[0], r, []) if r.status in ("sat", "unsat") else (None, r, [f"{names[0]}: {r.reason}"])
    winner, answers = race(solve_task(build), names, timeout)
    return winner, (answers[winner][1] if winner else None), race_notes(answers, names)


def _check_task(assertions, variables):
    def task(name: str, left: float) -> Result:
        from . import make_engine
        return make_engine(name).check(assertions, variables, left)
    return task


class Portfolio(Engine):
    """Engines raced on one formula; itself an engine.

    ``check`` takes terms built on the z3 backend (``self.B``) and races the engines that read
    them (Bitwuzla, z3) in forked children; ``solve`` takes a formula *builder*
    (``build(B) -> (assertions, variables)``) and races any engines, each child building on its
    own engine's backend."""

    name = "portfolio"

    def __init__(self, names: tuple | None = None, stagger: float | None = None):
        from ..bv.z3_backend import Z3Backend
        self.names = tuple(names) if names else default_pool()
        self.stagger = stagger
        self.B = Z3Backend()

    def check(self, assertions: list, variables: dict, timeout: float) -> Result:
        names = tuple(s for s in self.names if s in Z3_TERMS) or tuple(s for s in default_pool() if s in Z3_TERMS)
        return self._race(_check_task(assertions, variables), names, timeout)

    def solve(self, build, timeout: float) -> Result:
        return self._race(solve_task(build), self.names, timeout)

    def _race(self, task, names: tuple, timeout: float) -> Result:
        t0 = time.perf_counter()
        winner, answers = race(task, names, timeout, self.stagger)
        if winner is not None:
            res = answers[winner][1]
            res.solver = f"{winner} (portfolio)"
            res.seconds = time.perf_counter() - t0
            return res
        return Unknown("; ".join(["timeout"] + race_notes(answers, names)), time.perf_counter() - t0, "portfolio")


Z3_TERMS = ("bitwuzla", "z3")
"""The engines that read terms built on the z3 backend."""
