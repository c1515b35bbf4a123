"""Two models' chained GEMMs under one dataflow for every K (queries.crossgpu, mmaprobe chain-equal).

Expected values: the catalog's parameters from seed 000 Table 4 (Hopper and Blackwell bf16: T-FDPA
L=16, F=25, RZ-FP32; Hopper FP8: F=13, RZ-E8M13; Blackwell FP8: F=25, RZ-FP32; Ampere bf16: L=8,
F=24), the B300 alias's stated assumption (smtmodel.catalog.aliases), and witnesses recomputed by
hand (exact sums, truncation to F bits below the largest exponent) or by the public GEMM
(smtmodel.gemm.gemm), a reading independent of the element reading the search uses.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from mmaprobe import cli
from queries.crossgpu import chain_equal, first_step_model, later_step_model, obligations
from queries.distinguish import QueryError
from smtmodel.bv import NUMPY
from smtmodel.catalog import get_model
from smtmodel.gemm import gemm


def _g(model, a, b, c, dataflow=None):
    """D of a 1 x K times K x 1 GEMM, alpha = beta = 1, from values (the public GEMM)."""
    m = get_model(model)
    A = np.array([a], dtype=np.float32)
    B = np.array(b, dtype=np.float32).reshape(-1, 1)
    import ml_dtypes
    dt = {"bf16": ml_dtypes.bfloat16, "fp8e4m3": ml_dtypes.float8_e4m3fn}[m.in_fmt]
    return float(gemm(m, A.astype(dt), B.astype(dt), np.array([[c]], dtype=np.float32), dataflow=dataflow)[0, 0])


def test_b300_bf16_is_h100_bf16_with_the_assumption_stated():
    """The claim of bitwise-identical bf16 GEMMs on H100 and B300: the two models have one set of
    parameters (seed 000 Table 4; B300 = B200 by the alias's assumption), so they agree for every K."""
    r = chain_equal("hopper-bf16-fp32", "blackwell-ultra-bf16-fp32")
    assert (r.status, r.how) == ("proved", "identical parameters")
    assert any("ASSUMPTION: B300" in n and "UNVALIDATED" in n for n in r.notes)


def test_induction_proves_a_pair_whose_parameters_differ():
    """carry=3 holds every sum of L + 1 = 5 terms (2^3 >= 5), so Volta's fp16 unit with carry=3 is
    the unbounded one: proved by the solvers, one obligation per one-block K, the steps deduplicated
    (c and d are fp32, c enters aligned: the step model is the model itself)."""
    r = chain_equal("volta-fp16-fp32", "volta-fp16-fp32:carry=3", timeout=60)
    assert (r.status, r.how) == ("proved", "induction")
    assert [o.k for o in r.obligations] == [1, 2, 3, 4]
    assert all(o.status == "proved" and o.solver for o in r.obligations)


def test_fp8_hopper_vs_blackwell_step_difference_is_not_reachable_at_k1():
    """Under cutlass2 (chains from +0) one FP8 product is exact in both units, so K = 1 is proved
    equal although the one-block step differs (c truncated to F=13 bits on Hopper); K = 2 differs.
    By hand: 1.875*(-9) + 0.0390625*(-0.09375) = -16.878662109375 exactly (Blackwell, F=25);
    Hopper keeps 13 bits below 2^4, i.e. multiples of 2^-9, truncated: -16.876953125."""
    r = chain_equal("hopper-fp8e4m3-fp32", "blackwell-fp8e4m3-fp32", timeout=60)
    assert r.status == "refuted" and r.k == 2 and r.smallest
    assert r.step_witness is not None and r.step_witness["k"] == 1
    assert (1, "equal") in [(k, st) for k, st, _w, _s in r.checked]
    w = r.witness
    assert w["d"][0] != w["d"][1]
    a, b = [1.875, 0.0390625], [-9.0, -0.09375]
    assert _g("hopper-fp8e4m3-fp32", a, b, 0.0) == -16.876953125
    assert _g("blackwell-fp8e4m3-fp32", a, b, 0.0) == -16.878662109375


def test_c_in_the_accumulator_differs_at_k1():
    """With C in the accumulator (the instruction dataflow) Hopper's F=13 window truncates c itself:
    K = 1 differs, and the witness's Hopper output is c with its 10 low fraction bits cut (23 - 13)."""
    r = chain_equal("hopper-fp8e4m3-fp32", "blackwell-fp8e4m3-fp32", dataflow="instruction")
    assert r.status == "refuted" and r.k == 1
    dh, db = r.witness["d"]
    assert db != dh
    c = 1 + 2.0 ** -20                       # 1 + 2^-20: below Hopper's 13 bits, inside Blackwell's 25
    assert _g("hopper-fp8e4m3-fp32", [0.0], [0.0], c, "instruction") == 1.0
    assert _g("blackwell-fp8e4m3-fp32", [0.0], [0.0], c, "instruction") == c


def test_ampere_vs_hopper_bf16_differ_from_k2():
    """Ampere (L=8, F=24) and Hopper (L=16, F=25) bf16: the one-product chain from c already differs
    (a step-level difference: c enters the F-bit window), but under cutlass2 the chain starts from
    +0 and one bf16 product is exact in fp32 in both (K = 1 proved equal); two products differ."""
    r = chain_equal("ampere-bf16-fp32", "hopper-bf16-fp32", timeout=60)
    assert r.status == "refuted" and r.k == 2 and r.smallest
    assert r.step_witness["k"] == 1


@pytest.mark.slow          # induction: test_induction_proves_a_pair_whose_parameters_differ in the default run
def test_integer_units_of_one_block_size_are_proved_equal():
    """Ampere's and CDNA3's int8 MMA differ only in the specials field, which integer MMA does not
    read: wrap-around sums of exact products, proved block by block."""
    r = chain_equal("ampere-s8-s32", "cdna3-i8-i32", dataflow="instruction", timeout=60)
    assert (r.status, r.how) == ("proved", "induction")


def test_step_models_are_one_chain_step():
    """build of a step model over L_max products is Model.chain_step from the c format (first
    block) and from the output format (later block), for a model that adds c last and one whose c
    and d are fp16; the chain is start, steps, end (Model.build)."""
    g = np.random.default_rng(3)
    for mid in ("hopper-fp16-fp32:c_entry=end", "hopper-fp16-fp16"):
        m = get_model(mid)
        L, n = 16, 512
        wa, wc, wo = 16, *(32 if f == "fp32" else 16 for f in (m.c_fmt, m.out_fmt))
        a = [NUMPY.input(g.integers(0, 1 << wa, n, dtype=np.uint64), wa) for _ in range(L)]
        b = [NUMPY.input(g.integers(0, 1 << wa, n, dtype=np.uint64), wa) for _ in range(L)]
        c = NUMPY.input(g.integers(0, 1 << wc, n, dtype=np.uint64), wc)
        d = NUMPY.input(g.integers(0, 1 << wo, n, dtype=np.uint64), wo)
        assert np.array_equal(first_step_model(m).build(a, b, c).v, m.chain_step(a, b, c, m.c_fmt).v)
        assert np.array_equal(later_step_model(m).build(a, b, d).v, m.chain_step(a, b, d, m.out_fmt).v)
    m = get_model("hopper-fp16-fp32:c_entry=end")
    assert [o[3] for o in obligations(m, m)] == list(range(1, 17)) + [16, 16]


@pytest.mark.parametrize("argv, msg", [
    (["hopper-bf16-fp32", "nosuch"], "unknown model"),
    (["hopper-bf16-fp32", "blackwell-fp16-fp32"], "differ in a_fmt"),
    (["ampere-s8-s32", "hopper-s8-s32", "--dataflow", "cutlass2"], "does not apply"),
    (["hopper-bf16-fp32", "ampere-bf16-fp32", "--k-max", "100000"], "k_max"),
    (["hopper-bf16-fp32", "ampere-bf16-fp32", "--dataflow", "nosuch"], "unknown dataflow"),
    (["blackwell-fp8e4m3-fp32-mx", "rtx-blackwell-fp8e4m3-fp32-mx"], "block scales"),
])
def test_bad_input_is_one_line_exit_2(argv, msg, capsys):
    assert cli.main(["chain-equal", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mmaprobe: error: ") and msg in err[0]


def test_cli_proved_and_refuted(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert cli.main(["chain-equal", "hopper-bf16-fp32", "blackwell-bf16-fp32", "-o", str(out)]) == 0
    assert "proved" in capsys.readouterr().out
    assert json.loads(out.read_text())["status"] == "proved"
    assert cli.main(["chain-equal", "hopper-fp8e4m3-fp32", "blackwell-fp8e4m3-fp32", "--dataflow", "instruction"]) == 1
    text = capsys.readouterr().out
    assert "refuted at K = 1" in text and "confirmed by the GEMM twin" in text


def test_api_refuses_bad_input():
    with pytest.raises(QueryError):
        chain_equal("hopper-bf16-fp32", "blackwell-bf16-fp32", timeout=0)


def test_blocks_that_differ_are_proved_through_tails():
    """Turing's int8 MMA (L=16) and Ampere's (L=32) both wrap an exact sum modulo 2^32, so any
    association gives the same bits: proved for every K with S = 32 (one-block chains, the first and
    later 32, and the tails of 1..16 products Turing pads to 16)."""
    r = chain_equal("turing-s8-s32", "ampere-s8-s32", dataflow="instruction", timeout=60)
    assert (r.status, r.how) == ("proved", "induction")
    tails = [o for o in r.obligations if o.name.startswith("a last")]
    assert [o.k for o in tails] == list(range(1, 17))


def _bench():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parent.parent / "bench" / "crossgpu.py"
    spec = importlib.util.spec_from_file_location("bench_crossgpu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_groups_and_table(tmp_path, capsys):
    """The bench groups a format's units by parameters: Hopper, Blackwell, RTX Blackwell and the
    B300 alias share bf16's T-FDPA L=16, F=25 (seed 000 Table 4). A format whose units form one
    group needs no query; the page's table is replaced between its markers."""
    from queries.distinguish.api import parameter_groups
    bench = _bench()
    fmts = bench.by_format(bench.units())
    bf16 = [[m.arch for m in g] for g in parameter_groups(fmts["bf16 -> fp32 (c fp32)"])]
    assert ["hopper", "blackwell", "rtx-blackwell", "blackwell-ultra"] in bf16
    one = next(label for label, ms in fmts.items() if len(parameter_groups(ms)) == 1)
    doc = tmp_path / "page.md"
    doc.write_text(f"head\n{bench.BEGIN}\nold\n{bench.END}\ntail\n")
    assert bench.main(["--formats", one.replace("[", "?").replace("]", "?"), "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert "old" not in text and "form one group" in text and text.startswith("head") and text.endswith("tail\n")
    assert one in text
