"""Properties of one unit proved or refuted (queries/properties, `mmaprobe property`).

Expected values come from independent computations: the witnesses' exact sums and products are
recomputed here with Fractions from a decoder of IEEE patterns written in this file (not the
core's decode), and the predicates are compared with the same Fraction reading on random
patterns. The proof is the solver's (fresh: the proof cache is off for these tests).
"""

from __future__ import annotations

import json
from dataclasses import replace
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


def test_restricted_question_refutes_with_zero_products(monkeypatch):
    """The portfolio's restricted question (products after the first two at +0, c' = c) answers
    where the twin does not: with the twin search stubbed out, a solver's violation of Volta's
    fp16 monotonicity comes from it. Its witness has those zeros in both copies and the same c,
    and is checked here with Fractions: the exact sums grew (every product did), the result
    shrank."""
    from queries.properties import check as chk
    monkeypatch.setattr(chk, "twin_search", lambda *a, **kw: None)
    r = check_property("monotonicity", "volta-fp16-fp16", timeout=3 * chk.RESTRICTED_MIN_S)
    assert r.status == "refuted" and r.solver.endswith("products 2..3 zero)"), (r.solver, r.log)
    assert [e[:2] for e in r.log if e[0].startswith("restricted")] == [("restricted (2 of 4 products free)", "sat")]
    one, two = r.witness.copies
    assert one["c"] == two["c"]
    for cp in (one, two):
        assert cp["a"][2:] == [0, 0] and cp["b"][2:] == [0, 0]
    prods = [[val(x, "fp16") * val(y, "fp16") for x, y in zip(cp["a"], cp["b"])] for cp in (one, two)]
    assert all(p <= q for p, q in zip(*prods))
    assert sum(prods[0]) <= sum(prods[1]) and val(two["d"], "fp16") < val(one["d"], "fp16")


def test_restricted_question_fixes_only_the_later_products():
    """What the restricted question fixes: a_j, b_j (both copies) for j >= live, never the product
    zero-padding appends; c' = c for monotonicity with c moving."""
    from queries.properties.defs import get_property
    from smtmodel.catalog import get_model
    m = get_model("volta-fp16-fp32")
    mono = get_property("monotonicity").restricted(m, 4, 2)
    assert mono == {"a2": None, "a3": None, "b2": None, "b3": None, "a2_2": None, "a3_2": None,
                    "b2_2": None, "b3_2": None, "c_2": "c"}
    assert "c_2" not in get_property("monotonicity-products").restricted(m, 4, 2)
    pad = get_property("zero-padding").restricted(m, 4, 2)
    assert sorted(pad) == ["a2", "a3", "b2", "b3"]


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


def _pattern_relations(fmt, x, y):
    """pattern_le, pattern_eq and pattern_eq(negate) of the NumPy reading, as bool arrays."""
    from queries.properties.predicates import pattern_eq, pattern_le
    from smtmodel.formats import get_format
    w = get_format(fmt).width
    X, Y = NUMPY.input(x, w), NUMPY.input(y, w)
    return [np.broadcast_to(np.asarray(r.v, dtype=bool), x.shape)
            for r in (pattern_le(X, Y, fmt), pattern_eq(X, Y, fmt), pattern_eq(X, Y, fmt, negate=True))]


@pytest.mark.parametrize("fmt", ["fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz", "fp6e2m3", "fp6e3m2",
                                 "fp4e2m1", "e8m0"])
def test_pattern_comparisons_match_ml_dtypes_on_every_pair(fmt):
    """The field comparisons the monotonicity and sign-symmetry formulas use, on every pair of
    patterns of the narrow formats, against ml_dtypes' reading of the patterns as floats (an
    independent decoder): x <= y, x = y and y = -x as values, false where either is NaN."""
    import ml_dtypes

    from smtmodel.formats import dtype_name, get_format
    w = get_format(fmt).width
    vals = np.arange(1 << w, dtype=np.uint8).view(getattr(ml_dtypes, dtype_name(fmt))).astype(np.float64)
    x, y = (g.ravel().astype(np.uint64) for g in np.meshgrid(np.arange(1 << w), np.arange(1 << w)))
    vx, vy = vals[x], vals[y]
    le, eq, neg = _pattern_relations(fmt, x, y)
    with np.errstate(invalid="ignore"):
        assert np.array_equal(le, vx <= vy) and np.array_equal(eq, vx == vy) and np.array_equal(neg, vy == -vx)


