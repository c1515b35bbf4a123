"""``mmaprobe report -o site/``: one static HTML page (no server; Jinja2 template
``mmaprobe/report/page.html.j2``) with every model ``mmaprobe models`` lists. Each floating-point
model (catalog and rivals) comes with its parameters, citation
(:mod:`smtmodel.papers`), instruction and harness kernels, the hardware sets it matches (x/5000,
by ``mmaprobe check``'s path), its rivals with the deciding vectors of the pairwise suite, Table 9
bounds (``--bounds FILE`` from ``mmaprobe bound all -o FILE``, or ``--prove-bounds``), scheme
results (``--schemes FILE`` from ``mmaprobe plot schemes``, or a small scan) and the figures of
``mmaprobe plot`` and the properties proved or refuted (``--properties``, default the committed
journal of ``bench/properties.py``). The integer MMA models (IMMA, ``v_mfma_i32_*``) have their own table: formats,
K per instruction, wrap-around or ``.satfinite``, instruction, harness kernels and the hardware sets
of their formats. The hardware checks, bounds and scheme scan run as campaigns; the page and the
figures are written atomically.
"""

from __future__ import annotations

import dataclasses
import datetime
import gzip
import json
import sys
from pathlib import Path

from hw_runner.kernels import all_kernels
from smtmodel.catalog import alias_models, all_models, get_model, integer_models, rivals_of
from smtmodel.model import INT_OPS
from smtmodel.formats import get_format
from smtmodel.io import atomic_open
from smtmodel.papers import citations
from smtmodel.vectors import read_vectors

from ..args import add_campaign, add_output
from ..campaign import Options, Task, run_campaign
from ..errors import CliError
from . import plot
from .catalog import evaluate_file, model_for

HIDDEN = {"id", "description", "source", "instruction", "kernels", "kind", "rival_of", "overrides", "arch", "sm",
          "gfx", "op", "in_fmt", "c_fmt", "out_fmt"}
TEMPLATE = Path(__file__).resolve().parent.parent / "report" / "page.html.j2"


def _fmts(m) -> tuple:
    return m.formats


def hw_task(path: str, model_ids: list[str]) -> dict:
    """One hardware set against each model of its formats (a campaign task): ``{model: [matches, total]}``
    counted as ``mmaprobe check`` counts them (every observed output of every case)."""
    vf = read_vectors(path)
    fo = vf.out_fmt
    out = {}
    for mid in model_ids:
        m = model_for(vf, mid)
        d = evaluate_file(vf, m)
        total = matches = 0
        for i, case in enumerate(vf.cases):
            for hexbits in case.get("observed", {}).values():
                total += 1
                matches += fo.parse_hex(hexbits) == int(d[i])
        out[m.id] = [matches, total]
    return {"status": "done", "models": out}


