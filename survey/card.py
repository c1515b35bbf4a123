"""The numerics card of a surveyed GPU: JSON and Markdown, built from the journal's records.

Per instruction kernel: the cases run, the hypotheses that survive and those refuted (matches out
of total, the first contradiction), the GPU's own catalog model's verdict, the zero rule the
deciding files settle, and which kernels of the same formats and K gave bitwise the same outputs
(``mma.sync`` against ``wgmma``). Per library GEMM: the (model, dataflow) pairs that reproduce
it, seed 003's value, the batch sweeps' groups of M. Per identify run: the identified point or
the points still possible. And every step not run, with the reason.
"""

from __future__ import annotations

import json

import numpy as np

from hw_runner.kernels import arch_num
from smtmodel.catalog import model_for_kernel


def _kernel_entry(spec, cap: dict, judge: dict | None, arch: str, sets: list | None) -> dict:
    own = model_for_kernel(spec.id, arch_num(arch), spec.k)
    e = {"instruction": spec.ptx, "formats": [spec.in_fmt, spec.c_fmt, spec.out_fmt], "k": spec.k,
         "own_model": own.id if own else None, "capture": cap.get("status"), "reason": cap.get("reason"),
         "cases": {n: v["cases"] for n, v in cap.get("sets", {}).items()}}
    if judge:
        v = judge["verdicts"]
        e["survivors"] = sorted(m for m, r in v.items() if r.get("survives"))
        e["refuted"] = {m: f"{r['matches']}/{r['total']}" for m, r in sorted(v.items()) if "matches" in r
                        and not r["survives"]}
        e["errors"] = {m: r["error"] for m, r in v.items() if "error" in r}
        if own and own.id in v:
            r = v[own.id]
            e["own_verdict"] = ("survives" if r.get("survives") else "refuted") + f" ({r.get('matches')}/{r.get('total')})"
            e["own_first_contradiction"] = r.get("first_contradiction")
            e["own_by_set"] = r.get("sets")
        zr = cap.get("sets", {}).get("zero-rules")
        if zr:
            files = [f["file"] for f in zr["source"].get("files", [])]
            named = zr["source"].get("models", [])
            e["zero_rules"] = {"files": files, "hypotheses": named,
                               "survivors": [m for m in named if m in e["survivors"]]}
    return e


def _same_bits(survey) -> list[dict]:
    """Kernels of the same formats and K whose outputs on the shared random sets are bitwise equal."""
    arrays = survey.store.arrays["kernels"]
    groups: dict[tuple, list] = {}
    for spec in survey.kernel_specs():
        rec = survey.store.done(f"capture/kernel/{spec.id}")
        if rec and rec["status"] == "captured":
            groups.setdefault((spec.in_fmt, spec.c_fmt, spec.out_fmt, spec.k), []).append(spec.id)
    out = []
    for key, ids in groups.items():
        for i, x in enumerate(ids):
            for y in ids[i + 1:]:
                diff = total = 0
                for s in ("mix", "chain", "zeros", "c-special"):
                    ax, ay = arrays.get(f"{x}/{s}"), arrays.get(f"{y}/{s}")
                    if ax is not None and ay is not None and ax.shape == ay.shape:
                        diff += int(np.count_nonzero(ax != ay))
                        total += ax.size
                if total:
                    out.append({"kernels": [x, y], "differ": diff, "of": total})
    return out


