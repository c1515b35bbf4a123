"""The acceptance bench's rows (``bench/identify.py``: one dict per hidden model) as the tables of
docs/results.md: per format pair (and family, for random points), and a headline that counts
them. ``python -m mmaprobe.docgen`` writes them from the committed rows
(``bench/results/identify.json``); nothing here runs identify.
"""

from __future__ import annotations

import statistics


def _med(xs) -> str:
    return f"{statistics.median(xs):.1f} ({max(xs):.1f})" if xs else "-"


def pairs_table(rows: list[dict]) -> str:
    """Per format pair (and family): units, own point in the class, identified / narrowed, reached
    by the open-space fall-back, launches max (median), probes max, wall and CPU seconds median
    (max), solver questions asked."""
    lines = ["| format pair | family | units | own point in class | identified / narrowed | fell back to open | "
             "launches max (median) | probes max | solver questions | wall s median (max) | CPU s median (max) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    by: dict = {}
    for r in rows:
        if "launches" in r:
            by.setdefault((r["pair"], r.get("family", "")), []).append(r)
    for (pair, fam), rs in sorted(by.items()):
        launches = [r["launches"] for r in rs]
        alike = sum(bool(r.get("alike_outside_space")) for r in rs)
        own = f"{sum(bool(r['own_point_in_class']) for r in rs)}/{len(rs)}" + \
            (f" (+{alike} outside the space, alike)" if alike else "")
        lines.append(
            f"| {pair} | {fam or 'catalog'} | {len(rs)} | {own} | "
            f"{sum(r['status'] == 'identified' for r in rs)} / {sum(r['status'] == 'narrowed' for r in rs)} | "
            f"{sum(bool(r.get('fallback')) for r in rs)} | {max(launches)} ({statistics.median(launches):g}) | "
            f"{max(r['probes'] for r in rs)} | {sum(r.get('solver_questions', 0) for r in rs)} | "
            f"{_med([r['seconds'] for r in rs])} | {_med([r.get('cpu_seconds', 0) for r in rs])} |")
    return "\n".join(lines)


def headline(rows: list[dict]) -> str:
    """What the rows add up to: units, own point in class, identified / narrowed, the largest
    launches and seconds, and the parameters left undecided where a class stays."""
    rs = [r for r in rows if "launches" in r]
    if not rs:
        return "No model rows."
    own = sum(bool(r["own_point_in_class"] or r.get("alike_outside_space")) for r in rs)
    ident = sum(r["status"] == "identified" for r in rs)
    undecided: dict = {}
    for r in rs:
        for p in r.get("undecided") or []:
            undecided[p] = undecided.get(p, 0) + 1
    left = ", ".join(f"{p} {n}" for p, n in sorted(undecided.items(), key=lambda x: (-x[1], x[0])))
    return (f"{len(rs)} units: {own}/{len(rs)} with the model's own point in the final class, "
            f"{ident} identified and {len(rs) - ident} narrowed"
            + (f" (parameters left undecided, units: {left})" if left else "")
            + f"; {min(r['launches'] for r in rs)}-{max(r['launches'] for r in rs)} design launches, "
            f"at most {max(r['seconds'] for r in rs):.1f} s wall ({max(r.get('cpu_seconds', 0) for r in rs):.1f} s CPU) "
            f"a unit, {sum(r['seconds'] for r in rs) / 60:.1f} min of identify in all.")


__all__ = ["headline", "pairs_table"]
