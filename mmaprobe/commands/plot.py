"""``mmaprobe plot errors|discrepancy|schemes``: figures (matplotlib, Agg; PNG and SVG) of

* ``errors``: the distribution of models' errors against the exact result over one input
  distribution (seed 000 §5 style), several models overlaid;
* ``discrepancy``: for a set of models, the fraction of random cases on which each pair differs,
  with the size (k) of the suite's distinguishing vector per pair (``generated_tests/index.json``);
* ``schemes``: error-compensated GEMM schemes' error vs K (O-Y, Markidis, 3xTF32, plain fp16,
  bf16, fp8), or plain FP8 vs the promotion interval N_C, or (``--vs ozaki``) the Ozaki schemes
  against O-Y tf32, 3xTF32 and the fp64 FMA chain vs K and vs the inputs' exponent spread -- a
  campaign, one task per point.

``-o OUT`` writes ``OUT.png``, ``OUT.svg`` and the numbers as ``OUT.json`` (all atomically).
The statistics come from :mod:`queries.stats`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from queries.schemes.ozaki import COMPARE, comparison_point
from queries.stats import discrepancy_matrix, draw, error_ulps, exact_dots, scheme_errors, summary
from smtmodel.catalog import get_model
from smtmodel.io import atomic_open
from smtmodel.limits import cases_memory, check_cases, check_memory
from smtmodel.sampling import KINDS
from smtmodel.schemes.catalog import scheme_from_dict

from ..args import add_campaign, add_k, add_output
from ..campaign import Options, Task, journal_path, run_campaign
from ..errors import CliError
from ..io import write_json

SCHEMES_K = ("fp32", "fp16", "tf32", "markidis", "oy-fp16", "oy-tf32", "3xtf32", "bf16x3", "bf16", "fp8")
FP8_MODEL = "hopper-fp8e4m3-fp32"


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise CliError("matplotlib is not installed: pip install 'mmaprobe[report]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def stem(output) -> Path:
    p = Path(output)
    return p.with_suffix("") if p.suffix in (".png", ".svg", ".json") else p


def save(fig, output, data: dict) -> list[Path]:
    """``fig`` as OUT.png and OUT.svg and ``data`` as OUT.json, each written atomically."""
    base = stem(output)
    paths = []
    for fmt in ("png", "svg"):
        p = base.with_name(base.name + "." + fmt)
        with atomic_open(p, "wb") as fh:
            fig.savefig(fh, format=fmt, dpi=120, bbox_inches="tight")
        paths.append(p)
    write_json(base.with_name(base.name + ".json"), data, announce=False)
    paths.append(base.with_name(base.name + ".json"))
    _pyplot().close(fig)
    return paths


def _same_formats(models):
    mixed = [m.id for m in models if m.mixed]
    if mixed:
        raise CliError(f"plot draws one input format for a and b; {', '.join(mixed)} mix two")
    fmts = {(m.in_fmt, m.c_fmt, m.out_fmt) for m in models}
    if len(fmts) != 1:
        raise CliError(f"the models compute different formats: {sorted(fmts)}; pick models of one format triple")
    return fmts.pop()


# ---- errors vs exact --------------------------------------------------------------------------------

def error_data(model_ids, k: int, n: int, dist: str, seed: int) -> dict:
    models = [get_model(m) for m in model_ids]
    fi, fc, fo = _same_formats(models)
    a, b, c = draw(fi, fc, k, n, dist, seed)
    ex = exact_dots(a, b, c, fi, fc)
    errs = {m.id: error_ulps(m.evaluate(a, b, c), ex, fo) for m in models}
    return {"k": k, "cases": n, "dist": dist, "seed": seed, "formats": [fi, fc, fo],
            "models": {mid: {"summary": summary(e), "errors": [None if np.isnan(x) else x for x in e.tolist()]}
                       for mid, e in errs.items()}}


def error_figure(data: dict):
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    allv = np.concatenate([np.array([x for x in v["errors"] if x is not None]) for v in data["models"].values()])
    lim = float(np.quantile(np.abs(allv), 0.99)) if allv.size else 1.0
    bins = np.linspace(-lim, lim, 61) if lim > 0 else np.linspace(-1, 1, 3)
    for mid, v in data["models"].items():
        e = np.array([x for x in v["errors"] if x is not None])
        s = v["summary"]
        ax.hist(np.clip(e, bins[0], bins[-1]), bins=bins, histtype="step", linewidth=1.4,
                label=f"{mid} (mean |err| {s.get('mean_abs', float('nan')):.3g}, max {s.get('max_abs', float('nan')):.3g})")
    fi, fc, fo = data["formats"]
    ax.set_xlabel(f"error of d against the exact c + sum a_i b_i, in ulps of {fo} (clipped at the 99% quantile)")
    ax.set_ylabel("cases")
    ax.set_title(f"{fi} x {fi} + {fc} -> {fo}, k={data['k']}, {data['cases']} '{data['dist']}' cases")
    ax.legend(fontsize=7)
    return fig


def check_figure_cases(cases: int, k: int, what: str, draws: int = 1, models: int = 1) -> None:
    """``--cases`` (and ``--k``) of a figure within the limits and memory (smtmodel.limits): ``draws``
    draws of the cases, each read by ``models`` models whose results are kept as numbers per case."""
    check_cases("--cases", cases, k, what, arrays=8 * draws)
    check_memory(cases_memory(cases, k, 8 * draws) + 200.0 * cases * draws * models,
                 f"{what} with --cases {cases} at k = {k}", "lower --cases or --k")


def cmd_errors(args) -> int:
    check_figure_cases(args.cases, args.k or 16, "plot errors", models=len(args.model))
    _pyplot()                          # matplotlib missing: said before the work
    data = error_data(args.model, args.k or 16, args.cases, args.dist, args.seed)
    paths = save(error_figure(data), args.output, data)
    for mid, v in data["models"].items():
        print(f"{mid:<36} {json.dumps(v['summary'])}")
    print("wrote " + ", ".join(map(str, paths)))
    return 0


# ---- discrepancy matrix -----------------------------------------------------------------------------

def suite_sizes(index_path, ids) -> dict:
    """``{(a, b): k}`` of the suite's distinguishing vectors (``0`` for a pair proved equivalent)."""
    try:
        res = json.loads(Path(index_path).read_text())["results"]
    except (OSError, ValueError, KeyError):
        return {}
    out = {}
    for e in res.values():
        if e.get("a") in ids and e.get("b") in ids and e.get("status") in ("sat", "unsat"):
            out[(e["a"], e["b"])] = out[(e["b"], e["a"])] = e["k"] if e["status"] == "sat" else 0
    return out


