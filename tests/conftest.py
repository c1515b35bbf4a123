"""Shared test helpers: raw-bit-pattern generators that over-weight the interesting encodings,
and a session-wide table of solver proof times (printed at the end of the run).

Two generators with the same mixture are offered:

* :func:`bits` — a Hypothesis strategy, for property tests;
* :func:`draw_bits` — seeded NumPy draws, for the large differential/comparison batches where
  Hypothesis' per-example overhead would be too slow (:func:`smtmodel.sampling.edge_heavy`,
  with :func:`smtmodel.sampling.edge_patterns` as ``special_patterns``).

About a third of each draw is "special" (zeros, smallest/largest subnormals, smallest normal,
largest finite, one, infinities, NaNs with several payloads, patterns next to those), a third is
"structured" (an exponent field from {0, 1, top-1, top, random} with a mantissa from
{0, 1, all-ones, all-ones-1, random}) and a third is uniformly random bits.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import strategies as st

from smtmodel.formats import get_format
from smtmodel.fp.classify import encode_fields
from smtmodel.sampling import edge_heavy as draw_bits  # noqa: F401  (seeded draws, moved to smtmodel)
from smtmodel.sampling import edge_patterns as special_patterns

# ---------------------------------------------------------------------------------------------
# interesting bit patterns
# ---------------------------------------------------------------------------------------------


def bits(fmt) -> st.SearchStrategy[int]:
    """Hypothesis strategy for raw bit patterns of ``fmt`` over-weighting specials."""
    fmt = get_format(fmt)
    m, top = fmt.mbits, (1 << fmt.ebits) - 1
    mfull = (1 << m) - 1
    sign = st.integers(0, 1) if fmt.signed else st.just(0)
    expo = st.one_of(st.sampled_from(sorted({0, 1, top - 1, top, fmt.bias})), st.integers(0, top))
    mant = st.one_of(st.sampled_from(sorted({0, 1, mfull, max(mfull - 1, 0)} - {mfull + 1})), st.integers(0, mfull))
    structured = st.builds(lambda s, e, mm: encode_fields(fmt, s, e, mm), sign, expo, mant)
    uniform = st.integers(0, (1 << fmt.enc_width) - 1).map(lambda v: v << fmt.shift)
    return st.one_of(st.sampled_from(special_patterns(fmt)), structured, uniform)


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


def representatives(models) -> set[str]:
    """Ids of one model per operation shape (op, formats, normalisation, bounded carry): the
    default run's sample; ``-m slow`` takes the rest."""
    seen, reps = set(), set()
    for m in models:
        key = (m.op, m.in_fmt, m.out_fmt, m.normalize, m.carry is None)
        if m.mixed:     # mixed operands: one per op, output format, and equal or unequal widths
            key = ("mixed", m.op, m.out_fmt, len(set(m.operand_widths)))
        if key not in seen:
            seen.add(key)
            reps.add(m.id)
    return reps


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


# Files whose tests hold a solver or a large batch for many seconds: collected first, so that under
# pytest-xdist they start early and the short tests fill the workers around them (instead of one
# long proof starting last while the other worker idles).
LONG_FIRST = ("test_ieee_proofs.py", "test_bounds.py", "test_scheme_bound.py", "test_schemes_queries.py",
              "test_queries_features.py", "test_queries.py", "test_catalog_hwdata.py", "test_catalog_smt_twin.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda it: rank.get(it.path.name, len(rank)))      # stable: order kept within a file


def pytest_sessionfinish(session, exitstatus):
    """Under pytest-xdist a worker hands its proof rows to the controller (``workeroutput``)."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["proof_times"] = json.dumps(_PROOF_TIMES)


def pytest_testnodedown(node, error):
    """On the xdist controller: collect a finished worker's proof rows for the summary."""
    rows = getattr(node, "workeroutput", {}).get("proof_times")
    if rows:
        _PROOF_TIMES.extend(tuple(r) for r in json.loads(rows))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _PROOF_TIMES or hasattr(config, "workeroutput"):
        return
    tr = terminalreporter
    tr.section("solver proof times")
    rows: dict[str, dict[str, tuple[str, float]]] = {}
    for name, solver, status, sec in _PROOF_TIMES:
        rows.setdefault(name, {})[solver] = (status, sec)
    solvers = sorted({solver for by in rows.values() for solver in by})
    tr.write_line(f"{'proof':<60} " + " ".join(f"{x:>16}" for x in solvers))
    for name, by in sorted(rows.items()):
        cells = [f"{by[x][0]} {by[x][1]:7.2f}s" if x in by else "-" for x in solvers]
        tr.write_line(f"{name:<60} " + " ".join(f"{c:>16}" for c in cells))
