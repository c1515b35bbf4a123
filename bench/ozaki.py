"""Emulated DGEMM on the CPU twin: the Ozaki schemes at N^3 against numpy's float64 GEMM -- time,
and accuracy against the exact product on sampled entries. Prints figures and ratios; asserts
nothing.

    python bench/ozaki.py                  # N = 1024: ozaki1-s8, ozaki1-s12, ozaki2-n14, ozaki2-n18
    python bench/ozaki.py --n 512 --schemes ozaki1-s8

numpy.matmul runs the installed BLAS dgemm (OpenBLAS here: blocked, FMA-based, its summation order
not specified by numpy); the twin's int8 slice GEMMs are exact integer sums (float64 BLAS on
integers below 2^53, then the IMMA model's s32 wrap), its fp64 accumulation is ozIMMU's order.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from smtmodel.schemes.ozaki import gemm, get_ozaki  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--schemes", nargs="+", default=["ozaki1-s8", "ozaki1-s12", "ozaki2-n14", "ozaki2-n18"])
    ap.add_argument("--spread", type=int, default=4, help="exponents of a, b in ±spread (default 4)")
    ap.add_argument("--sample", type=int, default=200, help="entries compared with the exact product")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n = args.n
    rng = np.random.default_rng(args.seed)
    A = rng.standard_normal((n, n)) * np.exp2(rng.integers(-args.spread, args.spread + 1, (n, n)))
    B = rng.standard_normal((n, n)) * np.exp2(rng.integers(-args.spread, args.spread + 1, (n, n)))
    t0 = time.perf_counter()
    R = A @ B
    t_np = time.perf_counter() - t0
    idx = list(zip(rng.integers(0, n, args.sample), rng.integers(0, n, args.sample)))
    exact = [sum(Fraction(A[i, t]) * Fraction(B[t, j]) for t in range(n)) for i, j in idx]

    def acc(D):
        ul = [float(abs(Fraction(D[i, j]) - e) / Fraction(float(np.spacing(abs(float(e))))))
              for (i, j), e in zip(idx, exact)]
        rn = np.mean([D[i, j] == float(e) for (i, j), e in zip(idx, exact)])
        return max(ul), float(np.median(ul)), float(rn)
    load = os.getloadavg()[0]
    print(f"N = {n} (A, B: normal x 2^[-{args.spread}, {args.spread}]), load average {load:.1f}, "
          f"{os.cpu_count()} CPUs")
    mx, md, rn = acc(R)
    print(f"{'numpy float64 (BLAS)':<22} {t_np:8.2f} s   max {mx:9.3g} ulp  median {md:6.3g}  correctly rounded {rn:6.1%}")
    for name in args.schemes:
        t0 = time.perf_counter()
        D = gemm(get_ozaki(name), A, B)
        dt = time.perf_counter() - t0
        mx, md, rn = acc(D)
        print(f"{name:<22} {dt:8.2f} s   max {mx:9.3g} ulp  median {md:6.3g}  correctly rounded {rn:6.1%}   "
              f"{dt / t_np:7.1f}x numpy's time; equal to numpy on {np.mean(D == R):.1%}, max |D - numpy| "
              f"{np.max(np.abs(D - R)):.3g}")


if __name__ == "__main__":
    main()
