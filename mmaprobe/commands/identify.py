"""``mmaprobe identify``: name an unknown matrix unit's arithmetic from a hypothesis space, in few
device launches, with the evidence and a bit-exact verification (queries.identify)."""

from __future__ import annotations

import sys
from pathlib import Path

from queries.identify import NeedAnswers, Settings, plan
from queries.identify.plan import Prepared, run
from queries.identify.report import deciding_vectors, entry, table, write_entry
from smtmodel.formats import get_format
from smtmodel.solve import SOLVER_CHOICES
from smtmodel.vectors import write_vectors

from ..errors import EXIT_OTHER, EXIT_UNKNOWN, CliError
from ..io import declare_outputs

ADAPTERS = {}

_DEFAULTS = Settings(k=1)
"""The loop's defaults are the command line's (one place: :class:`queries.identify.Settings`)."""


def _cuda(text, **kw):
    from hw_runner.identify_device import CudaDevice
    return CudaDevice(text, **kw)


ADAPTERS["cuda"] = _cuda
ADAPTERS["rocm"] = _cuda          # the same device class; hw_runner picks the HIP launcher


def _cuda_gemm(text, **kw):
    from hw_runner.gemm_device import CudaGemmDevice
    return CudaGemmDevice(text, **kw)


def _torch_gemm(text, **kw):
    from hw_runner.gemm_device import TorchGemmDevice
    return TorchGemmDevice(text, **kw)


GEMM_ADAPTERS = {"cuda-gemm": _cuda_gemm, "torch-gemm": _torch_gemm}


def cmd_identify_gemm(args) -> int:
    """``identify --gemm``: the instruction model and the dataflow of a device that runs GEMMs
    (queries.gemm.identify). Everything is checked before the first launch; the JSON answer is
    written atomically."""
    import json

    from queries.gemm.devices import open_gemm_device
    from queries.gemm.identify import INTERVALS, K_DEFAULT, identify_gemm
    from queries.gemm.explain import default_dataflows, default_models
    from smtmodel.catalog import get_model
    from smtmodel.dataflow import DataflowError, parse_dataflow
    from smtmodel.io import atomic_open

    for opt in ("space", "instruction", "journal", "resume"):
        if getattr(args, opt) and not (opt == "space" and args.space == "auto"):     # auto: the default
            raise CliError(f"--{opt} is not an option of identify --gemm")
    nxt = args.next or (str(Path(args.output).with_suffix(".next.npz")) if args.output else None)
    device = open_gemm_device(args.device, in_fmt=args.in_fmt, out_fmt=args.out_fmt, adapters=GEMM_ADAPTERS,
                              next_path=nxt)
    if args.capture:
        from queries.gemm.devices import RecordingGemmDevice
        if not Path(args.capture).resolve().parent.is_dir():
            raise CliError(f"--capture {args.capture}: no such folder")
        device = RecordingGemmDevice(device, args.capture)
    in_fmt, c_fmt = get_format(device.in_fmt).name, get_format(device.c_fmt).name
    models = default_models(in_fmt, c_fmt)
    if args.models:
        models = [get_model(x.strip()) for x in args.models.split(",") if x.strip()]
    try:
        dataflows = [parse_dataflow(x) for x in args.dataflow] if args.dataflow else default_dataflows(INTERVALS)
    except DataflowError as exc:
        raise CliError(str(exc)) from None
    progress = None if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    try:
        out = identify_gemm(device, models, dataflows, K=args.k or K_DEFAULT, seed=args.seed,
                            max_launches=args.max_launches, verify=args.verify > 0, progress=progress)
    except NeedAnswers as exc:          # a capture file waiting for answers: no answer yet, as identify says
        print(f"pending: {exc}")
        print(f"next probes: {exc.path} ({exc.count} GEMM(s))")
        return EXIT_UNKNOWN
    print(f"space: {len(models)} models x {len(dataflows)} dataflows = {len(models) * len(dataflows)} hypotheses")
    print(f"device {device.name}: {out.launches} launches ({out.matrices} output elements) + "
          f"{'1 verification launch' if out.verified is not None else 'no verification'}, {out.seconds:.1f} s "
          f"(device {out.device_seconds:.1f} s)")
    for name, before, after in out.log:
        print(f"  {name:<48} {before:5d} -> {after:5d}")
    print(f"{out.verdict}: {len(out.live)} hypothesis(es) give the same bits on every probe"
          + (" and the verification GEMM" if out.verified else "")
          + ("; nothing proves them alike" if out.verdict == "narrowed" else ""))
    for lab in out.labels()[:20]:
        print(f"  {lab}")
    if out.splits:
        print("split-K per GEMM shape (the library picks it per shape; searched where a launch refuted every "
              "hypothesis as named):")
        for line in out.split_lines():
            print(f"  {line}")
    hidden = getattr(device, "hidden", None)
    if hidden is not None:
        print(f"hidden: {hidden.label} -> {'recovered' if out.recovered(hidden) else 'NOT recovered'}")
    if args.output:
        obj = {"device": device.name, "status": out.verdict, "launches": out.launches, "matrices": out.matrices,
               "verified": out.verified, "seconds": round(out.seconds, 3), "log": out.log,
               "splits": out.splits, "named_shapes": out.named_shapes,
               "live": [{"model": h.model.id, "dataflow": h.dataflow.to_json()} for h in out.live]}
        with atomic_open(args.output) as fh:
            json.dump(obj, fh, indent=1)
            fh.write("\n")
        print(f"wrote {args.output}", file=sys.stderr)
    return 0 if out.verdict in ("identified", "narrowed") else EXIT_OTHER if out.status == "no-fit" else EXIT_UNKNOWN