@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp32", "tf32", "ue4m3", "fp16-noinputsub"])
def test_pattern_comparisons_match_value_comparisons(fmt):
    """The same on random pairs of the wide formats (a fifth of them one sign apart, a fifth equal
    magnitudes, zeros and specials mixed in), against the exact comparisons of decoded values
    that test_predicates_match_fractions checks against Fractions; TF32's low container bits
    set at random (the format ignores them) and a format that reads subnormal patterns as zero."""
    from queries.properties.predicates import value_eq, value_le
    from smtmodel.formats import Format, get_format
    f = Format("fp16-noinputsub", 5, 10, 15, subnormals=False) if fmt == "fp16-noinputsub" else get_format(fmt)
    g = np.random.default_rng(5)
    n, w = 20000, f.width
    x = g.integers(0, 1 << w, n, dtype=np.uint64)
    pick = g.random(n)
    y = np.where(pick < 0.2, x ^ np.uint64(1 << (w - 1)), g.integers(0, 1 << w, n, dtype=np.uint64))
    y = np.where((pick > 0.2) & (pick < 0.4), x + g.integers(-3, 4, n).astype(np.uint64), y) & np.uint64((1 << w) - 1)
    special = g.integers(0, 6, n)        # +0, -0, +inf-ish top patterns, the smallest subnormals
    top = np.uint64(((1 << f.ebits) - 1) << (f.mbits + f.shift))
    for arr in (x, y):
        arr[special == 0] = 0
        arr[special == 1] = np.uint64(1 << (w - 1)) if f.signed else 0
        arr[special == 2] |= top
        arr[special == 3] &= np.uint64((1 << (f.mbits + f.shift + 1)) - 1) | (np.uint64(1 << (w - 1)) if f.signed else 0)
    X, Y = NUMPY.input(x, w), NUMPY.input(y, w)
    dx, dy = decode(X, f), decode(Y, f)
    want = [np.broadcast_to(np.asarray(r.v, dtype=bool), (n,)) for r in
            (value_le(dx, dy), value_eq(dx, dy), value_eq(dy, replace(dx, sign=~dx.sign)))]
    got = _pattern_relations(f, x, y)
    for g_, w_ in zip(got, want):
        assert np.array_equal(g_, w_)


@pytest.mark.parametrize("prop,mid,how", [
    ("monotonicity", "cdna1-fp16-fp32", "identical terms"),
    ("monotonicity-inputs", "cdna1-bf16-fp32", "identical terms"),
    ("monotonicity-normal", "cdna1-fp32-fp32", "identical terms"),
    ("scaling", "ampere-fp64-fp64", "identical terms"),
    ("monotonicity-products", "hopper-fp64-fp64", "proved by "),     # NaN operands passed on: a solver shows it
])
def test_correctly_rounded_units_proved_by_reduction(prop, mid, how):
    """A unit whose output is the correctly rounded sum of its exact products and c (CDNA1's E-FDPA,
    the FMA chains) is monotone in every form and scales exactly: the check names the argument.
    That these units round the exact sum once is checked against Fractions in
    tests/test_model_ranges.py::test_units_proved_monotone_by_reduction_round_the_exact_sum_once."""
    r = check_property(prop, mid, timeout=30)
    assert r.status == "proved" and r.solver == "reduction", (r.status, r.solver, r.reason)
    assert "correctly rounded sum" in r.argument and how in r.argument and "IEEE 754-2019" in r.argument


@pytest.mark.parametrize("mid", ["volta-fp16-fp32", "cdna1-bf16-fp32-pairwise", "cdna2-fp16-fp32-fmachain",
                                 "cdna1-fp16-fp32:L=2"])
def test_other_units_are_not_recognised_as_correctly_rounded_sums(mid):
    """T-FDPA truncates, the pairwise rival and the CDNA2 FMA chain round more than once (the twin
    refutes their monotonicity or the solvers leave it open), and a block of 2 products read at
    k = 4 is two roundings: no reduction."""
    from queries.distinguish.api import resolve_model
    from queries.properties.defs import get_property
    from queries.properties.reductions import correctly_rounded_sum
    m = resolve_model(mid)
    k = 4 if ":" in mid else get_property("monotonicity").default_k(m)
    assert correctly_rounded_sum(m, k, seconds=5) is None


def test_twin_finds_no_violation_where_the_reduction_proves():
    """The twin search, given the time, finds no violation of the properties proved by reduction
    (an independent reading: its probes aim at cut crossings, subnormal factors and carries)."""
    for prop in ("monotonicity", "monotonicity-inputs"):
        r = check_property(prop, "cdna1-fp16-fp32", timeout=2, solver="twin")
        assert r.status == "unknown"


def test_reduction_proof_is_not_certified(tmp_path, capsys):
    rc = cli.main(["property", "monotonicity", "cdna1-fp32-fp32", "--certify", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert rc == 3 and "proved by reduction" in out and "argument:" in out and "not certified: proved by reduction" in out
