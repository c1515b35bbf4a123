"""An ``identify`` run planned from its options, checked before the first launch: the device, the
space (and the open space a no-fit goes on to: ``--space auto``), the settings and the journal.
The command line and the acceptance bench (bench/identify.py) plan their runs here, so that the
bench measures exactly what ``mmaprobe identify`` runs.

The options are read as attributes of one object (the command line's parsed arguments):
``device``, ``in_fmt``, ``out_fmt``, ``scale``, ``space``, ``instruction``, ``k``, ``seed``,
``max_launches``, ``batch``, ``verify``, ``solver``, ``timeout``, ``solver_pairs``,
``solver_budget``, ``jobs``, ``journal``, ``output``, ``resume``, ``next``, ``quiet``,
``progress``. A GPU device is opened through ``adapters`` (name -> factory: the command line
passes the harness's; this layer does not import hw_runner)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from smtmodel.catalog import all_models
from smtmodel.catalog.spaces import SpaceError, base_model, build_space, parse_scale
from smtmodel.formats import get_format, operand_formats, operand_key
from smtmodel.limits import CASES_MAX, cases_memory, check_at_most, check_memory, check_positive

from .devices import open_device
from .errors import IdentifyError
from .journal import Journal
from .loop import Settings, identify, stderr_progress

def state_dir() -> Path:
    """Where identify keeps what the user did not place (journals, and a file device's next probes
    beside them): ``$MMAPROBE_STATE``, else ``$XDG_STATE_HOME/mmaprobe``, else
    ``~/.local/state/mmaprobe`` -- never the current folder (a checkout)."""
    d = os.environ.get("MMAPROBE_STATE")
    if d:
        return Path(d)
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "mmaprobe"


def default_k(in_fmt: str, out_fmt: str, scale=None) -> int:
    """The largest block of the pair's catalog models with the same block scales (``scale``:
    (scale_fmt, scale_block) or None; twice L for the FP8 halves path)."""
    ks = [(2 * m.L if m.op == "fp8_via_fp16" else (m.L or 1)) for m in all_models()
          if (m.in_key, m.out_fmt) == (in_fmt, out_fmt)
          and ((m.scale_fmt, m.scale_block) if m.scale_fmt else None) == scale]
    return max(ks or [1])


def journal_path(opts) -> str:
    """``--journal``, else in :func:`state_dir`'s ``identify`` folder: ``STEM-HASH.journal.jsonl``
    for ``-o`` (HASH: of the output's absolute path, so that ``--resume`` with the same ``-o``
    finds it), ``identify.journal.jsonl`` without."""
    if opts.journal:
        return opts.journal
    base = state_dir() / "identify"
    if opts.output:
        out = Path(opts.output).resolve()
        return str(base / f"{out.stem}-{hashlib.sha256(str(out).encode()).hexdigest()[:10]}.journal.jsonl")
    return str(base / "identify.journal.jsonl")


POOL_CASES = 2048
"""Candidate probes a design reads at a time (the pool's random and structured cases, rounded up)."""


def check_sizes(opts) -> None:
    """The sizes of ``opts`` before anything is opened: --k, --batch, --max-launches at least 1,
    --verify at least 0, --batch and --verify at most :data:`smtmodel.limits.CASES_MAX`
    (:class:`smtmodel.limits.LimitError`)."""
    if opts.k is not None:
        check_positive("--k", opts.k)
    check_positive("--batch", opts.batch)
    check_positive("--max-launches", opts.max_launches)
    if opts.verify < 0:
        raise IdentifyError(f"--verify {opts.verify}: verification cases, 0 (none) or more")
    for opt, n in (("--batch", opts.batch), ("--verify", opts.verify)):
        check_at_most(opt, n, CASES_MAX, "the twin's time grows with the cases")


def run_memory(k: int, batch: int, verify: int) -> float:
    """Bytes a run at ``k`` needs at least: the larger of the design's pool, a launch and the
    verification, as cases of k products (:func:`smtmodel.limits.cases_memory`)."""
    return cases_memory(max(POOL_CASES, batch, verify), k, arrays=4)


@dataclass
class Prepared:
    """What ``identify`` runs: the device, the space (and the open space a no-fit goes on to:
    ``--space auto``), the settings and the journal, from the options."""
    device: object
    space: object
    fallback: object
    settings: Settings
    journal: object
    in_fmt: str
    out_fmt: str
    notes: tuple = ()
    """The journal's notes (a resumed run, a replaced journal), for the caller to print."""


def prepare(opts, adapters: dict | None = None) -> Prepared:
    """The run ``opts`` describes, checked before the first launch (:class:`IdentifyError` and
    the formats' errors for bad options)."""
    for opt in ("models", "dataflow", "capture"):
        if getattr(opts, opt, None):
            raise IdentifyError(f"--{opt} belongs to identify --gemm")
    check_sizes(opts)
    in_fmt = operand_key(*operand_formats(opts.in_fmt)) if opts.in_fmt else None     # fp16, or AxB
    out_fmt = get_format(opts.out_fmt).name if opts.out_fmt else None
    if opts.device.split(":")[0] in ("cuda", "rocm") and not (in_fmt and out_fmt):
        raise IdentifyError(f"--device {opts.device.split(':')[0]} needs --in and --out")
    try:
        want_scale = parse_scale(opts.scale) if getattr(opts, "scale", None) else None
    except SpaceError as exc:
        raise IdentifyError(str(exc)) from None
    c_fmt = base_model(in_fmt, out_fmt, want_scale).c_fmt if in_fmt and out_fmt else None
    jpath = journal_path(opts)
    nxt = opts.next
    if nxt is None and opts.device.startswith("file:"):     # beside the journal, never beside a capture
        nxt = str(Path(jpath).with_name(Path(opts.device[5:]).name.split(".jsonl")[0] + ".next.jsonl"))
    device = open_device(opts.device, in_fmt=in_fmt, out_fmt=out_fmt, next_path=nxt, adapters=adapters,
                         c_fmt=c_fmt, instruction=opts.instruction,
                         **({"scale": want_scale} if want_scale else {}))
    dev_in = operand_key(*operand_formats(device.in_fmt))
    in_fmt = in_fmt or dev_in
    out_fmt = out_fmt or get_format(device.out_fmt).name
    if (dev_in, get_format(device.out_fmt).name) != (in_fmt, out_fmt):
        raise IdentifyError(f"the device computes {device.in_fmt} -> {device.out_fmt}, not {in_fmt} -> {out_fmt}")
    # a block-scaled unit says so (its scale format and block); the format pair does not
    scale = (device.scale_fmt, device.scale_block) if getattr(device, "scale_fmt", None) else None
    if want_scale and scale != want_scale:
        raise IdentifyError(f"the device {device.name} has {f'{scale[0]}/{scale[1]}' if scale else 'no block scales'}, "
                            f"not --scale {want_scale[0]}/{want_scale[1]}")
    which = opts.space or "auto"
    space = build_space(in_fmt, out_fmt, None if which in ("auto", "default") else which, scale=scale)
    fallback = build_space(in_fmt, out_fmt, "open", scale=scale) if which == "auto" else None
    k = opts.k or getattr(device, "k", None) or default_k(in_fmt, out_fmt, scale)
    if getattr(device, "k", None) and k != device.k:
        raise IdentifyError(f"the device takes k={device.k}, not --k {k}")
    check_memory(run_memory(k, opts.batch, opts.verify), f"identify at k = {k} with --batch {opts.batch} and "
                 f"--verify {opts.verify}", "lower --k, --batch or --verify")
    progress = None if opts.quiet else stderr_progress(force=opts.progress)
    s = Settings(k=k, seed=opts.seed, max_launches=opts.max_launches, batch=opts.batch, verify=opts.verify,
                 solver=opts.solver, solver_timeout=opts.timeout, solver_pairs=opts.solver_pairs,
                 solver_budget=opts.solver_budget, progress=progress,
                 container_bits=not opts.device.startswith("file:"), jobs=opts.jobs)     # vector files keep TF32's low bits zero
    recorded = {"auto": [space.to_dict(), fallback.to_dict()]} if fallback is not None else space.to_dict()
    journal = Journal(jpath, {"space": recorded, "device": device.name, "k": k, "seed": opts.seed,
                              "in_fmt": in_fmt, "c_fmt": space.base.c_fmt, "out_fmt": out_fmt,
                              **({"scale_fmt": scale[0], "scale_block": scale[1]} if scale else {})}, opts.resume)
    if progress:
        more = f", then the open space ({fallback.size}) if nothing fits" if fallback is not None else ""
        progress(f"space: {space.describe()}{more}; device {device.name}; k={k}; journal {jpath}")
    return Prepared(device, space, fallback, s, journal, in_fmt, out_fmt, tuple(journal.notes))


def run(p: Prepared):
    """The loop on a prepared run (the outcome, :class:`queries.identify.Outcome`)."""
    return identify(p.space, p.device, p.settings, p.journal, fallback=p.fallback)
