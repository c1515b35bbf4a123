"""The ``mmaprobe`` command line: formats and the model catalog, solver queries, named feature
queries and the pairwise suite, error-compensated GEMM schemes and bounds, the GPU harness.

Exit status: 0 done / answer found; 1 the answer is the other one (no distinguishing vector, a
mismatch, a counterexample); 2 user error (one line ``mmaprobe: error: ...``); 3 no answer
(solver timeout); 4 the twin contradicts a solver (a bug); 70 internal error (``--debug`` prints
the traceback); 130 interrupted.
"""

from __future__ import annotations

import sys
import warnings

from smtmodel.solve.cache import set_enabled as set_proof_cache

from .args import Parser, glue_negative_values, value_options
from .commands import COMMANDS
from .errors import run_command
from .io import check_outputs


def build_parser() -> Parser:
    p = Parser(prog="mmaprobe", description=__doc__.split("\n\n")[0].replace("\n", " "))
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return p


OWN = ("smtmodel", "queries", "hw_runner", "survey", "mmaprobe")
_show_python_warning = warnings.showwarning


def show_note(message, category, filename, lineno, file=None, line=None) -> None:
    """The project's own warnings (e.g. :class:`smtmodel.gemm.NativeFallback`: a GEMM falls back
    to the NumPy reading) as one line ``mmaprobe: note: ...`` on stderr; others as Python shows them."""
    if category.__module__.split(".")[0] in OWN:
        print(f"mmaprobe: note: {message}", file=file or sys.stderr)
    else:
        _show_python_warning(message, category, filename, lineno, file, line)


def main(argv=None) -> int:
    warnings.showwarning = show_note
    parser = build_parser()
    argv = glue_negative_values(list(sys.argv[1:] if argv is None else argv), value_options(parser))
    args = parser.parse_args(argv)
    if getattr(args, "no_cache", False):
        set_proof_cache(False)       # an environment variable: portfolio children and local workers inherit it
    def handler(a):
        check_outputs(a)             # output paths are checked before any work
        return args.func(a)
    return run_command(handler, args, debug=getattr(args, "debug", False))


if __name__ == "__main__":
    sys.exit(main())
