"""mmaprobe identify (queries.identify): the design, the loop on hidden twins, file devices and
captures, the journal, the model file, the command line, the GPU adapter on the harness's fake."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hw_runner.identify_device import CudaDevice
from mmaprobe.cli import main
from queries.distinguish import distinguish
from queries.identify import (Cases, DeviceError, FileDevice, Journal, Settings, TwinDevice, identify)
from queries.identify.design import choose, partition
from queries.identify.report import entry
from smtmodel.catalog import get_model
from smtmodel.catalog.spaces import build_space
from smtmodel.vectors import read_vectors, write_vectors
from test_hw_fakes import EmuLauncher, small_int_cases

HWDATA = "../shared/hwdata"

# A narrowed fp16 -> fp32 space: T-FDPA with L, F, rho, carry varied; E-FDPA and FTZ-Add/Mul too.
# Zeros at the catalog's fixed e_zero (docs/zeros.md): Volta -131 (-19 with fp16 output, the V100
# capture below), Turing/Ampere -132, Hopper -133 (equivalent for fp16 -> fp32: no nonzero term
# lies below them).
SMALL = {"families": [{"family": "t-fdpa", "params": {"L": [4, 8, 16], "F": [23, 24, 25], "rho": ["RZ-FP32", "RNE-FP32", "RNE-FP16"],
                                                      "carry": [None, 3], "normalize": [False],
                                                      "zero_align": [-19, -131, -132, -133],   # catalog e_zero
                                                      "flush_inputs": [None], "c_entry": ["align"],
                                                      "specials": ["nvidia"]}},
                      {"family": "e-fdpa"}, {"family": "ftz-addmul"}]}


def _settings(**kw):
    kw.setdefault("k", 16)
    kw.setdefault("verify", 2000)
    kw.setdefault("solver_pairs", 0)
    return Settings(**kw)


def _found(out, undecided=("zero_align",)) -> bool:
    """Identified, or narrowed with only ``undecided`` left open. SMALL's fixed e_zero readings
    -131..-133 compute alike for fp16 -> fp32 (docs/zeros.md argues it from the exponent ranges;
    no solver proved it within 120 s), so a run that cannot prove it must say "narrowed"."""
    from queries.identify.split import alike_keys
    if out.status == "identified":
        return True
    groups = [[out.spec(i) for i in g] for g in out.behaviours]
    return out.status == "narrowed" and set(alike_keys(groups)[0]) <= set(undecided)


# ---- design ---------------------------------------------------------------------------------------

def test_choose_minimises_the_largest_group():
    # 4 hypotheses x 3 probes: probe 0 splits {0,1} | {2,3}; probe 1 separates only 0; probe 2 splits
    # 1 from the rest -- the worst case after probe 0 is 2, after probe 1 or 2 it is 3.
    out = np.array([[0, 5, 7], [0, 6, 8], [1, 6, 7], [1, 6, 7]], dtype=np.uint64)
    first = choose(out, 1)
    assert first == [0]
    both = choose(out, 3)
    assert len(set(partition(out[:, both]).tolist())) == 3      # {0}, {1}, {2,3}: nothing splits 2 and 3


def test_choose_stops_when_nothing_splits():
    assert choose(np.ones((5, 4), np.uint64), 10) == []


# ---- the loop on hidden twins ----------------------------------------------------------------------

def test_recovers_a_combination_not_in_the_catalog():
    space = build_space("fp16", "fp32", SMALL)
    hidden = "hopper-fp16-fp32:L=8,F=23,rho=RNE-FP32"          # no catalog model has these parameters
    out = identify(space, TwinDevice(hidden), _settings())
    assert _found(out) and out.launches <= 6
    w = get_model(out.spec(out.winner))
    assert (w.op, w.L, w.F, w.rho) == ("tfdpa", 8, 23, "RNE-FP32")
    assert out.verified == 2000


def test_recovers_amd_models_from_the_union_space():
    space = build_space("bf16", "fp32", SMALL)
    for hidden, op in (("cdna2-bf16-fp32", "ftz_addmul"), ("cdna1-bf16-fp32", "efdpa")):
        out = identify(space, TwinDevice(hidden), _settings())
        assert out.status == "identified", hidden
        assert hidden in out.catalog[out.winner]
        assert get_model(out.spec(out.winner)).op == op


def test_tf32_low_bits_reading_is_decided():
    space = build_space("tf32", "fp32", {"families": [{"family": "t-fdpa", "params": {
        "L": [4], "F": [24], "rho": ["RZ-FP32"], "carry": [None], "normalize": [False], "zero_align": [-132],
        "flush_inputs": [None], "c_entry": ["align"], "specials": ["nvidia"]}}]})
    assert space.size == 4                                      # tf32_low: ignore, RNE, RNA, nan
    for how in ("RNA", "ignore"):
        out = identify(space, TwinDevice(f"ampere-tf32-fp32:tf32_low={how}"), _settings(k=4))
        assert out.status == "identified" and len(out.live) == 1
        assert get_model(out.spec(out.winner)).tf32_low == how


def test_rival_told_apart_with_the_deciding_probe():
    space = build_space("bf16", "fp32", {"families": [{"family": "t-fdpa", "params": {
        "L": [8], "F": [24], "rho": ["RZ-FP32"], "carry": [None], "normalize": [False], "zero_align": [-132],
        "flush_inputs": [None, "signed"], "c_entry": ["align"], "specials": ["nvidia"]}}]})
    out = identify(space, TwinDevice("ampere-bf16-fp32-ftz"), _settings(k=8))
    assert out.status == "identified" and "ampere-bf16-fp32-ftz" in out.catalog[out.winner]
    ev = {r["parameter"]: r for r in entry(out, "x", "twin", _settings(k=8))["evidence"]}
    row = ev["flush_inputs"]
    assert row["rival"] == "none" and row["device"] != row["rival_answer"]
    # the deciding probe, re-run independently on both models, does give those two answers
    p = Cases.from_json([row["probe"]], "bf16", "fp32")
    for spec, want in (("ampere-bf16-fp32-ftz", row["device"]), ("ampere-bf16-fp32", row["rival_answer"])):
        assert int(get_model(spec).evaluate(p.a, p.b, p.c)[0]) == int(want, 16)


def test_no_hypothesis_fits_is_said_with_a_counterexample():
    space = build_space("fp16", "fp32", "e-fdpa,ftz-addmul")
    out = identify(space, TwinDevice("hopper-fp16-fp32"), _settings())
    assert out.status == "no-fit" and out.counterexample is not None
    cx = out.counterexample
    c = Cases.from_json([cx], "fp16", "fp32")
    assert int(get_model("hopper-fp16-fp32").evaluate(c.a, c.b, c.c)[0]) == int(cx["device"], 16)
    assert int(get_model(cx["hypothesis"]).evaluate(c.a, c.b, c.c)[0]) == int(cx["model"], 16)


def test_identical_terms_prove_alike_where_the_pool_cannot_split():
    """T-FDPA carry=none vs carry=5 at k=4: 5 terms never carry more than 3 bits (ops.fused.acc_width's
    bound), so both trace to one term: "identified", the class proved without a solver."""
    space = build_space("fp16", "fp32", {"families": [{"family": "t-fdpa", "params": {
        "L": [4], "F": [23], "rho": ["RZ-FP32"], "carry": [None, 5], "normalize": [False], "zero_align": [-131],
        "flush_inputs": [None], "c_entry": ["align"], "specials": ["nvidia"]}}]})
    out = identify(space, TwinDevice("volta-fp16-fp32"), _settings(k=4))
    assert out.status == "identified" and len(out.live) == 2 and len(out.behaviours) == 1 and not out.solver_log
    other = [i for i in out.live if i != out.winner][0]
    assert "identical terms" in out.proofs[other]
    assert "every one proved" in out.class_status


def test_solver_timeouts_are_said(tmp_path, capsys):
    """A zero rule the probes and the twin search cannot split (fixed e_zero -131 vs ignore for
    fp16 -> fp32, alike by docs/zeros.md's argument; bitwuzla does not prove it in 60 s even at
    k=4): asked of the solver with a 1 s limit, the class is "narrowed" and the summary says the
    question went unanswered."""
    params = {"L": [4], "F": [23], "rho": ["RZ-FP32"], "carry": [None], "normalize": [False],
              "zero_align": [-131, "ignore"], "flush_inputs": [None], "c_entry": ["align"], "specials": ["nvidia"]}
    space = build_space("fp16", "fp32", {"families": [{"family": "t-fdpa", "params": params}]})
    out = identify(space, TwinDevice("volta-fp16-fp32"), _settings(k=4, solver_pairs=1, solver_timeout=1))
    assert out.status == "narrowed" and len(out.behaviours) == 2
    assert [r["status"] for r in out.solver_log] == ["unknown"]
    sp = tmp_path / "space.json"
    sp.write_text(json.dumps({"families": [{"family": "t-fdpa", "params": params}]}))
    rc = main(["identify", "--device", "twin:volta-fp16-fp32", "--space", str(sp), "--k", "4", "--verify", "500",
               "--solver-pairs", "1", "--timeout", "1", "--journal", str(tmp_path / "j.jsonl"), "--quiet"])
    text = capsys.readouterr().out
    assert rc == 0 and "narrowed to 2 points" in text and "zero_align" in text
    assert "solver: 1 question(s)" in text and "without an answer" in text


# ---- journal, resume, bad devices ------------------------------------------------------------------

def _header(space, k):
    return {"space": space.to_dict(), "device": "twin", "k": k, "seed": 0, "in_fmt": space.in_fmt,
            "c_fmt": space.base.c_fmt, "out_fmt": space.out_fmt}


def test_device_failure_keeps_answers_and_resume_finishes(tmp_path):
    space = build_space("fp16", "fp32", SMALL)
    hidden = "ampere-fp16-fp32"
    path = tmp_path / "j.jsonl"
    dev = TwinDevice(hidden, fail_after=1)
    with pytest.raises(DeviceError):
        identify(space, dev, _settings(), Journal(path, _header(space, 16), resume=False))
    lines = path.read_text().splitlines()
    assert sum('"answers"' in x for x in lines) == 1                 # the first launch's answers are kept
    dev2 = TwinDevice(hidden)
    out = identify(space, dev2, _settings(), Journal(path, _header(space, 16), resume=True))
    assert _found(out) and hidden in out.catalog[out.winner]
    assert dev2.launches == out.launches - 1 + out.verify_launches    # launch 1 came from the journal
    with pytest.raises(Exception, match="exists"):
        Journal(path, _header(space, 16), resume=False)


def test_file_device_writes_probes_then_resumes(tmp_path):
    space = build_space("fp16", "fp32", SMALL)
    obs = tmp_path / "obs.jsonl"
    nxt = tmp_path / "obs.next.jsonl"
    twin = get_model("turing-fp16-fp32")
    jpath = tmp_path / "j.jsonl"
    resume = False
    for _attempt in range(10):
        dev = FileDevice(str(obs), str(nxt), "fp16", "fp32")
        out = identify(space, dev, _settings(verify=500), Journal(jpath, _header(space, 16), resume=resume))
        resume = True
        if out.status != "pending":
            break
        assert nxt.exists() and out.pending.count > 0
        vf = read_vectors(nxt)                                          # the user runs the probes ...
        a, b, c = vf.arrays()
        for case, d in zip(vf.cases, twin.evaluate(a, b, c)):
            case.setdefault("observed", {"gpu": "0x%08x" % int(d)})
        write_vectors(nxt, vf)
    assert _found(out) and "turing-fp16-fp32" in out.catalog[out.winner]


@pytest.mark.parametrize("name,model", [("v100_fp16_fp32", "volta-fp16-fp32"), ("a100_bf16_fp32", "ampere-bf16-fp32")])
def test_hwdata_capture_keeps_the_gpus_model(tmp_path, name, model):
    dev = FileDevice(f"{HWDATA}/{name}.jsonl.gz", str(tmp_path / "next.jsonl"))
    space = build_space(dev.in_fmt, dev.out_fmt, SMALL)
    out = identify(space, dev, _settings(k=dev.k))
    assert any(model in out.catalog.get(i, ()) for i in out.live)
    if out.status == "pending":
        assert (tmp_path / "next.jsonl").exists()


# ---- the model file ---------------------------------------------------------------------------------

def test_identified_model_file_is_a_model(tmp_path):
    space = build_space("fp16", "fp32", SMALL)
    out = identify(space, TwinDevice("ampere-fp16-fp32:F=25"), _settings())
    assert _found(out)
    from queries.identify.report import write_entry
    p = tmp_path / "unit.json"
    write_entry(p, entry(out, "unit-x", "twin", _settings()))
    m = get_model(str(p))
    assert m.id == "unit-x" and (m.L, m.F) == (8, 25)
    r = distinguish(str(p), "ampere-fp16-fp32", k=8, timeout=20)
    assert r.status == "sat"


# ---- command line -----------------------------------------------------------------------------------

def test_cli_identifies_and_writes_the_model(tmp_path, capsys):
    sp = tmp_path / "space.json"
    sp.write_text(json.dumps(SMALL))
    o = tmp_path / "id.json"
    rc = main(["identify", "--device", "twin:hopper-fp16-fp32", "--space", str(sp), "--verify", "1000",
               "--solver-pairs", "0", "-o", str(o), "--quiet"])
    assert rc == 0
    line = [x for x in capsys.readouterr().out.splitlines() if "catalog match" in x][0]
    assert "hopper-fp16-fp32" in line
    assert "hopper-fp16-fp32" in json.loads(o.read_text())["catalog_match"]
    assert main(["identify", "--device", "twin:hopper-fp16-fp32", "--space", str(sp), "-o", str(o), "--quiet"]) == 2


@pytest.mark.parametrize("argv", [["--device", "twin:nosuch"], ["--device", "bogus:x"],
                                  ["--device", "twin:hopper-fp16-fp32", "--space", "gtr-fdpa"],
                                  ["--device", "twin:hopper-fp16-fp32", "--space", "nosuch-family"]])
def test_cli_bad_input_is_one_line(argv, tmp_path, capsys):
    rc = main(["identify", *argv, "--journal", str(tmp_path / "j.jsonl"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("mmaprobe: error: ") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "j.jsonl").exists() or argv[1].startswith("twin:h")


# ---- the GPU adapter on the harness's fake ----------------------------------------------------------

def test_cuda_device_through_the_harness_fake():
    dev = CudaDevice("cuda", in_fmt="fp16", out_fmt="fp32", c_fmt="fp32", launcher=EmuLauncher())
    a, b, c, want, _ = small_int_cases(dev.spec, 64, dev.k)
    d = dev.launch(Cases(a, b, c))
    assert np.array_equal(d, want) and dev.launches == 1


# ---- the acceptance bench: a sample here, the whole table under -m slow ----------------------------

def _bench():
    import importlib.util
    import pathlib
    spec = importlib.util.spec_from_file_location("bench_identify", pathlib.Path(__file__).parent.parent / "bench" / "identify.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow          # the benchmark's own rows; identify on these units runs in the tests above
def test_bench_sample(tmp_path):
    sp = tmp_path / "space.json"
    sp.write_text(json.dumps(SMALL))
    bench = _bench()
    bench.EXTRA_ARGV = [*bench.EXTRA_ARGV, "--solver-pairs", "0"]   # the solver stage: test_identify_solver.py
    for mid in ("ampere-bf16-fp32", "cdna1-fp16-fp32"):
        row = bench.run_model((mid, str(sp), 1000, 0))
        assert row["status"] in ("identified", "narrowed") and row["own_point_in_class"] and row["launches"] <= 6, row
        assert set(row["undecided"]) <= {"zero_align"}, row
    row = bench.run_capture(("v100_fp16_fp16", str(sp), 0))
    assert row["gpu_model_survives"], row


@pytest.mark.slow
def test_bench_whole_table():
    """Every catalog model from its pair's default space; every capture as a file device."""
    bench = _bench()
    assert bench.main(["--verify", "100000"]) == 0
    assert bench.main(["--hwdata"]) == 0


def test_small_batches_of_hypotheses_are_read_without_compiling():
    """A hypothesis evaluated on probes whose cases x K are below native.AUTO_MIN_WORK goes through
    the NumPy twin (no kernel compiled for a one-off evaluation); the bits equal the compiled
    reading's."""
    from smtmodel import native
    from queries.identify.hypotheses import outputs
    from queries.identify.pool import probe_pool
    m = get_model("hopper-fp16-fp32:F=22")                 # a point no other test compiles
    pool = probe_pool(m, 16, 3, 1, 256, False)
    assert len(pool) * 16 < native.AUTO_MIN_WORK
    d = outputs(m, pool)
    assert not native.is_cached(m, 16, 0, native.row_layout(16, 0))
    if native.available():
        assert np.array_equal(d, m.evaluate(pool.a, pool.b, pool.c, backend="native"))
