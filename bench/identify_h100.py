"""``mmaprobe identify`` on the committed H100 survey captures (hwdata/survey/h100-sxm): the ten
kernels the survey's identify part covers (:func:`survey.identify.targets` for sm_90), each
exported as a vector file (``mmaprobe survey --export``: the one-block sets) and identified as a
file device through the command line (``--verify 0``: a capture has no unanswered verification;
the solver stage on, ``--solver-budget``), one kernel at a time.

    .venv/bin/python bench/identify_h100.py [--kernel ID ...] [--solver-budget S] [--timeout S]
                                            [--no-cache] [--json FILE] [--write-probes] [--markdown]

Per kernel: the status and ending, points and behaviours left, the parameters the answers do not
decide, and per pair of behaviours left whether every captured answer gives both the same output
(undecidable by the data) and whether a deciding input was found (pool, twin search or solver).

The chained sets (k = 4K: four instructions through the accumulator, the D of one the C of the
next) are not in the export (a file device has one k, and a point's own reading at 4K products is
not the chain when its L exceeds K). They are checked here apart: every point left is read as the
chain the kernel runs (four K-product evaluations, c <- d) on the captured chained inputs, and
compared with the captured outputs: a point that gets one wrong is refuted by them, and a pair
whose points differ on some chained case is decided by them.

A pair left without a deciding input is read on the survey's pin files of the kernel's own model
(``generated_tests/pin``: inputs no capture has, such as TF32 registers with low bits set, which
a vector file of TF32 cannot hold); the first file that splits it is named (``pin_file``).

``--write-probes`` copies each narrowed kernel's deciding inputs to
hwdata/survey/h100-sxm/probes/identify-KERNEL.deciding.jsonl (the vectors to run on the GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

import numpy as np

FOLDER = os.path.join(ROOT, "hwdata", "survey", "h100-sxm")
PROBES = os.path.join(FOLDER, "probes")
ARCH = "sm_90"


def kernels() -> list[str]:
    """The kernels of the survey's identify part on the H100, in its order."""
    from survey.identify import targets
    return [s.id for s in targets(ARCH)]


def chained(spec: str, a, b, c, k: int) -> np.ndarray:
    """Output bits of point ``spec`` on (N, m*k) inputs run as m chained k-product instructions."""
    from smtmodel.catalog import get_model
    m = get_model(spec)
    d = np.asarray(c, np.uint64)
    for j in range(0, a.shape[1], k):
        d = np.asarray(m.evaluate(a[:, j:j + k], b[:, j:j + k], d), np.uint64)
    return d


def chain_check(kernel: str, obj: dict, captured) -> dict:
    """The captured chained sets against the points left (module docstring)."""
    spec, sets, _, arrays = captured
    rows = [s for s in sets if s.a.shape[1] != spec.k]
    if not rows:
        return {"cases": 0}
    a = np.concatenate([s.a for s in rows])
    b = np.concatenate([s.b for s in rows])
    c = np.concatenate([s.c for s in rows])
    hw = np.concatenate([arrays[f"{spec.id}/{s.name}"].astype(np.uint64)[:len(s.a)] for s in rows])
    reps = sorted({p for r in obj.get("pairs") or [] for p in (r["a"], r["b"])} | set(obj["class"]))
    out = {p: chained(p, a, b, c, spec.k) for p in reps}
    refuted = {p: int((out[p] != hw).sum()) for p in reps if (out[p] != hw).any()}
    pairs = []
    for r in obj.get("pairs") or []:
        diff = out[r["a"]] != out[r["b"]]
        pairs.append({"a": r["a"], "b": r["b"], "differ": int(diff.sum()),
                      "a_wrong": int((out[r["a"]] != hw).sum()), "b_wrong": int((out[r["b"]] != hw).sum())})
    fit = [p for p in obj["class"] if p not in refuted]
    return {"sets": [s.name for s in rows], "cases": len(a), "k": a.shape[1],
            "points_refuted": len([p for p in obj["class"] if p in refuted]), "points_fit": len(fit),
            "refuted": refuted, "pairs_split": sum(1 for p in pairs if p["differ"]), "pairs": pairs}


def pin_check(kernel: str, rec: dict) -> dict:
    """Pairs left without a deciding input, against the survey's pin files of the kernel's own
    model (generated_tests/pin/OWN.PARAMETER.jsonl, made for inputs a capture lacks, e.g. TF32
    registers with low bits set): per pair, the first file on which its two points differ."""
    from smtmodel.catalog import get_model
    from smtmodel.vectors import read_vectors
    card = json.loads(Path(FOLDER, "card.json").read_text())
    own = card["kernels"][kernel]["own_model"]
    files = sorted(Path(ROOT, "generated_tests", "pin").glob(f"{own}.*.jsonl"))
    todo = [p for p in rec["pairs"] if p["status"] != "deciding input"]
    found = {}
    for f in files:
        vf = read_vectors(str(f))
        if vf.k != rec["k"]:
            continue
        a, b, c = vf.arrays()
        for p in todo:
            key = (p["a"], p["b"])
            if key not in found and (np.asarray(get_model(p["a"]).evaluate(a, b, c))
                                     != np.asarray(get_model(p["b"]).evaluate(a, b, c))).any():
                found[key] = os.path.relpath(f, ROOT)
    for p in todo:
        p["pin_file"] = found.get((p["a"], p["b"]))
    return {"files": [os.path.relpath(f, ROOT) for f in files], "pairs_split": len(found)}


