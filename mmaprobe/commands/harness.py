"""The GPU harness's subcommands:

    harness list [--no-build]            kernels, their PTX / MFMA, expected SASS / ISA, build status here
    harness build [--check-sass]         compile every kernel (cached); verify the SASS (AMD: the ISA)
    run FILE --device D -o OUT           D = cuda[:N], rocm[:N] or twin:MODEL_ID
    verdict FILE                         per model: matches / total, first contradiction
    verify MODEL --device cuda --cases N -o OUT   random validation mix, mismatches to OUT
    export-matlab FILE --gpu G -o DIR    / import-matlab DIR --gpu G --in F --out F -o FILE
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from hw_runner import build as build_mod
from hw_runner import runner
from hw_runner.amd import build as amd_build
from hw_runner.amd.kernels import MFMA_KERNELS
from hw_runner.coverage import catalog_models, coverage
from hw_runner.errors import HarnessError
from hw_runner.kernels import KERNELS
from smtmodel.sampling import KINDS
from hw_runner.matlab_io import export_matlab, import_matlab
from hw_runner.verify import VERIFY_CHUNK, plan_verify
from smtmodel.catalog import unvalidated_ids
from smtmodel.vectors import read_vectors, write_vectors

from ..args import add_campaign, add_output, add_twin, twin_options
from ..campaign import Options, Task, journal_path, run_campaign
from .catalog import note_unvalidated
from ..errors import EXIT_OTHER, EXIT_UNKNOWN


def _sass_text(rx: str) -> str:
    return re.sub(r"\(\?!.*?\)", "", re.sub(r"\\b", "", rx)).replace("\\", "")


def _amd_specs(args) -> list:
    """The MFMA kernels selected by ``--gfx`` (all without it; an unknown target is an error)."""
    if not args.gfx:
        return list(MFMA_KERNELS.values())
    gfx = {amd_build.check_gfx(g) for g in args.gfx}
    return [s for s in MFMA_KERNELS.values() if gfx & set(s.gfx)]


def _amd_rows(args, link: bool) -> list:
    specs = _amd_specs(args)
    rows = amd_build.build(specs, link_objects=link)
    return [r for r in rows if not args.gfx or r.arch in {amd_build.check_gfx(g) for g in args.gfx}]


def cmd_list(args) -> int:
    vendors = _vendors(args)
    _amd_specs(args)                   # an unknown --gfx fails before anything is printed
    built = []
    if "nvidia" in vendors:
        rows = build_mod.build(check=True) if not args.no_build else None
        built += rows or []
        status = {(r.spec.id, r.arch): r for r in rows or []}
        print(f"{'kernel':26} {'arch':7} {'PTX instruction':58} {'expected SASS':30} status here")
        for spec in KERNELS.values():
            for arch in build_mod.check_archs(spec):
                r = status.get((spec.id, arch))
                st = "-" if r is None else r.status + (f" ({' '.join(r.sass)})" if r.sass and r.status == "ok" else "")
                print(f"{spec.id:26} {arch:7} {spec.ptx:58} {_sass_text(spec.expected_sass(arch)):30} {st}")
    if "amd" in vendors:
        rows = _amd_rows(args, link=True) if not args.no_build else None
        built += rows or []
        status = {(r.spec.id, r.arch): r for r in rows or []}
        if "nvidia" in vendors:
            print()
        print(f"{'kernel':26} {'gfx':7} {'LLVM intrinsic':40} {'expected MFMA':30} status here (MFMA in the ISA)")
        for spec in _amd_specs(args):
            for gfx in spec.gfx:
                if args.gfx and gfx not in {amd_build.check_gfx(g) for g in args.gfx}:
                    continue
                r = status.get((spec.id, gfx))
                st = "-" if r is None else r.status + (f" ({' '.join(r.sass)})" if r.sass else "")
                print(f"{spec.id:26} {gfx:7} {spec.intrinsic:40} {spec.mnemonic(gfx):30} {st}")
    gfx = {amd_build.check_gfx(g) for g in args.gfx} if args.gfx else None
    _print_coverage(coverage(catalog_models(vendors, gfx), None if args.no_build else built), args.no_build)
    return 0


def _print_coverage(archs, no_build: bool) -> None:
    """The catalog models per architecture with a kernel checked here, and each one without it."""
    what = "naming a kernel that runs on their target (not built: --no-build)" if no_build else \
        "with a kernel whose SASS/ISA check passed here"
    print(f"\ncatalog models {what}:")
    for c in archs:
        emu = f"  ({len(c.emulated)} through an emulating lowering)" if c.emulated else ""
        print(f"  {c.arch:14} {c.target:7} {len(c.covered):3}/{len(c.models)}{emu}")
    total, done = sum(len(c.models) for c in archs), sum(len(c.covered) for c in archs)
    print(f"  {'all':14} {'':7} {done:3}/{total}")
    missing = [(mid, why) for c in archs for mid, why in c.missing.items()]
    if missing:
        print("without one:")
        for mid, why in missing:
            print(f"  {mid}: {why}")


def _vendors(args) -> tuple[str, ...]:
    return ("nvidia", "amd") if args.vendor == "all" else (args.vendor,)


def cmd_build(args) -> int:
    vendors = _vendors(args)
    _amd_specs(args)
    rows = build_mod.build(check=args.check_sass) if "nvidia" in vendors else []
    amd = _amd_rows(args, link=True) if "amd" in vendors else []
    for r in rows:
        found = f"  [{' '.join(r.sass)}]" if r.sass else ""
        print(f"{r.spec.id:26} {r.target:7} {r.status}{found}")
    for r in amd:
        print(f"{r.spec.id:26} {r.target:7} {r.status}  [{' '.join(r.sass) or 'no MFMA'}]")
    rows = rows + amd
    failed = [r for r in rows if not r.ok]
    counts = {k: sum(1 for r in rows if r.status.startswith(k)) for k in ("ok", "built", "checked", "skipped", "failed")}
    print(", ".join(f"{v} {k}" for k, v in counts.items() if v) + f" (cache: {build_mod.cache_dir()})")
    return EXIT_OTHER if failed else 0


def cmd_prebuild(args) -> int:
    """Compile and SASS-check the kernels a GPU of ``--arch`` runs into a folder that travels to
    the GPU machine (hw_runner.build.prebuild; the survey loads them from there)."""
    rows = build_mod.prebuild(list(KERNELS.values()), args.arch, args.folder)
    for r in rows:
        print(f"{r.spec.id:26} {r.target:7} {r.status}  [{' '.join(r.sass)}]")
    bad = [r for r in rows if not r.status == "ok"]
    print(f"{len(rows) - len(bad)}/{len(rows)} kernels for {args.arch} in {args.folder}")
    return EXIT_OTHER if bad or not rows else 0


def cmd_run(args) -> int:
    vf = read_vectors(args.file)
    rep = runner.run_vectors(vf, args.device, kernel=args.kernel, replicate=args.replicate,
                             batch=args.batch, check_sass=not args.no_sass_check, twin=twin_options(args))
    write_vectors(args.output, vf)
    print(f"{rep.cases} cases on {rep.key} in {rep.seconds:.2f} s -> {args.output}")
    if args.device.startswith("twin:"):
        note_unvalidated(unvalidated_ids([args.device[len("twin:"):]]))
    if args.replicate:
        bad = rep.replicate_failures
        print(f"replicate check (CLFP step 1): {rep.cases - len(bad)}/{rep.cases} cases give identical D everywhere")
        for cid, vals in list(bad.items())[:5]:
            print(f"  {cid}: distinct outputs {', '.join(vals)}")
        return EXIT_OTHER if bad else 0
    return 0


def cmd_verdict(args) -> int:
    vf = read_vectors(args.file)
    res = runner.verdict(vf, device=args.device, nan_equal=args.nan_equal, include_twins=args.include_twins)
    if not res:
        raise HarnessError(f"{args.file}: no model predictions ('expect') to judge; add them first with "
                           f"mmaprobe eval {args.file} --model MODEL (repeatable) -o FILE, then run verdict on FILE")
    weak = {m.id for m in unvalidated_ids(res)}
    print(f"{'model':32} {'matches':>15}  status     first contradiction")
    for v in res.values():
        first = f"{v.first_contradiction} {v.detail}" if v.first_contradiction else ""
        status = v.status + (" (UNVALIDATED model)" if v.model in weak else "")
        print(f"{v.model:32} {v.matches:>7}/{v.total:<7}  {status:10} {first}")
    survivors = [v.model + (" (UNVALIDATED)" if v.model in weak else "") for v in res.values() if v.status == "survives"]
    print(f"surviving hypotheses: {', '.join(survivors) if survivors else 'none'}")
    note_unvalidated([m for m in unvalidated_ids(res)])
    return 0


def cmd_verify(args) -> int:
    plan = plan_verify(args.model, args.device, cases=args.cases, chunk=args.chunk, k=args.k, kernel=args.kernel,
                       seed=args.seed, nan_equal=args.nan_equal, keep=args.keep, check_sass=not args.no_sass_check,
                       twin=twin_options(args))
    tasks = [Task(key, fn, a) for key, fn, a in plan.tasks()]
    res = plan.gather(run_campaign("verify", plan.params(), tasks, journal_path(args.output), Options.from_args(args)))
    write_vectors(args.output, plan.vector_file(res))
    if not plan.other:
        print(f"layout self-test: {plan.probes}/{plan.probes} exact probes correct")
    for kind in KINDS:
        print(f"  {kind:7} {res.counts[kind][0]:>7} mismatches / {res.counts[kind][1]}")
    kept = f" ({len(res.cases)} written, --keep {args.keep} per chunk)" if len(res.cases) < res.mismatches else ""
    print(f"{plan.model.id} vs {plan.key}: {res.mismatches} mismatches in {res.total} cases -> {args.output}{kept}")
    note_unvalidated(unvalidated_ids(list(dict.fromkeys([plan.model.id] + ([plan.other] if plan.other else [])))))
    for line in res.lost:
        print(f"mmaprobe: chunk not verified: {line}", file=sys.stderr)
    if res.lost:
        return EXIT_UNKNOWN
    return EXIT_OTHER if res.mismatches else 0


def cmd_export_matlab(args) -> int:

    written = export_matlab(read_vectors(args.file), args.output, args.gpu, args.source)
    print("wrote " + ", ".join(str(p) for p in written.values()))
    return 0


def cmd_import_matlab(args) -> int:
    vf = import_matlab(args.directory, args.gpu, args.in_fmt, args.out_fmt, args.c_fmt)
    write_vectors(args.output, vf)
    print(f"{len(vf.cases)} cases (k={vf.header['k']}) -> {args.output}")
    return 0


def register(subparsers) -> None:
    """Add the harness subcommands to an ``argparse`` subparsers object."""
    h = subparsers.add_parser("harness", help="list and build the GPU instruction kernels")
    hs = h.add_subparsers(dest="harness_command", required=True)
    def vendor_opts(p):
        p.add_argument("--vendor", choices=("all", "nvidia", "amd"), default="all",
                       help="NVIDIA kernels (nvcc, SASS), AMD MFMA kernels (llvmlite, ld.lld, ISA) or both")
        p.add_argument("--gfx", action="append", help="AMD: only this target (gfx908, gfx90a, gfx942; repeatable)")

    p = hs.add_parser("list", help="every kernel: id, arch, PTX / LLVM intrinsic, expected SASS / MFMA, status here")
    p.add_argument("--no-build", action="store_true", help="do not compile to show the build status")
    vendor_opts(p)
    p.set_defaults(func=cmd_list)
    p = hs.add_parser("build", help="compile every kernel for its archs (cached); AMD: ISA always checked")
    p.add_argument("--check-sass", action="store_true", help="disassemble and check the tensor-core SASS")
    vendor_opts(p)
    p.set_defaults(func=cmd_build)

    p = hs.add_parser("prebuild", help="compile and SASS-check one GPU's kernels into a folder that travels "
                                       "to it (the survey loads them: no nvcc on the GPU machine's time)")
    p.add_argument("--arch", required=True, help="the GPU's architecture, e.g. sm_90")
    p.add_argument("--folder", default=str(Path(build_mod.__file__).parent / "prebuilt"),
                   help="where the cubins and index.json go (default hw_runner/prebuilt)")
    p.set_defaults(func=cmd_prebuild)

    def device_opts(p):
        p.add_argument("--kernel", help="kernel id (default: the model's / the mma.sync kernel with the largest K; "
                       "AMD: the 32x32 MFMA)")
        p.add_argument("--no-sass-check", action="store_true",
                       help="skip the SASS check (AMD: the ISA check) before launching")

    p = subparsers.add_parser("run", help="run a vector file on a GPU or a twin model")
    p.add_argument("file")
    p.add_argument("--device", required=True, help="cuda, cuda:N, rocm, rocm:N or twin:MODEL_ID")
    add_output(p, required=True)
    p.add_argument("--replicate", action="store_true",
                   help="CLFP step 1: copy each case into every row/column and check all of D is identical")
    p.add_argument("--batch", type=int, default=runner.BATCH, help="cases per kernel launch")
    device_opts(p)
    add_twin(p)
    p.set_defaults(func=cmd_run)

    p = subparsers.add_parser("verdict", help="compare observations with every model's predictions")
    p.add_argument("file")
    p.add_argument("--device", help="only observations whose device key contains this text")
    p.add_argument("--nan-equal", action="store_true", help="any NaN matches any NaN")
    p.add_argument("--include-twins", action="store_true", help="also count twin:MODEL outputs as observations")
    p.set_defaults(func=cmd_verdict)

    p = subparsers.add_parser("verify", help="random validation mix on hardware and twin; mismatches to a file")
    p.add_argument("model")
    p.add_argument("--device", default="cuda",
                   help="cuda, cuda:N, rocm or rocm:N; twin:MODEL compares with another model's twin (no GPU)")
    p.add_argument("--cases", type=int, default=100_000)
    p.add_argument("--k", type=int, help="products per case (default: the instruction's K)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--nan-equal", action="store_true", help="any NaN matches any NaN")
    add_output(p, required=True)
    device_opts(p)
    p.add_argument("--chunk", type=int, default=VERIFY_CHUNK,
                   help=f"cases per campaign task (default {VERIFY_CHUNK}); chunk i > 0 draws from seed [SEED, i]")
    p.add_argument("--keep", type=int, default=10_000,
                   help="mismatching cases written per chunk at most (default 10000; counts stay exact)")
    add_campaign(p)            # the twin side in chunks; journal OUTPUT.journal
    add_twin(p)
    p.set_defaults(func=cmd_verify)

    p = subparsers.add_parser("export-matlab", help="write a vector file as MATLAB tensor-core toolbox files")
    p.add_argument("file")
    p.add_argument("--gpu", required=True, help="GPU name used in the file names, e.g. H100")
    p.add_argument("--source", help="observed device key or model id whose outputs become d")
    add_output(p, required=True, help="directory", kind="dir")
    p.set_defaults(func=cmd_export_matlab)

    p = subparsers.add_parser("import-matlab", help="read MATLAB tensor-core toolbox files into a vector file")
    p.add_argument("directory")
    p.add_argument("--gpu", required=True)
    p.add_argument("--in", dest="in_fmt", required=True, help="fp16, bf16, tf32, fp8e4m3 or fp8e5m2")
    p.add_argument("--out", dest="out_fmt", required=True, help="fp32 or fp16")
    p.add_argument("--c-fmt", help="format of c (default: the output format)")
    add_output(p, required=True)
    p.set_defaults(func=cmd_import_matlab)