def discrepancy_data(model_ids, k: int, n: int, seed: int, suite_index) -> dict:
    models = [get_model(m) for m in model_ids]
    fi, fc, fo = _same_formats(models)
    a, b, c = draw(fi, fc, k, n, "normal", seed)
    mixed = [draw(fi, fc, k, n, kind, seed + 1 + i) for i, kind in enumerate(KINDS)]
    a = np.concatenate([a] + [x[0] for x in mixed])
    b = np.concatenate([b] + [x[1] for x in mixed])
    c = np.concatenate([c] + [x[2] for x in mixed])
    outs = {m.id: np.asarray(m.evaluate(a, b, c), dtype=np.uint64) for m in models}
    ids, mat = discrepancy_matrix(outs, fo)
    sizes = suite_sizes(suite_index, ids) if suite_index else {}
    return {"k": k, "cases": int(len(c)), "inputs": "normal + the validation mix", "formats": [fi, fc, fo],
            "models": ids, "fraction": mat.tolist(),
            "suite_k": [[sizes.get((x, y)) for y in ids] for x in ids]}


def discrepancy_figure(data: dict):
    plt = _pyplot()
    ids, mat = data["models"], np.array(data["fraction"])
    n = len(ids)
    fig, ax = plt.subplots(figsize=(1.2 + 0.75 * n, 1.0 + 0.7 * n))
    im = ax.imshow(mat, cmap="viridis", vmin=0, vmax=max(float(mat.max()), 1e-9))
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            sk = data["suite_k"][i][j]
            txt = f"{100 * mat[i, j]:.2g}%" + ("" if sk is None else ("\n≡ proved" if sk == 0 else f"\nk={sk}"))
            ax.text(j, i, txt, ha="center", va="center", fontsize=6,
                    color="white" if mat[i, j] < 0.6 * mat.max() else "black")
    ax.set_xticks(range(n), ids, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(n), ids, fontsize=7)
    fig.colorbar(im, ax=ax, label="fraction of cases that differ")
    ax.set_title(f"differing cases of {data['cases']} (k={data['k']})\nk=: size of the suite's vector", fontsize=8)
    return fig


