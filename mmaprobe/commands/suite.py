"""``mmaprobe suite``: one distinguishing vector or equivalence proof per pair of catalog models
with the same formats, one campaign task per pair (:mod:`mmaprobe.campaign`; the pairs and the
task are :mod:`queries.distinguish.suite`). An index
(``index.json``, written atomically at the end) records every answer, so a second run keeps the
pairs already answered; ``index.json.journal`` records each pair as it finishes, so a killed
run continues with ``--resume``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from queries.distinguish import SOLVER_CHOICES, default_k
from queries.distinguish.suite import pair_task, suite_pairs
from smtmodel.catalog import all_models, get_model
from smtmodel.vectors import VectorFile, write_vectors

from ..args import add_campaign, add_solver
from ..campaign import Options, Task, journal_path, run_campaign
from ..errors import EXIT_INTERNAL, EXIT_TWIN
from ..io import declare_outputs, write_json


def _load_index(path: Path) -> dict:
    if path.exists():
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    return {"kind": "mmaprobe.suite", "version": 1, "results": {}}


def cmd_suite(args) -> int:
    models = [get_model(m) for m in args.models] if args.models else all_models()
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
    tasks, order = [], {}
    for n, (key, a, b) in enumerate(pairs, 1):
        name = f"{a.id}__vs__{b.id}"
        order[name] = n
        prev = index["results"].get(name)
        if prev and prev["status"] in ("sat", "unsat") and not args.force:
            print(f"[{n}/{len(pairs)}] {name}: {prev['status']} (kept from an earlier run)", file=sys.stderr)
            continue
        tasks.append(Task(name, pair_task, (a.id, b.id, list(key[:3]), args.solver, args.timeout, args.simple)))
    debug = getattr(args, "debug", False)
    bugs = []

    def finished(name: str, entry: dict) -> None:
        entry = dict(entry)
        vectors = entry.pop("vectors", None)
        bug, tb = entry.pop("bug", None), entry.pop("traceback", None)
        if bug:
            if debug and tb:
                print(tb, file=sys.stderr, end="")
            print(f"mmaprobe: internal error in {name}: {bug}", file=sys.stderr)
            if entry["status"] != "twin-disagreement":
                bugs.append(name)
        if vectors is not None:
            sub = out / "-".join(entry["formats"])
            sub.mkdir(exist_ok=True)
            path = sub / f"{name}.jsonl"
            write_vectors(path, VectorFile(vectors["header"], vectors["cases"]))
            entry["file"] = str(path.relative_to(out))
        index["results"][name] = entry
        if not args.quiet:
            print(f"[{order[name]}/{len(pairs)}] {name}: {entry['status']} ({entry.get('solver', '-')}, "
                  f"{entry['seconds']:.1f} s)" + (f" {entry['reason']}" if entry.get("reason") and
                                                 entry["status"] != "sat" else ""), file=sys.stderr)

    params = {"solver": args.solver, "timeout": args.timeout, "simple": args.simple}
    seen = set()

    def log(name: str, entry: dict) -> None:
        seen.add(name)
        finished(name, entry)

    results = run_campaign("suite", params, tasks, journal_path(index_path), Options.from_args(args), log=log)
    for t in tasks:                    # those a resumed journal already held
        if t.key not in seen:
            finished(t.key, results[t.key])
    index["results"] = dict(sorted(index["results"].items()))
    write_json(index_path, index, sort_keys=True, announce=False)
    st = [e["status"] for e in index["results"].values()]
    print(f"suite: {st.count('sat')} distinguished, {st.count('unsat')} proved equivalent, "
          f"{st.count('unknown')} unknown, {len(st) - st.count('sat') - st.count('unsat') - st.count('unknown')} "
          f"failed; index {index_path}", file=sys.stderr)
    if any(s == "twin-disagreement" for s in st):
        return EXIT_TWIN
    return EXIT_INTERNAL if bugs else 0


def register(sub) -> None:
    s = sub.add_parser("suite", help="one vector or equivalence proof per pair of same-format catalog models")
    s.add_argument("--models", nargs="+", help="model ids (default: the whole catalog)")
    s.add_argument("--arch", nargs="+", help="only models of these architectures")
    add_solver(s, SOLVER_CHOICES, "portfolio", 60.0, what="each pair")
    s.add_argument("--simple", action="store_true", help="readable vectors (slower)")
    s.add_argument("--max-k", type=int, help="skip pairs whose default k exceeds this")
    s.add_argument("--force", action="store_true", help="re-run pairs already answered in the index")
    s.add_argument("-o", "--output", default="generated_tests", help="folder (default generated_tests/)")
    declare_outputs(s, output="dir")
    add_campaign(s)
    s.set_defaults(func=cmd_suite)
