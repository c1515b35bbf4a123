"""What identify hands back: the identified model as a catalog entry (JSON, written atomically,
read back by :func:`smtmodel.catalog.get_model`), the evidence (for each parameter, the probe and
the device's answer that ruled out the hypothesis differing from the winner in that parameter
alone), and a readable table."""

from __future__ import annotations

import dataclasses
import json

import numpy as np


from smtmodel.formats import get_format
from smtmodel.io import atomic_open

from .hypotheses import try_outputs
from .loop import Outcome

KIND = "mmaprobe.model"


def params_of(spec: str) -> dict:
    """The overrides of a point, ``key -> value text``."""
    _, _, over = spec.partition(":")
    return dict(item.split("=", 1) for item in over.split(",") if "=" in item)


def evidence(out: Outcome) -> list[dict]:
    """Per parameter of the winner: the first answer that ruled out a point differing from it in
    that parameter alone (the deciding probe), or why none did."""
    if out.winner is None:
        return []
    win = params_of(out.spec(out.winner))
    neighbours: dict = {}        # key -> (differing keys, answer index, point): the nearest rival ruled out
    for i, n in _ruled_out(out):
        if n >= len(out.obs):
            continue
        p = params_of(out.spec(i))
        diff = [key for key in win if p.get(key) != win[key]]
        for key in diff:
            cand = (len(diff), n, i)
            if key not in neighbours or cand < neighbours[key]:
                neighbours[key] = cand
    live = {i: params_of(out.spec(i)) for i in out.live}
    fi = out.space.base
    fo = get_format(fi.out_fmt)
    from .split import alike_keys
    undecided, alike = alike_keys([[out.spec(i) for i in g] for g in (out.behaviours or [out.live])])
    rows = []
    for key, val in win.items():
        row = {"parameter": key, "value": val}
        near = neighbours.get(key)
        others = sorted({p[key] for p in live.values() if key in p and p[key] != val})
        if near and near[0] == 1 or near and not _tied(key, win, live):
            _, n, i = near
            d = try_outputs(out.spec(i), out.obs.take([n]))
            row.update(rival=params_of(out.spec(i)).get(key, "-"), rival_point=out.spec(i),
                       also_differs=[x for x in win if params_of(out.spec(i)).get(x) != win[x] and x != key], probe=out.obs.case_dict(n, fi.in_fmt, fi.c_fmt, fi.scale_fmt),
                       device=fo.hex(int(out.answers[n])), rival_answer=fo.hex(int(d[0])) if d is not None else "-",
                       decided="ruled out by this probe")
        elif not others:
            row["decided"] = "no single-parameter rival in the space was tested against it"
        if others:
            vals = ", ".join(f"{key}={v}" for v in others)
            if key in undecided:
                same = [i for i, p in live.items() if p.get(key) in others and i in out.proofs
                        and not out.proofs[i].startswith("equivalent")]
                why = out.proofs[same[0]] if same else "the probes do not split them"
                row["still"] = f"not decided: {vals} fit as well ({why})"
            else:
                row["still"] = f"alike: {vals} compute the same at k={out.obs.k} (proved: identical terms or the solver)"
            row.setdefault("decided", row["still"])
        rows.append(row)
    return rows


def _ruled_out(out: Outcome, limit: int = 1 << 15):
    """(point, first wrong answer) of the points ruled out: all of them in a small space; in a
    large (open) one, those differing from the winner in one parameter of its family (found by
    index arithmetic, the nearest rivals), plus the last ``limit`` to fall."""
    pts = out.killed.points()
    if len(pts) <= limit:
        return out.killed.items()
    first = out.killed.first
    near = set(_one_key_neighbours(out.space, out.winner))
    late = pts[np.argsort(-first[pts], kind="stable")[:limit]]
    pick = sorted(near.union(late.tolist()))
    return [(i, int(first[i])) for i in pick if first[i] >= 0]


