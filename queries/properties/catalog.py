"""The catalog x properties table: every floating-point model, every property, read from a journal
of checks (one JSON line per check, written by ``bench/properties.py``). Models whose parameters
are the same (they differ only in descriptive fields)
compute the same bits (:func:`queries.distinguish.api.parameter_groups`), so the first of a group
is checked and the others point to it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..distinguish.api import parameter_groups

__all__ = ["cell", "counts", "listing", "parameter_groups", "read_journal", "seed003", "summary_table", "table"]


def read_journal(path: "str | Path", timeout: float | None = None) -> dict:
    """(model id, property) -> the journal's row (the last one of a pair; only rows of ``timeout``
    when given), with ``tried``: every (timeout, twin seconds) the pair was checked at, in order."""
    rows, tried = {}, {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            if timeout is None or r.get("timeout") == timeout:
                key = (r["model"], r["property"])
                t = tried.setdefault(key, [])
                budget = (r.get("timeout"), r.get("twin_seconds"))
                if budget not in t:
                    t.append(budget)
                rows[key] = r | {"tried": t}
    return rows


def _budgets(tried: list) -> str:
    """The budgets a cell was checked at: ``6 s, 120 s, 25 s (twin 20 s)``."""
    return ", ".join(f"{t:g} s" + (f" (twin {w:g} s)" if w and w != 1 else "") for t, w in tried if t is not None)


def cell(row: dict) -> str:
    """One check as a table cell: the answer, who gave it and how long it took."""
    st = row["status"]
    if st == "n/a":
        return "n/a"
    if st == "refuted":
        who = row["solver"].split()[0]
        narrow = re.search(r"products (\d+)\.\.\d+ zero", row["solver"])
        if narrow:                   # the restricted question: products after the first few zero
            who += f" on {narrow.group(1)} products"
        return f"refuted ({who}, {row['seconds']:.1f} s)"
    if st == "proved":
        how = "cache" if row.get("cached") else row["solver"].split()[0]
        return f"**proved** ({how}, {row['seconds']:.1f} s)"
    tried = row.get("tried") or []
    if len(tried) > 1:
        return f"unknown ({row['seconds']:.1f} s; tried at {_budgets(tried)})"
    return f"unknown ({row['seconds']:.1f} s)"


def listing(groups: list[list]) -> list[tuple]:
    """(model, id of the model it shares parameters with, or None), group by group."""
    out = []
    for g in groups:
        out.append((g[0], None))
        out += [(m, g[0].id) for m in g[1:]]
    return out


def table(rows: dict, groups: list[list], props) -> str:
    """The markdown table: a row per model, a column per property."""
    head = "| model | " + " | ".join(props) + " |\n|---|" + "---|" * len(props) + "\n"
    lines = []
    for m, same in listing(groups):
        cells = [cell(rows[(same or m.id, p)]) if (same or m.id, p) in rows else "not run" for p in props]
        name = f"{m.id} (= {same})" if same else m.id
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return head + "\n".join(lines)


def counts(rows: dict, groups: list[list], props) -> dict:
    """property -> {status: number of models} (a group counts with all its models)."""
    out = {}
    for p in props:
        st: dict = {}
        for g in groups:
            r = rows.get((g[0].id, p))
            if r:
                st[r["status"]] = st.get(r["status"], 0) + len(g)
        out[p] = st
    return out


def summary_table(rows: dict, groups: list[list], props) -> str:
    """Per property: models proved / refuted / unknown / not applicable, and the median seconds
    of a check (the distinct parameter sets' checks); then every property together."""
    import statistics
    c = counts(rows, groups, props)
    lines = ["| property | proved | refuted | unknown | n/a | not run | median s per check |",
             "|---|---|---|---|---|---|---|"]
    every, total = [], {}
    for p in props:
        secs = [rows[(g[0].id, p)]["seconds"] for g in groups if (g[0].id, p) in rows
                and rows[(g[0].id, p)]["status"] != "n/a"]
        every += secs
        med = f"{statistics.median(secs):.1f}" if secs else ""
        done = sum(c[p].values())
        cells = [c[p].get(s, 0) for s in ("proved", "refuted", "unknown", "n/a")] + [sum(len(g) for g in groups) - done]
        total = {i: total.get(i, 0) + x for i, x in enumerate(cells)}
        lines.append(f"| `{p}` | " + " | ".join(map(str, cells)) + f" | {med} |")
    if len(props) > 1 and every:
        lines.append("| every property | " + " | ".join(str(total[i]) for i in range(5))
                     + f" | {statistics.median(every):.1f} |")
    return "\n".join(lines)


def seed003(rows: dict, groups: list[list], props) -> list[str]:
    """Seed 003's monotonicity claim (NVIDIA units can violate it; AMD units, with 3 extra bits,
    preserve it), model by model: the catalog's NVIDIA (sm) and AMD (gfx) units, for each
    monotonicity form in ``props``."""
    out = []
    for prop in [p for p in ("monotonicity", "monotonicity-normal") if p in props]:
        for vendor, pick in (("NVIDIA", lambda m: m.sm is not None), ("AMD", lambda m: bool(m.gfx))):
            by: dict = {}
            for m, same in listing(groups):
                if m.kind == "catalog" and pick(m):
                    r = rows.get((same or m.id, prop))
                    by.setdefault(r["status"] if r else "not run", []).append(m.id)
            out.append(f"{prop}, {vendor} catalog models: " + "; ".join(f"{st} {len(ids)}" for st, ids in
                                                                         sorted(by.items())))
            for st, ids in sorted(by.items()):
                if st != "refuted" or vendor == "AMD":
                    out.append(f"  {st}: {', '.join(ids)}")
    return out
