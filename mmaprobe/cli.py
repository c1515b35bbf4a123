"""The ``mmaprobe`` command line.

Subcommands: ``formats``, ``models``, ``eval``, ``check`` (the model catalog), ``distinguish``
and ``equivalent`` (solver queries), and the GPU harness commands (``harness``, ``run``,
``verdict``, ...). Every user error ends with one clear line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from smtmodel.formats import FORMATS, FormatError, get_format
from smtmodel.model import ModelError
from smtmodel.vectors import VectorFileError, read_vectors, write_vectors

from .errors import EXIT_INTERRUPTED, EXIT_USAGE, INTERRUPTED, USER_ERROR, CliError, catch_errors

# What every subcommand's handler may still raise: one line on stderr, then these exit codes.
MAIN_ERRORS = (((CliError, FormatError, ModelError, VectorFileError), USER_ERROR, EXIT_USAGE),
               (KeyboardInterrupt, INTERRUPTED, EXIT_INTERRUPTED))


# ---- formats / models ------------------------------------------------------------------------

def cmd_formats(args) -> int:
    names = args.names or list(FORMATS)
    for n in names:
        print(get_format(n).summary())
    return 0


def cmd_models(args) -> int:
    from smtmodel.catalog import all_models

    for m in all_models():
        if args.arch and m.arch != args.arch:
            continue
        print(f"{m.id:<34} {m.description}  [{m.source}]")
    return 0


# ---- eval / check ------------------------------------------------------------------------------

def _load_model_for(vf, spec):
    from smtmodel.catalog import get_model

    m = get_model(spec)
    for attr, key in (("in_fmt", "in_fmt"), ("c_fmt", "c_fmt"), ("out_fmt", "out_fmt")):
        mine, theirs = get_format(getattr(m, attr)).name, vf.header[key]
        if mine != get_format(theirs).name:
            raise CliError(f"model {m.id} takes {attr}={mine} but {vf.path} has {key}={theirs}")
    return m


def _evaluate_file(vf, m) -> np.ndarray:
    a, b, c = vf.arrays()
    sc = vf.scales()
    return m.evaluate(a, b, c, *(sc or (None, None)))


def cmd_eval(args) -> int:
    vf = read_vectors(args.file)
    for spec in args.model:
        m = _load_model_for(vf, spec)
        vf.set_expect(m.id, _evaluate_file(vf, m))
        print(f"{m.id}: {len(vf.cases)} cases evaluated", file=sys.stderr)
    write_vectors(args.output, vf)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def cmd_check(args) -> int:
    vf = read_vectors(args.file)
    m = _load_model_for(vf, args.model)
    d = _evaluate_file(vf, m)
    fo = vf.out_fmt
    total = matches = 0
    shown = 0
    for i, case in enumerate(vf.cases):
        for dev, hexbits in case.get("observed", {}).items():
            total += 1
            if fo.parse_hex(hexbits) == int(d[i]):
                matches += 1
            elif shown < args.show:
                shown += 1
                print(f"mismatch {case.get('id', i)}: model {fo.hex(int(d[i]))} observed {hexbits} ({dev})")
    if total == 0:
        raise CliError(f"{args.file}: no case has an 'observed' output to check against")
    print(f"{m.id}: {matches}/{total} match")
    return 0 if matches == total else 1


# ---- main --------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mmaprobe", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("formats", help="list number formats and their parameters")
    s.add_argument("names", nargs="*", help="format names or custom specs like e5m10,bias=15")
    s.set_defaults(func=cmd_formats)

    s = sub.add_parser("models", help="list catalog models: id, description, source")
    s.add_argument("--arch", help="only this architecture (volta, ..., cdna3)")
    s.set_defaults(func=cmd_models)

    s = sub.add_parser("eval", help="fill each case's 'expect' with model predictions")
    s.add_argument("file")
    s.add_argument("--model", action="append", required=True, help="model id[:overrides] (repeatable)")
    s.add_argument("-o", "--output", required=True)
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser("check", help="compare a model with each case's 'observed' outputs")
    s.add_argument("file")
    s.add_argument("--model", required=True)
    s.add_argument("--show", type=int, default=5, help="mismatches to print (default 5)")
    s.set_defaults(func=cmd_check)

    _register_optional(sub)
    return p


def _register_optional(sub) -> None:
    """Subcommands of the query layer, the error-corrected schemes and the GPU harness."""
    import hw_runner.cli
    import queries.cli
    import queries.scheme_cli

    for module in (queries.cli, queries.scheme_cli, hw_runner.cli):
        module.register(sub)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return catch_errors(*MAIN_ERRORS)(args.func)(args)


if __name__ == "__main__":
    sys.exit(main())
