"""GEMM throughput: mmaprobe's compiled twin (the GEMM reading) against mmaemu (FP8) and MMA-Sim
(fp16, bf16), same inputs, same bits, same threads, all warm, best of ``--reps`` runs each.

Run: python bench/gemm.py [--sizes 1024 2048] [--jobs N] [--reps R] [--mmasim-rows R] [--no-peers]
[--profiles | --profiles-only [--only PROFILE...] [--processes P]] [--json OUT.json]. Peers come with ``pip install -e '.[bench]'`` (a
separate virtual environment is fine: torch is large). Inputs are standard normal values rounded
to the input format. Every pair of outputs is checked bit-identical before a ratio is formed (a
peer's first timed run is the one whose bits are checked); a pair that differs is reported and
not compared.

The machine may be shared: every figure is the best of R runs, given both as wall seconds and as
CPU seconds of this process (all threads; the CPU figure is the one a busy machine does not
inflate), with the 1-minute load average read before and after the runs beside it. Ratios are
given for both.

* Hopper e4m3 -> fp32, S^3 for each size: ``gemm(hopper-fp8e4m3-fp32, beta=0)`` (one chain over
  K from +0: the accumulator) against ``mmaemu.accumulate(use_fast_accum=True, profile="hopper",
  splitk=1)``, and with ``k_order="interval:128"`` against ``use_fast_accum=False`` (cuBLAS'
  promotion every 128 elements of K). torch runs ``jobs`` threads, mmaprobe ``jobs`` threads.
* Hopper fp16 -> fp32 and bf16 -> fp32, ``--fp16-size``^3: against MMA-Sim's ``MMA("Hopper",
  "m16n8k16.f32.{f16,bf16}...")`` on whole matrices. MMA-Sim computes the first ``--mmasim-rows``
  rows of A only (rows are independent; checked bit-identical on them), its time scaled by
  M / rows.
* Scaling of the FP8 GEMM over 1..all cores.
* ``--profiles``: every named dataflow profile (smtmodel.dataflow.PROFILES) against the plain
  GEMM (one chain, beta = 0, same model), fp16 (hopper-fp16-fp32) and FP8 (ada-fp8e4m3-fp32, or
  hopper-fp8e4m3-fp32 for the Hopper and DeepGEMM profiles), C given and beta = 1 where the
  profile reads C: CPU seconds (best of R after one untimed full-size run, which compiles and
  grows the process's memory: a first full-size call pays its page faults in system time) and
  the overhead in %, each profile with the plain
  GEMM in ``--processes`` fresh processes of its own (default 3): the median overhead over them
  and its range (a compiled kernel's time moves by about +-5 % between processes with where the
  process's memory lands: with address-space layout randomisation off, ``setarch -R``, it
  repeats; and with what the GEMMs run before left in the heap).

``--json OUT.json`` writes every figure at the end of a finished run (atomically: an interrupted
run leaves no file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from smtmodel import native  # noqa: E402
from smtmodel.catalog import get_model  # noqa: E402
from smtmodel.gemm import gemm_bits  # noqa: E402
from smtmodel.io import atomic_open  # noqa: E402
from smtmodel.sampling import round_to  # noqa: E402

from throughput import torch_bits, torch_view  # noqa: E402

RESULTS: list[dict] = []


def load() -> float:
    return os.getloadavg()[0]


def mats(fmt, s, seed=0, k=None):
    rng = np.random.default_rng(seed)
    k = k or s
    return round_to(rng.standard_normal((s, k)), fmt), round_to(rng.standard_normal((k, s)), fmt)


def best(fn, reps: int):
    """(result, best wall s, best CPU s, load before, load after): ``fn`` run ``reps`` times."""
    l0 = load()
    w = c = float("inf")
    r = None
    for _ in range(reps):
        t, p = time.perf_counter(), time.process_time()
        r = fn()
        w, c = min(w, time.perf_counter() - t), min(c, time.process_time() - p)
    return r, w, c, l0, load()


def fig(w: float, c: float, macs: float) -> str:
    return f"{w:7.2f} s wall {c:7.2f} CPU-s ({macs / w / 1e6:6.0f} M MAC/s wall, {macs / c / 1e6:6.0f} per CPU-s)"


def record(**kw) -> None:
    RESULTS.append(kw)


def fp8_vs_mmaemu(sizes, J: int, reps: int, peers: bool, orders=("plain", "interval:128")) -> None:
    emu = None
    if peers:
        try:
            import mmaemu
            import torch
            torch.set_num_threads(J)
            emu = mmaemu
        except ImportError:
            print("mmaemu / torch not installed: pip install -e '.[bench]'")
    m8 = get_model("hopper-fp8e4m3-fp32")
    for s in sizes:
        A, B = mats(m8.in_fmt, s)
        for fast, order in ((True, "plain"), (False, "interval:128")):
            if order not in orders:
                continue
            gemm_bits(m8, A[:8], B, None, beta_bits=0, k_order=order, jobs=J)          # compile, warm
            d, w, c, l0, l1 = best(lambda: gemm_bits(m8, A, B, None, beta_bits=0, k_order=order, jobs=J), reps)
            print(f"FP8 e4m3->fp32 {s}^3 {order:<12} (fast_accum={fast}) load {l0:.1f}/{l1:.1f}", flush=True)
            print(f"  mmaprobe {fig(w, c, s ** 3)}", flush=True)
            rec = dict(bench="fp8", size=s, order=order, fast_accum=fast, jobs=J, mmaprobe_wall=w,
                       mmaprobe_cpu=c, load=[l0, l1])
            if emu is not None:
                tA, tB = torch_view(A, "fp8e4m3"), torch_view(np.ascontiguousarray(B.T), "fp8e4m3")

                def run():
                    return emu.accumulate(tA, tB, use_fast_accum=fast, profile="hopper", splitk=1)
                emu.accumulate(tA[:8], tB, use_fast_accum=fast, profile="hopper", splitk=1)   # warm
                e0 = load()
                t, p = time.perf_counter(), time.process_time()
                acc = run()                                  # the run whose bits are checked is the first timed one
                w1, c1 = time.perf_counter() - t, time.process_time() - p
                if np.array_equal(torch_bits(acc).reshape(s, s), d):
                    _, we, ce, _, e1 = best(run, reps - 1) if reps > 1 else (None, w1, c1, e0, load())
                    we, ce = min(we, w1), min(ce, c1)
                    print(f"  mmaemu   {fig(we, ce, s ** 3)} load {e0:.1f}/{e1:.1f} | bits identical | "
                          f"mmaprobe x{we / w:.1f} (wall) x{ce / c:.1f} (CPU)", flush=True)
                    rec.update(mmaemu_wall=we, mmaemu_cpu=ce, mmaemu_load=[e0, e1], ratio_wall=we / w, ratio_cpu=ce / c)
                else:
                    print("  mmaemu outputs DIFFER: not compared", flush=True)
                    rec.update(mmaemu="differs")
            record(**rec)


def halves_vs_mmasim(s: int, J: int, reps: int, rows: int, peers: bool) -> None:
    for mid, fmt, shape in (("hopper-fp16-fp32", "fp16", "m16n8k16.f32.f16.f16.f32"),
                            ("hopper-bf16-fp32", "bf16", "m16n8k16.f32.bf16.bf16.f32")):
        m = get_model(mid)
        A, B = mats(m.in_fmt, s, 1)
        gemm_bits(m, A[:8], B, None, beta_bits=0, jobs=J)
        d, w, c, l0, l1 = best(lambda: gemm_bits(m, A, B, None, beta_bits=0, jobs=J), reps)
        print(f"{fmt}->fp32 {s}^3 load {l0:.1f}/{l1:.1f}\n  mmaprobe {fig(w, c, s ** 3)}", flush=True)
        rec = dict(bench=fmt, size=s, jobs=J, mmaprobe_wall=w, mmaprobe_cpu=c, load=[l0, l1])
        if peers:
            try:
                import torch
                from mmasim.nv_ptx import MMA
            except ImportError:
                print("  MMA-Sim not installed")
                record(**rec)
                continue
            torch.set_num_threads(J)
            op = MMA("Hopper", shape)
            tA, tB = torch_view(A[:rows], fmt), torch_view(B, fmt)
            tC = torch.zeros((rows, s), dtype=torch.float32)
            out = op(tA, tB, tC)
            if np.array_equal(torch_bits(out).reshape(rows, s), d[:rows]):
                _, ws, cs, e0, e1 = best(lambda: op(tA, tB, tC), reps)
                ws, cs = ws * s / rows, cs * s / rows
                print(f"  MMA-Sim  {fig(ws, cs, s ** 3)} load {e0:.1f}/{e1:.1f} (ran {rows} rows, scaled) | "
                      f"bits identical | mmaprobe x{ws / w:.0f} (wall) x{cs / c:.0f} (CPU)", flush=True)
                rec.update(mmasim_wall=ws, mmasim_cpu=cs, mmasim_rows=rows, ratio_wall=ws / w, ratio_cpu=cs / c)
            else:
                print("  MMA-Sim outputs DIFFER: not compared", flush=True)
        record(**rec)


def scaling(s: int, reps: int) -> None:
    m8 = get_model("hopper-fp8e4m3-fp32")
    A, B = mats(m8.in_fmt, s)
    print(f"\nscaling, FP8 {s}^3 plain (M MAC/s wall; load {load():.1f}):")
    one = None
    for j in sorted({1, 2, 4, 8, 16, native.default_jobs()}):
        if j > native.default_jobs():
            continue
        _, w, c, _, _ = best(lambda: gemm_bits(m8, A, B, None, beta_bits=0, jobs=j), reps)
        r = s ** 3 / w / 1e6
        one = one or r
        print(f"  jobs={j:<3} {r:8.0f}  x{r / one:.2f}   ({s ** 3 / c / 1e6:.0f} per CPU-s)")
        record(bench="scaling", size=s, jobs=j, wall=w, cpu=c)


def profile_names(only) -> list:
    """The named dataflow profiles, or those in ``only`` (an unknown name: one line, exit)."""
    from smtmodel.dataflow import PROFILES
    unknown = set(only or ()) - set(PROFILES)
    if unknown:
        raise SystemExit(f"gemm.py: unknown profile(s) {', '.join(sorted(unknown))}")
    return [n for n in PROFILES if not only or n in only]


def profiles_in_processes(sizes, J: int, reps: int, only, processes: int, kinds=("fp16", "fp8")) -> None:
    """:func:`profiles` with each (size, kind, profile) in ``processes`` fresh processes of its
    own, which measure the plain GEMM and that profile; per profile the median overhead over the
    processes and its range. A compiled kernel's time moves by about +-5 % from one process to
    the next with where the process's memory lands (address-space layout randomisation; with it
    off, ``setarch -R``, the times repeat), and in a process that has run other GEMMs before
    with what they left in its heap: a process of its own per profile keeps one profile's
    figure from depending on the others run before it."""
    import subprocess
    import tempfile
    names = profile_names(only)
    jobs = [(s, kind, name, i) for s in sizes for kind in kinds for name in names for i in range(processes)]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n, (s, kind, name, i) in enumerate(jobs):
            out = os.path.join(d, f"p{n}.json")
            cmd = [sys.executable, os.path.abspath(__file__), "--profiles-only", "--processes", "1", "--sizes", str(s),
                   "--kinds", kind, "--only", name, "--jobs", str(J), "--reps", str(reps), "--json", out]
            if n % processes == 0:
                print(f"{kind} {s}^3 {name}: {processes} processes (load {load():.1f})", flush=True)
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            with open(out, encoding="utf-8") as fh:
                got = [r for r in json.load(fh)["results"] if r["bench"] == "profiles"]
            rows += got
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["size"], r["kind"], r["model"]), {}).setdefault(r["profile"], []).append(r)
    for (size, kind, mid), per in groups.items():
        base = per.pop("plain")
        print(f"\n{kind} {size}^3, plain gemm ({mid}): best {min(r['cpu'] for r in base):.3f} CPU-s "
              f"(best of {reps} in each of {processes} processes)", flush=True)
        for name, rs in per.items():
            ov = sorted(100 * r["overhead"] for r in rs)
            med = ov[len(ov) // 2] if len(ov) % 2 else (ov[len(ov) // 2 - 1] + ov[len(ov) // 2]) / 2
            loads = [x for r in rs for x in r["load"]]
            print(f"  {name:<30} {med:+5.0f} % CPU vs plain (median of {len(ov)} processes; {ov[0]:+.0f} .. "
                  f"{ov[-1]:+.0f} %; load {min(loads):.1f}-{max(loads):.1f})", flush=True)
            record(bench="profiles-median", size=size, kind=kind, profile=name, model=mid, processes=len(ov),
                   overhead_median=med / 100, overhead_min=ov[0] / 100, overhead_max=ov[-1] / 100)


def profiles(sizes, J: int, reps: int, only=None, kinds=("fp16", "fp8")) -> None:
    """Every named dataflow profile (or those in ``only``) against the plain GEMM, in this process;
    overheads in CPU seconds, best of R."""
    from smtmodel.dataflow import PROFILES
    profile_names(only)
    for s in sizes:
        for kind in kinds:
            C = round_to(np.random.default_rng(3).standard_normal((s, s)), "fp32")
            bases = {}
            runs = []
            for name, df in PROFILES.items():
                if only and name not in only:
                    continue
                mid = "hopper-fp16-fp32" if kind == "fp16" else "ada-fp8e4m3-fp32:zero_align=ignore"
                if kind == "fp8" and (name.startswith("cublaslt-hopper") or name == "deepgemm"):
                    mid = "hopper-fp8e4m3-fp32:zero_align=ignore"
                runs.append((mid, name, df))
            order = {mid: n for n, (mid, _, _) in reversed(list(enumerate(runs)))}
            runs.sort(key=lambda r: order[r[0]])          # grouped by model, in order (a stable sort)
            for mid, name, df in runs:
                m = get_model(mid)
                A, B = mats(m.in_fmt, s, 2)
                if mid not in bases:                     # warm: compiled, and the process's memory grown once
                    gemm_bits(m, A, B, None, beta_bits=0, jobs=J)
                    _, w0, t0, l0, l1 = best(lambda: gemm_bits(m, A, B, None, beta_bits=0, jobs=J), reps)
                    bases[mid] = t0
                    print(f"\n{kind} {s}^3, plain gemm ({mid}: one chain, beta=0): {w0:.2f} s wall, {t0:.2f} CPU-s "
                          f"(best of {reps}; load {l0:.1f}/{l1:.1f})", flush=True)
                    record(bench="profiles", size=s, kind=kind, profile="plain", model=mid, wall=w0, cpu=t0)
                t0 = bases[mid]
                kw = {}
                if df.scale_a != "tensor":
                    nk = -(-s // 128)
                    kw = dict(scale_a_bits=np.full((s, nk), 0x3F800000, np.uint64),
                              scale_b_bits=np.full((-(-s // 128), nk), 0x3F800000, np.uint64))
                cc = None if df.alpha_from_scales else C
                gemm_bits(m, A, B, cc, dataflow=df, jobs=J, **kw)
                _, w, t, l0, l1 = best(lambda: gemm_bits(m, A, B, cc, dataflow=df, jobs=J, **kw), reps)
                print(f"  {name:<30} {w:7.2f} s wall {t:7.2f} CPU-s  {100 * (t / t0 - 1):+6.0f} % CPU vs plain "
                      f"(load {l0:.1f}/{l1:.1f})", flush=True)
                record(bench="profiles", size=s, kind=kind, profile=name, model=mid, wall=w, cpu=t,
                       overhead=t / t0 - 1, load=[l0, l1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048], help="FP8 GEMM sizes M = N = K")
    ap.add_argument("--fp16-size", type=int, default=1024)
    ap.add_argument("--mmasim-rows", type=int, default=4, help="rows of A MMA-Sim computes (time scaled)")
    ap.add_argument("--jobs", type=int, default=native.default_jobs())
    ap.add_argument("--reps", type=int, default=2, help="runs of each measurement; the best counts")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--profiles", action="store_true", help="time every named dataflow profile too")
    ap.add_argument("--profiles-only", action="store_true")
    ap.add_argument("--only", nargs="+", metavar="PROFILE", help="with --profiles: these named profiles only")
    ap.add_argument("--processes", type=int, default=3,
                    help="with --profiles: each profile in this many fresh processes; the median overhead counts")
    ap.add_argument("--kinds", nargs="+", default=["fp16", "fp8"], choices=["fp16", "fp8"],
                    help="with --profiles: the models' kinds")
    ap.add_argument("--json", metavar="OUT", help="write every figure as JSON (atomically)")
    ap.add_argument("--orders", nargs="+", default=["plain", "interval:128"], help="FP8 K orders to compare")
    ap.add_argument("--no-fp8", action="store_true", help="skip the FP8 comparison with mmaemu")
    ap.add_argument("--no-halves", action="store_true", help="skip fp16/bf16 against MMA-Sim and the scaling")
    args = ap.parse_args()
    J, R = args.jobs, max(1, args.reps)
    print(f"load {load():.2f} (1 min) on {native.default_jobs()} cores; {J} threads; best of {R}", flush=True)
    if not args.profiles_only:
        if not args.no_fp8:
            fp8_vs_mmaemu(args.sizes, J, R, not args.no_peers, args.orders)
        if not args.no_halves:
            halves_vs_mmasim(args.fp16_size, J, R, args.mmasim_rows, not args.no_peers)
            scaling(args.sizes[0], R)
    if args.profiles or args.profiles_only:
        if args.processes > 1:
            profiles_in_processes(args.sizes, J, R, args.only, args.processes, args.kinds)
        else:
            profiles(args.sizes, J, R, args.only, args.kinds)
    if args.json:                          # only a finished run writes it (atomically)
        with atomic_open(args.json) as fh:
            json.dump({"jobs": J, "reps": R, "results": RESULTS}, fh, indent=1)


if __name__ == "__main__":
    main()
