"""``mmaprobe survey``: characterise a GPU in one command (the :mod:`survey` package plans, runs
and records; this module parses and prints).

    survey --device cuda -o DIR [--budget S] [--resume]      a lent GPU, captures + card in DIR
    survey --device dry:sm_90 -o DIR [--quick]                the same against twin GPUs
    survey --device dry:sm_90 --plan                          launches and cases per part, nothing run
    survey --recheck DIR [--no-digests]                      a survey's captures against today's catalog
    survey --export DIR KERNEL -o FILE.jsonl                  one kernel's captures as a vector file
"""

from __future__ import annotations

import sys

from ..errors import EXIT_OTHER, CliError


def cmd_survey(args) -> int:
    import survey as sv

    if args.export:
        folder, kernel = args.export
        if not args.output:
            raise CliError("survey --export DIR KERNEL needs -o FILE.jsonl")
        n = sv.export(folder, kernel, args.output)
        print(f"{n} cases of {kernel} -> {args.output}")
        return 0
    if args.recheck:
        from pathlib import Path
        has_kernels = (Path(args.recheck) / "kernels.npz").is_file() or not (Path(args.recheck) / "library.npz").is_file()
        res = sv.recheck(args.recheck) if has_kernels else {}
        if not has_kernels:
            print("(no kernel captures in this folder: the library part only)")
        bad = 0
        for kid, r in res.items():
            if r["model"] is None:
                print(f"{kid:28} no catalog model")
                continue
            ok = r["matches"] == r["total"]
            bad += not ok
            print(f"{kid:28} {r['model']:34} {r['matches']}/{r['total']}" + ("" if ok else "  REFUTED"))
        if not args.no_library:
            from survey.library_fit import recheck_library
            lines = recheck_library(args.recheck, digests=not args.no_digests,
                                    progress=None if args.quiet else lambda t: print(t, file=sys.stderr))
            for name, ok, text in lines:
                bad += not ok
                print(f"{name:28} {text}")
        return EXIT_OTHER if bad else 0
    if not args.plan and not args.output:
        raise CliError("survey needs -o DIR (or --plan, or --recheck DIR)")
    parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    settings = sv.Settings(cases=args.cases, seed=args.seed, budget=args.budget, parts=parts, verify=args.verify,
                           quick=args.quick, suite=args.suite, jobs=args.jobs, space=args.space,
                           kernels=tuple(k.strip() for k in (args.kernels or "").split(",") if k.strip()))
    target = sv.open_target(args.device, jobs=args.jobs)
    if args.plan:
        s = sv.open_survey(target, None, settings)
        _print_plan(s, target)
        return 0
    progress = None if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    s = sv.open_survey(target, args.output, settings, resume=args.resume, progress=progress)
    _print_plan(s, target)
    card = s.run()
    k = card["kernels"]
    own_bad = [kid for kid, e in k.items() if e.get("own_verdict", "").startswith("refuted")]
    failed = [kid for kid, e in k.items() if e["capture"] != "captured"]
    print(f"kernels: {len(k)} captured or tried, {len(failed)} failed to run, "
          f"{sum(1 for e in k.values() if e.get('own_verdict', '').startswith('survives'))} reproduced by their own "
          f"catalog model, {len(own_bad)} not" + (f" ({', '.join(own_bad)})" if own_bad else ""))
    if card["library"]:
        print(f"library: {sum(1 for e in card['library'].values() if e['capture'] == 'captured')}/"
              f"{len(card['library'])} GEMMs captured")
    if card["identify"]:
        from survey.card import identify_line
        for kid, r in card["identify"].items():
            print(f"identify {kid}: {identify_line(r)}")
    pin_bad = []
    if card.get("pin"):
        judged = {kid: e for kid, e in card["pin"].items() if "parameters" in e}
        params = [(kid, n, r) for kid, e in judged.items() for n, r in e["parameters"].items()]
        wits = [w for e in judged.values() for w in e.get("witnesses", [])]
        pin_bad = [f"{kid} {n}" for kid, n, r in params
                   if r["status"] == "none survive" or (r["status"] == "pinned" and not r["agrees_with_catalog"])]
        pin_bad += [f"{w['model']} {w['property']}" for w in wits if w["status"] == "differs"]
        print(f"pin: {len(judged)} kernels judged, {sum(r['status'] == 'pinned' for _, _, r in params)} of "
              f"{len(params)} open parameters pinned, {sum(w['status'] == 'observed' for w in wits)} of {len(wits)} "
              f"property witnesses observed; findings: {', '.join(pin_bad) or 'none'}")
    for x in card["not_run"]:
        print(f"not run: {x['step']}: {x['why']}")
    files = card.get("files", [])
    print(f"{len(files)} files in {args.output}: " + ", ".join(f"{n} ({b / 1024:.0f} KiB)" for n, b in files))
    return EXIT_OTHER if own_bad or failed or pin_bad else 0


