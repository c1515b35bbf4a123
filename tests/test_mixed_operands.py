"""A and B in different formats (Model.a_fmt / b_fmt) through the readings, gemm, vector files
and the command line.

Expected values: exact sums computed independently with NumPy float64 from ml_dtypes' decoding of
the formats (sums small enough to be exact in fp32), and the catalog's same-format models where a
mixed model must agree with them.
"""

from __future__ import annotations

import numpy as np
import pytest

from smtmodel.catalog import all_models, get_model
from smtmodel.formats import bits_to_numpy, get_format, numpy_to_bits
from smtmodel.gemm import gemm_bits
from smtmodel.model import ModelError
from smtmodel.sampling import validation_mix
from smtmodel.vectors import VectorFile, make_header, read_vectors, write_vectors

MIXED = [m for m in all_models() if m.mixed]


def test_catalog_mixed_models():
    ids = {m.id for m in MIXED}
    # Ada FP8 mma.sync, both orders, fp32 and fp16 out (PTX ISA .f8type of A and B)
    assert {"ada-fp8e4m3xfp8e5m2-fp32", "ada-fp8e5m2xfp8e4m3-fp32", "ada-fp8e4m3xfp8e5m2-fp16",
            "ada-fp8e5m2xfp8e4m3-fp16"} <= ids
    # kind::mxf8f6f4: 20 ordered mixes of five formats per Blackwell arch
    assert sum(1 for m in MIXED if m.arch == "blackwell" and m.scale_fmt) == 20
    for m in MIXED:
        assert m.in_fmt == m.operand_fmts[0] and m.in_key == "x".join(m.operand_fmts)


def _exact_cases(fa, fb, n=400, k=16, seed=5):
    """Small integers (times 1 or 2): products and sums are integers below 2^11, exact in every
    model's alignment (F >= 13 fraction bits below the largest term) and in fp32."""
    rng = np.random.default_rng(seed)
    va = rng.integers(-3, 4, (n, k)) * 2.0 ** rng.integers(0, 2, (n, k))
    vb = rng.integers(-3, 4, (n, k)) * 2.0 ** rng.integers(0, 2, (n, k))
    vc = rng.integers(-8, 9, n).astype(np.float64)
    a = numpy_to_bits(va.astype(np.float32), fa).astype(np.uint64)
    b = numpy_to_bits(vb.astype(np.float32), fb).astype(np.uint64)
    c = numpy_to_bits(vc.astype(np.float32), "fp32").astype(np.uint64)
    # decoded back independently (ml_dtypes) so the reference uses the values the bits hold
    ea = bits_to_numpy(a, fa).astype(np.float64)
    eb = bits_to_numpy(b, fb).astype(np.float64)
    return a, b, c, vc + (ea * eb).sum(1)


@pytest.mark.parametrize("mid", ["ada-fp8e4m3xfp8e5m2-fp32", "hopper-fp8e5m2xfp8e4m3-fp32",
                                 "blackwell-fp8e4m3xfp8e5m2-fp32-mmasync"])
def test_exact_sums(mid):
    m = get_model(mid)
    a, b, c, ref = _exact_cases(*m.operand_fmts)
    for backend in ("numpy", "native"):
        d = m.evaluate(a, b, c, backend=backend)
        assert np.array_equal(d, numpy_to_bits(ref.astype(np.float32), "fp32")), backend


def test_mixed_reading_differs_from_reading_b_in_as_format():
    """The same bits read with B as e5m2 (mixed model) and as e4m3 (same-format model) differ:
    b's format is really used."""
    mix, same = get_model("ada-fp8e4m3xfp8e5m2-fp32"), get_model("ada-fp8e4m3-fp32")
    a, b, c, _ = _exact_cases("fp8e4m3", "fp8e5m2")
    assert (mix.evaluate(a, b, c) != same.evaluate(a, b, c)).mean() > 0.5


def test_override_is_the_catalog_mixed_model():
    m = get_model("ada-fp8e4m3-fp32:b_fmt=fp8e5m2")
    ref = get_model("ada-fp8e4m3xfp8e5m2-fp32")
    assert m.formats == ref.formats
    a, b, c, _ = validation_mix("fp8e4m3", "fp32", 32, 3000, seed=2, b_fmt="fp8e5m2")
    assert np.array_equal(m.evaluate(a, b, c), ref.evaluate(a, b, c))


def test_widths_per_operand():
    """fp8 x fp4 (MX): b's patterns are 4 bits wide; an 8-bit pattern in b is refused."""
    m = get_model("blackwell-fp8e4m3xfp4e2m1-fp32-mx")
    assert m.operand_widths == (8, 4)
    a, b, c, _ = validation_mix("fp8e4m3", "fp32", 32, 50, seed=1, b_fmt="fp4e2m1")
    assert b.max() < 16 and a.max() >= 16
    s = np.full((50, 1), 127, np.uint64)
    m.evaluate(a, b, c, s, s, backend="numpy")
    with pytest.raises((ModelError, ValueError)):
        m.evaluate(a, a, c, s, s, backend="numpy")


def test_ops_that_take_one_format_refuse_mixed():
    with pytest.raises(ModelError, match="one input format"):
        get_model("ampere-fp64-fp64:a_fmt=fp32")
    with pytest.raises(ModelError, match="round_products"):
        get_model("ada-fp8e4m3xfp8e5m2-fp32:round_products=RNE")


def test_symbolic_variables_take_each_width():
    import z3  # noqa: F401  (the z3 backend)
    from smtmodel.bv.z3_backend import Z3Backend
    m = get_model("blackwell-fp6e3m2xfp4e2m1-fp32-mx")
    a, b, c, d, sc = m.symbolic(Z3Backend(), 32)
    assert {x.w for x in a} == {6} and {x.w for x in b} == {4}


