"""``mmaprobe dispatch`` and ``mmaprobe invariance batch|splitk|fast|against``: a library's
shape -> dataflow decisions (recorded tables, the H100 torch rule), and where a fixed row's bits
can change (docs/invariance.md).

Exit status of ``invariance``: 0 every pair of dataflows met computes the same bits (proved by
identical dataflow); 1 some row's bits change (each such pair has a twin-confirmed witness);
2 user error (unknown table, a shape not in the table, an M range too large); 3 some pair is
unknown (no witness found, nothing proved).
"""

from __future__ import annotations

from queries import invariance as inv
from smtmodel.dataflow.dispatch import OUTS
from smtmodel.dataflow.tables import NAMES, get_table
from smtmodel.formats import FormatError, format_of_dtype

from ..args import add_output
from ..errors import EXIT_OTHER, EXIT_UNKNOWN, CliError
from ..io import write_json


def _fmt(text: str, allowed) -> str:
    try:
        f = format_of_dtype(text).name           # also torch's and mmaemu's names (float8_e4m3fn, e4m3)
    except FormatError:
        f = text
    if f not in allowed:
        raise CliError(f"format {text!r}: one of {', '.join(allowed)}")
    return f


def _workspace(text: str) -> int:
    t = text.strip().lower().replace(" ", "")
    try:
        if t.endswith("mib"):
            return int(t[:-3]) << 20
        return int(t)
    except ValueError:
        raise CliError(f"--workspace {text!r}: bytes, or a number of MiB such as 1MiB") from None


def _common(args) -> dict:
    if args.n is None or args.k is None:
        raise CliError("--n and --k are required")
    fmts = ("fp8e4m3", "fp8e5m2", "fp16", "bf16")
    return dict(N=args.n, K=args.k, fmt_a=_fmt(args.a, fmts), fmt_b=_fmt(args.b, fmts),
                out=_fmt(args.out, OUTS), workspace=_workspace(args.workspace or _default_workspace(args.profile)))


def _default_workspace(profile: str) -> str:
    from smtmodel.dataflow import hopper_gemmex
    return f"{hopper_gemmex.WORKSPACE}" if profile == hopper_gemmex.NAME else "1MiB"


def cmd_dispatch(args) -> int:
    kw = _common(args)
    lo, hi = inv.parse_m(args.m)
    t = get_table(args.profile)
    fast = args.accum == "fast"
    got = t.lookup_m(range(lo, hi + 1), kw["N"], kw["K"], kw["fmt_a"], kw["fmt_b"], kw["out"], fast, kw["workspace"])
    if not got:
        raise CliError(t.not_in_table(lo, kw["N"], kw["K"], kw["fmt_a"], kw["fmt_b"], kw["out"], fast, kw["workspace"]))
    print(f"{t.name} ({t.device}): {t.setting_text(kw['fmt_a'], kw['fmt_b'], kw['out'], fast, kw['workspace'])}, "
          f"N={kw['N']} K={kw['K']}")
    for m in sorted(got):
        d = got[m]
        print(f"  M={m}: {d.split_text()}; {d.kernel_text()}; dataflow {d.dataflow.text()}")
    missing = (hi - lo + 1) - len(got)
    if missing:
        print(f"  not in the table (no claim): {inv.ranges_text(sorted(set(range(lo, hi + 1)) - set(got)))}")
    if args.output:
        write_json(args.output, {"tool": "mmaprobe dispatch", "rows": [got[m].to_json() for m in sorted(got)]})
    return 0


def cmd_invariance(args) -> int:
    kw = _common(args)
    Ms = inv.parse_m(args.m)
    inv.check_sizes(args.n, args.k, args.limit)
    opts = dict(Ms=Ms, seed=args.seed, limit=args.limit, **kw)
    fast = args.accum == "fast"
    if args.query == "batch":
        rep = inv.batch(args.profile, fast_=fast, **opts)
    elif args.query == "splitk":
        rep = inv.splitk(args.profile, fast_=fast, **opts)
    elif args.query == "fast":
        rep = inv.fast(args.profile, **opts)
    else:
        if not args.dataflow:
            raise CliError("invariance against needs --dataflow (a profile or key=value text)")
        rep = inv.against(args.profile, args.dataflow, fast_=fast, **opts)
    print(inv.report_text(rep))
    if args.output:
        write_json(args.output, {"tool": f"mmaprobe invariance {args.query}"} | rep.to_json())
    status = {g.verdict.status for g in rep.groups}
    return EXIT_UNKNOWN if "unknown" in status else EXIT_OTHER if "differ" in status else 0


def _shape_args(s, m_default: str) -> None:
    s.add_argument("--profile", required=True, choices=list(NAMES),
                   help="dispatch table: cublaslt-*: torch._scaled_mm through cuBLASLt 12.8.3.14 on that GPU "
                        "(mmaemu 0.1.0's records); torch-h100-gemmex: torch.matmul fp16/bf16 on the H100 "
                        "(an UNVALIDATED rule fitted to our captures)")
    s.add_argument("--m", default=m_default, help=f"M or LO:HI (at most {inv.MAX_M} values; default {m_default})")
    s.add_argument("--n", type=int, help="N (columns of the output)")
    s.add_argument("--k", type=int, help="K")
    s.add_argument("--a", default="fp8e4m3", help="format of A: fp8e4m3 (default), fp8e5m2; fp16, bf16 (torch-h100-gemmex)")
    s.add_argument("--b", default="fp8e4m3", help="format of B: fp8e4m3 (default), fp8e5m2; fp16, bf16 (torch-h100-gemmex)")
    s.add_argument("--out", default="bf16", help="output: bf16 (default), fp32, fp16, fp8e4m3, fp8e5m2")
    s.add_argument("--workspace", default=None,
                   help="cuBLAS(Lt) workspace: cublaslt-*: 1MiB (torch's default), 0, 4MiB, 32MiB; "
                        "torch-h100-gemmex: 32MiB (default) or any size")


def register(sub) -> None:
    s = sub.add_parser("dispatch", help="a library's dispatch (split-K, kernel, dataflow) for shapes: cuBLASLt's "
                                        "recorded FP8 tables, the H100 torch rule")
    _shape_args(s, "1")
    s.add_argument("--accum", choices=("fast", "slow"), default="fast", help="accumulation (default fast)")
    add_output(s, help="write the rows as JSON")
    s.set_defaults(func=cmd_dispatch)

    s = sub.add_parser("invariance", help="where a fixed row's bits change: batch size, split-K, accumulation")
    s.add_argument("query", choices=("batch", "splitk", "fast", "against"),
                   help="batch: the dataflow as M grows; splitk: recorded split against S=1; fast: fast against "
                        "slow accumulation; against: the recorded dataflow against --dataflow")
    _shape_args(s, "1:4096")
    s.add_argument("--accum", choices=("fast", "slow"), default="fast",
                   help="accumulation (default fast; not used by `fast`)")
    s.add_argument("--dataflow", help="against: the fixed dataflow (profile or text form, e.g. cutlass3-sm90)")
    s.add_argument("--limit", type=int, default=4096, help="witness candidates per pair before unknown (default 4096)")
    s.add_argument("--seed", type=int, default=0, help="seed of the witness search (default 0)")
    add_output(s, help="write the report (groups, witnesses as raw bits) as JSON")
    s.set_defaults(func=cmd_invariance)
