"""``mmaprobe torch diff|capture|replay``: a PyTorch module's matmuls as chosen GPUs compute them
(docs/torch.md). Thin: the work is in :mod:`mmaprobe.torch` (``diff``, ``capture``); this parses
and prints. Each takes a Python FILE defining ``build()`` that returns ``(module, inputs)``; torch
is imported only when a command runs (missing: one line, exit 2)."""

from __future__ import annotations

import sys

from ..errors import EXIT_OTHER, CliError
from ..io import declare_outputs, write_json


def _torch():
    try:
        import torch  # noqa: F401
        import mmaprobe.torch as mt
    except ImportError:
        raise CliError("mmaprobe torch needs PyTorch: pip install -e '.[torch]' "
                       "(CPU wheels: --extra-index-url https://download.pytorch.org/whl/cpu)") from None
    return mt


def _quiet_warnings(args):
    import warnings
    if args.quiet:
        from mmaprobe.torch import EmulationWarning
        warnings.simplefilter("ignore", EmulationWarning)


def cmd_diff(args) -> int:
    mt = _torch()
    from mmaprobe.torch.diff import load_build, parse_choice
    a, b = parse_choice(args.gpu_a), parse_choice(args.gpu_b)
    if args.plot and not args.plot.lower().endswith((".png", ".svg", ".pdf")):
        raise CliError(f"--plot {args.plot}: give a .png, .svg or .pdf file")
    module, inputs = load_build(args.file, args.build)
    _quiet_warnings(args)
    common = {"jobs": args.jobs} if args.jobs else {}
    r = mt.diff(module, inputs, a, b, **common)
    print(r.text())
    print(f"emulated forwards: {r.seconds[0]:.2f} s ({r.a}), {r.seconds[1]:.2f} s ({r.b})")
    if args.plot:
        r.plot(args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    if args.output:
        write_json(args.output, r.to_json())
    return 0


def cmd_capture(args) -> int:
    _torch()
    from mmaprobe.torch.capture import capture, files_in
    from mmaprobe.torch.diff import load_build
    if args.max_mib <= 0:
        raise CliError(f"--max-mib {args.max_mib}: give a size > 0")
    if args.emulate and args.device not in (None, "cpu"):
        raise CliError("--emulate is the dry run on the CPU; it takes no --device")
    module, inputs = load_build(args.file, args.build)
    man = capture(module, inputs, args.out, device=args.device, emulate_as=args.emulate,
                  max_bytes=int(args.max_mib * 2 ** 20))
    where = man.get("name") or man["device"]
    print(f"captured {len(man['calls'])} linear call(s) of {len(man['layers'])} layer(s) on {where}"
          + (f" (emulated as {args.emulate})" if args.emulate else "")
          + f" in {man['seconds']:.2f} s; {man['left_out']} left out (budget {args.max_mib:g} MiB)")
    for f, n in files_in(args.out):
        print(f"  {args.out}/{f}  {n} bytes")
    return 0


def cmd_replay(args) -> int:
    _torch()
    from mmaprobe.torch.capture import replay
    _quiet_warnings(args)
    kw = {}
    if args.jobs:
        kw["jobs"] = args.jobs
    r = replay(args.dir, args.gpu, **kw)
    print(r.text())
    if args.output:
        write_json(args.output, r.to_json())
    return 0 if r.all_equal else EXIT_OTHER


def register(sub) -> None:
    t = sub.add_parser("torch", help="a PyTorch module's matmuls as chosen GPUs compute them (needs torch; "
                                     "docs/torch.md)")
    tsub = t.add_subparsers(dest="torch_command", required=True, metavar="SUBCOMMAND")

    def common(p):
        p.add_argument("file", help="a Python file defining build() -> (module, inputs): inputs a tensor or a "
                                    "tuple of tensors, the module called as module(*inputs)")
        p.add_argument("--build", default="build", metavar="NAME", help="the function to call (default build)")

    d = tsub.add_parser("diff", help="the module under two GPU choices, compared call by call: share of outputs "
                                     "differing, largest ulp distance, the first difference")
    common(d)
    d.add_argument("--gpu-a", required=True, metavar="CHOICE",
                   help="a GPU name (h100, b200, mi300x, ...), optionally with emulate flags: "
                        "'h100[tf32=off]', 'h100[reduced=on,workspace=BYTES]'")
    d.add_argument("--gpu-b", required=True, metavar="CHOICE", help="the other choice, as --gpu-a")
    d.add_argument("--plot", metavar="FILE.png", help="write the per-call figure (matplotlib)")
    d.add_argument("-o", "--output", metavar="FILE.json", help="write the per-call report as JSON")
    d.add_argument("-j", "--jobs", type=int, metavar="N", help="threads per emulated GEMM (default: $MMAPROBE_JOBS, else all cores)")
    d.add_argument("--quiet", action="store_true", help="no EmulationWarning notes on stderr")
    declare_outputs(d, output="file", plot="file")
    d.set_defaults(func=cmd_diff)

    c = tsub.add_parser("capture", help="run the module once (on a GPU: --device cuda) recording each nn.Linear "
                                        "call's inputs and outputs into DIR (capture.npz, capture.json)")
    common(c)
    c.add_argument("--out", required=True, metavar="DIR", help="the folder to write")
    c.add_argument("--device", help="move the module and inputs there first (e.g. cuda)")
    c.add_argument("--emulate", metavar="GPU", help="dry run: on the CPU, under emulate(gpu=GPU)")
    c.add_argument("--max-mib", type=float, default=16.0, help="byte budget in MiB; calls past it are left out "
                                                               "(default 16)")
    declare_outputs(c, out="dir")
    c.set_defaults(func=cmd_capture)

    r = tsub.add_parser("replay", help="each captured call run again on the CPU under emulate(gpu=...), compared "
                                       "bit for bit: share per layer (exit 1 if any call differs)")
    r.add_argument("dir", help="a folder written by mmaprobe torch capture")
    r.add_argument("--gpu", help="the GPU to emulate (default: the captured device's name, or the dry run's)")
    r.add_argument("-o", "--output", metavar="FILE.json", help="write the per-layer report as JSON")
    r.add_argument("-j", "--jobs", type=int, metavar="N", help="threads per emulated GEMM (default: $MMAPROBE_JOBS, else all cores)")
    r.add_argument("--quiet", action="store_true", help="no EmulationWarning notes on stderr")
    declare_outputs(r, output="file")
    r.set_defaults(func=cmd_replay)
