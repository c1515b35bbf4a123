"""Which GPUs are bitwise interchangeable, per format and dataflow: the catalog's units grouped by
format, then by parameters, and every pair of groups asked ``chain-equal`` under each dataflow.
Writes the table of docs/crossgpu.md (between its ``crossgpu table`` markers) and a journal:

    python bench/crossgpu.py [--dataflows cutlass2,instruction] [--timeout 20] [--twin-seconds 0.5]
                             [--formats GLOB,...] [--journal FILE.jsonl [--resume]] [--doc docs/crossgpu.md]

Units: the catalog's models (rivals left out), the B300 aliases (the stated assumption: B300
computes as B200) and the integer models. Models of one format whose parameters are the same
(:func:`queries.distinguish.api.parameter_groups`) compute one function: they form one group, and
are interchangeable for every K under every dataflow without a query. Each pair of groups of a
format on different sets of architectures (two variants of one instruction on the same GPUs, e.g.
wrap-around vs ``.satfinite``, are not a pair of GPUs) is :func:`queries.crossgpu.chain_equal` on
the groups' first models, under each dataflow
(integer units: the ``instruction`` dataflow only; units with block scales are grouped but not
queried: the GEMM dataflows take no block scales). ``--timeout`` is per solver query.
``--resume`` keeps the journal's rows of unchanged parameters and runs only the others (the table then says how
many came from the journal). Prints the counts, the CPU seconds and the machine's load.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from queries.crossgpu import chain_equal  # noqa: E402
from queries.distinguish.api import parameter_groups, parameters  # noqa: E402
from smtmodel.catalog import alias_models, all_models, integer_models  # noqa: E402
from smtmodel.model import INT_OPS  # noqa: E402

BEGIN, END = "<!-- crossgpu table: bench/crossgpu.py writes it -->", "<!-- end crossgpu table -->"


def cpu_seconds() -> float:
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def units() -> list:
    seen, out = set(), []
    for m in all_models() + alias_models() + integer_models():
        if m.kind == "catalog" and m.id not in seen:
            seen.add(m.id)
            out.append(m)
    return out


def format_label(m) -> str:
    fa, fb, fc, fo = m.formats
    ops = fa if fa == fb else f"{fa} x {fb}"
    scale = f", {m.scale_fmt} scales per {m.scale_block}" if m.scale_fmt else ""
    return f"{ops} -> {fo} (c {fc}{scale})"


def by_format(models) -> dict:
    out: dict = {}
    for m in models:
        out.setdefault(format_label(m), []).append(m)
    return {k: v for k, v in out.items() if len({m.arch for m in v}) > 1}


def cell(row: dict) -> str:
    st = row["status"]
    if st == "proved":
        return f"**equal, every K** ({row['how']}, {row['seconds']:.1f} s)"
    if st == "refuted":
        least = "" if row["smallest"] else "; smaller K not settled"
        return f"differ from K = {row['k']}{least} ({row['seconds']:.1f} s)"
    if st == "n/a":
        return row["reason"]
    return f"unknown ({row['reason']}; {row['seconds']:.1f} s)"


def fingerprint(m) -> str:
    """A short hash of a model's parameters: a journal row is reused only for the same parameters."""
    return hashlib.sha256(repr(parameters(m)).encode()).hexdigest()[:16]


def run_pair(a, b, df: str, timeout: float, twin_seconds: float) -> dict:
    t0, c0 = time.perf_counter(), cpu_seconds()
    row = {"a": a.id, "b": b.id, "dataflow": df, "params": [fingerprint(a), fingerprint(b)]}
    if a.scale_fmt:
        return row | {"status": "n/a", "reason": "not queried (block scales)", "seconds": 0.0}
    if a.op in INT_OPS and df != "instruction":
        return row | {"status": "n/a", "reason": "n/a (integer units: instruction only)", "seconds": 0.0}
    r = chain_equal(a, b, dataflow=df, timeout=timeout, twin_seconds=twin_seconds)
    return row | {"status": r.status, "how": r.how, "k": r.k, "smallest": r.smallest, "reason": r.reason,
                  "obligations": len(r.obligations), "seconds": round(time.perf_counter() - t0, 2),
                  "cpu": round(cpu_seconds() - c0, 2)}


def short(m) -> str:
    return m.id + (" (B300, assumed = B200)" if m.arch == "blackwell-ultra" else "")