def _one_key_neighbours(space, w: int) -> list[int]:
    offset = 0
    for part in space.parts:
        if offset <= w < offset + part.size:
            local, mult, out = w - offset, 1, []
            for key, vals in part.ranges.items():
                d = (local // mult) % len(vals)
                out += [offset + local + (j - d) * mult for j in range(len(vals)) if j != d]
                mult *= len(vals)
            return out
        offset += part.size
    return []


def _tied(key, win, live) -> bool:
    """A live point differs from the winner in ``key`` alone (the key is not decided)."""
    return any(set(p) == set(win) and [x for x in win if p[x] != win[x]] == [key] for p in live.values())


def entry(out: Outcome, name: str, device: str, settings) -> dict:
    """The catalog entry of the identified model (a narrowed run: of its representative, with the
    set of points the answers leave possible)."""
    from .split import alike_keys, possible_values
    groups = [[out.spec(i) for i in g] for g in (out.behaviours or [out.live])]
    undecided, alike = alike_keys(groups)
    from .hypotheses import model_of
    m = model_of(out.spec(out.winner))
    fields = {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.name != "overrides"}
    fields.update(id=name, kind="catalog", rival_of=None,
                  description=f"identified by mmaprobe identify on {device}: {m.summary()}",
                  source=f"mmaprobe identify ({device}; {out.launches} launches, {out.probes} probes)")
    fields["kernels"] = list(fields["kernels"])
    return {
        "kind": KIND, "version": 1, "id": name, "status": out.status, "identified_as": out.spec(out.winner),
        "catalog_match": sorted({x for i in out.live for x in out.catalog.get(i, ())}),
        "parameters": params_of(out.spec(out.winner)),
        "model": fields,
        "class": [out.spec(i) for i in out.live],
        "behaviours": len(groups),
        "possible": possible_values([out.spec(i) for i in out.live]),
        "undecided": undecided, "alike": alike,
        "equivalence": {out.spec(i): why for i, why in out.proofs.items() if i in out.live},
        "class_status": out.class_status,
        "evidence": evidence(out),
        "device": device, "k": settings.k, "seed": settings.seed,
        "launches": out.launches, "probes": out.probes,
        "verification": {"cases": out.verified, "launches": out.verify_launches,
                         **({"note": out.verify_note} if out.verify_note else {})},
        "solver": out.solver_log,
        "ending": out.ending, "ending_reason": _ending_text(out.ending),
        "pairs": out.pairs,
        "space": out.space.describe(),
        **({"fallback": out.fallback} if out.fallback else {}),
    }


def _ending_text(ending: str) -> str:
    from .loop import ENDINGS
    if ending == "proved alike":
        return "every point left was proved to compute alike (identical terms or the solver)"
    return ENDINGS.get(ending, ending)


def deciding_vectors(obj: dict):
    """The pairs left with a deciding input, as a vector file (``expect``: both points' outputs,
    keyed by their point ids; ``pair``: the two points): run it on the device and the answers
    decide each pair. None where no pair has one."""
    from smtmodel.vectors import VectorFile, make_header
    rows = [r for r in obj.get("pairs") or [] if r.get("case")]
    if not rows:
        return None
    m = obj["model"]
    cases, models = [], []
    for n, r in enumerate(rows):
        case = dict(r["case"], id=f"pair-{n}", pair=[r["a"], r["b"]], how=r["how"])
        cases.append(case)
        models += [x for x in (r["a"], r["b"]) if x not in models]
    ins = (m["a_fmt"], m["b_fmt"]) if m.get("a_fmt") and m.get("b_fmt") else m["in_fmt"]
    extra = {"scale_fmt": m["scale_fmt"], "scale_block": m["scale_block"]} if m.get("scale_fmt") else {}
    h = make_header(ins, m["c_fmt"], m["out_fmt"], obj["k"], models=models, **extra,
                    source={"tool": "mmaprobe identify", "device": obj["device"], "ending": obj.get("ending", ""),
                            "note": "one input per pair of points the answers leave alike; each case's expect "
                                    "holds both points' outputs"})
    return VectorFile(h, cases)


def write_entry(path, obj: dict) -> None:
    with atomic_open(path) as fh:
        json.dump(obj, fh, indent=1)
        fh.write("\n")


def headline(obj: dict) -> list[str]:
    """What the answers determine: one point or a class proved to compute alike ("identified"),
    else the set of points still possible ("narrowed")."""
    from .split import describe_values
    n, k = len(obj["class"]), obj["k"]
    values = describe_values(obj.get("possible") or {})
    if obj.get("status", "identified") == "identified":
        lines = [f"identified {obj['id']} = {obj['identified_as']}"]
        if n > 1 and obj.get("ending") == "proved alike":
            lines.append(f"  proved alike: {n} points, every pair left proved to compute alike at k={k} by the solver "
                         f"or identical terms: {values}")
        elif n > 1:
            lines.append(f"  {n} points compute alike at k={k} (proved: {', '.join(obj.get('alike') or []) or 'see class'} "
                         f"do not matter here): {values}")
        return lines
    und = ", ".join(obj.get("undecided") or [])
    alike = f"; {', '.join(obj['alike'])} proved not to matter at k={k}" if obj.get("alike") else ""
    lines = [f"narrowed to {n} points in {obj['behaviours']} behaviours: the answers do not decide {und}{alike}",
             f"  still possible: {values}",
             f"  written as {obj['id']} = {obj['identified_as']} (one of them)"]
    if obj.get("ending"):
        lines.insert(1, f"  narrowed because {obj.get('ending_reason') or obj['ending']} [{obj['ending']}]")
    return lines + pair_lines(obj)


def pair_lines(obj: dict, limit: int = 12) -> list[str]:
    """Per pair of behaviours left: the captured check and the deciding input (or why none)."""
    rows = obj.get("pairs") or []
    if not rows:
        return []
    out = [f"  pairs of behaviours left ({len(rows)}): each gives both points the same output on s of the "
           f"n answered cases, and the input that would decide it"]
    for r in rows[:limit]:
        a, b = (x.split(":", 1)[1] if ":" in x else x for x in (r["a"], r["b"]))
        diff = ",".join(f"{kv}" for kv in b.split(",") if kv not in a.split(",")) or b
        head = f"    vs {diff}: same on {r['same']}/{r['answers']}; "
        if r.get("case"):
            e = list(r["case"]["expect"].values())
            out.append(head + f"{r['status']} ({r['how']}): c={r['case']['c']} -> {e[0]} vs {e[1]}")
        else:
            out.append(head + f"{r['status']} ({r['how']})")
    if len(rows) > limit:
        out.append(f"    ... and {len(rows) - limit} more pairs")
    return out


def table(obj: dict) -> str:
    """The evidence as readable lines."""
    ver = obj["verification"]
    lines = headline(obj) + [
        f"  catalog match: {', '.join(obj['catalog_match']) or 'none (a new parameter combination)'}",
        f"  class: {len(obj['class'])} point(s) fit every answer; "
        f"{obj['launches']} launches, {obj['probes']} probes; verified on {ver['cases']} cases"
        + (f" ({ver['note']})" if ver.get("note") else "")]
    if obj.get("class_status") and len(obj["class"]) > 1:
        lines.append(f"  class: {obj['class_status']}")
    lines.append(f"  {'parameter':<13} {'value':<10} evidence")
    for r in obj["evidence"]:
        if "probe" in r:
            p = r["probe"]
            nz = [(x, y) for x, y in zip(p["a"], p["b"]) if int(x, 16) and int(y, 16)]
            shown = " ".join(f"{x}*{y}" for x, y in nz[:4]) + (" ..." if len(nz) > 4 else "")
            if "a_scale" in p:       # a block-scaled unit: the scales decide as much as the elements
                shown += f" scales a={','.join(p['a_scale'])} b={','.join(p['b_scale'])}"
            more = f" (and {', '.join(r['also_differs'])})" if r.get("also_differs") else ""
            lines.append(f"  {r['parameter']:<13} {r['value']:<10} not {r['rival']}{more}: c={p['c']} {shown} -> "
                         f"device {r['device']}, the rival gives {r['rival_answer']}")
            if r.get("still"):
                lines.append(f"  {'':<13} {'':<10} {r['still']}")
        else:
            lines.append(f"  {r['parameter']:<13} {r['value']:<10} {r['decided']}")
    return "\n".join(lines)


__all__ = ["deciding_vectors", "entry", "evidence", "headline", "pair_lines", "params_of", "table", "write_entry", "KIND"]
