"""Acceptance bench of ``mmaprobe identify``: every catalog model as a hidden twin device and every
hardware capture as a file device, each run through the command line's defaults
(:func:`cli_run`: the command line's parser, then ``queries.identify.plan.prepare`` and
``run``, the code ``mmaprobe identify`` runs, so the figures are what a user gets with no flag:
``--space auto``, no SMT questions, ``-j`` the CPUs).

    .venv/bin/python bench/identify.py [--models ID ...] [--pairs IN:OUT ...] [--hwdata [NAME ...]]
                                       [--space NAME|open|file.json] [--verify N] [--jobs N]
                                       [--random N | --random-open N [--families NAME ...]]
                                       [--markdown] [--json FILE]

``--random N``: N seeded random points of each family's open ranges (per format pair of
``--pairs``) as hidden twins, each identified from ``--space`` (default ``open:FAMILY``, the
family's open ranges). ``--random-open N``: the same points, each through the command line's
defaults (the default space, then the whole open space of the pair where nothing fits). The
points are listed in the output. Seconds are wall and CPU (this process and its children: the
machine is shared, CPU seconds are the figure that carries over).

Per model: status (identified: one point or every point proved alike; narrowed: behaviours the
probes and the twin search did not split), whether the open space was reached by the fall-back,
design launches (target <= 6), probes, seconds, the class and its behaviours, the parameters
left undecided, whether the class holds the model's own point, and for a rival the probe that
told it apart from its base (the first answer the base got wrong). Per capture
(../shared/hwdata): whether the surviving class holds the point of the catalog model that
reproduces that capture, and how many hypotheses survive. Block-scaled models (MX, NVFP4) are
identified from their pair's scaled space (the device's scale format and block select it:
st-fdpa / gst-fdpa families), at k = the largest catalog block of the same pair and scales (32
for MXFP8/6, 64 for FP4).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from queries.identify import FileDevice  # noqa: E402
from queries.identify.summary import headline, pairs_table  # noqa: E402
from smtmodel.catalog import all_models, get_model  # noqa: E402
from smtmodel.catalog.spaces import SCALES, build_space, families_for  # noqa: E402
from smtmodel.formats import get_format  # noqa: E402
from smtmodel.workers import process_map  # noqa: E402

HWDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "hwdata")
ARCH = {"v100": "volta", "a100": "ampere", "a2": "ampere", "ada": "ada", "l40s": "ada", "h100": "hopper",
        "h200": "hopper", "b200": "blackwell"}


def _scale(m):
    return (m.scale_fmt, m.scale_block) if m.scale_fmt else None


def random_points(pairs: list, n: int, seed: int, families=None) -> list[tuple]:
    """(hidden spec, space) for ``n`` seeded random points of each family's open ranges per pair."""
    g = np.random.default_rng(seed)
    jobs = []
    for pair in pairs:
        fi, fo = pair.split(":")
        for scale in (None,) + tuple(SCALES.values()):        # unscaled, then MX and NVFP4 units
            for fam in families_for(fi, fo, scale):
                if families and fam.name not in families:
                    continue
                sp = build_space(fi, fo, f"open:{fam.name}", scale=scale)
                for i in g.choice(sp.size, min(n, sp.size), replace=False):
                    jobs.append((sp.spec(int(i)), f"open:{fam.name}"))
    return jobs


EXTRA_ARGV: list = []
"""Options every unit gets (``--jobs 1`` where the bench runs units in parallel itself: a pool's
workers cannot start the stream's)."""


def cli_run(argv: list) -> tuple:
    """(prepared run, outcome, wall s, CPU s) of ``mmaprobe identify ARGV`` with the command
    line's defaults for every option ARGV does not give (queries.identify.plan.prepare and run,
    the code the command runs), a journal in a temporary folder, quiet. CPU s: this process
    and its children (the stream's workers, the solvers)."""
    import resource
    import tempfile

    from mmaprobe.cli import build_parser
    from queries.identify.plan import prepare, run

    def cpu():
        me, ch = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime

    with tempfile.TemporaryDirectory() as tmp:
        args = build_parser().parse_args(["identify", *argv, *EXTRA_ARGV, "--journal", os.path.join(tmp, "j.jsonl"),
                                          "--quiet"])
        t0, c0 = time.perf_counter(), cpu()
        p = prepare(args)
        out = run(p)
        return p, out, time.perf_counter() - t0, cpu() - c0


