"""The error catcher shared by every ``mmaprobe`` command module.

A command handler takes the parsed ``argparse`` namespace and returns an exit code. The errors a
user can cause or meet (bad input, an unknown model, format or scheme, an unreadable file, ...)
must end the command with one clear line on stderr and a specific non-zero exit code, never a
traceback. Each CLI module states which exceptions it turns into which line and code, as rules
for :func:`catch_errors`; this module imports nothing of the project, so that any module (the
harness, the query layer, :mod:`mmaprobe.cli`) can use it without an import cycle.
"""

from __future__ import annotations

import sys
from functools import wraps
from typing import Callable

EXIT_USAGE = 2            # a user error
EXIT_INTERRUPTED = 130    # Ctrl-C

USER_ERROR = "mmaprobe: error: {}"
INTERNAL_ERROR = "mmaprobe: INTERNAL ERROR: {}"
INTERRUPTED = "mmaprobe: interrupted"

Handler = Callable[..., int]
Rule = tuple  # (exception type or tuple of types, message template, exit code)


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def catch_errors(*rules: Rule) -> Callable[[Handler], Handler]:
    """Decorator for a command handler ``fn(args) -> int``.

    Each rule is ``(types, message, code)``: when ``fn`` raises an exception, the first rule whose
    ``types`` (an exception class or a tuple of them, as for ``except``) match it prints
    ``message.format(exc)`` as one line on stderr and the handler returns ``code`` instead. An
    exception that no rule names propagates unchanged (to an outer catcher, e.g. the one of
    :func:`mmaprobe.cli.main`).
    """

    def deco(fn: Handler) -> Handler:
        @wraps(fn)
        def run(args) -> int:
            try:
                return fn(args)
            except BaseException as exc:
                for types, message, code in rules:
                    if isinstance(exc, types):
                        print(message.format(exc), file=sys.stderr)
                        return code
                raise
        return run
    return deco
