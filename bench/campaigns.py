"""Campaigns on a Dask LocalCluster with 1 and with 2 workers: the full pairwise suite, ``bound
all`` (Table 9 by lemmas, Bitwuzla) and a 10^7-case ``verify`` of one model (twin side; the
"device" is a second twin, so no GPU is needed). Prints, per campaign and worker count: tasks,
wall time (cluster start included and apart), the tasks' own time, the speed-up 1 -> 2 workers,
bytes moved per task; and the scheduler's overhead per task (no-op tasks). Asserts nothing.

    python bench/campaigns.py                # the full campaigns (about 15 minutes on 2 quiet cores)
    python bench/campaigns.py --quick        # reduced: Volta/Turing pairs, 8 bound groups, 10^6 cases
    python bench/campaigns.py --json OUT     # also the numbers as JSON

Run it on a quiet machine: the speed-up measures the cores free for it (``uptime`` is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import cloudpickle  # noqa: E402

from mmaprobe.campaign import Options, Stats, Task, run_campaign  # noqa: E402
from hw_runner.verify import VERIFY_CHUNK, verify_task  # noqa: E402
from queries.bounds import by_signature, lemma_task, table9_models  # noqa: E402
from queries.distinguish.suite import pair_task, suite_pairs  # noqa: E402
from smtmodel.catalog import all_models  # noqa: E402

VERIFY_MODEL, VERIFY_OTHER = "hopper-fp16-fp32", "hopper-fp16-fp32-carry4"


def noop(i):
    return {"status": "done", "i": i}


def suite_tasks(quick: bool, timeout: float) -> list[Task]:
    models = all_models()
    if quick:
        models = [m for m in models if m.arch in ("volta", "turing")]
    return [Task(f"{a.id}__vs__{b.id}", pair_task, (a.id, b.id, list(key[:3]), "portfolio", timeout, False))
            for key, a, b in suite_pairs(models)]


def bound_tasks(quick: bool, timeout: float) -> list[Task]:
    groups = by_signature(table9_models())
    if quick:
        groups = groups[:8]
    return [Task(ms[0].id, lemma_task, ([m.id for m in ms], "bitwuzla", timeout, False)) for ms in groups]


def verify_tasks(cases: int) -> list[Task]:
    n_chunks = -(-cases // VERIFY_CHUNK)
    return [Task(f"chunk-{i}", verify_task, (VERIFY_MODEL, VERIFY_OTHER, 16, 0, i,
                                             min(VERIFY_CHUNK, cases - i * VERIFY_CHUNK), None, False,
                                             f"twin:{VERIFY_OTHER}", VERIFY_CHUNK))
            for i in range(n_chunks)]


def moved(tasks: list[Task], results: dict) -> tuple[float, float]:
    """Mean bytes per task sent to a worker (the pickled call) and sent back (the result)."""
    up = sum(len(cloudpickle.dumps((t.fn, t.args))) for t in tasks) / len(tasks)
    down = sum(len(cloudpickle.dumps(r)) for r in results.values()) / len(results)
    return up, down


def run(name: str, tasks: list[Task], workers: int, tmp: str) -> tuple[Stats, dict]:
    st = Stats()
    res = run_campaign(name, {"workers": workers}, tasks, os.path.join(tmp, f"{name}-{workers}.journal"),
                       Options(workers=workers, quiet=True, restart=True), stats=st)
    return st, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="reduced campaigns (development on a shared machine)")
    ap.add_argument("--timeout", type=float, default=30.0, help="solver seconds per suite pair / bound lemma")
    ap.add_argument("--cases", type=int, help="verify cases (default 10^7, --quick 10^6)")
    ap.add_argument("--only", nargs="+", choices=("suite", "bound", "verify", "overhead"))
    ap.add_argument("--json", help="write the numbers here")
    args = ap.parse_args()
    cases = args.cases or (10 ** 6 if args.quick else 10 ** 7)
    print("load before:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    campaigns = {"suite": lambda: suite_tasks(args.quick, args.timeout),
                 "bound": lambda: bound_tasks(args.quick, args.timeout),
                 "verify": lambda: verify_tasks(cases)}
    out = {"quick": args.quick, "cpus": os.cpu_count(), "campaigns": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in campaigns.items():
            if args.only and name not in args.only:
                continue
            tasks = make()
            row = {"tasks": len(tasks)}
            for w in (1, 2):
                st, res = run(name, tasks, w, tmp)
                bad = sum(r.get("status") in ("error", "unknown") for r in res.values())
                row[f"w{w}"] = {"wall": round(st.wall, 2), "startup": round(st.startup, 2),
                                "task_seconds": round(st.task_seconds, 2), "failed": bad,
                                "longest": [round(st.longest[0], 2), st.longest[1]]}
                print(f"{name:7} {len(tasks):5} tasks, {w} worker(s): wall {st.wall:8.2f} s "
                      f"(cluster start {st.startup:.2f} s), tasks' own time {st.task_seconds:8.2f} s, {bad} failed; "
                      f"longest task {st.longest[0]:.2f} s ({st.longest[1]})",
                      flush=True)
            up, down = moved(tasks, res)
            w1, w2 = row["w1"], row["w2"]
            row.update(speedup=round(w1["wall"] / w2["wall"], 3),
                       speedup_after_start=round((w1["wall"] - w1["startup"]) / (w2["wall"] - w2["startup"]), 3),
                       bytes_to_worker=round(up), bytes_back=round(down),
                       mean_task_seconds=round(w1["task_seconds"] / len(tasks), 4))
            print(f"{name:7} speed-up 1 -> 2 workers: {row['speedup']:.2f}x "
                  f"({row['speedup_after_start']:.2f}x after the cluster start); mean task "
                  f"{row['mean_task_seconds']:.3f} s; {up:.0f} B to a worker, {down:.0f} B back per task", flush=True)
            out["campaigns"][name] = row
        if not args.only or "overhead" in args.only:
            n = 2000
            st, _ = run("overhead", [Task(f"n{i}", noop, (i,)) for i in range(n)], 2, tmp)
            per = (st.wall - st.startup) / n
            st0 = Stats()
            run_campaign("journal", {}, [Task(f"n{i}", noop, (i,)) for i in range(n)],
                         os.path.join(tmp, "journal-only.journal"), Options(workers=0, quiet=True), stats=st0)
            out["overhead"] = {"tasks": n, "wall": round(st.wall - st.startup, 3), "per_task_ms": round(1e3 * per, 3),
                               "journal_per_task_ms": round(1e3 * st0.wall / n, 3)}
            print(f"scheduler overhead: {n} no-op tasks on 2 workers in {st.wall - st.startup:.2f} s "
                  f"= {1e3 * per:.2f} ms per task (submit, schedule, run, gather, journal fsync); "
                  f"the journal's fsync'd append alone: {1e3 * st0.wall / n:.2f} ms per task")
    out["load_after"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print("load after:", out["load_after"])
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    t = time.perf_counter()
    main()
    print(f"bench total {time.perf_counter() - t:.0f} s")