def _header(path: Path) -> dict:
    """The header line of a (gzipped) vector file, to pick the models of its formats; the file
    itself is read and validated by the task."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.loads(fh.readline())
    except (OSError, ValueError, EOFError) as exc:
        raise CliError(f"{path}: cannot read its header ({exc})") from None


def hw_matches(models, hwdata: Path, options: Options, journal) -> tuple[list[str], dict]:
    """``{model id: [(set, matches, total)]}`` over the hardware sets whose formats a model takes."""
    sets = sorted(hwdata.glob("*.jsonl.gz")) if hwdata.is_dir() else []
    tasks = []
    for p in sets:
        vf_head = _header(p)
        ins = vf_head.get("in_fmt")
        want = tuple(get_format(f).name for f in (vf_head.get("a_fmt") or ins, vf_head.get("b_fmt") or ins,
                                                  vf_head["c_fmt"], vf_head["out_fmt"]))
        ids = [m.id for m in models if _fmts(m) == want and not m.scale_fmt]
        if ids:
            tasks.append(Task(p.name.split(".")[0], hw_task, (str(p), ids)))
    res = run_campaign("report-hw", {"hwdata": str(hwdata), "models": sorted(m.id for m in models)}, tasks,
                       journal, options)
    found: dict = {}
    for key, r in res.items():
        for mid, (x, n) in (r.get("models") or {}).items():
            found.setdefault(mid, []).append({"set": key, "matches": x, "total": n})
    return [p.name for p in sets], found


def suite_entries(index_path: Path) -> tuple[Path, dict]:
    try:
        return index_path.parent, json.loads(index_path.read_text())["results"]
    except (OSError, ValueError, KeyError):
        return index_path.parent, {}


def rival_rows(m, rivals, suite_dir: Path, index: dict) -> list[dict]:
    rows = []
    for r in rivals:
        e = index.get(f"{m.id}__vs__{r.id}") or index.get(f"{r.id}__vs__{m.id}") or {}
        row = {"id": r.id, "status": e.get("status", "not in the suite"), "solver": e.get("solver"), "k": e.get("k"),
               "proof": e.get("proof"), "vector": None, "expect": []}
        if e.get("file"):
            try:
                case = read_vectors(suite_dir / e["file"]).cases[0]
                row["vector"] = {"a": case["a"], "b": case["b"], "c": case["c"]}
                row["expect"] = sorted(case.get("expect", {}).items())
            except (OSError, ValueError, IndexError):
                row["status"] += " (vector file unreadable)"
        rows.append(row)
    return rows


PROPERTY_JOURNAL = Path(__file__).resolve().parents[2] / "bench" / "results" / "properties.jsonl"


def load_properties(path: "str | None", models) -> tuple[dict, str]:
    """model id -> [(property, cell)] from a journal of ``bench/properties.py`` (default the
    committed one); a model sharing every parameter with a checked one takes its answers."""
    from queries.properties import PROPERTIES
    from queries.properties.catalog import cell, parameter_groups, read_journal
    journal = Path(path) if path else PROPERTY_JOURNAL
    if not journal.is_file():
        if path:
            raise CliError(f"{path}: no such file (a journal of bench/properties.py)")
        return {}, "no property journal"
    try:
        rows = read_journal(journal)
    except (ValueError, KeyError) as exc:
        raise CliError(f"{journal}: not a property journal ({exc})") from None
    checked = {mid for mid, _ in rows}
    out = {}
    for g in parameter_groups(list(models)):
        src = next((m.id for m in g if m.id in checked), None)
        for m in g:
            if src:
                out[m.id] = [(p, cell(rows[(src, p)]) + ("" if src == m.id else f" (as {src})"))
                             for p in PROPERTIES if (src, p) in rows]
    timeouts = sorted({r["timeout"] for r in rows.values()})
    return out, f"{journal.name}, timeout {' / '.join(f'{t:g}' for t in timeouts)} s per check"


def model_rows(models, hw: dict, suite_dir: Path, index: dict, bounds: dict, props: dict | None = None) -> list[dict]:
    rows = []
    for m in models:
        # a catalog model's rivals are the hypotheses against it; a rival's is the model it contradicts
        rivals = (rivals_of(m.id) if m.kind == "catalog" else [get_model(m.rival_of)] if m.rival_of else [])
        params = [(f.name, getattr(m, f.name)) for f in dataclasses.fields(m)
                  if f.name not in HIDDEN and getattr(m, f.name) not in (None, (), "")]
        rows.append({"id": m.id, "kind": m.kind, "rival_of": m.rival_of, "description": m.description,
                     "source": m.source, "citations": [f"seed {p.seed}: {p.text()}" for p in citations(m.source)],
                     "instruction": m.instruction, "op": m.op, "formats": " x ".join(_fmts(m)[:2]) + " + "
                     + _fmts(m)[2] + " -> " + _fmts(m)[3], "params": params,
                     "kernels": [all_kernels()[k] for k in m.kernels if k in all_kernels()],
                     "hw": hw.get(m.id, []), "rivals": rival_rows(m, rivals, suite_dir, index),
                     "bound": bounds.get(m.id), "properties": (props or {}).get(m.id, [])})
    return rows


def integer_rows(models, hw: dict) -> list[dict]:
    """The integer MMA models' table: one row per model, as ``mmaprobe models`` lists them."""
    return [{"id": m.id, "arch": m.arch, "target": f"sm_{m.sm}" if m.sm else (m.gfx or ""),
             "formats": " x ".join(_fmts(m)[:2]) + " + " + _fmts(m)[2] + " -> " + _fmts(m)[3], "k": m.L,
             "result": "clamped (.satfinite)" if m.saturate else "wrapped mod 2^32",
             "instruction": m.instruction, "description": m.description, "source": m.source,
             "kernels": [all_kernels()[k] for k in m.kernels if k in all_kernels()], "hw": hw.get(m.id, [])}
            for m in models]


