"""``mmaprobe formats`` / ``models`` / ``eval`` / ``check``: the formats, the model catalog, and
model predictions on vector files."""

from __future__ import annotations

import sys

import numpy as np

from smtmodel.catalog import alias_models, all_models, get_model, integer_models, unvalidated_note
from smtmodel.formats import FORMATS, INT_FORMATS, get_format
from smtmodel.mmaemu import HwminiError, is_hwmini, open_hwmini
from smtmodel.papers import cite
from smtmodel.vectors import read_vectors, write_vectors

from hw_runner.runner import scale_text, scales_of

from ..args import add_model, add_output, add_twin, twin_options
from ..errors import EXIT_OTHER, CliError


def cmd_formats(args) -> int:
    for n in args.names or list(FORMATS) + list(INT_FORMATS):
        print(get_format(n).summary())
    return 0


def cmd_models(args) -> int:
    models = all_models() + integer_models() + alias_models()
    archs = list(dict.fromkeys(m.arch for m in models if m.arch))
    if args.arch and args.arch not in archs:
        raise CliError(f"--arch {args.arch!r}: no model of that architecture; one of {', '.join(archs)}")
    for m in models:
        if args.arch and m.arch != args.arch:
            continue
        rival = f"  (rival of {m.rival_of})" if m.rival_of else ""
        mark = "[UNVALIDATED] " if not m.validated and "UNVALIDATED" not in m.description else ""
        print(f"{m.id:<34} {mark}{m.description}  [{m.source}]{rival}")
        if args.cite and m.op != "imma" and cite(m.source):
            print("    " + cite(m.source).replace("\n", "\n    "))
    return 0


def model_for(vf, spec):
    """Catalog model ``spec``, checked to take the formats and block scales of vector file ``vf``;
    an UNVALIDATED one is named on stderr."""
    m = get_model(spec)
    theirs = (vf.a_fmt.name, vf.b_fmt.name, vf.c_fmt.name, vf.out_fmt.name)
    for key, mine, th in zip(("a_fmt", "b_fmt", "c_fmt", "out_fmt"), m.formats, theirs):
        if mine != th:
            raise CliError(f"model {m.id} takes {key}={mine} but {vf.path} has {key}={th}")
    want, have = scales_of(vf.header), scales_of(m)
    if want != have:
        raise CliError(f"model {m.id} takes {scale_text(have)} but {vf.path} has {scale_text(want)}")
    note_unvalidated([m], sys.stderr)
    return m


def note_unvalidated(models, out=None) -> list[str]:
    """Say, one line each, which of ``models`` are UNVALIDATED (``Model.validated`` False: CDNA4
    hypotheses, B300 aliases), on ``out`` (default stdout); the lines, for a file's header."""
    lines = [unvalidated_note(m) for m in models if not m.validated]
    for line in lines:
        print(f"note: {line}", file=out or sys.stdout)
    return lines


def evaluate_file(vf, m, backend: str = "auto", jobs: int | None = None) -> np.ndarray:
    a, b, c = vf.arrays()
    sc = vf.scales()
    return m.evaluate(a, b, c, *(sc or (None, None)), backend=backend, jobs=jobs)


def cmd_eval(args) -> int:
    vf = read_vectors(args.file)
    for spec in args.model:
        m = model_for(vf, spec)
        vf.set_expect(m.id, evaluate_file(vf, m, **twin_options(args)))
        print(f"{m.id}: {len(vf.cases)} cases evaluated" + ("" if m.validated else " (UNVALIDATED model)"),
              file=sys.stderr)
        if not m.validated:
            vf.header.setdefault("unvalidated", [])
            if m.id not in vf.header["unvalidated"]:
                vf.header["unvalidated"].append(m.id)
    write_vectors(args.output, vf)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def check_hwmini(args) -> int:
    """``check`` on an mmaemu-hwmini/1 folder: every ``mma`` recording whose formats the model
    takes (A's, B's, c, d), bit for bit; recordings of other formats are counted as skipped."""
    m = get_model(args.model)
    note_unvalidated([m])
    try:
        recs = open_hwmini(args.file).mma()
    except HwminiError as exc:
        raise CliError(str(exc)) from None
    mine = [r for r in recs if (r.fmt_a, r.fmt_b, r.c_fmt, r.out_fmt) == m.formats]
    skipped = sum(len(r) for r in recs) - sum(len(r) for r in mine)
    if not mine:
        have = sorted({f"{r.fmt_a} x {r.fmt_b} + {r.c_fmt} -> {r.out_fmt}" for r in recs})
        raise CliError(f"{args.file}: no mma recording has the formats of {m.id} "
                       f"({' x '.join(m.formats[:2])} + {m.formats[2]} -> {m.formats[3]}); it has {', '.join(have)}")
    fo = get_format(m.out_fmt)
    total = matches = shown = 0
    opts = twin_options(args)
    for r in mine:
        d = m.evaluate(r.a, r.b, r.c, **opts)
        ok = d == r.expect
        total += len(r)
        matches += int(ok.sum())
        for i in np.flatnonzero(~ok)[:max(0, args.show - shown)]:
            shown += 1
            print(f"mismatch {r.id}#{i}: model {fo.hex(int(d[i]))} observed {fo.hex(int(r.expect[i]))}")
    print(f"{m.id}: {matches}/{total} match ({len(mine)} recordings; {skipped} outputs of other formats skipped)"
          + ("" if m.validated else " (UNVALIDATED model)"))
    return 0 if matches == total else EXIT_OTHER


def cmd_check(args) -> int:
    if is_hwmini(args.file):
        return check_hwmini(args)
    vf = read_vectors(args.file)
    m = model_for(vf, args.model)
    d = evaluate_file(vf, m, **twin_options(args))
    fo = vf.out_fmt
    total = matches = shown = 0
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
    print(f"{m.id}: {matches}/{total} match" + ("" if m.validated else " (UNVALIDATED model)"))
    return 0 if matches == total else EXIT_OTHER


def register(sub) -> None:
    s = sub.add_parser("formats", help="list number formats and their parameters")
    s.add_argument("names", nargs="*", help="format names or custom specs like e5m10,bias=15")
    s.set_defaults(func=cmd_formats)

    s = sub.add_parser("models", help="list catalog models: id, description, source, the model a rival contradicts")
    s.add_argument("--arch", help="only this architecture (volta, ..., cdna3)")
    s.add_argument("--cite", action="store_true", help="print the full citation of each model's source papers")
    s.set_defaults(func=cmd_models)

    s = sub.add_parser("eval", help="fill each case's 'expect' with model predictions")
    s.add_argument("file")
    add_model(s, required=True, repeat=True)
    add_output(s, required=True)
    add_twin(s)
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser("check", help="compare a model with each case's 'observed' outputs (exit 1 on a mismatch)")
    s.add_argument("file", help="a vector file, or an mmaemu-hwmini/1 folder (its mma recordings of the "
                                "model's formats)")
    add_model(s, required=True)
    s.add_argument("--show", type=int, default=5, help="mismatches to print (default 5)")
    add_twin(s)
    s.set_defaults(func=cmd_check)