def cmd_discrepancy(args) -> int:
    if len(args.model) < 2:
        raise CliError("give at least two --model")
    check_figure_cases(args.cases, args.k or 16, "plot discrepancy", draws=1 + len(KINDS), models=len(args.model))
    _pyplot()                          # matplotlib missing: said before the work
    data = discrepancy_data(args.model, args.k or 16, args.cases, args.seed, args.suite)
    paths = save(discrepancy_figure(data), args.output, data)
    print("wrote " + ", ".join(map(str, paths)))
    return 0


# ---- scheme error vs K / vs N_C -----------------------------------------------------------------------

def plain_scheme(fmt: str, model: str, nc: int | None = None) -> dict:
    """A single-pass scheme as data: a, b rounded to ``fmt`` on ``model``; with ``nc``, every
    ``nc`` products promoted into an fp32 register (RN), else accumulated inside across K."""
    d = {"name": f"{fmt}" + (f"-nc{nc}" if nc else ""), "model": model,
         "split": {"fmt": fmt, "pieces": 1}}
    if nc:
        d.update(block=nc, c_mode="register", passes=[{"pairs": [[0, 0]], "where": "outside"}])
    else:
        d.update(c_mode="first", passes=[{"pairs": [[0, 0]], "where": "inside", "order": "concat"}])
    return d


def _scheme_spec(name: str):
    if name == "bf16":
        return plain_scheme("bf16", "ampere-bf16-fp32")
    if name == "fp8":
        return plain_scheme("fp8e4m3", FP8_MODEL)
    return name


def scheme_point(spec, k: int, n: int, seed: int, representable_in: str | None) -> dict:
    """One point of a scheme scan (a campaign task)."""
    s = scheme_from_dict(spec) if isinstance(spec, dict) else spec
    e = scheme_errors(s, k, n, seed, representable_in=representable_in)
    return {"status": "done", "k": k, "mean_ulp": float(e.mean()), "median_ulp": float(np.median(e)),
            "max_ulp": float(e.max()), "exact_fraction": float(np.mean(e == 0))}


def scheme_tasks(vs: str, schemes, ks, ncs, n: int, seed: int, spreads=(0, 8, 16)) -> list[Task]:
    if vs == "ozaki":
        names = tuple(schemes) if schemes and set(schemes) <= set(COMPARE) else COMPARE
        return [Task(f"ozaki@K={k},spread={sp}", comparison_point, (k, sp, n, seed, names))
                for k in ks for sp in spreads]
    if vs == "K":
        return [Task(f"{s}@K={k}", scheme_point, (_scheme_spec(s), k, n, seed, None)) for s in schemes for k in ks]
    k = max(ks)
    return ([Task(f"fp8-nc{nc}@K={k}", scheme_point, (plain_scheme("fp8e4m3", FP8_MODEL, nc), k, n, seed, "fp8e4m3"))
             for nc in ncs if nc <= k]
            + [Task(f"fp8@K={k}", scheme_point, (plain_scheme("fp8e4m3", FP8_MODEL), k, n, seed, "fp8e4m3"))])


def ozaki_figure(data: dict):
    """Two panels: max componentwise relative error vs K (smallest spread) and vs spread (largest K)."""
    plt = _pyplot()
    rows = [r for p in data["points"].values() if p.get("status") == "done" for r in p["rows"]]
    ks = sorted({r["k"] for r in rows})
    sps = sorted({r["spread"] for r in rows})
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    floor = 2.0 ** -60                      # exact results (error 0) drawn at the floor of the log axis
    cmap = plt.get_cmap("tab20")
    for ci, name in enumerate(dict.fromkeys(r["scheme"] for r in rows)):
        by = {(r["k"], r["spread"]): max(r["max"], floor) for r in rows if r["scheme"] == name}
        style = "-" if name.startswith("ozaki1") else "--" if name.startswith("ozaki2") else ":"
        kw = dict(marker="o", ms=3, label=name, color=cmap(ci % 20))
        a1.plot(ks, [by.get((k, sps[0]), np.nan) for k in ks], style, **kw)
        a2.plot(sps, [by.get((ks[-1], sp), np.nan) for sp in sps], style, **kw)
    a1.set_xscale("log", base=2)
    a1.set_xlabel(f"K (exponent spread ±{sps[0]})")
    a2.set_xlabel(f"exponent spread ±s of a, b (K = {ks[-1]})")
    a1.set_yscale("log")
    a1.set_ylabel("max |D - AB| / (|A||B|)  (0 drawn at 2^-60)")
    a2.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle(f"Ozaki I/II vs O-Y tf32, 3xTF32, fp64 FMA chain; {data['cases']}x{data['cases']} outputs per point, "
                 "inputs fp32-representable", fontsize=9)
    return fig


