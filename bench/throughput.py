"""Dot products per second: mmaprobe's compiled twin vs its NumPy reading vs MMA-Sim vs mmaemu.

Run: python bench/throughput.py [--n N] [--no-peers]. Peers come with ``pip install -e '.[bench]'``.
Same inputs for every tool (normal values rounded to the input format), outputs checked bit-identical
before anything is timed; MMA-Sim is timed on all of mmaprobe's cases and, beside, on its first
20,000 (its fastest batch per case: the ratio against that is the harder one). One core: mmaprobe with jobs=1, torch with one thread.

* Hopper fp16 -> fp32, K = 16 (m16n8k16): mmaprobe ``hopper-fp16-fp32``, MMA-Sim
  ``MMA("Hopper", "m16n8k16.f32.f16.f16.f32").dpa``; target >= 1e8 per core.
* Hopper e4m3 -> fp32, K = 32 (wgmma): mmaprobe ``hopper-fp8e4m3-fp32``, MMA-Sim
  ``WGMMA("Hopper", "m64n8k32.f32.e4m3.e4m3").dpa``, mmaemu ``accumulate(use_fast_accum=True,
  splitk=1)`` on an (n/64 x 32)·(32 x 64) product (each output is one K = 32 dot product), and
  mmaprobe's GEMM reading on that same product; target >= 5e7.

Inputs are held in their formats' own unsigned dtypes (fp16 bits as uint16, e4m3 as uint8, fp32 as
uint32), which ``Model.evaluate`` reads in place; the same dot products on uint64 inputs are printed
beside (4-8x the bytes read per case, truncated to the formats' widths as the kernel loads them),
with their ratio to MMA-Sim beside the stored dtypes'. Every figure is the best of 2-3 runs, per wall second and per CPU second of this process (the
figure a busy machine does not inflate), with the 1-minute load average beside it; targets are
judged per CPU second.

Then the scaling of the compiled twin over 1..all cores and the compile time per (model, K).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from smtmodel import native
from smtmodel.catalog import get_model
from smtmodel.formats import get_format
from smtmodel.sampling import round_to

TARGETS = {("hopper-fp16-fp32", 16): 1e8, ("hopper-fp8e4m3-fp32", 32): 5e7}


def best(fn, repeat=3) -> float:
    """Best wall seconds of ``repeat`` runs (CPU seconds in :data:`LAST_CPU`)."""
    global LAST_CPU
    t = c = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        t, c = min(t, time.perf_counter() - t0), min(c, time.process_time() - c0)
    LAST_CPU = c
    return t


LAST_CPU = 0.0


def stored(bits: np.ndarray, fmt: str) -> np.ndarray:
    """Raw bits in the unsigned dtype of the format's width (fp16 -> uint16, e4m3 -> uint8, fp32 ->
    uint32), as a program holds them (a torch tensor viewed as integers); ``Model.evaluate`` reads
    them in place."""
    w = get_format(fmt).width
    return bits.astype(next(d for d in (np.uint8, np.uint16, np.uint32, np.uint64) if 8 * np.dtype(d).itemsize >= w))


def inputs(m, k, n, seed=1):
    """a, b (n, k) and c (n,): normal values rounded to the formats, in their own dtypes."""
    rng = np.random.default_rng(seed)
    return (stored(round_to(rng.standard_normal((n, k)), m.in_fmt), m.in_fmt),
            stored(round_to(rng.standard_normal((n, k)), m.in_fmt), m.in_fmt),
            stored(round_to(rng.standard_normal(n), m.c_fmt), m.c_fmt))


def torch_view(bits, fmt):
    """A CPU tensor of ``fmt`` from raw bits (mmaprobe's torch adapter)."""
    from mmaprobe.torch.adapter import from_bits
    return from_bits(np.asarray(bits), fmt)


def torch_bits(t) -> np.ndarray:
    """Raw bits (uint64) of a CPU tensor (mmaprobe's torch adapter)."""
    from mmaprobe.torch.adapter import to_bits_tensor
    return to_bits_tensor(t)


def mmasim_op(mid):
    """MMA-Sim's operation for a (model, K), or None if MMA-Sim (torch) is not installed."""
    try:
        import torch
        from mmasim.nv_ptx import MMA, WGMMA
    except ImportError:
        return None
    torch.set_num_threads(1)
    return (MMA("Hopper", "m16n8k16.f32.f16.f16.f32") if mid == "hopper-fp16-fp32"
            else WGMMA("Hopper", "m64n8k32.f32.e4m3.e4m3"))


def gemm_cases(m, k, n, seed=2):
    """A (n/64, K) and B (K, 64): the n = rows*64 dot products of a GEMM, as per-case arrays too."""
    rng = np.random.default_rng(seed)
    rows = max(1, n // 64)
    A = round_to(rng.standard_normal((rows, k)), m.in_fmt)
    B = round_to(rng.standard_normal((k, 64)), m.in_fmt)
    return A, B


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=400_000, help="dot products per mmaprobe measurement")
    ap.add_argument("--no-peers", action="store_true", help="mmaprobe only")
    args = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min) on {native.default_jobs()} cores")
    print(f"{'model':<22} {'K':>3} {'tool':<16} {'dot products/s':>15} {'mmaprobe x':>11}  target")
    for (mid, k), target in TARGETS.items():
        m = get_model(mid)
        a, b, c = inputs(m, k, args.n)
        ref = m.evaluate(a, b, c, backend="native", jobs=1)
        r_nat = args.n / best(lambda: m.evaluate(a, b, c, backend="native", jobs=1))
        r_cpu = args.n / LAST_CPU                          # per CPU-second: the figure on a busy machine
        n_np = min(args.n, 50_000)
        assert np.array_equal(m.evaluate(a[:n_np], b[:n_np], c[:n_np], backend="numpy"), ref[:n_np])
        r_np = n_np / best(lambda: m.evaluate(a[:n_np], b[:n_np], c[:n_np], backend="numpy"), 1)
        ok = "met" if r_cpu >= target else "MISSED"
        print(f"{mid:<22} {k:>3} {'mmaprobe native':<16} {r_nat:>15.3g} {'':>11}  {target:.0e} {ok} per CPU-second "
              f"({r_cpu:.3g}; load {os.getloadavg()[0]:.1f})")
        a64, b64, c64 = (x.astype(np.uint64) for x in (a, b, c))
        assert np.array_equal(m.evaluate(a64, b64, c64, backend="native", jobs=1), ref)
        r64 = args.n / best(lambda: m.evaluate(a64, b64, c64, backend="native", jobs=1))
        r64_cpu = args.n / LAST_CPU
        print(f"{'':<22} {'':>3} {'  uint64 inputs':<16} {r64:>15.3g} {'':>11}  {args.n / LAST_CPU:.3g} per CPU-second "
              f"({8 * (2 * k + 1)} bytes read a case, against {a.itemsize * 2 * k + c.itemsize}; "
              f"load {os.getloadavg()[0]:.1f})")
        print(f"{'':<22} {'':>3} {'mmaprobe numpy':<16} {r_np:>15.3g} {r_nat / r_np:>10.1f}x")
        if args.no_peers:
            continue
        op = mmasim_op(mid)
        if op is not None:
            # the same inputs as mmaprobe's (all n cases), and MMA-Sim's fastest batch, its first 20,000
            for n_peer in dict.fromkeys((args.n, min(args.n, 20_000))):
                ta, tb, tc = (torch_view(x[:n_peer], f) for x, f in ((a, m.in_fmt), (b, m.in_fmt), (c, "fp32")))
                bits = torch_bits(op.dpa(ta, tb, tc))
                what = "the same cases" if n_peer == args.n else f"its first {n_peer:,} cases"
                if np.array_equal(bits, ref[:n_peer]):
                    r = n_peer / best(lambda: op.dpa(ta, tb, tc), 2)
                    rc = n_peer / LAST_CPU
                    print(f"{'':<22} {'':>3} {'MMA-Sim':<16} {r:>15.3g} {r_nat / r:>10.1f}x wall, {r_cpu / rc:.1f}x per "
                          f"CPU-second; uint64 inputs {r64 / r:.1f}x wall, {r64_cpu / rc:.1f}x per CPU-second "
                          f"({what}; load {os.getloadavg()[0]:.1f})")
                else:
                    print(f"{'':<26} MMA-Sim: outputs differ on {np.count_nonzero(bits != ref[:n_peer])} cases; "
                          "not timed")
        if m.in_fmt == "fp8e4m3":
            try:
                import mmaemu
            except ImportError:
                continue
            from smtmodel.gemm import gemm_bits
            A, B = gemm_cases(m, k, min(args.n, 64 * 512))
            tA, tB = torch_view(A, m.in_fmt), torch_view(np.ascontiguousarray(B.T), m.in_fmt)

            def emu():
                return mmaemu.accumulate(tA, tB, use_fast_accum=True, profile="hopper", splitk=1)
            if np.array_equal(torch_bits(emu()).reshape(A.shape[0], 64), gemm_bits(m, A, B, None, beta_bits=0, jobs=1)):
                n_g = A.shape[0] * 64
                r = n_g / best(emu, 2)
                rc = n_g / LAST_CPU
                r_g = n_g / best(lambda: gemm_bits(m, A, B, None, beta_bits=0, jobs=1), 3)
                rgc = n_g / LAST_CPU
                print(f"{'':<22} {'':>3} {'mmaemu':<16} {r:>15.3g} {r_nat / r:>10.1f}x wall, {r_cpu / rc:.1f}x per "
                      f"CPU-second (load {os.getloadavg()[0]:.1f})")
                print(f"{'':<22} {'':>3} {'mmaprobe gemm':<16} {r_g:>15.3g} {r_g / r:>10.1f}x mmaemu wall, "
                      f"{rgc / rc:.1f}x per CPU-second (the same dot products as a GEMM: each row of A meets "
                      f"64 columns)")
            else:
                print(f"{'':<26} mmaemu: outputs differ; not timed")

    print("\nscaling, hopper-fp16-fp32 K=16, compiled twin (dot products/s):")
    m = get_model("hopper-fp16-fp32")
    a, b, c = inputs(m, 16, args.n * 2)
    one = None
    for j in sorted({1, 2, 4, 8, 16, native.default_jobs()}):
        if j > native.default_jobs():
            continue
        r = len(c) / best(lambda: m.evaluate(a, b, c, backend="native", jobs=j))
        one = one or r
        print(f"  jobs={j:<3} {r:>12.3g}  x{r / one:.2f}")

    print(f"\ncompile CPU seconds per (model, K) (no disk cache; trace + LLVM + machine code; inputs in their "
          f"formats' dtypes; "
          f"{native.ROW_LANES} lanes, the batches below {native.BIG_BATCH}, and {native.BIG_LANES}):")
    for mid, ks in (("hopper-fp16-fp32", (16, 32, 64)), ("hopper-fp8e4m3-fp32", (32, 64)),
                    ("hopper-fp8e4m3-fp16-mmasync", (32, 64)), ("volta-fp16-fp32", (4, 16)),
                    ("cdna3-fp8e4m3fnuz-fp32", (16, 64))):
        m = get_model(mid)
        os.environ["MMAPROBE_CACHE"] = ""
        dts = tuple(stored(np.zeros(1, np.uint64), f).dtype for f in (m.in_fmt, m.in_fmt, m.c_fmt)) + (np.uint64,)
        for k in ks:
            times = []
            for lanes in (native.ROW_LANES, native.BIG_LANES):
                t = time.process_time()
                kern = native.Kernel(m.build, m.id, native.model_widths(m), k, 0,
                                     native.row_layout(k, 0, dts, lanes=lanes))
                times.append(time.process_time() - t)
            print(f"  {mid:<30} K={k:<3} {times[0]:5.2f}, {times[1]:5.2f} CPU-s ({kern.stats['nodes']} nodes)")


if __name__ == "__main__":
    main()
