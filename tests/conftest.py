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
import os

import numpy as np
import pytest
from hypothesis import strategies as st

from smtmodel.formats import get_format
from smtmodel.fp.classify import encode_fields
from smtmodel.sampling import edge_heavy as draw_bits  # noqa: F401  (seeded draws, moved to smtmodel)
from smtmodel.sampling import edge_patterns as special_patterns

# The suite runs in parallel worker processes (pytest-xdist): a job that names no worker count
# takes one per worker ($MMAPROBE_JOBS, smtmodel.workers.default_jobs), not every core in each.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("MMAPROBE_JOBS", "1")

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
LONG_FIRST = ("test_property_certificates.py", "test_identify_scaled.py", "test_ieee_proofs.py", "test_bounds.py", "test_scheme_bound.py", "test_schemes_queries.py",
              "test_queries_features.py", "test_queries.py", "test_catalog_hwdata.py", "test_catalog_smt_twin.py")


# Tests of 20 s and more (on 2 busy cores) that repeat what a cheaper default test covers: -m slow only, so
# that the default suite fits its budget (docs/development.md). Node id -> what covers it by default.
SLOW_IN_DEFAULT = {
    "test_identify_scaled.py::test_cli_offline_file_device_with_scales": "test_file_device_answers_scaled_probes",
    "test_identify_scaled.py::test_scaled_groups_read_like_points[fp4e2m1-mx-None]": "the nvfp4 and fp8 cases",
    "test_identify_scaled.py::test_open_gst_fdpa_point_outside_every_catalog_value": "test_catalog_scaled_model_recovered",
    "test_identify_scaled.py::test_open_st_fdpa_point_outside_every_catalog_value": "test_catalog_scaled_model_recovered",
    "test_identify_scaled.py::test_journal_keeps_scales_and_resume_finishes": "test_identify_defaults' journal resume",
    "test_identify_scaled.py::test_scaled_groups_compiled_read_like_numpy[nvfp4]": "the mx case",
    "test_identify_open.py::test_stream_in_two_processes_gives_the_same_verdicts": "the one-process stream tests",
    "test_schemes_emulation.py::test_table_found_within_proved": "test_worst_case_search_stays_below_the_proved_bound",
    "test_schemes_emulation.py::test_bf16x9_less_accurate_than_fp32_on_one_product": "the bands' transcription tests",
    "test_ozaki_gemmul8.py::test_long_k_reduction_orders[fast]": "the accurate mode's case",
    "test_identify_defaults.py::test_space_default_stops_at_the_no_fit": "test_no_fit_goes_on_to_the_fallback_space_and_resumes",
    "test_identify_defaults.py::test_new_file_device_says_every_hypothesis_is_live": "test_capture_verifies_on_its_own_answers_and_names_the_survivors",
    "test_report.py::test_report_on_a_small_subset": "the report's other tests (one model, integer, journal)",
    "test_identify_open.py::test_a_value_outside_the_old_ranges_is_recovered[pair2-open:fp8-halves-hopper-fp8e4m3-fp32-mmasync:L=4,F=18,carry=0-32-want2]":
        "the other open-range pairs",
    "test_crossgpu.py::test_blocks_that_differ_are_proved_through_tails": "test_induction_proves_a_pair_whose_parameters_differ",
    "test_dataflow.py::test_profile_numpy_compiled_and_smt_agree[cublaslt-ada-fp8-slow:S=5,combine=pairwise,out=fp8e5m2,saturate=no]":
        "the cutlass2 variants (SMT) and test_gemm_reading.py's compiled slow-splitk GEMM",
    "test_schemes_emulation.py::test_cutlass_sm100_bands_match_transcription[bf16x9-cutlass-bands0]": "the bf16x6 bands",
    "test_catalog_smt_twin.py::test_smt_reading_equals_twin[blackwell-fp6e2m3-fp16]": "blackwell-fp6e2m3-fp32 (the same fp6 reading)",
    "test_catalog_smt_twin.py::test_smt_reading_equals_twin[blackwell-fp6e3m2-fp16]": "blackwell-fp6e3m2-fp32 (the same fp6 reading)",
    "test_identify_scaled.py::test_catalog_scaled_model_recovered[rtx-blackwell-fp4e2m1-fp32-mxgst]": "the rtx-blackwell mx case",
    "test_identify_scaled.py::test_catalog_scaled_model_recovered[blackwell-fp4e2m1-fp32-mx]": "the rtx-blackwell mx case",
    "test_model_ranges.py::test_every_space_point_lies_inside_the_ranges[open]": "the named spaces' cases",
    # the GEMM reading against the per-row and NumPy readings: one model per kind of block stays
    "test_gemm_reading.py::test_gemm_reading_equals_row_and_numpy_readings[hopper-fp16-fp32:c_entry=end,c_rm=RZ]":
        "test_gemm.py's compiled c_entry=end GEMM",
    "test_gemm_reading.py::test_gemm_reading_equals_row_and_numpy_readings[ada-fp8e5m2-fp16]":
        "the hopper and cdna3 FP8 blocks",
    "test_gemm_reading.py::test_gemm_reading_equals_row_and_numpy_readings[cdna3-bf16-fp32]":
        "cdna2-fp16-fp32 and cdna3-fp8e4m3fnuz-fp32",
    "test_gemm_reading.py::test_gemm_reading_equals_row_and_numpy_readings[ampere-bf16-fp32]":
        "ampere-bf16-fp32:flush_outputs=signed",
    "test_dataflow.py::test_restarted_zero_tails_match_the_chained_zeros[hopper-fp8e4m3-fp32-cublaslt-ada-fp8-slow-splitk-448]":
        "the Ada zero_align=ignore case",
    "test_identify_scaled.py::test_catalog_scaled_model_recovered[blackwell-fp8e4m3-fp32-mx]": "the fp8e5m2 mx case",
    "test_identify_scaled.py::test_catalog_scaled_model_recovered[blackwell-fp6e3m2-fp32-mx]": "the fp8e5m2 mx case",
    "test_identify_open.py::test_a_value_outside_the_old_ranges_is_recovered[pair4-open:ftz-addmul-cdna2-bf16-fp32:P=16,L=16-32-want4]":
        "the other open-range pairs (pair8: the CDNA2 FMA chain)",
    "test_identify_open.py::test_a_value_outside_the_old_ranges_is_recovered[pair6-space6-cdna3-bf16-fp32:F=27,F2=28-16-want6]":
        "pair7 (CDNA3 FP8, the same F and F2)",
    "test_gemm.py::test_k_orders_sum_partials_in_fp32[split:3-chunks1]": "split:2",
    "test_gemm.py::test_k_orders_sum_partials_in_fp32[interval:32-chunks2]": "interval:20",
    "test_gemm.py::test_plain_gemm_is_per_element_dot_products[native-hopper-fp16-fp32:round_products=RNE]":
        "its NumPy case (the compiled GEMM of hopper-fp16-fp32's blocks: the plain model)",
    "test_dataflow.py::test_restarted_zero_tails_match_the_chained_zeros[ada-fp8e4m3-fp32-cublaslt-ada-fp8-slow-splitk-1024]":
        "the zero_align=ignore case (the same restarted tails)",
    "test_identify_scaled.py::test_catalog_scaled_model_recovered[blackwell-fp6e2m3-fp32-mx]": "the fp8e5m2 mx case",
    "test_identify_open.py::test_tr_fdpa_f_and_f2_at_run_time_equal_point_by_point[pair1-open:gtr-fdpa-numpy]":
        "its compiled case (checked against the points one by one) and the tr-fdpa pair's NumPy case",
    "test_native.py::test_any_k_is_explicit_zero_padding[hopper-fp8e4m3-fp16-mmasync-36]":
        "test_gemm.py's mmasync GEMM (K = 45 in blocks of 32, compiled and NumPy)",
    "test_dataflow.py::test_profile_numpy_compiled_and_smt_agree[cublaslt-ada-fp8-slow-splitk]":
        "test_gemm_reading.py's compiled slow-splitk GEMM and the restarted zero tails",
    "test_schemes_queries.py::test_property5_library_twin_first[volta-fp16-fp32]":
        "its hopper-fp16-fp32 case (the same twin-first search on another catalog block)",
    "test_schemes_queries.py::test_property5_library_twin_first[ampere-fp16-fp32]":
        "its hopper-fp16-fp32 case (the same twin-first search on another catalog block)",
    "test_canonical_backend.py::test_rewriting_does_not_prove_what_the_twin_refutes[permutation-hopper-fp8e4m3-fp32-mmasync]":
        "its permutation-cdna2-fp16-fp32 case (the same property's rewriting)",
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for it in items:
        if it.nodeid.removeprefix("tests/") in SLOW_IN_DEFAULT:
            it.add_marker(pytest.mark.slow)
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


# ---------------------------------------------------------------------------------------------
# the proof cache
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def no_proof_cache(monkeypatch):
    """For tests of the proof machinery: every proof done by a solver, none read from (or written
    to) the proof cache (``smtmodel.solve.cache``). Tests of a proof's *result* may use the cache."""
    from smtmodel.solve.cache import ENV_OFF
    monkeypatch.setenv(ENV_OFF, "0")


# ---------------------------------------------------------------------------------------------
# CPU seconds per test (MMAPROBE_TEST_CPU=FILE): load-independent durations
# ---------------------------------------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """With ``MMAPROBE_TEST_CPU=FILE``, append ``{"test", "cpu", "wall"}`` per test to FILE: the
    CPU seconds of the test's call (this process and the children it waited for: portfolio
    solvers), which a busy machine inflates far less than wall time."""
    import os
    path = os.environ.get("MMAPROBE_TEST_CPU")
    if not path:
        yield
        return
    import resource
    import time

    def cpu():
        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

    c0, t0 = cpu(), time.perf_counter()
    yield
    row = {"test": item.nodeid, "cpu": round(cpu() - c0, 3), "wall": round(time.perf_counter() - t0, 3)}
    with open(path, "a", encoding="utf-8") as fh:       # one short line per append: whole under O_APPEND
        fh.write(json.dumps(row) + "\n")