def run_model(job) -> dict:
    """One hidden twin through the command line's defaults (``--space auto``: the default space,
    then the open one where nothing fits); ``space_arg``/``verify`` None: the defaults."""
    mid, space_arg, verify, seed = job[:4]
    m = get_model(mid)
    row = {"model": mid, "pair": f"{get_format(m.in_fmt).name}->{get_format(m.out_fmt).name}", "kind": m.kind}
    if len(job) > 4:
        row["family"] = job[4]
    if m.scale_fmt:
        row["scales"] = f"{m.scale_fmt}/{m.scale_block}"
    argv = ["--device", f"twin:{mid}", "--seed", str(seed)] + (["--space", space_arg] if space_arg else []) + \
        (["--verify", str(verify)] if verify is not None else [])
    p, out, wall, cpu = cli_run(argv)
    space, k = out.space, p.settings.k
    own = space.locate(m)
    from queries.identify.split import alike_keys
    groups = [[out.spec(i) for i in g] for g in (out.behaviours or [out.live])]
    row.update(status=out.status, k=k, space=space.size, fallback=bool(out.fallback), launches=out.launches,
               probes=out.probes, seconds=round(wall, 1), cpu_seconds=round(cpu, 1), class_size=len(out.live),
               behaviours=len(out.behaviours), undecided=alike_keys(groups)[0] if out.live else [],
               own_point_in_class=own in out.live, own_point_in_space=own is not None,
               # a point outside the space the run ended in (e-fdpa L=1 beside the fma chain, L=32 at
               # k=16 beside L=16): recovered where a point of the class reproduces it on every answer
               # and the verification
               alike_outside_space=own is None and out.status in ("identified", "narrowed") and out.verified > 0,
               identified=out.spec(out.winner) if out.winner is not None else None,
               verified=out.verified, solver_questions=len(out.solver_log))
    if m.rival_of:
        base = space.locate(get_model(m.rival_of))
        n = out.killed.get(base)
        if n is not None and n < len(out.obs):
            probe = out.obs.case_dict(n, m.in_fmt, m.c_fmt, m.scale_fmt)
            fo = get_model(m.rival_of)
            d_base = int(fo.evaluate(out.obs.a[n:n + 1], out.obs.b[n:n + 1], out.obs.c[n:n + 1],
                                     **out.obs.take([n]).scales())[0])
            row["deciding_probe"] = dict(probe, device=hex(int(out.answers[n])), base=hex(d_base))
            # the same split made readable by the twin alone (drop products, b -> 1, shorter mantissas)
            from queries.distinguish import Constraints, reduce_vector
            vals = {f"a{i}": int(x) for i, x in enumerate(out.obs.a[n])} | \
                {f"b{i}": int(x) for i, x in enumerate(out.obs.b[n])} | {"c": int(out.obs.c[n])}
            if out.obs.scaled:        # block-scaled rivals: the probe's scales travel with it
                vals |= {f"sa{i}": int(x) for i, x in enumerate(out.obs.sa[n])} | \
                    {f"sb{i}": int(x) for i, x in enumerate(out.obs.sb[n])}
            red = reduce_vector(m, fo, vals, k, Constraints())
            row["readable_probe"] = {key: hex(v) for key, v in red.items() if v or key == "c"}
        else:
            row["deciding_probe"] = None if base is None else "base not ruled out"
    return row