def test_gemm_mixed_equals_the_dot_products():
    m = get_model("ada-fp8e5m2xfp8e4m3-fp32")
    a, b, c, _ = validation_mix("fp8e5m2", "fp32", 40, 12, seed=3, b_fmt="fp8e4m3")
    A, B = a[:3], b[:4]                    # rows of A, columns of B (as rows)
    C = c[:12].reshape(3, 4)
    D = gemm_bits(m, A, B.T, C, dataflow="instruction")       # C as the instruction's c
    ref = m.evaluate(np.repeat(A, 4, 0), np.tile(B, (3, 1)), C.reshape(-1), backend="numpy").reshape(3, 4)
    assert np.array_equal(D, ref)


def test_vector_file_round_trip_and_cli(tmp_path, capsys):
    from mmaprobe.cli import main
    m = get_model("ada-fp8e4m3xfp8e5m2-fp32")
    a, b, c, _ = validation_mix("fp8e4m3", "fp32", 32, 20, seed=4, b_fmt="fp8e5m2")
    fa, fb, fc = (get_format(f) for f in ("fp8e4m3", "fp8e5m2", "fp32"))
    d = m.evaluate(a, b, c)
    h = make_header(("fp8e4m3", "fp8e5m2"), "fp32", "fp32", 32)
    assert "in_fmt" not in h and (h["a_fmt"], h["b_fmt"]) == ("fp8e4m3", "fp8e5m2")
    vf = VectorFile(h, [{"id": str(i), "a": [fa.hex(int(x)) for x in a[i]], "b": [fb.hex(int(x)) for x in b[i]],
                         "c": fc.hex(int(c[i])), "observed": {"twin": fc.hex(int(d[i]))}} for i in range(20)])
    p = tmp_path / "mixed.jsonl"
    write_vectors(p, vf)
    back = read_vectors(p)
    a2, b2, c2 = back.arrays()
    assert np.array_equal(a2, a) and np.array_equal(b2, b)
    assert main(["check", str(p), "--model", m.id]) == 0
    assert "20/20 match" in capsys.readouterr().out
    assert main(["check", str(p), "--model", "ada-fp8e4m3-fp32"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "b_fmt" in err[0]


def test_header_in_fmt_contradicting_b_fmt_is_refused(tmp_path):
    from smtmodel.vectors import VectorFileError
    p = tmp_path / "bad.jsonl"
    p.write_text('{"kind": "mmaprobe.vectors", "version": 1, "in_fmt": "fp8e4m3", "b_fmt": "fp8e5m2", '
                 '"c_fmt": "fp32", "out_fmt": "fp32", "k": 1}\n')
    with pytest.raises(VectorFileError, match="contradicts in_fmt"):
        read_vectors(p)


@pytest.mark.parametrize("pair", [("ada-fp8e4m3xfp8e5m2-fp32", "hopper-fp8e4m3xfp8e5m2-fp32"),
                                  ("blackwell-fp8e4m3xfp4e2m1-fp32-mx", "blackwell-fp8e4m3xfp4e2m1-fp32-mx:F=24")])
def test_distinguish_mixed_pair_writes_a_mixed_vector_file(pair, tmp_path):
    """The twin search draws b in B's format; the vector it writes carries a_fmt/b_fmt and both
    models' outputs, which the models reproduce from the file."""
    from queries.distinguish import distinguish
    from mmaprobe.commands.query import vector_file
    res = distinguish(*pair)            # the portfolio starts with the twin search
    assert res.status == "sat"
    vf = vector_file(res)
    p = tmp_path / "v.jsonl"
    write_vectors(p, vf)
    back = read_vectors(p)
    ma = get_model(pair[0])
    assert (back.a_fmt.name, back.b_fmt.name) == ma.operand_fmts
    a, b, c = back.arrays()
    sc = back.scales()
    for mid in pair:
        d = get_model(mid).evaluate(a, b, c, *(sc or (None, None)))
        assert [back.out_fmt.hex(int(x)) for x in d] == [case["expect"][mid] for case in back.cases]


def test_identify_on_a_mixed_pair(tmp_path, capsys):
    """A space for the mixed key fp8e4m3xfp8e5m2 -> fp32 (its base the mixed catalog model),
    narrowed to the zero rule, identifies a hidden mixed twin; the model file keeps a_fmt/b_fmt."""
    import json
    from mmaprobe.cli import main
    from smtmodel.catalog.spaces import build_space
    s = build_space("fp8e4m3xfp8e5m2", "fp32")
    assert s.base.id == "ada-fp8e4m3xfp8e5m2-fp32" and s.in_fmt == "fp8e4m3xfp8e5m2"
    sp = tmp_path / "sp.json"
    sp.write_text(json.dumps({"families": [{"family": "t-fdpa", "params": {
        "L": [16], "F": [13], "rho": ["RZ-E8M13"], "carry": [None], "normalize": [False],
        "zero_align": ["seed000", "ignore"], "flush_inputs": [None], "c_entry": ["align"], "specials": ["nvidia"]}}]}))
    out = tmp_path / "m.json"
    rc = main(["identify", "--device", "twin:ada-fp8e4m3xfp8e5m2-fp32:zero_align=ignore", "--space", str(sp),
               "--verify", "1000", "-o", str(out), "--journal", str(tmp_path / "j.jsonl"), "--quiet"])
    assert rc == 0
    m = get_model(str(out))
    assert m.operand_fmts == ("fp8e4m3", "fp8e5m2") and m.zero_align == "ignore"
