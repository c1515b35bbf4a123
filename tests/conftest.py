"""Shared test helpers: raw-bit-pattern generators that over-weight the interesting encodings,
and a session-wide table of solver proof times (printed at the end of the run).

Two generators with the same mixture are offered:

* :func:`bits` — a Hypothesis strategy, for property tests;
* :func:`draw_bits` — seeded NumPy draws, for the large differential/comparison batches where
  Hypothesis' per-example overhead would be too slow.

About a third of each draw is "special" (zeros, smallest/largest subnormals, smallest normal,
largest finite, one, infinities, NaNs with several payloads, patterns next to those), a third is
"structured" (an exponent field from {0, 1, top-1, top, random} with a mantissa from
{0, 1, all-ones, all-ones-1, random}) and a third is uniformly random bits.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import strategies as st

from smtmodel.formats import Format, get_format

# ---------------------------------------------------------------------------------------------
# interesting bit patterns
# ---------------------------------------------------------------------------------------------


def _pack(fmt: Format, sign: int, e: int, m: int) -> int:
    enc = (e << fmt.mbits) | m
    if fmt.signed:
        enc |= sign << (fmt.ebits + fmt.mbits)
    return enc << fmt.shift


def special_patterns(fmt) -> list[int]:
    """Raw patterns of a format's edge cases (both signs where the format is signed)."""
    fmt = get_format(fmt)
    m, top = fmt.mbits, (1 << fmt.ebits) - 1
    mfull = (1 << m) - 1
    cand = set()
    signs = (0, 1) if fmt.signed else (0,)
    for s in signs:
        for e, mm in [(0, 0), (0, 1), (0, mfull), (0, mfull >> 1), (1, 0), (1, 1), (1, mfull),
                      (top - 1, 0), (top - 1, mfull), (top - 1, max(mfull - 1, 0)), (top, 0), (top, 1),
                      (top, mfull), (top, max(mfull - 1, 0)), (top, 1 << (m - 1) if m else 0),
                      (fmt.bias, 0), (fmt.bias, 1), (fmt.bias - 1, mfull), (top >> 1, mfull)]:
            if 0 <= e <= top and 0 <= mm <= mfull:
                cand.add(_pack(fmt, s, e, mm))
    if fmt.canonical_nan is not None:
        cand.add(fmt.canonical_nan)
    return sorted(cand)


def bits(fmt) -> st.SearchStrategy[int]:
    """Hypothesis strategy for raw bit patterns of ``fmt`` over-weighting specials."""
    fmt = get_format(fmt)
    m, top = fmt.mbits, (1 << fmt.ebits) - 1
    mfull = (1 << m) - 1
    sign = st.integers(0, 1) if fmt.signed else st.just(0)
    expo = st.one_of(st.sampled_from(sorted({0, 1, top - 1, top, fmt.bias})), st.integers(0, top))
    mant = st.one_of(st.sampled_from(sorted({0, 1, mfull, max(mfull - 1, 0)})), st.integers(0, mfull))
    structured = st.builds(lambda s, e, mm: _pack(fmt, s, e, mm), sign, expo, mant)
    uniform = st.integers(0, (1 << fmt.enc_width) - 1).map(lambda v: v << fmt.shift)
    return st.one_of(st.sampled_from(special_patterns(fmt)), structured, uniform)


