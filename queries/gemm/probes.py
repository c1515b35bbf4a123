"""Probe GEMMs that reveal a dataflow and the instruction under it (``mmaprobe identify --gemm``).

One launch is one GEMM D = α·A·B + β·C of M×N elements, each element a probe of its own (row i
of A against column j of B, with C[i, j]). The rows and columns:

* **FPRev rows** (FPRev, USENIX ATC'25: two summands ±M among unit summands; how many units
  survive tells where the two meet in the summation tree), generalised to block-FMA chains: row
  (p, q) holds +2^15 at position p, −2^15 at q and 2^-10 elsewhere; against the column of 2^15
  the products are ±2^30 and 2^5, below half an ulp of 2^30 in fp32, so a unit product added to a
  partial sum that holds ±2^30 is lost, and one added where ±2^30 have cancelled (or apart from
  them) is kept. The surviving count differs between one chain, slices (contiguous or t mod S),
  their combine, restart intervals and the block widths. Positions sit at the edges of blocks,
  tiles and slices of every hypothesis (powers of two and their neighbours).
* **C-entry rows** (seed 003 §V's pattern: 2^10, then −2^-2/−2^-3 alternating, against a column
  2^10, 2^-3, ...) with C = 2^20: C in the accumulator and C in the epilogue round differently.
* **random rows and columns** (normal fp16/bf16 values over a wide exponent range) for the
  instruction model, and an all-zero row (an accumulator of +0: what β = 0 does to it).

The launches use the same A and B with different scalars: (α, β) = (1, 1); (−1, 1) (the
pre-scale rules of C in the accumulator); an (α, β) pair that is not a power of two (the two fma
orders of the epilogue round differently); (−1, 0) with infinities and NaN in C (whether β = 0
reads C, and fma(α, acc, +0) against RN(α·acc) on a +0 accumulator).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from smtmodel.formats import get_format, numpy_to_bits


@dataclass
class Probe:
    """One launch: raw bits a (M, K), b (K, N), c (M, N) and the scalars."""

    name: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    alpha: float
    beta: float
    rows: list = field(default_factory=list)      # what each row of A is (for reports)
    cols: list = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.a.shape[0], self.b.shape[1], self.a.shape[1]


def _bits(x, fmt) -> np.ndarray:
    return numpy_to_bits(np.asarray(x, dtype=np.float64).astype(np.float32), get_format(fmt)).astype(np.uint64) \
        if get_format(fmt).name == "fp32" else _bits_in(x, fmt)


def _bits_in(x, fmt):
    import ml_dtypes
    f = get_format(fmt)
    dt = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16}[f.name]
    v = np.asarray(x, dtype=np.float64).astype(dt)
    if not np.array_equal(v.astype(np.float64), np.asarray(x, dtype=np.float64)):
        raise ValueError(f"probe values not exact in {fmt}")
    return numpy_to_bits(v, f).astype(np.uint64)


FORMATS = ("fp16", "bf16")
"""Input formats the probes are written for (the values below are exact in both)."""


def positions(K: int) -> list[int]:
    """Edges of blocks, tiles and slices: 0, 1, 2^i - 1, 2^i, 2^i + 1 and thirds of K."""
    ps = {0, 1, K - 1, K // 3, 2 * K // 3}
    i = 2
    while i < K:
        ps |= {i - 1, i, i + 1}
        i *= 2
    return sorted(p for p in ps if 0 <= p < K)


def fprev_pairs(K: int, limit: int = 40) -> list[tuple[int, int]]:
    """(p, q) pairs: the first position against every edge, every edge against the last, and
    neighbouring edges, at most ``limit``."""
    ps = positions(K)
    pairs = [(0, q) for q in ps[1:]] + [(p, K - 1) for p in ps[1:-1]]
    pairs += [(ps[i], ps[i + 1]) for i in range(1, len(ps) - 2)]
    seen, out = set(), []
    for p in pairs:
        if p not in seen and p[0] != p[1]:
            seen.add(p)
            out.append(p)
    return out[:limit]


def design(in_fmt: str, c_fmt: str, K: int, seed: int = 0, n_random: int = 8, n_cols: int = 4) -> list[Probe]:
    """The four launches of the module docstring for K-term dot products."""
    if get_format(in_fmt).name not in FORMATS:
        raise ValueError(f"identify --gemm writes probes for {', '.join(FORMATS)} inputs, not {in_fmt}")
    rng = np.random.default_rng(seed)
    rows, names = [], []
    for i in range(n_random):            # first: the rows that tell models apart (staged checks)
        rows.append(_random(rng, K, in_fmt))
        names.append(f"random{i}")
    s3 = np.where(np.arange(K) % 2 == 1, -0.25, -0.125)
    s3[0] = 1024.0
    rows.append(s3)
    names.append("seed003")
    rows.append(np.zeros(K))
    names.append("zero")
    for p, q in fprev_pairs(K):
        r = np.full(K, 2.0 ** -10)
        r[p], r[q] = 2.0 ** 15, -(2.0 ** 15)
        rows.append(r)
        names.append(f"fprev({p},{q})")
    cols, cnames = [np.full(K, 2.0 ** 15)], ["2^15"]
    c3 = np.full(K, 0.125)
    c3[0] = 1024.0
    cols.append(c3)
    cnames.append("seed003")
    for j in range(n_cols):
        cols.append(_random(rng, K, in_fmt))
        cnames.append(f"random{j}")
    A = _bits_in(np.array(rows), in_fmt)
    B = _bits_in(np.array(cols).T, in_fmt)
    M, N = A.shape[0], B.shape[1]
    cv = np.zeros((M, N))
    kinds = rng.integers(0, 4, (M, N))
    cv = np.where(kinds == 1, 2.0 ** 20, cv)
    rnd = (rng.standard_normal((M, N)) * 2.0 ** rng.integers(-4, 12, (M, N))).astype(np.float32).astype(np.float64)
    cv = np.where(kinds == 2, rnd, np.where(kinds == 3, -rnd, cv))
    for i, n in enumerate(names):
        if n.startswith("fprev"):
            cv[i, 0] = 0.0
        if n == "seed003":
            cv[i, 1] = 2.0 ** 20
    C = _bits(cv, c_fmt)
    cs = cv.copy()
    cs[::2, ::3] = np.inf
    cs[1::3, 1::2] = -np.inf
    cs[::5, 1::3] = np.nan
    Cs = _bits(cs, c_fmt)
    a1, b1 = _tie_scalars(rng)
    return [Probe("alpha=1,beta=1", A, B, C, 1.0, 1.0, names, cnames),
            Probe("alpha=-1,beta=1", A, B, C, -1.0, 1.0, names, cnames),
            Probe(f"alpha={a1!r},beta={b1!r}", A, B, C, a1, b1, names, cnames),
            Probe("alpha=-1,beta=0", A, B, Cs, -1.0, 0.0, names, cnames)]


def extra(in_fmt: str, c_fmt: str, K: int, seed: int) -> Probe:
    """A further launch of random rows and columns (when the four leave hypotheses apart)."""
    rng = np.random.default_rng(10_000 + seed)
    A = _bits_in(np.array([_random(rng, K, in_fmt) for _ in range(12)]), in_fmt)
    B = _bits_in(np.array([_random(rng, K, in_fmt) for _ in range(6)]).T, in_fmt)
    cv = (rng.standard_normal((12, 6)) * 2.0 ** rng.integers(-4, 14, (12, 6))).astype(np.float32)
    a1, b1 = _tie_scalars(rng)
    return Probe(f"random{seed},alpha={a1!r},beta={b1!r}", A, B, _bits(cv, c_fmt), a1, b1)


def _random(rng, K: int, in_fmt: str) -> np.ndarray:
    """Normal values of mixed sign over 2^-8 .. 2^8, exact in fp16 and bf16 (8 significant bits)."""
    e = rng.integers(-8, 9, K)
    m = rng.integers(128, 256, K) / 128.0
    s = np.where(rng.random(K) < 0.5, -1.0, 1.0)
    return s * m * 2.0 ** e


def _tie_scalars(rng) -> tuple[float, float]:
    """α, β with 24 significant bits: their products with fp32 values are rarely exact."""
    a = float(np.float32(1.0 + rng.integers(1, 2 ** 23) / 2.0 ** 23))
    b = float(np.float32(0.5 + rng.integers(1, 2 ** 22) / 2.0 ** 23))
    return a, b


SUITE = Path(__file__).resolve().parents[2] / "generated_tests"
"""The pairwise discriminating suite: a distinguishing input per pair of catalog models."""


def suite_probe(model_ids: list[str], in_fmt: str, c_fmt: str, K: int) -> Probe | None:
    """A launch of the suite's distinguishing inputs between the first model and each other one
    (k <= K terms, zero-padded to K), each on the diagonal (row i of A against column i of B)
    with C = the vector's c and, in a second copy, C = 0; None when the suite has none. The
    twin decides whether it splits the survivors (C enters most dataflows after the chain)."""
    import json

    try:
        index = json.loads((SUITE / "index.json").read_text(encoding="utf-8"))["results"]
    except (OSError, ValueError, KeyError):
        return None
    fi, fc = get_format(in_fmt), get_format(c_fmt)
    rows, cols, cs = [], [], []
    first = model_ids[0]
    for other in model_ids[1:]:
        e = index.get(f"{first}__vs__{other}") or index.get(f"{other}__vs__{first}")
        if not e or e.get("status") != "sat" or not e.get("file") or e.get("k", K + 1) > K:
            continue
        try:
            with open(SUITE / e["file"], encoding="utf-8") as fh:
                fh.readline()
                case = json.loads(fh.readline())
        except (OSError, ValueError):
            continue
        a = np.zeros(K, np.uint64)
        b = np.zeros(K, np.uint64)
        a[:len(case["a"])] = [fi.parse_hex(x) for x in case["a"]]
        b[:len(case["b"])] = [fi.parse_hex(x) for x in case["b"]]
        for c in (fc.parse_hex(case["c"]), 0):
            rows.append(a)
            cols.append(b)
            cs.append(c)
    if not rows:
        return None
    n = len(rows)
    C = np.zeros((n, n), np.uint64)
    C[np.arange(n), np.arange(n)] = cs
    return Probe("suite", np.array(rows), np.array(cols).T.copy(), C, 1.0, 1.0,
                 [f"suite{i}" for i in range(n)], [f"suite{i}" for i in range(n)])