def load_bounds(args, models, options, site: Path) -> tuple[list, str]:
    if args.bounds:
        try:
            rows = json.loads(Path(args.bounds).read_text())
        except (OSError, ValueError) as exc:
            raise CliError(f"--bounds {args.bounds}: {exc}") from None
        return rows, ""
    if not args.prove_bounds:
        return [], ("not computed here: run `mmaprobe bound all -o bounds.json` (a campaign) and pass "
                    "`--bounds bounds.json`, or `--prove-bounds`")
    from queries.bounds import TABLE9_OPS, by_signature, lemma_task
    groups = by_signature([m for m in models if m.op in TABLE9_OPS])
    tasks = [Task(ms[0].id, lemma_task, ([m.id for m in ms], "bitwuzla", args.bound_timeout, False)) for ms in groups]
    res = run_campaign("report-bounds", {"timeout": args.bound_timeout, "models": [ms[0].id for ms in groups]},
                       tasks, site / "bounds.journal", options)
    rows = [r["row"] if r.get("status") == "done" else {"model": k, "status": r.get("status"), "proved": False,
                                                         "reason": r.get("reason")} for k, r in res.items()]
    return rows, ""


def load_schemes(args, options, site: Path) -> tuple[list, str]:
    if args.schemes:
        try:
            pts = json.loads(Path(args.schemes).read_text())["points"]
        except (OSError, ValueError, KeyError) as exc:
            raise CliError(f"--schemes {args.schemes}: {exc}") from None
        return list(pts.items()), ""
    if args.no_figures:
        return [], "not computed (--no-figures): `mmaprobe plot schemes -o S` and pass `--schemes S.json`"
    return [], ""


def load_ozaki(args, site: Path) -> tuple[list, list, list]:
    """The Ozaki comparison (``--ozaki FILE``: the OUT.json of ``mmaprobe plot schemes --vs ozaki``):
    its column heads, rows (scheme, max error per point) and figure."""
    if not args.ozaki:
        return [], [], []
    try:
        data = json.loads(Path(args.ozaki).read_text())
        if data.get("vs") != "ozaki":
            raise ValueError("not an `mmaprobe plot schemes --vs ozaki` result")
        pts = [r for p in data["points"].values() if p.get("status") == "done" for r in p["rows"]]
    except (OSError, ValueError, KeyError) as exc:
        raise CliError(f"--ozaki {args.ozaki}: {exc}") from None
    cols = sorted({(r["k"], r["spread"]) for r in pts})
    by = {(r["scheme"], r["k"], r["spread"]): r["max"] for r in pts}
    rows = [(name, [by.get((name, k, sp)) for k, sp in cols]) for name in dict.fromkeys(r["scheme"] for r in pts)]
    figs = []
    if not args.no_figures:
        plot.save(plot.scheme_figure(data), site / "figures" / "schemes-ozaki", data)
        figs.append({"base": "schemes-ozaki", "title": "Ozaki I/II vs O-Y tf32, 3xTF32, fp64 FMA chain"})
    return [f"K={k}, ±{sp}" for k, sp in cols], rows, figs