def run_one(kernel: str, tmp: str, budget: float, timeout: float, captured, no_cache: bool = False) -> dict:
    from survey.run import export
    vec = os.path.join(tmp, f"{kernel}.jsonl")
    n = export(FOLDER, kernel, vec)
    res = os.path.join(tmp, f"{kernel}.json")
    argv = [sys.executable, "-m", "mmaprobe.cli", "identify", "--device", f"file:{vec}", "--verify", "0",
            "--solver-budget", str(budget), "--timeout", str(timeout), "-o", res,
            "--journal", os.path.join(tmp, f"{kernel}.journal.jsonl"), "--quiet"] + (["--no-cache"] if no_cache else [])
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if p.returncode != 0 or not os.path.exists(res):
        return {"kernel": kernel, "cases": n, "status": "failed", "rc": p.returncode,
                "stderr": p.stderr[-2000:], "wall_s": round(wall, 1)}
    obj = json.loads(Path(res).read_text())
    pairs = obj.get("pairs") or []
    rec = {"kernel": kernel, "k": obj["k"], "cases": n, "status": obj["status"], "ending": obj.get("ending") or "",
           "points": len(obj["class"]), "behaviours": obj["behaviours"], "undecided": obj.get("undecided") or [],
           "alike": obj.get("alike") or [], "identified_as": obj["identified_as"],
           "catalog_match": obj["catalog_match"], "class_status": obj["class_status"],
           "pairs": [{"a": r["a"], "b": r["b"], "answers": r["answers"], "same": r["same"], "status": r["status"],
                      "how": r["how"]} for r in pairs],
           "pairs_all_answers_equal": all(r["same"] == r["answers"] for r in pairs),
           "pairs_with_deciding_input": sum(1 for r in pairs if r.get("case")),
           "solver": [{k: q.get(k) for k in ("status", "reason", "solver", "seconds")} for q in obj.get("solver") or []],
           "wall_s": round(wall, 1)}
    rec["chain"] = chain_check(kernel, obj, captured)
    rec["pin"] = pin_check(kernel, rec)
    dec = os.path.join(tmp, f"{kernel}.deciding.jsonl")
    rec["deciding_file"] = os.path.exists(dec)
    rec["_deciding_path"] = dec
    return rec


def write_probes(kernel: str, path: str) -> None:
    """Keep a narrowed kernel's deciding inputs as probes/identify-KERNEL.deciding.jsonl, the
    export named in the header instead of its temporary path; a file that differs in that name
    alone is left as it is."""
    lines = Path(path).read_text().splitlines()
    head = json.loads(lines[0])
    dest = os.path.join(PROBES, f"identify-{kernel}.deciding.jsonl")
    if os.path.exists(dest):
        old = Path(dest).read_text().splitlines()
        h0 = json.loads(old[0])
        if old[1:] == lines[1:] and dict(h0, source=None) == dict(head, source=None):
            return
    head["source"]["device"] = f"file:{kernel}.jsonl (mmaprobe survey --export hwdata/survey/h100-sxm {kernel})"
    with open(dest, "w") as fh:
        fh.write("\n".join([json.dumps(head)] + lines[1:]) + "\n")


def markdown(rows: list[dict]) -> str:
    head = ("| kernel | K | status (ending) | points / behaviours | undecided | pairs: all captured answers equal | "
            "pairs with a deciding input | chained sets (4K): points refuted, pairs split | rest split by pin files |")
    out = [head, "|" + "---|" * 9]
    for r in rows:
        if r["status"] == "failed":
            out.append(f"| {r['kernel']} | | failed (rc {r['rc']}) | | | | | | |")
            continue
        np_ = len(r["pairs"])
        eq = f"{sum(p['same'] == p['answers'] for p in r['pairs'])}/{np_}" if np_ else "-"
        ch = r["chain"]
        chain = (f"{ch['points_refuted']} of {r['points']}, {ch['pairs_split']}/{np_} ({ch['cases']} cases)"
                 if ch.get("cases") else "none captured")
        end = f" ({r['ending']})" if r["ending"] else ""
        out.append(f"| {r['kernel']} | {r['k']} | {r['status']}{end} | {r['points']} / {r['behaviours']} | "
                   f"{', '.join(r['undecided']) or '-'} | {eq} | {r['pairs_with_deciding_input']}/{np_ or 0} | {chain} | "
                   f"{r['pin']['pairs_split']}/{np_ - r['pairs_with_deciding_input']} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", action="append", help="one kernel (repeatable; default: the ten)")
    ap.add_argument("--solver-budget", type=float, default=60.0)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per SMT question")
    ap.add_argument("--no-cache", action="store_true", help="identify neither reads nor writes the proof cache")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--write-probes", action="store_true", help="copy narrowed kernels' deciding inputs to probes/")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    from survey.run import captured_sets
    names = args.kernel or kernels()
    _, caps = captured_sets(FOLDER)
    caps = {x[0].id: x for x in caps}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in names:
            r = run_one(k, tmp, args.solver_budget, args.timeout, caps[k], args.no_cache)
            path = r.pop("_deciding_path", None)
            if args.write_probes and r["status"] == "narrowed" and r.get("deciding_file"):
                write_probes(k, path)
            rows.append(r)
            print(json.dumps({x: r.get(x) for x in ("kernel", "status", "ending", "points", "behaviours",
                                                     "undecided", "pairs_with_deciding_input", "wall_s")}),
                  flush=True)
    doc = {"kind": "mmaprobe.bench.identify-h100", "folder": "hwdata/survey/h100-sxm",
           "settings": {"verify": 0, "solver_budget": args.solver_budget, "timeout": args.timeout,
                        "proof_cache": not args.no_cache},
           "kernels": rows}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
    if args.markdown:
        print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
