"""``mmaprobe features`` / ``feature NAME`` / ``suite``: named feature queries and the pairwise suite."""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from pathlib import Path

from mmaprobe.errors import INTERNAL_ERROR
from smtmodel.formats import get_format

from .cli import EXIT_TWIN, _add_query_args, _guard, report_distinguish
from .distinguish import (SOLVER_CHOICES, QueryError, TwinDisagreement, default_k, distinguish)
from .features import FEATURES, feature_pair


def cmd_features(args) -> int:
    for f in FEATURES.values():
        t4 = f"  [seed 002 Table 4: z3 {f.table4[0]}, cvc5 {f.table4[1]}]" if f.table4 else ""
        exp = "" if f.expect == "sat" else "  (expects a proof of equality)"
        print(f"{f.name:<26} {f.title} -- {f.source}; default --model {f.default_model}{exp}{t4}")
    return 0


@_guard
def cmd_feature(args) -> int:
    f, a, b, k, cons = feature_pair(args.name, args.model)
    res = distinguish(a, b, k=k if args.k is None else args.k, solver=args.solver, timeout=args.timeout,
                      constraints=cons, simple=args.simple, count=args.count, smt2=args.smt2)
    print(f"feature {f.name}: {f.title} ({f.source})")
    print(f"  A = {a.id}: {a.summary()}\n  B = {b.id}: {b.summary()}")
    rc = report_distinguish(res, args.output, tool=f"mmaprobe feature {f.name}",
                            note=f"{f.title}; A={a.id} ({a.summary()}), B={b.id} ({b.summary()})")
    if res.status in ("sat", "unsat") and res.status != f.expect:
        print(f"note: the seeds expect {'a distinguishing vector' if f.expect == 'sat' else 'equivalence'} here",
              file=sys.stderr)
    return 0 if res.status == f.expect else rc


# ---- suite ------------------------------------------------------------------------------------

def _formats_key(m):
    return (get_format(m.in_fmt).name, get_format(m.c_fmt).name, get_format(m.out_fmt).name,
            m.scale_fmt or "", m.scale_block or 0)


def suite_pairs(models):
    groups: dict = {}
    for m in models:
        groups.setdefault(_formats_key(m), []).append(m)
    for key, ms in groups.items():
        for a, b in itertools.combinations(ms, 2):
            yield key, a, b


def _load_index(path: Path) -> dict:
    if path.exists():
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    return {"kind": "mmaprobe.suite", "version": 1, "results": {}}


def _write_json_atomic(path: Path, obj) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def cmd_suite(args) -> int:
    from smtmodel.catalog import all_models, get_model

    from .cli import vector_file
    from smtmodel.vectors import write_vectors

    try:
        models = [get_model(m) for m in args.models] if args.models else all_models()
    except ValueError as exc:
        raise QueryError(str(exc)) from None
    if args.arch:
        models = [m for m in models if m.arch in args.arch]
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    index_path = out / "index.json"
    index = _load_index(index_path)
    pairs = list(suite_pairs(models))
    if args.max_k:
        pairs = [p for p in pairs if default_k(p[1], p[2]) <= args.max_k]
    print(f"suite: {len(pairs)} pairs of models with the same formats", file=sys.stderr)
    failures = 0
    for n, (key, a, b) in enumerate(pairs, 1):
        name = f"{a.id}__vs__{b.id}"
        prev = index["results"].get(name)
        if prev and prev["status"] in ("sat", "unsat") and not args.force:
            print(f"[{n}/{len(pairs)}] {name}: {prev['status']} (kept from an earlier run)", file=sys.stderr)
            continue
        t = time.perf_counter()
        entry = {"a": a.id, "b": b.id, "formats": list(key[:3])}
        try:
            res = distinguish(a.id, b.id, solver=args.solver, timeout=args.timeout, simple=args.simple)
            entry.update(status=res.status, solver=res.solver, seconds=round(res.seconds, 3), k=res.k,
                         reason=res.reason)
            if res.status == "sat":
                sub = out / "-".join(key[:3])
                sub.mkdir(exist_ok=True)
                path = sub / f"{name}.jsonl"
                write_vectors(path, vector_file(res, "mmaprobe suite"))
                entry["file"] = str(path.relative_to(out))
            elif res.status == "unsat":
                entry["proof"] = f"equivalent for k={res.k}: proved UNSAT by {res.solver}"
        except TwinDisagreement as exc:
            print(INTERNAL_ERROR.format(exc), file=sys.stderr)
            entry.update(status="twin-disagreement", reason=str(exc))
            failures += 1
        except Exception as exc:  # one failing pair must not lose the others
            entry.update(status="error", reason=f"{type(exc).__name__}: {exc}")
            failures += 1
        entry.setdefault("seconds", round(time.perf_counter() - t, 3))
        index["results"][name] = entry
        _write_json_atomic(index_path, index)
        print(f"[{n}/{len(pairs)}] {name}: {entry['status']} ({entry.get('solver', '-')}, {entry['seconds']:.1f} s)"
              + (f" {entry['reason']}" if entry.get("reason") and entry["status"] != "sat" else ""), file=sys.stderr)
    st = [e["status"] for e in index["results"].values()]
    print(f"suite: {st.count('sat')} distinguished, {st.count('unsat')} proved equivalent, "
          f"{st.count('unknown')} unknown, {len(st) - st.count('sat') - st.count('unsat') - st.count('unknown')} "
          f"failed; index {index_path}", file=sys.stderr)
    return EXIT_TWIN if any(s == "twin-disagreement" for s in st) else 0


def register(sub) -> None:
    s = sub.add_parser("features", help="list the named feature queries (seeds' hypotheses)")
    s.set_defaults(func=cmd_features)

    s = sub.add_parser("feature", help="run one named feature query")
    s.add_argument("name", help="feature name (`mmaprobe features` lists them)")
    s.add_argument("--model", help="base model id[:overrides] (default: the feature's own)")
    _add_query_args(s)
    s.add_argument("--simple", action="store_true")
    s.add_argument("--count", type=int, default=1)
    s.add_argument("-o", "--output", help="vector file to write")
    s.set_defaults(func=cmd_feature)

    s = sub.add_parser("suite", help="one vector or equivalence proof per pair of same-format catalog models")
    s.add_argument("--models", nargs="+", help="model ids (default: the whole catalog)")
    s.add_argument("--arch", nargs="+", help="only models of these architectures")
    s.add_argument("--solver", choices=SOLVER_CHOICES, default="portfolio")
    s.add_argument("--timeout", type=float, default=60.0, help="seconds per pair (default 60)")
    s.add_argument("--simple", action="store_true", help="readable vectors (slower)")
    s.add_argument("--max-k", type=int, help="skip pairs whose default k exceeds this")
    s.add_argument("--force", action="store_true", help="re-run pairs already answered in the index")
    s.add_argument("-o", "--output", default="generated_tests", help="folder (default generated_tests/)")
    s.set_defaults(func=_guard(cmd_suite))
