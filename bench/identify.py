"""Acceptance bench of ``mmaprobe identify``: every catalog model as a hidden twin device, from the
default (union) space of its format pair, and every hardware capture as a file device.

    .venv/bin/python bench/identify.py [--models ID ...] [--pairs IN:OUT ...] [--hwdata [NAME ...]]
                                       [--space NAME|open|file.json] [--verify N] [--jobs N]
                                       [--random N [--families NAME ...]] [--markdown] [--json FILE]

``--random N``: N seeded random points of each family's open ranges (per format pair of
``--pairs``) as hidden twins, each identified from ``--space`` (default ``open:FAMILY``, the
family's open ranges); the points are listed in the output. Seconds are wall and CPU (the
machine is shared: CPU seconds of the one process are the figure that carries over).

Per model: design launches (target <= 6), probes, seconds, whether the identified class holds
the model's own point, and for a rival the probe that told it apart from its base (the first
answer the base got wrong). Per capture (../shared/hwdata): whether the surviving class holds the
point of the catalog model that reproduces that capture, and how many hypotheses survive.
Block-scaled models (MX, NVFP4) are identified from their pair's scaled space (the device's
scale format and block select it: st-fdpa / gst-fdpa families), at k = the largest catalog block
of the same pair and scales (32 for MXFP8/6, 64 for FP4).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from multiprocessing import Pool

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from queries.identify import FileDevice, Settings, TwinDevice, identify  # noqa: E402
from smtmodel.catalog import all_models, get_model  # noqa: E402
from smtmodel.catalog.spaces import SCALES, build_space, families_for  # noqa: E402
from smtmodel.formats import get_format  # noqa: E402

HWDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "hwdata")
ARCH = {"v100": "volta", "a100": "ampere", "a2": "ampere", "ada": "ada", "l40s": "ada", "h100": "hopper",
        "h200": "hopper", "b200": "blackwell"}


def _scale(m):
    return (m.scale_fmt, m.scale_block) if m.scale_fmt else None


def default_k(m) -> int:
    fi, fo = get_format(m.in_fmt).name, get_format(m.out_fmt).name
    ks = [(2 * x.L if x.op == "fp8_via_fp16" else (x.L or 1)) for x in all_models()
          if (get_format(x.in_fmt).name, get_format(x.out_fmt).name) == (fi, fo) and _scale(x) == _scale(m)]
    return max(ks or [1])


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


def run_model(job) -> dict:
    mid, space_arg, verify, seed = job
    m = get_model(mid)
    row = {"model": mid, "pair": f"{get_format(m.in_fmt).name}->{get_format(m.out_fmt).name}", "kind": m.kind}
    if m.scale_fmt:
        row["scales"] = f"{m.scale_fmt}/{m.scale_block}"
    space = build_space(m.in_key, m.out_fmt, space_arg, scale=_scale(m))
    k = default_k(m)
    t0, c0 = time.perf_counter(), time.process_time()
    out = identify(space, TwinDevice(mid), Settings(k=k, seed=seed, verify=verify, solver_pairs=0))
    own = space.locate(m)
    row.update(status=out.status, k=k, space=space.size, launches=out.launches, probes=out.probes,
               seconds=round(time.perf_counter() - t0, 1), cpu_seconds=round(time.process_time() - c0, 1),
               class_size=len(out.live),
               own_point_in_class=own in out.live, identified=out.spec(out.winner) if out.winner is not None else None,
               verified=out.verified)
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
    name, space_arg, seed = job
    path = os.path.join(HWDATA, f"{name}.jsonl.gz")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        dev = FileDevice(path, os.path.join(tmp, "next.jsonl"))
        space = build_space(dev.in_fmt, dev.out_fmt, space_arg)
        a, b, c = dev.prior()[0].a, dev.prior()[0].b, dev.prior()[0].c
        d = dev.prior()[1]
        arch = ARCH[name.split("_")[0]]
        fits = [x for x in all_models() if x.arch == arch and (x.in_fmt, x.out_fmt) == (dev.in_fmt, dev.out_fmt)
                and not x.scale_fmt and np.array_equal(x.evaluate(a, b, c), d)]
        t0 = time.perf_counter()
        out = identify(space, dev, Settings(k=dev.k, seed=seed, verify=0, solver_pairs=0))
        pts = {x.id: space.locate(x) for x in fits}
        return {"capture": name, "cases": len(d), "k": dev.k, "space": space.size, "status": out.status,
                "surviving": len(out.live), "classes": len(out.classes), "gpu_models": sorted(pts),
                "gpu_model_survives": any(p in out.live for p in pts.values()),
                "next_probes": out.pending.count if out.pending else 0, "seconds": round(time.perf_counter() - t0, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*")
    p.add_argument("--pairs", nargs="*", help="only models of these IN:OUT pairs")
    p.add_argument("--hwdata", nargs="*", help="captures (default all) instead of models")
    p.add_argument("--space")
    p.add_argument("--verify", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--json")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--random", type=int, help="N random points of each family's open ranges (with --pairs)")
    p.add_argument("--families", nargs="*", help="with --random: only these families")
    a = p.parse_args(argv)
    if a.random:
        pts = random_points(a.pairs or [], a.random, a.seed, a.families)
        jobs, fn = [(spec, a.space or sp, a.verify, a.seed) for spec, sp in pts], run_model
    elif a.hwdata is not None:
        names = a.hwdata or sorted(f.split(".jsonl")[0] for f in os.listdir(HWDATA) if f.endswith(".jsonl.gz"))
        jobs, fn = [(n, a.space, a.seed) for n in names], run_capture
    else:
        ids = a.models or [m.id for m in all_models()]
        if a.pairs:
            ids = [i for i in ids if f"{get_model(i).in_fmt}:{get_model(i).out_fmt}" in a.pairs]
        jobs, fn = [(i, a.space, a.verify, a.seed) for i in ids], run_model
    rows = []
    with Pool(a.jobs) if a.jobs > 1 else _Serial() as pool:
        for row in pool.imap(fn, jobs):
            rows.append(row)
            print(json.dumps(row), flush=True)
    if a.markdown:
        _markdown(rows)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    bad = [r for r in rows if r.get("status", "").startswith("skipped") is False and
           not (r.get("own_point_in_class") or r.get("gpu_model_survives"))]
    return 1 if bad else 0


class _Serial:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def imap(self, fn, jobs):
        return map(fn, jobs)


def _pairs_table(rows) -> None:
    """Per format pair: models, identified with their own point in the class, launches max
    (median), probes max, seconds median (max), wall and CPU."""
    print("| format pair | units | own point in class | launches max (median) | probes max | "
          "seconds median (max) | CPU s median (max) |")
    print("|---|---|---|---|---|---|---|")
    by: dict = {}
    for r in rows:
        if "launches" in r:
            by.setdefault(r["pair"], []).append(r)
    for pair, rs in sorted(by.items()):
        L = [r["launches"] for r in rs]
        sec = [r["seconds"] for r in rs]
        cpu = [r.get("cpu_seconds", 0) for r in rs]
        print(f"| {pair} | {len(rs)} | {sum(bool(r['own_point_in_class']) for r in rs)}/{len(rs)} | "
              f"{max(L)} ({np.median(L):g}) | {max(r['probes'] for r in rs)} | {np.median(sec):.1f} ({max(sec):.1f}) | "
              f"{np.median(cpu):.1f} ({max(cpu):.1f}) |")


def _markdown(rows) -> None:
    if rows and "model" in rows[0]:
        _pairs_table(rows)
        print()
        print("| model | pair | k | launches | probes | seconds | CPU s | class | status |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['model']} | {r['pair']} | {r.get('k', '')} | {r.get('launches', '')} | {r.get('probes', '')} "
                  f"| {r.get('seconds', '')} | {r.get('cpu_seconds', '')} | {r.get('class_size', '')} | {r['status']} |")
    else:
        print("| capture | k | surviving | GPU model survives | next probes | seconds |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['capture']} | {r['k']} | {r['surviving']} | {r['gpu_model_survives']} | {r['next_probes']} "
                  f"| {r['seconds']} |")


if __name__ == "__main__":
    sys.exit(main())