def build(survey) -> dict:
    st = survey.store
    arch = survey.target.arch
    kernels = {}
    for spec in survey.kernel_specs() if "kernels" in survey.settings.parts else []:
        cap = st.done(f"capture/kernel/{spec.id}")
        if cap is None:
            continue
        kernels[spec.id] = _kernel_entry(spec, cap, st.done(f"judge/{spec.id}"), arch, None)
    library = {}
    for g in survey.library_plan() if "library" in survey.settings.parts else []:
        cap = st.done(f"capture/library/{g.name}")
        if cap is None:
            continue
        an = st.done(f"analyse/{g.name}")
        library[g.name] = {"call": g.describe(), "capture": cap["status"], "reason": cap.get("reason"),
                           **_library_points(cap),
                           "digests": cap.get("digests"), "analysis": {k: v for k, v in (an or {}).items()
                                                                       if k not in ("step",)} or None}
    ident = {}
    for spec in survey.identify_plan() if "identify" in survey.settings.parts else []:
        rec = st.done(f"identify/{spec.id}")
        if rec:
            ident[spec.id] = {k: v for k, v in rec.items() if k != "step"}
    lib_name = getattr(survey.target.library, "name", None)
    from .pin import card_part as pin_part
    pin = pin_part(survey) if "pin" in survey.settings.parts else {}
    return {"pin": pin, "kind": "mmaprobe.survey-card", "version": 1, "device": survey.target.text, "gpu": survey.target.name,
            "arch": arch, "dry_run": survey.target.dry, "library_backend": lib_name,
            "settings": survey.settings.journal_view(), "budget_s": survey.settings.budget,
            "plan": [list(r) for r in survey.plan_rows()],
            "kernels": kernels, "same_bits": _same_bits(survey) if kernels else [], "library": library,
            "identify": ident, "not_run": survey.skipped,
            "library_environment": {k: v for k, v in (st.done("capture/library/environment") or {}).items()
                                    if k not in ("step", "status")} or None}


def _library_points(cap: dict) -> dict:
    """Per library call: the kernels it launched (every M), the M held out, the variants that
    changed a bit, and the M whose profiler recorded no kernel."""
    pts = cap.get("points") or {}
    if not pts:
        return {}
    kernels = list(dict.fromkeys(k for p in pts.values() for k in p.get("kernels", [])))
    changed = sorted({f"{v} at M={m}" for m, p in pts.items() for v, r in (p.get("variants") or {}).items()
                      if not (r.get("same_block") and r.get("same_digest"))})
    return {"kernels": kernels, "held_out": [int(m) for m, p in pts.items() if p.get("held_out")],
            "variants_changed": changed, "variants_run": sum(len(p.get("variants") or {}) for p in pts.values()),
            "no_kernel_recorded": [int(m) for m, p in pts.items() if not p.get("kernels")]}


def to_json(card: dict) -> str:
    return json.dumps(card, indent=1, default=str) + "\n"


def library_line(g, rec: dict) -> str:
    from .library_fit import line
    return line(g, rec)


def identify_line(rec: dict) -> str:
    if rec["status"] == "identified" and rec.get("identified"):
        return f"identified {rec['identified']} ({rec['launches']} launches, {rec['seconds']:.0f} s)"
    if rec["status"] == "identified":
        return f"{rec['live_count']} points fit every answer ({rec['class_status'] or 'not split'}; {rec['seconds']:.0f} s)"
    if rec["status"] == "narrowed":
        return (f"narrowed to {rec['live_count']} points that differ only in {_open_parameters(rec.get('live', []))}, "
                f"each reproducing every answer ({rec.get('verified', 0):,} verification cases; {rec['seconds']:.0f} s)")
    return f"{rec['status']}: {rec['message'] or 'no message'} ({rec['seconds']:.0f} s)"


def _open_parameters(live: list[str]) -> str:
    """The parameters whose values differ among the live points (``model:k=v,...`` specs)."""
    values: dict = {}
    for spec in live:
        for kv in spec.split(":", 1)[-1].split(","):
            k, _, v = kv.partition("=")
            values.setdefault(k, set()).add(v)
    open_ = [f"{k} ({', '.join(sorted(v))})" for k, v in values.items() if len(v) > 1]
    return "; ".join(open_) or "nothing the specs name"