def prepare(args) -> Prepared:
    """The run ``args`` describes, checked before the first launch (queries.identify.plan), its
    journal's notes printed."""
    p = plan.prepare(args, ADAPTERS)
    for note in p.notes:
        print(f"mmaprobe: note: {note}", file=sys.stderr)
    if not args.journal and not args.quiet:         # the default place is not the current folder: say it
        print(f"journal {p.journal.path} (--resume continues it)", file=sys.stderr)
    return p


def _solver_summary(out) -> str | None:
    """One line on the SMT questions asked, their answers and time limits (None: none asked)."""
    log = out.solver_log
    if not log:
        return None
    n = {st: sum(r["status"] == st for r in log) for st in ("sat", "unsat", "unknown", "error")}
    slow = [r for r in log if r["status"] not in ("sat", "unsat")]
    line = (f"solver: {len(log)} question(s), {sum(r['seconds'] for r in log):.0f} s: {n['unsat']} proved alike, "
            f"{n['sat']} split")
    if slow:
        why = sorted({r["reason"] or r["status"] for r in slow})
        line += f", {len(slow)} without an answer ({'; '.join(why)[:160]})"
    return line


def _members(out, group, limit: int = 12) -> list[str]:
    rows = []
    for i in group[:limit]:
        cat = out.catalog.get(i, ())
        rows.append(f"    {out.spec(i)}" + (f"  [catalog: {', '.join(cat)}]" if cat else ""))
    if len(group) > limit:
        rows.append(f"    ... and {len(group) - limit} more")
    return rows


