"""The identification bench's tables (queries/identify/summary.py), which docs/results.md is
generated from. The rows are written here by hand; the expected counts, medians and maxima are
worked out from them in the comments."""

from __future__ import annotations

from queries.identify.summary import headline, pairs_table


def _row(model, pair, status, launches, seconds, questions=0, undecided=(), own=True):
    return {"model": model, "pair": pair, "status": status, "launches": launches, "probes": 256 + launches,
            "seconds": seconds, "cpu_seconds": seconds - 1, "solver_questions": questions,
            "undecided": list(undecided), "own_point_in_class": own}


ROWS = [_row("a", "fp16->fp32", "narrowed", 1, 70.0, 6, ["zero_align"]),
        _row("b", "fp16->fp32", "identified", 3, 10.0),
        _row("c", "fp16->fp32", "identified", 2, 20.0),
        _row("d", "bf16->fp32", "identified", 2, 8.0, own=False)]


def test_pairs_table_counts_and_medians():
    lines = pairs_table(ROWS).splitlines()
    assert len(lines) == 4                                   # header, rule, two pairs (sorted)
    bf16, fp16 = lines[2], lines[3]
    assert bf16.startswith("| bf16->fp32 | catalog | 1 | 0/1 | 1 / 0 | 0 | 2 (2) | 258 | 0 | 8.0 (8.0) | 7.0 (7.0) |")
    # fp16: launches 1, 3, 2 -> max 3, median 2; probes max 259; seconds 70, 10, 20 -> median 20, max 70
    assert fp16 == "| fp16->fp32 | catalog | 3 | 3/3 | 2 / 1 | 0 | 3 (2) | 259 | 6 | 20.0 (70.0) | 19.0 (69.0) |"


def test_headline_adds_the_rows_up():
    h = headline(ROWS)
    assert h.startswith("4 units: 3/4 with the model's own point in the final class, 3 identified and 1 narrowed")
    assert "units: zero_align 1" in h and "1-3 design launches" in h and "at most 70.0 s wall (69.0 s CPU)" in h
    assert "1.8 min of identify in all" in h                 # 108 s
