"""How a ``mmaprobe`` command ends: exit codes, and the one place that turns exceptions into them.

A handler takes the parsed ``argparse`` namespace and returns an exit code. :func:`run_command`
runs it and maps what it raises, narrowly:

* a user error (a bad file, model, format, scheme, width, device, option; a solver that
  fails or times out) prints ``mmaprobe: error: ...`` as one line on stderr, exit 2;
* the twin contradicting a solver is a bug in a backend, never a result: one line, exit 4;
* anything else is a bug in mmaprobe: ``mmaprobe: internal error: ...`` with a hint to rerun with
  ``--debug``, which prints the traceback; exit 70;
* Ctrl-C: exit 130; a closed stdout (``mmaprobe models | head``): exit 141, silently.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Callable

from hw_runner.errors import HarnessError
from queries.distinguish import QueryError, TwinDisagreement
from smtmodel.formats import FormatError
from smtmodel.io import DataFileError
from smtmodel.limits import LimitError
from smtmodel.model import ModelError
from smtmodel.solve import SolverError

EXIT_OTHER = 1          # the answer is the other one (no vector, a mismatch, a counterexample)
EXIT_USAGE = 2          # a user error
EXIT_UNKNOWN = 3        # no answer: solver timeout
EXIT_TWIN = 4           # the twin contradicts a solver (a bug)
EXIT_INTERNAL = 70      # any other bug (sysexits' EX_SOFTWARE)
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away (mmaprobe ... | head)

PREFIX = "mmaprobe: error: "


class CliError(Exception):
    """A user-facing error raised by a command itself: printed as one line, exit status 2."""


# What a user can cause or meet. ModelError covers SchemeError; DataFileError a damaged .npy,
# .npz or vector file (VectorFileError); LimitError a size beyond the machine; OSError missing
# and unreadable files, TimeoutError and the harness's subprocesses.
USER_ERRORS = (CliError, FormatError, ModelError, DataFileError, LimitError, QueryError, HarnessError, SolverError,
               OSError)


def one_line(exc: BaseException) -> str:
    """An exception's message on one line; a file error in words, naming the user's path
    (``out/x.json: no such file or directory``), never ``[Errno N]`` or a temporary file's name."""
    if isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror[:1].lower() + exc.strerror[1:]
        if exc.filename is not None:
            name = os.fsdecode(exc.filename)
            reason = f"{name}: {reason}" + (f" ({os.fsdecode(exc.filename2)})" if exc.filename2 else "")
        return " ".join(reason.split())
    return " ".join(str(exc).split()) or type(exc).__name__


def error(message: str) -> None:
    """Print ``mmaprobe: error: message`` on stderr (the one error format)."""
    print(PREFIX + message, file=sys.stderr)


def internal_error(exc: BaseException, debug: bool, where: str = "") -> None:
    """Report a bug: one line (the twin contradicting a solver, or any other exception), and the
    traceback before it under ``--debug``."""
    if debug:
        traceback.print_exc()
    at = f" in {where}" if where else ""
    if isinstance(exc, TwinDisagreement):
        print(f"mmaprobe: internal error{at}: the twin contradicts a solver: {one_line(exc)}", file=sys.stderr)
    else:
        print(f"mmaprobe: internal error{at}: {type(exc).__name__}: {one_line(exc)} "
              f"(a bug in mmaprobe; rerun with --debug for the traceback)", file=sys.stderr)


def run_command(handler: Callable[..., int], args, debug: bool = False) -> int:
    """Run ``handler(args)`` and turn what it raises into one line and an exit code."""
    try:
        return handler(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no second error at exit
        return EXIT_BROKEN_PIPE
    except USER_ERRORS as exc:
        if debug:
            traceback.print_exc()
        error(one_line(exc))
        return EXIT_USAGE
    except TwinDisagreement as exc:
        internal_error(exc, debug)
        return EXIT_TWIN
    except KeyboardInterrupt:
        print("mmaprobe: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        internal_error(exc, debug)
        return EXIT_INTERNAL
