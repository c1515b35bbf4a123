"""Every floating-point model of the catalog x every property: proved / refuted / unknown, with
the time of each check and the solver that answered, at a stated timeout. Writes a journal (one
JSON line per check, so a run can be resumed) and the markdown table of docs/properties.md:

    python bench/properties.py [--props monotonicity,...] [--models GLOB,...] [--timeout 6]
                               [--twin-seconds 2] [--journal FILE.jsonl] [--table FILE.md] [--resume]

Models whose parameters are the same (they differ only in the architecture's name, e.g. hopper-
and blackwell-fp16-fp32) compute the same bits: the first is checked and the others reuse its
answer (the table says which). Each check is :func:`queries.properties.check_property` with the
portfolio: the twin search for ``--twin-seconds``, then Bitwuzla and z3 raced for the rest of
``--timeout``; an unknown names that timeout. The proof cache answers a proof done before (run
with ``MMAPROBE_PROOF_CACHE=0`` to prove again). Prints a summary: counts per property, the
unknowns by name, seed 003's monotonicity claim model by model (NVIDIA units vs AMD units), the
CPU seconds and the machine's load.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import resource
import sys
import time
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from queries.distinguish.api import DESCRIPTIVE  # noqa: E402
from queries.properties import PROPERTIES, NotApplicable, check_property  # noqa: E402
from smtmodel.catalog import all_models  # noqa: E402


def cpu_seconds() -> float:
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def groups(models) -> list[list]:
    """Models grouped by their parameters (every field but the descriptive ones), catalog order."""
    blank = {f: (() if f == "kernels" else "catalog" if f == "kind" else None if f in ("rival_of", "sm", "gfx")
                 else "") for f in DESCRIPTIVE}
    out: dict = {}
    for m in models:
        out.setdefault(replace(m, **blank), []).append(m)
    return list(out.values())


def run_one(prop: str, model_id: str, timeout: float, twin_seconds: float) -> dict:
    t0, c0 = time.perf_counter(), cpu_seconds()
    row = {"model": model_id, "property": prop, "timeout": timeout}
    try:
        r = check_property(prop, model_id, timeout=timeout, twin_seconds=twin_seconds, simplify_seconds=0.5)
    except NotApplicable as exc:
        return row | {"status": "n/a", "reason": str(exc), "seconds": 0.0}
    row |= {"status": r.status, "k": r.k, "solver": r.solver, "reason": r.reason, "cached": r.cached,
            "seconds": round(time.perf_counter() - t0, 2), "cpu": round(cpu_seconds() - c0, 2),
            "notes": r.witness.notes if r.witness else []}
    return row


def cell(row: dict) -> str:
    st = row["status"]
    if st == "n/a":
        return "n/a"
    if st == "refuted":
        return f"refuted ({row['solver'].split()[0]}, {row['seconds']:.1f} s)"
    if st == "proved":
        how = "cache" if row.get("cached") else row["solver"].split()[0]
        return f"**proved** ({how}, {row['seconds']:.1f} s)"
    return f"unknown ({row['seconds']:.1f} s)"


def table(rows: dict, models, props) -> str:
    head = "| model | " + " | ".join(props) + " |\n|---|" + "---|" * len(props) + "\n"
    lines = []
    for m, same in models:
        cells = [cell(rows[(same or m.id, p)]) if (same or m.id, p) in rows else "" for p in props]
        name = f"{m.id} (= {same})" if same else m.id
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return head + "\n".join(lines) + "\n"


def seed003(rows: dict, models) -> list[str]:
    """Seed 003's monotonicity claim (NVIDIA units can violate it; AMD units, with 3 extra bits,
    preserve it), model by model."""
    out = []
    for vendor, pick in (("NVIDIA", lambda m: m.sm is not None), ("AMD", lambda m: bool(m.gfx))):
        sel = [(m, same) for m, same in models if m.kind == "catalog" and pick(m)]
        by = {}
        for m, same in sel:
            r = rows.get((same or m.id, "monotonicity"))
            by.setdefault(r["status"] if r else "not run", []).append(m.id)
        out.append(f"{vendor} catalog models: " + "; ".join(f"{st} {len(ids)}" for st, ids in sorted(by.items())))
        for st, ids in sorted(by.items()):
            if st != "refuted" or vendor == "AMD":
                out.append(f"  {st}: {', '.join(ids)}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--props", default=",".join(PROPERTIES), help="comma-separated properties (default all)")
    ap.add_argument("--models", default="*", help="comma-separated globs of model ids (default every FP model)")
    ap.add_argument("--timeout", type=float, default=6.0, help="seconds per check (default 6)")
    ap.add_argument("--twin-seconds", type=float, default=2.0, help="the twin search's share (default 2)")
    ap.add_argument("--journal", default="bench_properties.jsonl", help="one JSON line per check (resumable)")
    ap.add_argument("--table", help="write the markdown table here")
    ap.add_argument("--resume", action="store_true", help="skip the checks already in the journal")
    args = ap.parse_args(argv)
    props = [p for p in args.props.split(",") if p]
    for p in props:
        if p not in PROPERTIES:
            ap.error(f"unknown property {p!r}; one of {', '.join(PROPERTIES)}")
    pats = args.models.split(",")
    models = [m for m in all_models() if any(fnmatch.fnmatch(m.id, p) for p in pats)]
    rows: dict = {}
    if args.resume and os.path.exists(args.journal):
        with open(args.journal, encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                if r.get("timeout") == args.timeout:
                    rows[(r["model"], r["property"])] = r
    elif os.path.exists(args.journal):
        os.remove(args.journal)
    load0 = os.getloadavg()
    t0, c0 = time.perf_counter(), cpu_seconds()
    listing = []
    grs = groups(models)
    with open(args.journal, "a", encoding="utf-8") as jf:
        for p in props:                      # property by property: the first ones finish whole
            for grp in grs:
                first = grp[0].id
                if (first, p) not in rows:
                    r = run_one(p, first, args.timeout, args.twin_seconds)
                    rows[(first, p)] = r
                    jf.write(json.dumps(r) + "\n")
                    jf.flush()
                    print(f"{p:20} {first:40} {cell(r)}", file=sys.stderr, flush=True)
    for grp in grs:
        listing.append((grp[0], None))
        listing += [(m, grp[0].id) for m in grp[1:]]
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    text = table(rows, listing, props)
    summary = [f"{len(models)} models ({len(grs)} distinct parameter sets) x {len(props)} properties; "
               f"timeout {args.timeout:g} s per check (twin search {args.twin_seconds:g} s, then bitwuzla and z3)",
               f"this run: wall {wall:.0f} s, CPU {cpu:.0f} s; load average {load0[0]:.1f} at the start, "
               f"{os.getloadavg()[0]:.1f} at the end ({os.cpu_count()} CPUs); the checks in the table took "
               f"{sum(r.get('seconds', 0) for r in rows.values()):.0f} s wall, "
               f"{sum(r.get('cpu', 0) for r in rows.values()):.0f} s CPU (this process and its solver children)"]
    for p in props:
        st: dict = {}
        for grp in grs:
            r = rows.get((grp[0].id, p))
            if r:
                st[r["status"]] = st.get(r["status"], 0) + len(grp)
        summary.append(f"{p}: " + ", ".join(f"{k} {v}" for k, v in sorted(st.items())) + " (models)")
    unknown = [f"{r['model']} {r['property']}" for r in rows.values() if r["status"] == "unknown"
               and r["property"] in props]
    summary.append(f"unknown ({len(unknown)}, each at the timeout; models sharing parameters count once): "
                   + (", ".join(unknown) or "none"))
    if "monotonicity" in props:
        summary += seed003(rows, listing)
    print("\n".join(summary))
    if args.table:
        with open(args.table, "w", encoding="utf-8") as fh:
            fh.write("\n".join(f"<!-- {s} -->" for s in summary[:2]) + "\n\n" + text)
        print(f"wrote {args.table}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