def table(sections: list, dataflows: list) -> str:
    lines, single = [], []
    for label, grs, rows in sections:
        if len(grs) < 2:
            single.append(f"- {label}: {', '.join(short(m) for m in grs[0])}")
            continue
        lines.append(f"### {label}\n")
        for i, g in enumerate(grs):
            lines.append(f"- **{chr(65 + i)}**: {', '.join(short(m) for m in g)}")
        lines.append("")
        if not rows:
            lines.append("No cross-architecture pair of groups (the groups are variants of an instruction on the same "
                         "GPUs).\n")
            continue
        lines.append("| pair | " + " | ".join(dataflows) + " |\n|---|" + "---|" * len(dataflows))
        for (i, j), by_df in rows.items():
            lines.append(f"| {chr(65 + i)} vs {chr(65 + j)} | " + " | ".join(cell(by_df[d]) for d in dataflows) + " |")
        lines.append("")
    if single:
        lines.append("### Formats whose units form one group\n")
        lines.append("Every unit of each of these formats computes the same bits (identical parameters): "
                     "interchangeable for every K under every dataflow.\n")
        lines += single + [""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataflows", default="cutlass2,instruction")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per solver query")
    ap.add_argument("--twin-seconds", type=float, default=0.5, help="seconds of twin search per K")
    ap.add_argument("--formats", default="*", help="globs on the format labels, comma-separated")
    ap.add_argument("--journal", help="write one JSON line per pair and dataflow here")
    ap.add_argument("--resume", action="store_true", help="keep the journal's rows, run only the missing ones")
    ap.add_argument("--doc", help="replace the table between the markers of this page (docs/crossgpu.md)")
    args = ap.parse_args(argv)
    dfs = [d.strip() for d in args.dataflows.split(",") if d.strip()]
    globs = [g.strip() for g in args.formats.split(",")]
    c0 = cpu_seconds()
    kept: dict = {}
    if args.resume and args.journal and os.path.exists(args.journal):
        with open(args.journal, encoding="utf-8") as fh:
            for line in fh:
                try:
                    row = json.loads(line)
                except ValueError:          # a torn last line
                    continue
                kept[(row["a"], row["b"], row["dataflow"])] = row
    journal = open(args.journal, "a" if args.resume else "w", encoding="utf-8") if args.journal else None
    reused = 0
    sections, counts = [], {"formats": 0, "units": 0, "groups": 0, "pairs": 0}
    tally: dict = {}
    for label, models in by_format(units()).items():
        if not any(fnmatch.fnmatch(label, g) for g in globs):
            continue
        grs = parameter_groups(models)
        counts["formats"] += 1
        counts["units"] += len(models)
        counts["groups"] += len(grs)
        rows: dict = {}
        for i in range(len(grs)):
            for j in range(i + 1, len(grs)):
                if {m.arch for m in grs[i]} == {m.arch for m in grs[j]}:
                    continue            # two instructions (variants) of the same GPUs: not a pair of GPUs
                counts["pairs"] += 1
                rows[(i, j)] = {}
                for df in dfs:
                    row = kept.get((grs[i][0].id, grs[j][0].id, df))
                    if row is not None and row.get("params") != [fingerprint(grs[i][0]), fingerprint(grs[j][0])]:
                        row = None              # the models' parameters changed since the row was written
                    if row is None:
                        row = run_pair(grs[i][0], grs[j][0], df, args.timeout, args.twin_seconds)
                        if journal:
                            journal.write(json.dumps(row) + "\n")
                            journal.flush()
                    else:
                        reused += 1
                    rows[(i, j)][df] = row
                    tally[(df, row["status"])] = tally.get((df, row["status"]), 0) + 1
                    print(f"{label}: {row['a']} vs {row['b']} [{df}]: {cell(row)}", flush=True)
        sections.append((label, grs, rows))
    if journal:
        journal.close()
    cpu = cpu_seconds() - c0
    summed = sum(r["seconds"] for sec in sections for by_df in sec[2].values() for r in by_df.values())
    summary = (f"{counts['formats']} formats with units on more than one architecture, {counts['units']} units in "
               f"{counts['groups']} groups of identical parameters, {counts['pairs']} pairs of groups; "
               + "; ".join(f"{df}: " + ", ".join(f"{n} {st}" for (d, st), n in sorted(tally.items()) if d == df)
                           for df in dfs)
               + f". Timeout {args.timeout:g} s per solver query, twin {args.twin_seconds:g} s per K; the queries "
               f"took {summed:.0f} s wall in all on {os.cpu_count()} CPUs"
               + (f" (the {reused} rows read from the journal)." if reused else
                  f"; {cpu:.0f} CPU s, load {os.getloadavg()[0]:.1f} at the end."))
    print(summary)
    if args.doc:
        text = open(args.doc, encoding="utf-8").read()
        body = f"{BEGIN}\n{summary}\n\n{table(sections, dfs)}\n{END}"
        new, n = re.subn(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _m: body, text, flags=re.S)
        if n != 1:
            print(f"{args.doc}: no table markers ({BEGIN} ... {END})", file=sys.stderr)
            return 2
        with open(args.doc, "w", encoding="utf-8") as fh:
            fh.write(new)
        print(f"wrote {args.doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