def _print_plan(s, target) -> None:
    print(f"survey of {target.name} ({target.arch}); budget {s.settings.budget:.0f} s")
    print(f"  {'part':52} {'steps':>5} {'launches':>9} {'cases':>12}")
    for part, steps, launches, cases in s.plan_rows():
        print(f"  {part:52} {steps:>5} {launches:>9} {cases:>12,}")


def register(subparsers) -> None:
    p = subparsers.add_parser("survey", help="characterise a GPU: every kernel judged, library GEMMs, identify, "
                                             "a numerics card")
    p.add_argument("--device", default="cuda", help="cuda[:N], or dry:sm_XX[:wrong] for a dry run against twin GPUs "
                                                    "(default cuda)")
    p.add_argument("-o", "--output", help="folder for the journal, captures and the card (new, or with --resume)")
    p.add_argument("--resume", action="store_true", help="continue the survey recorded in the folder")
    p.add_argument("--budget", type=float, default=420.0,
                   help="seconds the survey may take; steps that do not fit are named in the card (default 420)")
    p.add_argument("--parts", default="kernels,library,identify",
                   help="comma list of kernels, library, identify, pin (pin: the parameters the committed captures "
                        "leave open and the refuted properties' witnesses, run first when named)")
    p.add_argument("--cases", type=int, default=10_000, help="validation-mix cases per kernel (default 10000; "
                                                              "chain, zero and c sets a quarter each)")
    p.add_argument("--verify", type=int, default=20_000, help="identify's verification cases (default 20000)")
    p.add_argument("--space", help="identify's hypothesis space (default: the pair's default space; 'open' for "
                                   "the open ranges, as in mmaprobe identify)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="small library shapes and one identify run (dry runs, CI)")
    p.add_argument("--kernels", help="comma list of kernel ids (default: every kernel of the GPU)")
    p.add_argument("--suite", help="folder of deciding vectors (default: the project's generated_tests)")
    p.add_argument("-j", "--jobs", type=int, help="threads for the twins (default: $MMAPROBE_JOBS, else every core)")
    p.add_argument("--plan", action="store_true", help="print launches and cases per part and stop")
    p.add_argument("--recheck", metavar="DIR",
                   help="judge a survey's captures with today's catalog: each kernel by its model; each library call "
                        "by the dispatch's prediction, else a (model, dataflow) search, on its block and whole-D digest")
    p.add_argument("--no-digests", action="store_true",
                   help="--recheck: judge library calls on their recorded blocks only (not the whole-D digests)")
    p.add_argument("--no-library", action="store_true", help="--recheck: the kernel captures only")
    p.add_argument("--export", nargs=2, metavar=("DIR", "KERNEL"),
                   help="write one kernel's captures as a vector file (-o FILE.jsonl) with the outputs observed: "
                        "for mmaprobe verdict or identify --device file: (e.g. --space open, off the GPU)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=cmd_survey)