def to_markdown(card: dict) -> str:
    L = [f"# Numerics card: {card['gpu']} ({card['arch']})", ""]
    if card["dry_run"]:
        L += ["**Dry run**: every output below comes from twins standing in for the GPU, not from silicon.", ""]
    L += [f"Device `{card['device']}`; settings {json.dumps(card['settings'])}; budget {card['budget_s']:.0f} s.", "",
          "| part | steps | launches | cases |", "|---|---|---|---|"]
    L += [f"| {p} | {s} | {lc} | {c:,} |" for p, s, lc, c in card["plan"]]
    if card["kernels"]:
        L += ["", "## Instruction kernels", "",
              "| kernel | cases | own model | survivors | refuted |", "|---|---|---|---|---|"]
        for kid, e in card["kernels"].items():
            if e["capture"] != "captured":
                L.append(f"| `{kid}` | — | {e['own_model'] or '—'} | not captured: {e['reason']} | |")
                continue
            n = sum(e["cases"].values())
            own = f"{e['own_model']}: {e.get('own_verdict', 'not judged')}" if e["own_model"] else "—"
            surv = ", ".join(e.get("survivors", [])) or "none"
            ref = len(e.get("refuted", {}))
            L.append(f"| `{kid}` | {n:,} | {own} | {surv} | {ref} |")
        bad = {k: e for k, e in card["kernels"].items() if e.get("own_first_contradiction")}
        if bad:
            L += ["", "First contradiction of each refuted own model:", ""]
            for k, e in bad.items():
                fc = e["own_first_contradiction"]
                L.append(f"- `{k}` ({e['own_model']}), set {fc['set']}, case {fc['case']}: c={fc['c']}, expected "
                         f"{fc['expected']}, observed {fc['observed']}")
        zr = {k: e["zero_rules"] for k, e in card["kernels"].items() if e.get("zero_rules")}
        if zr:
            L += ["", "Zero rules (deciding files of docs/zeros.md):", ""]
            for k, z in zr.items():
                L.append(f"- `{k}`: {', '.join(z['files'])}: surviving {', '.join(z['survivors']) or 'none'}")
        if card["same_bits"]:
            L += ["", "Kernels of the same formats and K on the same cases:", ""]
            for s in card["same_bits"]:
                L.append(f"- `{s['kernels'][0]}` vs `{s['kernels'][1]}`: {s['differ']} of {s['of']} outputs differ")
    if card["library"]:
        L += ["", f"## Library GEMMs ({card['library_backend']})", ""]
        from .library import plan
        by_name = {g.name: g for g in plan(card["settings"].get("quick", False))}
        env = card.get("library_environment")
        if env:
            L.append("Environment: " + ", ".join(f"{k} {env.get(k)}" for k in (
                "torch", "cuda", "cublas", "CUBLAS_WORKSPACE_CONFIG", "allow_fp16_reduced_precision_reduction",
                "allow_bf16_reduced_precision_reduction", "allow_tf32", "fp32_precision")) + "")
            L.append("")
        for name, e in card["library"].items():
            if e["capture"] == "captured" and "kernels" in e:
                L.append(f"- **{name}** kernels: {', '.join(f'`{k}`' for k in e['kernels'][:4]) or 'none recorded'}"
                         + (f" (+{len(e['kernels']) - 4})" if len(e["kernels"]) > 4 else "")
                         + (f"; held out: M = {', '.join(map(str, e['held_out']))}" if e["held_out"] else "")
                         + (f"; variants that change bits: {', '.join(e['variants_changed'])}"
                            if e["variants_changed"] else f"; {e['variants_run']} variant runs, no bit changed"
                            if e["variants_run"] else "")
                         + (f"; no kernel recorded at M = {', '.join(map(str, e['no_kernel_recorded']))}"
                            if e["no_kernel_recorded"] else ""))
            if e["capture"] != "captured":
                L.append(f"- **{name}** ({e['call']}): not captured: {e['reason']}")
            elif e["analysis"]:
                L.append(f"- **{name}** ({e['call']}): {library_line(by_name[name], e['analysis'])}")
            else:
                L.append(f"- **{name}** ({e['call']}): captured, not analysed")
    if card["identify"]:
        L += ["", f"## identify ({card['settings'].get('space') or 'default'} space, solver stage off)", ""]
        for kid, r in card["identify"].items():
            L.append(f"- `{kid}`: {identify_line(r)}" + (f"; catalog: {', '.join(r['catalog_match'])}"
                                                         if r.get("catalog_match") else ""))
    if card.get("pin"):
        from .pin import markdown as pin_markdown
        L += pin_markdown(card["pin"]).rstrip("\n").split("\n")
    if card["not_run"]:
        L += ["", "## Not run", ""]
        L += [f"- {x['step']}: {x['why']}" for x in card["not_run"]]
    return "\n".join(L) + "\n"
