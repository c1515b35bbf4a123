"""Sizes bounded before the work: the memory a computation will need, checked against what this
process may still allocate, so that a size beyond the machine is one line (:class:`LimitError`,
the command line's exit 2) before anything is allocated, never a ``MemoryError`` or the system's
out-of-memory killer halfway through.

Every layer imports it: the core's GEMM, the queries' properties and schemes, the survey and the
command line estimate their memory with their own formula and ask :func:`check_memory`.
"""

from __future__ import annotations

import os
import resource


class LimitError(ValueError):
    """A size (K, n, m, cases, ...) whose memory or time is beyond this machine or a documented
    limit; the message is one line naming the limit and how to lower the size."""


def _meminfo(key: str) -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _address_space_left() -> int | None:
    """Bytes of address space this process may still map under ``RLIMIT_AS`` (None: unlimited)."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError, AttributeError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    used = 0
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - used)


def memory_available() -> int | None:
    """Bytes of memory available to a new allocation: the smaller of the system's
    ``MemAvailable`` (/proc/meminfo) and what ``RLIMIT_AS`` still allows; None where neither is
    known."""
    have = _meminfo("MemAvailable")
    if have is None:
        try:
            have = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, AttributeError):
            have = None
    left = _address_space_left()
    if left is not None:
        have = left if have is None else min(have, left)
    return have


def gib(n: float) -> str:
    """``n`` bytes in GiB, as the limit messages print them."""
    return f"{n / 2 ** 30:.1f} GiB"


def check_memory(need: float, what: str, lower: str) -> None:
    """Raise :class:`LimitError` when ``need`` bytes exceed :func:`memory_available`:
    ``"{what} needs about X GiB of memory; Y GiB are available ({lower})"``. ``what`` names the
    work (with its sizes), ``lower`` says which option to lower."""
    have = memory_available()
    if have is not None and need > have:
        raise LimitError(f"{what} needs about {gib(need)} of memory; {gib(have)} are available ({lower})")


def check_at_most(option: str, value: int, limit: int, why: str) -> None:
    """Raise :class:`LimitError` when ``value`` of ``option`` exceeds the documented ``limit``."""
    if value > limit:
        raise LimitError(f"{option} {value} is beyond the limit of {limit} ({why}); give {option} {limit} or less")


SOLVER_K_MAX = 1024
"""The largest k of a solver formula (distinguish, equivalent, suite --max-k, explain's --k,
scheme compare / worst / bound): the formula grows with k, and at k = 1000 building it alone takes
minutes."""

CASES_MAX = 10 ** 9
"""The most random cases one run draws (verify --cases, identify --verify and --batch, plot and
report --cases, scheme stats/table rows): beyond it the twin's time alone is hours."""

COUNT_MAX = 1000
"""The most vectors one ``distinguish --count`` asks for (one solver call each)."""


def cases_memory(cases: float, k: int, arrays: float = 8.0) -> float:
    """Bytes that ``cases`` cases of ``k`` products occupy while a twin reads them: ``arrays``
    uint64 arrays of k + 1 values per case (a, b and c, their decoded copies and the products)."""
    return float(cases) * (max(int(k), 1) + 1) * 8 * arrays


def check_positive(option: str, value) -> None:
    """Raise :class:`LimitError` unless ``value`` of ``option`` is a whole number of at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LimitError(f"{option} {value}: give a whole number of at least 1")


def check_cases(option: str, cases: int, k: int, what: str, *, arrays: float = 8.0, k_option: str = "--k") -> None:
    """``option`` (a number of cases of ``k`` products) at least 1, at most :data:`CASES_MAX`, and
    its memory (:func:`cases_memory`) within what is available; the message names both options."""
    check_positive(option, cases)
    check_at_most(option, cases, CASES_MAX, "the twin's time grows with the cases")
    check_memory(cases_memory(cases, k, arrays), f"{what} with {option} {cases} at k = {k}",
                 f"lower {option} or {k_option}")


def check_solver_k(option: str, k) -> None:
    """A solver formula's ``k``: at least 1 and at most :data:`SOLVER_K_MAX`."""
    check_positive(option, k)
    check_at_most(option, k, SOLVER_K_MAX, "the formula grows with k")


def _mapped() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def run_within(fn, seconds: float, what: str, lower: str):
    """``fn()`` in a forked child that is abandoned when ``seconds`` are up: ``(True, value)``, or
    ``(False, None)`` when the time ran out (the child and the solver processes it started are
    ended: SIGTERM, so its temporary files are removed, then SIGKILL). The child may allocate no
    more than :func:`memory_available`; running out raises :class:`LimitError` ``"{what} needs more
    memory than ... ({lower})"`` here, instead of waking the system's out-of-memory killer. An
    exception ``fn`` raises is raised here. Without ``fork`` (not Linux or macOS) ``fn`` runs in
    this process, unbounded."""
    import multiprocessing as mp
    import pickle
    import signal

    if "fork" not in mp.get_all_start_methods():
        return True, fn()
    have = memory_available()
    recv, send = mp.get_context("fork").Pipe(duplex=False)

    def child():
        os.setpgrp()                                   # one group: the solvers it forks end with it
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(143)))
        if have is not None:
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            soft = _mapped() + have
            resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
        try:
            out = ("ok", fn())
        except MemoryError:
            out = ("memory", None)
        except BaseException as exc:                   # noqa: BLE001 -- handed to the parent
            try:
                pickle.loads(pickle.dumps(exc))
                out = ("error", exc)
            except Exception:                          # noqa: BLE001
                out = ("error", RuntimeError(f"{type(exc).__name__}: {exc}"))
        send.send(out)

    proc = mp.get_context("fork").Process(target=child)
    proc.start()
    send.close()
    try:
        ready = recv.poll(max(0.0, seconds))
        if ready:
            try:
                kind, value = recv.recv()
            except EOFError:
                kind, value = "memory", None           # killed without an answer
            proc.join()
            if kind == "ok":
                return True, value
            if kind == "memory":
                raise LimitError(f"{what} needs more memory than the {gib(have or 0)} available ({lower})")
            raise value
        return False, None
    finally:
        if proc.is_alive():
            for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    proc.kill()                        # not yet its own group
                proc.join(wait)
                if not proc.is_alive():
                    break
        try:                                           # what the child's group left behind
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        recv.close()
