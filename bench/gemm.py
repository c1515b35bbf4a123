"""GEMM throughput: mmaprobe's compiled twin vs mmaemu (FP8) and MMA-Sim (fp16), all cores.

Run: python bench/gemm.py [--sizes 1024 2048] [--jobs N] [--mmasim-rows R]. Peers come with
``pip install -e '.[bench]'``. Same inputs for every tool (normal values rounded to the input
format); outputs are checked bit-identical before anything is timed.

* Hopper e4m3 -> fp32, S^3: mmaprobe ``gemm(hopper-fp8e4m3-fp32, beta=0)`` (one chain over K,
  D = A·B from +0) against ``mmaemu.accumulate(use_fast_accum=True, profile="hopper", splitk=1)``,
  and with ``k_order="interval:128"`` against ``use_fast_accum=False`` (cuBLAS' promotion every
  128 elements of K); both on all cores (torch's threads = jobs). Target >= 3x mmaemu.
* Hopper fp16 -> fp32, 1024^3: mmaprobe against MMA-Sim ``MMA("Hopper", "m16n8k16...")`` called
  on whole matrices. MMA-Sim is run on the first R rows of A only (rows are independent; checked
  bit-identical on them) and its time scaled by M / R. Target >= 30x MMA-Sim.
* Scaling of the FP8 GEMM over 1..all cores.
* ``--profiles``: every named dataflow profile (smtmodel.dataflow.PROFILES) at the given sizes
  for fp16 (hopper-fp16-fp32) and FP8 (ada-fp8e4m3-fp32 / hopper-fp8e4m3-fp32 for Hopper and
  DeepGEMM profiles), C given and beta = 1 where the profile reads C: the time against the plain
  GEMM (one chain, beta = 0: the pre-dataflow ``gemm``), the overhead in %, and for the cuBLASLt
  profiles the ratio to mmaemu (same inputs, S as the profile says; bits checked equal first).
  ``--profiles-only`` skips the rest.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from smtmodel import native
from smtmodel.catalog import get_model
from smtmodel.gemm import gemm_bits
from smtmodel.sampling import round_to

from throughput import torch_bits, torch_view


def mats(fmt, s, seed=0):
    rng = np.random.default_rng(seed)
    return round_to(rng.standard_normal((s, s)), fmt), round_to(rng.standard_normal((s, s)), fmt)


def timed(fn):
    t = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048], help="FP8 GEMM sizes M = N = K")
    ap.add_argument("--fp16-size", type=int, default=1024)
    ap.add_argument("--mmasim-rows", type=int, default=8, help="rows of A MMA-Sim computes (time scaled)")
    ap.add_argument("--jobs", type=int, default=native.default_jobs())
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--profiles", action="store_true", help="time every named dataflow profile")
    ap.add_argument("--profiles-only", action="store_true")
    args = ap.parse_args()
    if args.profiles or args.profiles_only:
        profiles(args.sizes, args.jobs, not args.no_peers)
        if args.profiles_only:
            return
    J = args.jobs
    print(f"load: {os.getloadavg()[0]:.2f} (1 min); {J} threads of {native.default_jobs()} cores")
    emu = None
    if not args.no_peers:
        try:
            import mmaemu
            import torch
            torch.set_num_threads(J)
            emu = mmaemu
        except ImportError:
            print("mmaemu / torch not installed: pip install -e '.[bench]'")

    m8 = get_model("hopper-fp8e4m3-fp32")
    for s in args.sizes:
        A, B = mats(m8.in_fmt, s)
        for fast, order in ((True, "plain"), (False, "interval:128")):
            gemm_bits(m8, A[:8], B, None, beta_bits=0, k_order=order, jobs=J)           # compile
            d, t_me = timed(lambda: gemm_bits(m8, A, B, None, beta_bits=0, k_order=order, jobs=J))
            line = f"FP8 e4m3->fp32 {s}^3 {order:<12} mmaprobe {t_me:7.2f} s ({s ** 3 / t_me / 1e6:8.0f} M MAC/s)"
            if emu is not None:
                tA, tB = torch_view(A, "fp8e4m3"), torch_view(np.ascontiguousarray(B.T), "fp8e4m3")

                def run():
                    return emu.accumulate(tA, tB, use_fast_accum=fast, profile="hopper", splitk=1)
                run_small = emu.accumulate(tA[:8], tB, use_fast_accum=fast, profile="hopper", splitk=1)   # warm up
                del run_small
                acc, t_emu = timed(run)
                same = np.array_equal(torch_bits(acc).reshape(s, s), d)
                line += (f" | mmaemu (fast_accum={fast}) {t_emu:7.2f} s ({s ** 3 / t_emu / 1e6:6.0f} M MAC/s)"
                         f" | x{t_emu / t_me:.1f}" if same else " | mmaemu outputs DIFFER: not compared")
            print(line, flush=True)

    m16 = get_model("hopper-fp16-fp32")
    s = args.fp16_size
    A, B = mats(m16.in_fmt, s, 1)
    gemm_bits(m16, A[:8], B, None, beta_bits=0, jobs=J)
    d, t_me = timed(lambda: gemm_bits(m16, A, B, None, beta_bits=0, jobs=J))
    line = f"fp16->fp32 {s}^3 mmaprobe {t_me:7.2f} s ({s ** 3 / t_me / 1e6:8.0f} M MAC/s)"
    if not args.no_peers:
        try:
            import torch
            from mmasim.nv_ptx import MMA
            torch.set_num_threads(J)
            R = args.mmasim_rows
            op = MMA("Hopper", "m16n8k16.f32.f16.f16.f32")
            tA, tB = torch_view(A[:R], "fp16"), torch_view(B, "fp16")
            tC = torch.zeros((R, s), dtype=torch.float32)
            out, t_sim = timed(lambda: op(tA, tB, tC))
            same = np.array_equal(torch_bits(out).reshape(R, s), d[:R])
            t_full = t_sim * s / R
            line += (f" | MMA-Sim {R} rows {t_sim:.2f} s -> {t_full:8.1f} s for {s} rows | x{t_full / t_me:.0f}"
                     if same else " | MMA-Sim outputs DIFFER: not compared")
        except ImportError:
            line += " | MMA-Sim not installed"
    print(line, flush=True)

    s = args.sizes[0]
    A, B = mats(m8.in_fmt, s)
    print(f"\nscaling, FP8 {s}^3 plain (M MAC/s):")
    one = None
    for j in sorted({1, 2, 4, 8, 16, native.default_jobs()}):
        if j > native.default_jobs():
            continue
        _, t = timed(lambda: gemm_bits(m8, A, B, None, beta_bits=0, jobs=j))
        r = s ** 3 / t / 1e6
        one = one or r
        print(f"  jobs={j:<3} {r:8.0f}  x{r / one:.2f}")


def cpu_timed(fn):
    """(result, wall seconds, CPU seconds of this process, all threads): the CPU figure holds on a
    busy machine, the wall figure does not."""
    t, c = time.perf_counter(), time.process_time()
    r = fn()
    return r, time.perf_counter() - t, time.process_time() - c


def profiles(sizes, J, peers: bool) -> None:
    """Every named dataflow profile against the plain GEMM (and mmaemu for the cuBLASLt ones);
    overheads in CPU seconds (the machine may be shared)."""
    from smtmodel.dataflow import PROFILES
    emu = None
    if peers:
        try:
            import mmaemu
            import torch
            torch.set_num_threads(J)
            emu = mmaemu
        except ImportError:
            print("mmaemu / torch not installed: no ratios to mmaemu")
    for s in sizes:
        for kind in ("fp16", "fp8"):
            base = "hopper-fp16-fp32" if kind == "fp16" else "ada-fp8e4m3-fp32:zero_align=ignore"
            m0 = get_model(base)
            A, B = mats(m0.in_fmt, s, 2)
            C = round_to(np.random.default_rng(3).standard_normal((s, s)), "fp32")
            wr = max(8, (1 << 15) // s + 1)          # warm-up rows: enough elements to compile the epilogue
            gemm_bits(m0, A[:wr], B, None, beta_bits=0, jobs=J)
            _, w0, t0 = cpu_timed(lambda: gemm_bits(m0, A, B, None, beta_bits=0, jobs=J))
            print(f"\n{kind} {s}^3, plain gemm ({m0.id}, one chain, beta=0): {w0:.2f} s wall, "
                  f"{t0:.2f} CPU-s", flush=True)
            for name, df in PROFILES.items():
                mid = base
                if kind == "fp8" and (name.startswith("cublaslt-hopper") or name == "deepgemm"):
                    mid = "hopper-fp8e4m3-fp32:zero_align=ignore"
                m = get_model(mid)
                kw = {}
                if df.scale_a != "tensor":
                    nk = -(-s // 128)
                    kw = dict(scale_a_bits=np.full((s, nk), 0x3F800000, np.uint64),
                              scale_b_bits=np.full((-(-s // 128), nk), 0x3F800000, np.uint64))
                cc = None if df.alpha_from_scales else C
                kw8 = {k: (v[:wr] if k == "scale_a_bits" else v) for k, v in kw.items()}
                gemm_bits(m, A[:wr], B, None if cc is None else cc[:wr], dataflow=df, jobs=J, **kw8)
                d, w, t = cpu_timed(lambda: gemm_bits(m, A, B, cc, dataflow=df, jobs=J, **kw))
                line = f"  {name:<30} {w:7.2f} s wall {t:7.2f} CPU-s  {100 * (t / t0 - 1):+6.0f} % CPU vs plain"
                if emu is not None and kind == "fp8" and name.startswith("cublaslt-"):
                    prof = "hopper" if "hopper" in name else "ada"
                    fast = "fast" in name
                    sk = 1 if df.slices == 1 else (df.slices, "contiguous" if prof == "hopper" else df.combine)
                    tA, tB = torch_view(A, "fp8e4m3"), torch_view(np.ascontiguousarray(B.T), "fp8e4m3")
                    acc, _, t_emu = cpu_timed(lambda: emu.accumulate(tA, tB, use_fast_accum=fast, profile=prof,
                                                                     splitk=sk))
                    mine = gemm_bits(m, A, B, None, beta_bits=0, dataflow=f"{name}:beta0=skip", jobs=J)
                    same = np.array_equal(torch_bits(acc).reshape(s, s), mine)
                    line += (f" | mmaemu {t_emu:7.2f} CPU-s  x{t_emu / t:.1f}" if same
                             else " | mmaemu outputs DIFFER: not compared")
                print(line, flush=True)


if __name__ == "__main__":
    main()