def scheme_figure(data: dict):
    if data["vs"] == "ozaki":
        return ozaki_figure(data)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    pts = data["points"]
    if data["vs"] == "K":
        for s in data["schemes"]:
            xs = [p["k"] for key, p in pts.items() if key.split("@")[0] == s and p.get("status") == "done"]
            ys = [p["mean_ulp"] for key, p in pts.items() if key.split("@")[0] == s and p.get("status") == "done"]
            ax.plot(xs, ys, marker="o", label=s)
        ax.set_xlabel("K (length of the dot product)")
        ax.set_xscale("log", base=2)
    else:
        nc = [(int(key.split("nc")[1].split("@")[0]), p) for key, p in pts.items()
              if "-nc" in key and p.get("status") == "done"]
        ax.plot([x for x, _ in nc], [p["mean_ulp"] for _, p in nc], marker="o", label="fp8 promoted every N_C")
        ax.plot([x for x, _ in nc], [p["max_ulp"] for _, p in nc], marker="x", linestyle=":", label="  max")
        plain = [p for key, p in pts.items() if "-nc" not in key and p.get("status") == "done"]
        if plain:
            ax.axhline(plain[0]["mean_ulp"], color="gray", linestyle="--", label="fp8, no promotion (mean)")
        ax.set_xlabel(f"promotion interval N_C (K = {data['k_max']}; a, b representable in fp8e4m3)")
        ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel("mean |d - exact| in fp32 ulps of the exact result")
    ax.set_title(f"{data['cases']} dot products per point, a, b, c uniform in (-1, 1)", fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def cmd_schemes(args) -> int:
    ks = sorted(set(args.ks))
    check_cases("--cases", args.cases, max(ks), "plot schemes", arrays=16, k_option="--ks")
    _pyplot()                          # matplotlib missing: said before the work
    tasks = scheme_tasks(args.vs, args.schemes, ks, sorted(set(args.ncs)), args.cases, args.seed,
                         sorted(set(args.spreads)))
    params = {"vs": args.vs, "schemes": args.schemes, "ks": ks, "ncs": args.ncs, "cases": args.cases, "spreads": args.spreads,
              "seed": args.seed}
    res = run_campaign("scheme-scan", params, tasks, journal_path(stem(args.output).with_suffix(".json")),
                       Options.from_args(args))
    if not any(p.get("status") == "done" for p in res.values()):
        first = next(iter(res.items()), None)
        raise CliError("no point of the scan finished" + (f" (first, {first[0]}: {first[1].get('status')}: "
                                                           f"{first[1].get('reason', '')})" if first else ""))
    data = {"vs": args.vs, "schemes": args.schemes, "k_max": max(ks), "cases": args.cases, "points": res}
    paths = save(scheme_figure(data), args.output, data)
    for key, p in res.items():
        if args.vs == "ozaki" and p.get("status") == "done":
            print(f"{key:<24} " + ", ".join(f"{r['scheme']} {r['max']:.2g}" for r in p["rows"]))
            continue
        print(f"{key:<24} " + (f"mean {p['mean_ulp']:.4g} ulp, max {p['max_ulp']:.4g}" if p.get("status") == "done"
                               else f"{p.get('status')}: {p.get('reason', '')}"))
    print("wrote " + ", ".join(map(str, paths)))
    return 0


def scheme_table_figure(rows: list):
    """Bits of accuracy against the cost in tensor-core products, one column of marks per scheme:
    the proved bound (a floor on the bits), the largest error found on the input families and by
    the mutation search (ceilings seen from below)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    styles = (("proved", "^", "proved (composed bound)"), ("found", "o", "found (input families)"),
              ("searched", "x", "searched (mutation)"))
    seen = set()
    for i, r in enumerate(rows):
        bits = {"proved": r.get("proved_bits"), "found": r.get("found_bits"),
                "searched": -float(np.log2(r["searched_comp"])) if r.get("searched_comp") else None}
        x = r["tc_products"] + 0.08 * ((i % 7) - 3)
        for key, marker, label in styles:
            if bits[key] is None:
                continue
            ax.scatter([x], [bits[key]], marker=marker, color=f"C{i % 10}", s=28,
                       label=None if label in seen else label)
            seen.add(label)
        top = max([v for v in bits.values() if v is not None], default=0.0)
        ax.annotate(r["scheme"].split("@")[0], (x, top), fontsize=5.5, rotation=60, xytext=(0, 4),
                    textcoords="offset points", color=f"C{i % 10}")
    ax.set_xlabel("tensor-core products per (row, column, k)")
    ax.set_ylabel("bits of accuracy: -log2(|err| / (|c| + sum |a b|))")
    ax.set_title(f"every scheme at K = {rows[0]['k']} (mmaprobe scheme table)", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def cmd_scheme_table(args) -> int:
    _pyplot()
    try:
        with open(args.table, encoding="utf-8") as fh:
            rows = json.load(fh)
        if not isinstance(rows, list) or not rows or not all("scheme" in r and "tc_products" in r for r in rows):
            raise ValueError("not the rows of `mmaprobe scheme table -o FILE`")
    except (OSError, ValueError) as exc:
        raise CliError(f"{args.table}: {exc}") from None
    paths = save(scheme_table_figure(rows), args.output, {"rows": rows})
    print("wrote " + ", ".join(map(str, paths)))
    return 0


def register(sub) -> None:
    p = sub.add_parser("plot", help="figures: error distributions, discrepancy matrix, scheme errors (PNG + SVG)")
    ps = p.add_subparsers(dest="plot_command", required=True)

    e = ps.add_parser("errors", help="error distribution of models against the exact result, overlaid")
    e.add_argument("--model", action="append", required=True, help="catalog model id[:overrides] (repeatable)")
    add_k(e, 16)
    e.add_argument("--cases", type=int, default=4000)
    e.add_argument("--dist", choices=KINDS, default="normal", help="input distribution (default normal)")
    e.add_argument("--seed", type=int, default=0)
    add_output(e, required=True, help="OUT: writes OUT.png, OUT.svg, OUT.json", kind="prefix")
    e.set_defaults(func=cmd_errors)

    d = ps.add_parser("discrepancy", help="fraction of cases on which each pair of models differs")
    d.add_argument("--model", action="append", required=True, help="catalog model id[:overrides] (repeatable)")
    add_k(d, 16)
    d.add_argument("--cases", type=int, default=2000, help="cases per input kind (default 2000)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--suite", default="generated_tests/index.json",
                   help="the suite index whose vector sizes label the cells (default generated_tests/index.json)")
    add_output(d, required=True, help="OUT: writes OUT.png, OUT.svg, OUT.json", kind="prefix")
    d.set_defaults(func=cmd_discrepancy)

    t = ps.add_parser("scheme-table", help="bits of accuracy (proved, found, searched) against the cost in "
                      "tensor-core products, from `mmaprobe scheme table -o TABLE.json`")
    t.add_argument("table", help="TABLE.json written by `mmaprobe scheme table -o`")
    add_output(t, required=True, help="OUT: writes OUT.png, OUT.svg, OUT.json", kind="prefix")
    t.set_defaults(func=cmd_scheme_table)

    s = ps.add_parser("schemes", help="GEMM schemes' error vs K, or fp8 vs the promotion interval N_C (a campaign)")
    s.add_argument("--vs", choices=("K", "NC", "ozaki"), default="K",
                   help="K: error vs K; NC: fp8 promotion interval; ozaki: Ozaki I/II vs O-Y tf32, 3xTF32 and "
                        "the fp64 FMA chain, vs K and vs --spreads (--cases: n of the n x n outputs)")
    s.add_argument("--spreads", type=int, nargs="+", default=[0, 8, 16],
                   help="with --vs ozaki: exponent spreads ±s of the inputs")
    s.add_argument("--schemes", nargs="+", default=list(SCHEMES_K),
                   help=f"with --vs K (default: {' '.join(SCHEMES_K)}; bf16, fp8: plain single-pass)")
    s.add_argument("--ks", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    s.add_argument("--ncs", type=int, nargs="+", default=[4, 8, 16, 32, 64, 128, 256],
                   help="promotion intervals with --vs NC (K = the largest --ks)")
    s.add_argument("--cases", type=int, default=128, help="dot products per point (default 128)")
    s.add_argument("--seed", type=int, default=0)
    add_output(s, required=True, help="OUT: writes OUT.png, OUT.svg, OUT.json", kind="prefix")
    add_campaign(s)
    s.set_defaults(func=cmd_schemes)