def cmd_identify(args) -> int:
    if args.gemm:
        return cmd_identify_gemm(args)
    p = prepare(args)
    device, s = p.device, p.settings
    out = run(p)
    print(f"space {out.space.describe()}")
    if out.fallback:
        fb = out.fallback
        print(f"  no hypothesis of the default space ({fb['size']} points) fit after {fb['launches']} launch(es) "
              f"({fb['message']}): went on in the open space by itself (--space default stops there)")
    print(f"device {device.name}: {out.launches} launches ({out.probes} probes) + {out.verify_launches} "
          f"verification launch(es), {out.seconds:.1f} s")
    solver = _solver_summary(out)
    if out.status in ("identified", "narrowed"):
        name = args.name or f"identified-{p.in_fmt}-{p.out_fmt}"
        obj = entry(out, name, device.name, s)
        print(table(obj))
        if solver:
            print(f"  {solver}")
        if out.solver_note == "no solver":
            print("  solver stage skipped: no SMT solver (z3, cvc5, bitwuzla) on this machine")
        if args.output:
            write_entry(args.output, obj)
            print(f"wrote {args.output}", file=sys.stderr)
        vf = deciding_vectors(obj)
        dpath = args.deciding or (str(Path(args.output).with_suffix(".deciding.jsonl")) if args.output else None)
        if vf is not None and dpath:
            write_vectors(dpath, vf)
            print(f"  deciding inputs: {dpath} ({len(vf.cases)} pair(s); run them on the device)")
        return 0
    if out.status == "no-fit":
        print(f"no-fit: {out.message}")
        if out.counterexample:
            cx = out.counterexample
            sc = f" a_scale={cx['a_scale']} b_scale={cx['b_scale']}" if "a_scale" in cx else ""
            print(f"  smallest counterexample: a={cx['a']} b={cx['b']} c={cx['c']}{sc} -> device {cx['device']}, "
                  f"{cx['hypothesis']} gives {cx['model']}")
        if out.nearest:
            print("  nearest hypotheses (fewest wrong answers; a family missing shows as every family far off, "
                  "a range as one family near):")
        for r in out.nearest:
            ex = r["example"]
            nz = [f"{x}*{y}" for x, y in zip(ex["a"], ex["b"]) if int(x, 16) and int(y, 16)]
            print(f"    {r['wrong']:6d}/{r['of']} wrong  [{r['family']}] {r['hypothesis']}")
            sc = f" scales a={','.join(ex['a_scale'])} b={','.join(ex['b_scale'])}" if "a_scale" in ex else ""
            print(f"           e.g. c={ex['c']} {' '.join(nz[:4])}{' ...' if len(nz) > 4 else ''}{sc} -> device {ex['device']}, "
                  f"it gives {ex['model']}")
        if out.fallback is None and (args.space or "auto") == "default":
            print("  (--space default: the open ranges were not tried; --space auto goes on to them)")
        if solver:
            print(f"  {solver}")
        if args.output:       # the evidence of a no-fit is kept too (atomic)
            from smtmodel.io import atomic_open
            import json
            with atomic_open(args.output) as fh:
                json.dump({"kind": "mmaprobe.identify-no-fit", "device": device.name, "space": out.space.describe(),
                           "message": out.message, "counterexample": out.counterexample, "nearest": out.nearest,
                           "launches": out.launches, "probes": out.probes, "solver": out.solver_log,
                           **({"fallback": out.fallback} if out.fallback else {})}, fh, indent=1)
                fh.write("\n")
        return EXIT_OTHER
    # pending answers, or out of launches: say what survives and what would split it
    print(f"{out.status}: {out.message}")
    if out.sampled:
        print(f"no answers yet: all {out.space.size} hypotheses are live; the first launch's probes split a sample of "
              f"{sum(map(len, out.classes))} of them (every catalog model among them) into {len(out.classes)} class(es):")
    else:
        cat = sorted({x for i in out.live for x in out.catalog.get(i, ())})
        print(f"{len(out.live)} hypotheses fit every answer so far"
              + (f" (catalog models among them: {', '.join(cat)})" if cat else " (no catalog model among them)")
              + (f"; they fall into {len(out.classes)} class(es):" if len(out.classes) > 1 else ":"))
    if out.classes and (out.sampled or len(out.classes) > 1):
        for grp in out.classes[:12]:
            cat = sorted({x for i in grp for x in out.catalog.get(i, ())})
            print(f"  {len(grp):5d}  {out.spec(grp[0])}" + (f"  [catalog: {', '.join(cat)}]" if cat else ""))
    else:
        print("\n".join(_members(out, list(out.live))))
    if solver:
        print(f"  {solver}")
    if out.pending is not None:
        print(f"next probes: {out.pending.path} ({out.pending.count} cases)")
    return EXIT_UNKNOWN


