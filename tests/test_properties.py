"""Properties of one unit proved or refuted (queries/properties, `mmaprobe property`).

Expected values come from independent computations: the witnesses' exact sums and products are
recomputed here with Fractions from a decoder of IEEE patterns written in this file (not the
core's decode), and the predicates are compared with the same Fraction reading on random
patterns. The proof is the solver's (fresh: the proof cache is off for these tests).
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from mmaprobe import cli
from mmaprobe.errors import EXIT_OTHER, EXIT_USAGE
from queries.distinguish import QueryError
from queries.properties import PROPERTIES, NotApplicable, check_property
from queries.properties.predicates import negate_bits, scale_bits, value_eq, value_le
from smtmodel.bv import NUMPY
from smtmodel.fp import decode

IEEE = {"fp16": (5, 10), "fp32": (8, 23), "bf16": (8, 7)}


def val(bits: int, fmt: str):
    """The value of an IEEE pattern as a Fraction (None for inf/NaN): written from the standard,
    independently of smtmodel.fp."""
    e, m = IEEE[fmt]
    sign = -1 if bits >> (e + m) & 1 else 1
    ef, mf = bits >> m & ((1 << e) - 1), bits & ((1 << m) - 1)
    bias = (1 << (e - 1)) - 1
    if ef == (1 << e) - 1:
        return None
    if ef == 0:
        return sign * Fraction(mf, 1 << m) * Fraction(2) ** (1 - bias)
    return sign * (1 + Fraction(mf, 1 << m)) * Fraction(2) ** (ef - bias)


@pytest.fixture(autouse=True)
def _no_proof_cache(monkeypatch):
    monkeypatch.setenv("MMAPROBE_PROOF_CACHE", "0")


def test_volta_monotonicity_refuted_and_witness_checked_exactly():
    """Seed 003 §I-A (after Mikaitis): NVIDIA tensor cores can violate monotonicity. The twin finds
    a pair on volta-fp16-fp32; every product and c of the second copy is >= the first's and d' < d,
    both recomputed here with Fractions."""
    r = check_property("monotonicity", "volta-fp16-fp32", timeout=20, solver="twin")
    assert r.status == "refuted" and r.solver == "twin" and r.k == 4
    one, two = r.witness.copies
    for i in range(4):
        p = val(one["a"][i], "fp16") * val(one["b"][i], "fp16")
        q = val(two["a"][i], "fp16") * val(two["b"][i], "fp16")
        assert p <= q
    assert val(one["c"], "fp32") <= val(two["c"], "fp32")
    s1 = sum(val(x, "fp16") * val(y, "fp16") for x, y in zip(one["a"], one["b"])) + val(one["c"], "fp32")
    s2 = sum(val(x, "fp16") * val(y, "fp16") for x, y in zip(two["a"], two["b"])) + val(two["c"], "fp32")
    assert s1 <= s2                                       # the exact sums grew ...
    assert val(two["d"], "fp32") < val(one["d"], "fp32")  # ... the unit's result shrank
    assert any("shrank" in line for line in r.witness.notes)


def test_zero_padding_proved_on_volta():
    """A zero product appended to a Volta block (k=4 -> 5, a second block of zeros chained) leaves
    the bits unchanged: a fresh Bitwuzla proof (unsat)."""
    r = check_property("zero-padding", "volta-fp16-fp32", timeout=120, solver="bitwuzla")
    assert r.status == "proved" and r.solver == "bitwuzla" and not r.cached and r.witness is None


def test_solver_refutation_confirmed_by_the_twin():
    """CDNA3's TR-FDPA rounds down inside (seed 000 Algorithm 10): negating a and c does not negate
    the result. Bitwuzla finds the pair (k=1, no twin search); the twin confirms it, and the values
    are checked here: d(-a, b, -c) != -d."""
    r = check_property("sign-symmetry", "cdna3-fp16-fp32", k=1, timeout=120, solver="bitwuzla")
    assert r.status == "refuted" and r.solver == "bitwuzla"
    one, two = r.witness.copies
    assert two["a"][0] == one["a"][0] ^ 0x8000 and two["c"] == one["c"] ^ 0x80000000
    d1, d2 = val(one["d"], "fp32"), val(two["d"], "fp32")
    assert d1 is not None and d2 is not None and d2 != -d1


def test_permutation_blocks_of_an_fma_chain_refuted_by_the_twin():
    """An FMA chain rounds after every product, so the order of the products matters (seed 000
    Algorithm 4): the twin finds a swap that changes the bits; the two results differ."""
    r = check_property("permutation-blocks", "cdna1-fp32-fp32", timeout=20, solver="twin")
    assert r.status == "refuted" and r.k == 2
    one, two = r.witness.copies
    assert (two["a"], two["b"]) == (one["a"][::-1], one["b"][::-1]) and one["d"] != two["d"]


def test_twin_alone_never_proves():
    r = check_property("scaling", "hopper-fp16-fp32", timeout=0.5, solver="twin")
    assert r.status == "unknown" and "cannot prove" in r.reason


@pytest.mark.parametrize("fmt", ["fp16", "bf16"])
def test_predicates_match_fractions(fmt):
    """value_le / value_eq, negate_bits and scale_bits on random patterns, against Fractions."""
    g = np.random.default_rng(3)
    e, m = IEEE[fmt]
    w = 1 + e + m
    x = g.integers(0, 1 << w, 4000, dtype=np.uint64)
    y = np.where(g.random(4000) < 0.2, x ^ np.uint64(1 << (w - 1)), g.integers(0, 1 << w, 4000, dtype=np.uint64))
    X, Y = NUMPY.input(x, w), NUMPY.input(y, w)
    le = np.asarray(value_le(decode(X, fmt), decode(Y, fmt)).v)
    eq = np.asarray(value_eq(decode(X, fmt), decode(Y, fmt)).v)
    s = NUMPY.input(np.full(4000, 3, dtype=np.uint64), 16)
    sx, ok = scale_bits(X, fmt, s)
    nx = np.asarray(negate_bits(X, fmt).v)
    sx, ok = np.asarray(sx.v), np.broadcast_to(np.asarray(ok.v), (4000,))
    for i in range(4000):
        a, b = val(int(x[i]), fmt), val(int(y[i]), fmt)
        if a is not None and b is not None:
            assert bool(le[i]) == (a <= b) and bool(eq[i]) == (a == b)
        if a is not None:
            assert val(int(nx[i]), fmt) == -a
        if ok[i]:
            assert val(int(sx[i]), fmt) == 8 * a
        elif a is not None and a != 0:      # refused only where 8a or a is not a normal number
            ef = int(x[i]) >> m & ((1 << e) - 1)
            assert ef == 0 or ef + 3 >= (1 << e) - 1


def test_every_property_states_a_claim():
    for p in PROPERTIES.values():
        assert p.name and p.claim and p.source


@pytest.mark.parametrize("argv, needle", [
    (["property", "nosuch", "volta-fp16-fp32"], "unknown property 'nosuch'"),
    (["property", "monotonicity", "nosuch-model"], "unknown model"),
    (["property", "monotonicity", "ampere-s8-s32"], "integer unit"),
    (["property", "permutation", "cdna1-fp32-fp32"], "each block holds one product"),
    (["property", "permutation-blocks", "volta-fp16-fp32", "--k", "4"], "needs k above the block"),
    (["property", "zero-padding-block", "blackwell-fp8e4m3-fp32-mx"], "block-scaled"),
    (["property", "monotonicity", "volta-fp16-fp32", "--k", "0"], "k must be a positive integer"),
    (["property", "monotonicity", "blackwell-fp8e4m3-fp32-mx", "--k", "16"], "not a multiple of the scale block"),
    (["property", "monotonicity", "volta-fp16-fp32", "--timeout", "0"], "timeout must be positive"),
    (["property", "monotonicity", "volta-fp16-fp32", "--solver", "nosuch"], "invalid choice"),
])
def test_bad_input_is_one_line_exit_2(argv, needle, capsys, tmp_path):
    out = tmp_path / "r.json"
    try:
        rc = cli.main(argv + ["-o", str(out)])
    except SystemExit as exc:       # argparse's own refusals
        rc = exc.code
    err = capsys.readouterr().err.strip()
    assert rc == EXIT_USAGE and err.startswith("mmaprobe: error: ") and needle in err and "\n" not in err
    assert not out.exists()


def test_not_applicable_is_a_query_error():
    with pytest.raises(NotApplicable):
        check_property("sign-symmetry", "ampere-u8-s32")
    assert issubclass(NotApplicable, QueryError)


def test_cli_refutation_prints_both_evaluations_and_writes_json(capsys, tmp_path):
    out = tmp_path / "r.json"
    rc = cli.main(["property", "monotonicity", "volta-fp16-fp32", "--solver", "twin", "--timeout", "20",
                   "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == EXIT_OTHER and "refuted" in text and text.count("->") >= 2 and "d':" in text
    res = json.loads(out.read_text())
    assert res["status"] == "refuted" and len(res["witness"]["copies"]) == 2


def test_cli_lists_properties(capsys):
    assert cli.main(["properties"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in PROPERTIES)


@pytest.mark.slow
def test_permutation_proved_on_a_small_block():
    """Two FP8 products of one T-FDPA block commute (no order inside a fused block, seed 000
    Algorithm 7): a solver proof at k=2 (about 10 s of Bitwuzla)."""
    r = check_property("permutation", "ada-fp8e4m3-fp32", k=2, timeout=600, solver="bitwuzla")
    assert r.status == "proved"


@pytest.mark.slow
def test_monotonicity_refuted_by_a_solver():
    """The solver alone (no twin search) also finds a monotonicity violation on Volta; the twin
    confirms it."""
    r = check_property("monotonicity", "volta-fp16-fp32", timeout=600, solver="bitwuzla")
    assert r.status == "refuted"


def test_zero_padding_of_a_block_scaled_unit_whose_block_is_shorter_than_its_scale_block():
    """cdna4-fp8e4m3-fp32-mx computes blocks of 16 products under scales per 32: K + 1 = 33 pads
    to 48 products and takes two scales per operand (Model.scale_count); the twin search runs on
    those copies (neither copy is refused)."""
    r = check_property("zero-padding", "cdna4-fp8e4m3-fp32-mx", timeout=3, solver="twin", twin_seconds=1)
    assert r.status in ("unknown", "refuted") and r.k == 32


def _exact_sum(cp) -> Fraction:
    return sum(val(x, "fp16") * val(y, "fp16") for x, y in zip(cp["a"], cp["b"])) + val(cp["c"], "fp32")


def test_carry_fill_refutes_sign_symmetry_of_a_narrow_accumulator():
    """hopper-fp16-fp32-carry4 keeps 4 carry bits for 16 products (each below 4 at one exponent):
    the twin's carry-fill candidates make the exact sum -64 = -4K, which the accumulator holds as
    its most negative value, while +64 wraps to it too. Checked here with Fractions: the exact sums
    are -64 and +64, and both results are -64."""
    r = check_property("sign-symmetry", "hopper-fp16-fp32-carry4", timeout=20, solver="twin")
    assert r.status == "refuted" and r.k == 16
    one, two = r.witness.copies
    assert _exact_sum(one) == -_exact_sum(two) != 0
    d1, d2 = val(one["d"], "fp32"), val(two["d"], "fp32")
    assert d2 != -d1
    # the same inputs on the unit with an accumulator wide enough (the catalog's Hopper fp16 unit)
    # give results of opposite signs: the carry bits, not the probe, make the violation
    from smtmodel.catalog import get_model
    wide = get_model("hopper-fp16-fp32")
    outs = [int(wide.evaluate(np.array([cp["a"]], np.uint64), np.array([cp["b"]], np.uint64),
                              np.array([cp["c"]], np.uint64))[0]) for cp in (one, two)]
    assert val(outs[1], "fp32") == -val(outs[0], "fp32") != 0


def test_carry_fill_refutes_monotonicity_of_inputs_and_not_of_the_wide_unit():
    """The carry-fill candidate for monotonicity: the exact sum just below 64 grows to 64 by one
    encoding of a_0, and a 4-carry-bit accumulator wraps it to -64. The Hopper fp16 unit with
    the catalog's accumulator is not refuted by the twin in the same search (it cannot prove)."""
    r = check_property("monotonicity-inputs", "hopper-fp16-fp32-carry4", timeout=20, solver="twin")
    assert r.status == "refuted"
    one, two = r.witness.copies
    assert all(val(x, "fp16") <= val(y, "fp16") for x, y in zip(one["a"] + one["b"], two["a"] + two["b"]))
    assert one["c"] == two["c"] and _exact_sum(one) <= _exact_sum(two)
    assert val(two["d"], "fp32") < val(one["d"], "fp32")
    ok = check_property("monotonicity-inputs", "hopper-fp16-fp32", timeout=2, twin_seconds=2, solver="twin")
    assert ok.status == "unknown"