def run_capture(job) -> dict:
    """One capture as a file device through the command line (``--verify`` 0 by default here: a
    capture's verification is its own answers, every survivor reproduces them)."""
    name, space_arg, seed = job[:3]
    verify = job[3] if len(job) > 3 else 0
    path = os.path.join(HWDATA, f"{name}.jsonl.gz")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        dev = FileDevice(path, os.path.join(tmp, "next.jsonl"))
        a, b, c = dev.prior()[0].a, dev.prior()[0].b, dev.prior()[0].c
        d = dev.prior()[1]
        arch = ARCH[name.split("_")[0]]
        fits = [x for x in all_models() if x.arch == arch and (x.in_fmt, x.out_fmt) == (dev.in_fmt, dev.out_fmt)
                and not x.scale_fmt and np.array_equal(x.evaluate(a, b, c), d)]
        argv = ["--device", f"file:{path}", "--seed", str(seed), "--verify", str(verify),
                "--next", os.path.join(tmp, "next.jsonl")] + (["--space", space_arg] if space_arg else [])
        p, out, wall, cpu = cli_run(argv)
        space = out.space
        pts = {x.id: space.locate(x) for x in fits}
        return {"capture": name, "cases": len(d), "k": dev.k, "space": space.size, "status": out.status,
                "fallback": bool(out.fallback), "surviving": len(out.live), "classes": len(out.classes),
                "gpu_models": sorted(pts), "gpu_model_survives": any(p in out.live for p in pts.values()),
                "next_probes": out.pending.count if out.pending else 0, "seconds": round(wall, 1),
                "cpu_seconds": round(cpu, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*")
    p.add_argument("--pairs", nargs="*", help="only models of these IN:OUT pairs")
    p.add_argument("--hwdata", nargs="*", help="captures (default all) instead of models")
    p.add_argument("--space")
    p.add_argument("--verify", type=int, help="verification cases (default: the command line's, 100000; "
                                              "captures 0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--json")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--random", type=int, help="N random points of each family's open ranges (with --pairs), each "
                                              "from its family's open space (open:FAMILY, or --space)")
    p.add_argument("--random-open", type=int, help="N random points of each family's open ranges (with --pairs), "
                                                   "each through the command line's defaults (--space auto: the "
                                                   "default space, then the open one where nothing fits)")
    p.add_argument("--families", nargs="*", help="with --random or --random-open: only these families")
    a = p.parse_args(argv)
    EXTRA_ARGV[:] = ["--jobs", "1"] if a.jobs > 1 else []
    if a.random or a.random_open:
        pts = random_points(a.pairs or [], a.random or a.random_open, a.seed, a.families)
        jobs = [(spec, (a.space or sp) if a.random else a.space, a.verify, a.seed, sp.split(":", 1)[1])
                for spec, sp in pts]
        fn = run_model
    elif a.hwdata is not None:
        names = a.hwdata or sorted(f.split(".jsonl")[0] for f in os.listdir(HWDATA) if f.endswith(".jsonl.gz"))
        jobs, fn = [(n, a.space, a.seed, a.verify or 0) for n in names], run_capture
    else:
        ids = a.models or [m.id for m in all_models()]
        if a.pairs:
            ids = [i for i in ids if f"{get_model(i).in_fmt}:{get_model(i).out_fmt}" in a.pairs]
        jobs, fn = [(i, a.space, a.verify, a.seed) for i in ids], run_model
    rows = []
    for row in process_map(fn, jobs, a.jobs):
        rows.append(row)
        print(json.dumps(row), flush=True)
    if a.markdown:
        _markdown(rows)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    bad = [r for r in rows if r.get("status", "").startswith("skipped") is False and
           not (r.get("own_point_in_class") or r.get("alike_outside_space") or r.get("gpu_model_survives"))]
    return 1 if bad else 0


def _markdown(rows) -> None:
    if rows and "model" in rows[0]:
        print(headline(rows))
        print()
        print(pairs_table(rows))
        print()
        print("| model | pair | k | status | fell back | launches | probes | wall s | CPU s | class | behaviours | "
              "undecided |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['model']} | {r['pair']} | {r.get('k', '')} | {r['status']} | {'yes' if r.get('fallback') else ''} "
                  f"| {r.get('launches', '')} | {r.get('probes', '')} | {r.get('seconds', '')} | {r.get('cpu_seconds', '')} "
                  f"| {r.get('class_size', '')} | {r.get('behaviours', '')} | {', '.join(r.get('undecided') or [])} |")
    else:
        print("| capture | k | status | surviving | GPU model survives | next probes | wall s | CPU s |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['capture']} | {r['k']} | {r['status']} | {r['surviving']} | {r['gpu_model_survives']} "
                  f"| {r['next_probes']} | {r['seconds']} | {r.get('cpu_seconds', '')} |")


if __name__ == "__main__":
    sys.exit(main())