def register(sub) -> None:
    s = sub.add_parser("identify", help="identify an unknown unit's arithmetic from a hypothesis space")
    s.add_argument("--device", required=True, help="twin:MODEL[:overrides], file:OBSERVED.jsonl, cuda[:N] or rocm[:N]; "
                                                    "with --gemm: twin-gemm:MODEL:DATAFLOW, file:CAPTURE.npz, "
                                                    "cuda-gemm[:N] or torch-gemm[:N]")
    s.add_argument("--gemm", action="store_true", help="the device runs whole GEMMs: recover the instruction "
                                                       "model and the dataflow (probe GEMMs, FPRev-style)")
    s.add_argument("--models", help="--gemm: comma list of models (default: every catalog model and rival of the "
                                    "formats)")
    s.add_argument("--capture", metavar="FILE.npz", help="--gemm: keep every launched GEMM and the device's "
                   "outputs in FILE.npz (the file: device's layout; replay with --device file:FILE.npz)")
    s.add_argument("--dataflow", action="append", help="--gemm: a dataflow of the space (repeatable; default: the "
                                                        "named profiles that apply and a grid)")
    s.add_argument("--in", dest="in_fmt", help="input format (default: the device's)")
    s.add_argument("--out", dest="out_fmt", help="output format (default: the device's)")
    s.add_argument("--space", default="auto",
                   help="auto (default: every family taking the formats, NVIDIA and AMD, with the seeds' values and "
                        "near neighbours; where nothing there fits, the open ranges, in the same run), default (the "
                        "first of those only), a family name, a comma list, 'open' (open ranges, ~10^6 points; "
                        "'open:FAMILY,...'), or a JSON space file")
    s.add_argument("--scale", help="block scales of the unit: mx (e8m0/32) or nvfp4 (ue4m3/16) -- for a new file "
                                   "device; a twin or a capture says so itself (default: the device's)")
    s.add_argument("--instruction", help="harness kernel id for --device cuda/rocm (default: from the formats)")
    s.add_argument("--k", type=int, help="products per case (default: the device's, else the pair's largest block)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("-j", "--jobs", type=int, default=_DEFAULTS.jobs,
                   help="processes streaming a large (open) space (default 0: the CPUs, at most 4, for a space "
                        "above 2^18 points)")
    s.add_argument("--max-launches", type=int, default=_DEFAULTS.max_launches,
                   help=f"design launches at most (default {_DEFAULTS.max_launches})")
    s.add_argument("--batch", type=int, default=_DEFAULTS.batch, help=f"probes per launch (default {_DEFAULTS.batch})")
    s.add_argument("--verify", type=int, default=_DEFAULTS.verify,
                   help=f"verification cases (default {_DEFAULTS.verify}; 0: none)")
    s.add_argument("--solver", choices=SOLVER_CHOICES, default="portfolio")
    s.add_argument("--timeout", type=float, default=_DEFAULTS.solver_timeout,
                   help=f"seconds per SMT question (default {_DEFAULTS.solver_timeout:g})")
    s.add_argument("--solver-pairs", type=int, default=_DEFAULTS.solver_pairs,
                   help=f"SMT questions per stage at most, between behaviours that neither the probes nor the twin "
                        f"search split (default {_DEFAULTS.solver_pairs}; 0: none). Identical terms and the twin "
                        f"search always run; a machine without a solver skips the stage and says so")
    s.add_argument("--solver-budget", type=float, default=_DEFAULTS.solver_budget,
                   help=f"seconds the SMT questions of a run may take in all (default {_DEFAULTS.solver_budget:g}; "
                        f"0: none; a zero-rule equivalence takes bitwuzla ~100 s)")
    s.add_argument("--deciding", help="narrowed: write one deciding input per pair of behaviours left as a vector "
                                      "file (expect: both points' outputs; default NAME.deciding.jsonl beside -o)")
    s.add_argument("-o", "--output", help="identified (or narrowed) model (JSON catalog entry, its status and the "
                                          "values still possible), written atomically")
    s.add_argument("--name", help="id of the identified model (default identified-IN-OUT)")
    s.add_argument("--journal", help="journal path (default: in $MMAPROBE_STATE, else ~/.local/state/mmaprobe, "
                                     "identify/OUTPUT-HASH.journal.jsonl, or identify.journal.jsonl without -o)")
    s.add_argument("--resume", action="store_true", help="continue the run recorded in the journal")
    s.add_argument("--next", help="file device: where to write probes that need answers (default NAME.next.jsonl "
                                  "beside the journal; --gemm: OUTPUT.next.npz beside -o, else a new temporary "
                                  "folder, named in the output)")
    declare_outputs(s, output="file", journal="file", next="file", deciding="file")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--progress", action="store_true", help="progress on stderr even when it is not a terminal")
    g.add_argument("--quiet", action="store_true", help="no progress")
    s.set_defaults(func=cmd_identify)
