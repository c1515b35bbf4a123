"""Throughput of the twin: dot products per second per core, and a 512^3 GEMM.

Run: python bench/throughput.py [--n N]. Prints figures and the ratio to the target of
10^6 dot products per second per core for K = 16 (single process = one core).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from smtmodel.sampling import validation_mix
from smtmodel.catalog import get_model
from smtmodel.gemm import gemm

TARGET = 1e6


def dot_rate(model_id: str, k: int, n: int, repeat: int = 3) -> float:
    m = get_model(model_id)
    a, b, c, _ = validation_mix(m.in_fmt, m.c_fmt, k, n, seed=1)
    m.evaluate(a[:1000], b[:1000], c[:1000])            # warm up
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        m.evaluate(a, b, c)
        best = min(best, time.perf_counter() - t)
    return n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200_000, help="dot products per measurement")
    ap.add_argument("--gemm", type=int, default=512, help="GEMM size (M = N = K)")
    args = ap.parse_args()
    print(f"{'model':<24} {'K':>3} {'dot products/s':>16} {'vs 1e6 target':>14}")
    for mid, k in (("hopper-fp16-fp32", 16), ("hopper-fp8e4m3-fp32", 32), ("volta-fp16-fp32", 4)):
        r = dot_rate(mid, k, args.n)
        print(f"{mid:<24} {k:>3} {r:>16,.0f} {r / TARGET:>13.2f}x")
    s = args.gemm
    rng = np.random.default_rng(0)
    A = rng.standard_normal((s, s)).astype(np.float16)
    B = rng.standard_normal((s, s)).astype(np.float16)
    C = rng.standard_normal((s, s)).astype(np.float32)
    t = time.perf_counter()
    D = gemm("hopper-fp16-fp32", A, B, C)
    dt = time.perf_counter() - t
    ref = A.astype(np.float64) @ B.astype(np.float64) + C
    err = np.max(np.abs(D.astype(np.float64) - ref)) / np.max(np.abs(ref))     # norm-wise
    print(f"GEMM {s}x{s}x{s} hopper-fp16-fp32: {dt:.2f} s ({s * s / dt:,.0f} outputs/s, "
          f"{s * s * s / 16 / dt:,.0f} 16-term blocks/s); norm-wise difference to fp64 {err:.2e}")


if __name__ == "__main__":
    main()