def draw_bits(fmt, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` seeded raw patterns (uint64) of ``fmt``: every special pattern once, then a
    third specials, a third structured, a third uniform."""
    fmt = get_format(fmt)
    m, top = fmt.mbits, (1 << fmt.ebits) - 1
    mfull = (1 << m) - 1
    specials = np.array(special_patterns(fmt), dtype=np.uint64)
    k = max(n - len(specials), 0)
    n_sp, n_st = k // 3, k // 3
    n_un = k - n_sp - n_st
    sp = rng.choice(specials, n_sp)
    s = rng.integers(0, 2, n_st, dtype=np.uint64) if fmt.signed else np.zeros(n_st, np.uint64)
    e_pick = np.array(sorted({0, 1, top - 1, top, fmt.bias}), dtype=np.uint64)
    e = np.where(rng.random(n_st) < 0.6, rng.choice(e_pick, n_st),
                 rng.integers(0, top + 1, n_st, dtype=np.uint64))
    m_pick = np.array(sorted({0, 1, mfull, max(mfull - 1, 0)}), dtype=np.uint64)
    mm = np.where(rng.random(n_st) < 0.5, rng.choice(m_pick, n_st),
                  rng.integers(0, mfull + 1, n_st, dtype=np.uint64))
    structured = (e << np.uint64(m)) | mm
    if fmt.signed:
        structured |= s << np.uint64(fmt.ebits + m)
    structured <<= np.uint64(fmt.shift)
    hi = 1 << fmt.enc_width
    uni = (rng.integers(0, hi, n_un, dtype=np.uint64) if hi <= 2**63
           else rng.integers(0, 2**63, n_un, dtype=np.uint64) * np.uint64(2)
           + rng.integers(0, 2, n_un, dtype=np.uint64))
    uni <<= np.uint64(fmt.shift)
    out = np.concatenate([specials, sp, structured, uni])[:n] if n >= len(specials) \
        else rng.choice(specials, n)
    return rng.permutation(out).astype(np.uint64)


def draw_uint(width: int, n: int, rng: np.random.Generator) -> list[int]:
    """``n`` raw ``width``-bit integers (Python ints, any width) over-weighting 0, 1, all-ones,
    the sign bit, powers of two and small values."""
    mask = (1 << width) - 1
    edge = sorted({0, 1, 2, mask, mask - 1, 1 << (width - 1), (1 << (width - 1)) - 1,
                   (1 << (width - 1)) + 1, width, width - 1, width + 1} - {-1})
    edge = [v & mask for v in edge]
    out = []
    u = rng.random(n)
    for i in range(n):
        if u[i] < 0.2:
            out.append(edge[int(rng.integers(len(edge)))])
        elif u[i] < 0.35:
            out.append((1 << int(rng.integers(0, width))) & mask)
        elif u[i] < 0.5:
            out.append(int(rng.integers(0, 2 * width + 2)) & mask)
        elif u[i] < 0.6:
            out.append(mask ^ ((1 << int(rng.integers(0, width))) - 1))
        else:
            out.append(int.from_bytes(rng.bytes((width + 7) // 8), "little") & mask)
    return out


# ---------------------------------------------------------------------------------------------
# proof timing table
# ---------------------------------------------------------------------------------------------

_PROOF_TIMES: list[tuple[str, str, str, float]] = []


class ProofLog:
    """Record (proof name, solver, status, seconds) rows; printed by pytest at the end."""

    def record(self, name: str, solver: str, status: str, seconds: float) -> None:
        _PROOF_TIMES.append((name, solver, status, seconds))
        print(f"[proof] {name:<58} {solver:<5} {status:<7} {seconds:8.2f} s")


@pytest.fixture(scope="session")
def proof_log() -> ProofLog:
    return ProofLog()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _PROOF_TIMES:
        return
    tr = terminalreporter
    tr.section("solver proof times")
    rows: dict[str, dict[str, tuple[str, float]]] = {}
    for name, solver, status, sec in _PROOF_TIMES:
        rows.setdefault(name, {})[solver] = (status, sec)
    tr.write_line(f"{'proof':<60} {'z3':>16} {'cvc5':>16}")
    for name, by in rows.items():
        cells = []
        for solver in ("z3", "cvc5"):
            if solver in by:
                stt, sec = by[solver]
                cells.append(f"{stt} {sec:7.2f}s")
            else:
                cells.append("-")
        tr.write_line(f"{name:<60} {cells[0]:>16} {cells[1]:>16}")
