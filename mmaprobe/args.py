"""The argument groups the ``mmaprobe`` commands share, and the parser they are added to.

Every command spells a model, a solver and its time limit, an output file, ``k`` and an exponent
range the same way. An exponent range is ``LO:HI`` (``LO,HI`` is read too, ``any`` means no
range); negative bounds work with a space too: ``--exp-range -10:10``.
"""

from __future__ import annotations

import argparse
import re
import sys

from .errors import EXIT_USAGE, PREFIX

RANGE_OPTIONS = ("--exp-range", "--c-exp-range")


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors read ``mmaprobe: error: ...`` on one line (exit 2), and
    whose every (sub)command takes ``--debug`` and ``--no-cache``."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                          help="on an internal error, print the traceback")
        self.add_argument("--no-cache", action="store_true", default=argparse.SUPPRESS,
                          help="neither read nor write the proof cache (~/.cache/mmaprobe/proofs): prove again")

    def error(self, message):
        cmd = self.prog.removeprefix("mmaprobe").strip()
        where = f" (see mmaprobe {cmd} --help)" if cmd else " (see mmaprobe --help)"
        print(f"{PREFIX}{message}{where}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


NEGATIVE = re.compile(r"-(\d|\.\d|inf|nan)", re.IGNORECASE)


def value_options(parser: argparse.ArgumentParser) -> set[str]:
    """The option strings of ``parser`` and its subparsers that take one value."""
    out = set()
    for act in parser._actions:
        if isinstance(act, argparse._SubParsersAction):
            for sub in act.choices.values():
                out |= value_options(sub)
        elif act.option_strings and act.nargs is None and act.const is None and not isinstance(
                act, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._CountAction,
                      argparse._HelpAction, argparse._VersionAction)):
            out |= set(act.option_strings)
    return out


def glue_negative_values(argv: list[str], options=RANGE_OPTIONS) -> list[str]:
    """``--exp-range -10:10`` -> ``--exp-range=-10:10``, ``--scale-b -1e39`` -> ``--scale-b=-1e39``:
    argparse would read a value starting with ``-`` as an option (``-10:10``, ``-1e39``, ``-inf``).
    ``options``: the option strings that take a value."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in options and i + 1 < len(argv) and NEGATIVE.match(argv[i + 1]):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def exp_range(text: str) -> tuple[int, int] | None:
    """``LO:HI`` (or ``LO,HI``) -> ``(LO, HI)``; ``any`` / ``none`` -> ``None`` (no range)."""
    if text.strip().lower() in ("any", "none"):
        return None
    parts = re.split(r"[:,]", text)
    try:
        lo, hi = (int(x) for x in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: use LO:HI, e.g. -10:10 (or 'any')") from None
    if lo > hi:
        raise argparse.ArgumentTypeError(f"{text!r}: LO > HI")
    return (lo, hi)


def add_model(p, *, required=False, repeat=False, help=None) -> None:
    """``--model ID[:overrides]``, once or repeated."""
    p.add_argument("--model", required=required, action="append" if repeat else "store",
                   help=help or "catalog model id[:overrides], e.g. hopper-fp16-fp32:F=24,carry=3"
                   + (" (repeatable)" if repeat else ""))


def add_solver(p, choices, default, timeout, what="the query", help=None) -> None:
    """``--solver`` among ``choices`` and ``--timeout`` seconds."""
    p.add_argument("--solver", choices=choices, default=default, help=help or f"solver (default {default})")
    p.add_argument("--timeout", type=float, default=timeout, help=f"seconds for {what} (default {timeout:g})")


def add_output(p, *, required=False, help="file to write", kind: str = "file") -> None:
    """``-o/--output``, checked before the command runs (:func:`mmaprobe.io.check_outputs`);
    ``kind``: file, dir (a folder) or prefix (OUT.png, OUT.json, ...)."""
    from .io import declare_outputs
    p.add_argument("-o", "--output", required=required, help=help)
    declare_outputs(p, output=kind)


def add_k(p, default=None, help=None) -> None:
    p.add_argument("--k", type=int, default=default,
                   help=help or ("products per case" + (f" (default {default})" if default else "")))


def add_exp_ranges(p, default=None, what=("a_i, b_i", "c")) -> None:
    """``--exp-range`` and ``--c-exp-range``: unbiased exponent ranges ``LO:HI`` of the inputs."""
    shown = "none" if default is None else f"{default[0]}:{default[1]}"
    p.add_argument("--exp-range", type=exp_range, default=default, metavar="LO:HI",
                   help=f"unbiased exponent range of the non-zero {what[0]} (default {shown}; 'any': none)")
    p.add_argument("--c-exp-range", type=exp_range, default=default, metavar="LO:HI",
                   help=f"unbiased exponent range of a non-zero {what[1]} (default {shown}; 'any': none)")


def workers(text: str):
    """``--workers``: ``auto`` or a count >= 0."""
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of workers >= 0, or 'auto'")
    return n


def add_campaign(p) -> None:
    """Where a campaign's tasks run, and its journal (see mmaprobe.campaign)."""
    g = p.add_argument_group("campaign (Dask; docs/campaigns.md)")
    g.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="an existing Dask scheduler (default: $MMAPROBE_SCHEDULER, else a LocalCluster)")
    g.add_argument("--workers", type=workers, default="auto",
                   help="LocalCluster worker processes: N, or auto = one per core for 8+ tasks, "
                        "smaller campaigns in this process (default auto; 0: in this process)")
    g.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for --scheduler (default 10)")
    g.add_argument("--resume", action="store_true", help="continue the unfinished run recorded in the journal")
    g.add_argument("--restart", action="store_true", help="discard an unfinished run's journal and start over")
    g.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: use a number of threads >= 1")
    return n


def add_twin(p) -> None:
    """``--backend auto|native|numpy`` and ``--jobs/-j N``: how the twin is evaluated (the
    compiled reading on N threads, or the NumPy reference reading; both bit-equal)."""
    g = p.add_argument_group("twin evaluation")
    g.add_argument("--backend", choices=("auto", "native", "numpy"), default="auto",
                   help="auto (default): compiled when llvmlite loads and the batch is large; "
                        "native: always compiled; numpy: the reference reading")
    g.add_argument("-j", "--jobs", type=_jobs, default=None, metavar="N",
                   help="threads for the compiled reading (default: $MMAPROBE_JOBS, else all cores)")


def twin_options(args) -> dict:
    """``Model.evaluate`` keywords from :func:`add_twin`'s options, only those given (so a
    model stand-in whose ``evaluate`` takes none still runs with the defaults)."""
    opts = {"backend": args.backend, "jobs": args.jobs}
    return {k: v for k, v in opts.items() if v is not None and not (k == "backend" and v == "auto")}