def load_scheme_table(args, site: Path) -> tuple[list, list]:
    """Every scheme's bits (``--scheme-table FILE``: the rows of ``mmaprobe scheme table -o FILE``)
    and their figure."""
    if not args.scheme_table:
        return [], []
    try:
        rows = json.loads(Path(args.scheme_table).read_text())
        if not isinstance(rows, list) or not rows or not all("scheme" in r and "tc_products" in r for r in rows):
            raise ValueError("not the rows of `mmaprobe scheme table -o FILE`")
    except (OSError, ValueError) as exc:
        raise CliError(f"--scheme-table {args.scheme_table}: {exc}") from None
    figs = []
    if not args.no_figures:
        plot.save(plot.scheme_table_figure(rows), site / "figures" / "scheme-table", {"rows": rows})
        figs.append({"base": "scheme-table", "title": "every scheme: bits proved, found and searched vs cost"})
    return rows, figs


def figures(args, models, options, site: Path, scheme_rows: list) -> tuple[list, list]:
    """The figures of the page (``site/figures/``), and the scheme scan's points if computed here."""
    if args.no_figures:
        return [], scheme_rows
    figs = []
    fig_dir = site / "figures"
    by_fmt: dict = {}
    for m in models:
        if not m.scale_fmt and not m.mixed:      # figures draw one input format
            by_fmt.setdefault(_fmts(m)[1:], []).append(m)
    for fm, ms in sorted(by_fmt.items()):
        cat = [m.id for m in ms if m.kind == "catalog"][:args.per_figure]
        name = "-".join(fm)
        if cat:
            data = plot.error_data(cat, 16, args.cases, "normal", 0)
            plot.save(plot.error_figure(data), fig_dir / f"errors-{name}", data)
            figs.append({"base": f"errors-{name}", "title": f"error vs exact, {' x '.join(fm)}: {len(cat)} models"})
        ids = [m.id for m in ms][:args.per_figure]
        if len(ids) >= 2:
            data = plot.discrepancy_data(ids, 16, max(args.cases // 5, 20), 0, str(Path(args.suite)))
            plot.save(plot.discrepancy_figure(data), fig_dir / f"discrepancy-{name}", data)
            figs.append({"base": f"discrepancy-{name}", "title": f"discrepancy, {' x '.join(fm)}"})
    if args.schemes:                   # the figure of the given scan, no new scan
        data = json.loads(Path(args.schemes).read_text())
        plot.save(plot.scheme_figure(data), fig_dir / f"schemes-{data['vs']}", data)
        figs.append({"base": f"schemes-{data['vs']}", "title": f"scheme error vs {data['vs']}"})
        scans = ()
    else:
        scans = ("K", "NC")
    for vs in scans:
        ks = [16, 64] if vs == "K" else [128]
        tasks = plot.scheme_tasks(vs, list(plot.SCHEMES_K), ks, [8, 32, 128], args.scheme_cases, 0)
        res = run_campaign(f"report-schemes-{vs}", {"ks": ks, "cases": args.scheme_cases}, tasks,
                           site / f"schemes-{vs}.journal", options)
        data = {"vs": vs, "schemes": list(plot.SCHEMES_K), "k_max": max(ks), "cases": args.scheme_cases, "points": res}
        plot.save(plot.scheme_figure(data), fig_dir / f"schemes-{vs}", data)
        figs.append({"base": f"schemes-{vs}", "title": "scheme error vs K" if vs == "K" else "FP8 error vs N_C"})
        scheme_rows += list(res.items())
    for f in figs:
        f.update(png=f"figures/{f['base']}.png", svg=f"figures/{f['base']}.svg", json=f"figures/{f['base']}.json")
    return figs, scheme_rows


def cmd_report(args) -> int:
    try:
        import jinja2
    except ImportError:
        raise CliError("Jinja2 is not installed: pip install 'mmaprobe[report]'") from None
    if not args.no_figures:
        # the figures' sizes, before any work (the error figure reads --cases at k = 16; the scans K <= 128)
        plot.check_figure_cases(args.cases, 16, "report's error figure", models=args.per_figure)
        plot.check_cases("--scheme-cases", args.scheme_cases, 128, "report's scheme scans", arrays=16)
        plot._pyplot()                 # matplotlib missing: said before anything is computed or written
    everything = [get_model(m) for m in args.models] if args.models else all_models() + integer_models() + alias_models()
    models = [m for m in everything if m.op not in INT_OPS]        # floating point: figures, bounds, schemes
    ints = [m for m in everything if m.op in INT_OPS]
    site = Path(args.output)
    site.mkdir(parents=True, exist_ok=True)
    options = Options.from_args(args)
    hwdata = Path(args.hwdata)
    print(f"report: {len(everything)} models ({len(models)} floating-point, {len(ints)} integer)", file=sys.stderr)
    sets, hw = hw_matches(everything, hwdata, options, site / "hw.journal")
    suite_dir, index = suite_entries(Path(args.suite))
    bounds, bounds_note = load_bounds(args, models, options, site)
    by_model = {}
    for b in bounds:
        for mid in [b.get("model"), *(b.get("same_as") or [])]:
            by_model[mid] = b
    scheme_rows, schemes_note = load_schemes(args, options, site)
    figs, scheme_rows = figures(args, models, options, site, scheme_rows)
    ozaki_cols, ozaki_rows, ozaki_figs = load_ozaki(args, site)
    props, props_note = load_properties(args.properties, models)
    scheme_table, table_figs = load_scheme_table(args, site)
    figs += table_figs
    figs += ozaki_figs
    ids = {m.id for m in everything}
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE.parent)), autoescape=True)
    html = env.get_template(TEMPLATE.name).render(
        models=model_rows(models, hw, suite_dir, index, by_model, props), props_note=props_note, integer=integer_rows(ints, hw),
        n_models=len(everything), n_catalog=sum(m.kind == "catalog" for m in models),
        n_rival=sum(m.kind == "rival" for m in models),
        hw_sets=sets, hwdata=str(hwdata), suite=str(args.suite),
        generated=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        bounds=[b for b in bounds if b.get("model") in ids or set(b.get("same_as") or []) & ids],
        bounds_note=bounds_note, schemes=scheme_rows, schemes_note=schemes_note or "no scheme results", figures=figs,
        ozaki_cols=ozaki_cols, ozaki_rows=ozaki_rows, scheme_table=scheme_table)
    with atomic_open(site / "index.html") as fh:
        fh.write(html)
    print(f"wrote {site / 'index.html'} ({len(everything)} models, {len(sets)} hardware sets, {len(figs)} figures)",
          file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser("report", help="a static HTML results page: models, hardware, rivals, bounds, schemes, figures")
    add_output(p, required=True, help="folder of the site (index.html, figures/)", kind="dir")
    p.add_argument("--models", nargs="+", help="model ids (default: every model `mmaprobe models` lists: "
                                             "floating-point, rivals and integer)")
    p.add_argument("--hwdata", default="../shared/hwdata", help="hardware sets (default ../shared/hwdata)")
    p.add_argument("--suite", default="generated_tests/index.json", help="the pairwise suite's index")
    p.add_argument("--bounds", help="Table 9 rows: the JSON of `mmaprobe bound all -o FILE`")
    p.add_argument("--prove-bounds", action="store_true", help="prove the bounds of the models here (a campaign)")
    p.add_argument("--bound-timeout", type=float, default=120.0, help="seconds per lemma with --prove-bounds")
    p.add_argument("--schemes", help="scheme points: the OUT.json of `mmaprobe plot schemes -o OUT`")
    p.add_argument("--ozaki", help="Ozaki comparison: the OUT.json of `mmaprobe plot schemes --vs ozaki -o OUT`")
    p.add_argument("--no-figures", action="store_true", help="no figures (and no scheme scan)")
    p.add_argument("--scheme-table", metavar="FILE", help="every scheme's bits: the rows of "
                   "`mmaprobe scheme table -o FILE`")
    p.add_argument("--properties", metavar="JOURNAL", help="properties of each model: a journal of "
                   "bench/properties.py (default the committed bench/results/properties.jsonl)")
    p.add_argument("--cases", type=int, default=2000, help="cases of the error figures (default 2000)")
    p.add_argument("--scheme-cases", type=int, default=64, help="dot products per scheme point (default 64)")
    p.add_argument("--per-figure", type=int, default=8, help="models per figure at most (default 8)")
    add_campaign(p)
    p.set_defaults(func=cmd_report)
