"""mmaprobe explain, GEMM mode (queries.gemm): which (model, dataflow) reproduce each device's
outputs. Expected values: seed 003 §V's five published outputs (the paper); the other cases
compare with an independent computation (the full GEMM by smtmodel.gemm's NumPy reading)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mmaprobe.cli import main
from queries.gemm.explain import Observation, default_dataflows, explain_gemm, parse_observation
from queries.gemm.spec import from_npy, from_spec, seed003
from queries.gemm.structure import InputError, from_arrays, spread
from smtmodel.catalog import get_model
from smtmodel.dataflow import parse_dataflow
from smtmodel.gemm import gemm_bits

SEED003 = {"V100": 0.0, "A100": 0.0, "MI250X": 0.0, "MI100": 255.875, "H100": 191.875}   # seed 003 §V
MODELS = ["volta-fp16-fp32", "ampere-fp16-fp32", "hopper-fp16-fp32", "cdna1-fp16-fp32", "cdna2-fp16-fp32",
          "cdna2-fp16-fp32-fmachain", "cdna3-fp16-fp32"]


@pytest.fixture(scope="module")
def seed003_result():
    obs = [parse_observation(f"{d}={v}") for d, v in SEED003.items()]
    return explain_gemm(seed003(), obs, [get_model(m) for m in MODELS], default_dataflows())


def test_seed003_is_one_distinct_element():
    p = from_spec("seed003")
    assert p.shape == (8192, 8192, 8192) and p.inputs.elements == 1
    assert (p.alpha, p.beta, p.in_fmt, p.c_fmt) == (-1.0, 1.0, "fp16", "fp32")


@pytest.mark.parametrize("device", list(SEED003))
def test_seed003_each_value_with_its_hypotheses(seed003_result, device):
    """Each GPU's published value is reproduced by its architecture's model with C added in the
    epilogue (CUTLASS 2.x / 3.x, Tensile), and never with C in the accumulator, split-K or a
    restart interval; MI250X's 0 only by the CDNA2 FMA-chain rival (seed 003 Table III)."""
    d = next(x for x in seed003_result.devices if x["device"] == device)
    own = {"V100": "volta-fp16-fp32", "A100": "ampere-fp16-fp32", "H100": "hopper-fp16-fp32",
           "MI100": "cdna1-fp16-fp32", "MI250X": "cdna2-fp16-fp32-fmachain"}[device]
    fits = {(r["model"], r["dataflow"]) for r in d["fits"]}
    for df in ("cutlass2", "cutlass3-sm90", "tensile"):
        assert (own, df) in fits
    if device != "H100":            # Hopper keeps the small products under every dataflow tried
        assert all(r["dataflow"] in ("cutlass2", "cutlass3-sm90", "tensile", "cuda-sample-simple-wmma")
                   for r in d["fits"])
        assert set(d["ruled_out"]) >= {"C entry", "split-K", "restart interval"}
    if device == "MI250X":
        assert d["fit_models"] == ["cdna2-fp16-fp32-fmachain"] and d["only_rivals"]
        assert any("seed 003 Table III" in c for c in d["conflicts"])
    else:
        assert not d["only_rivals"] and not d["conflicts"]


def test_volta_with_c_in_the_accumulator_gives_191_906(seed003_result):
    """With C loaded into the accumulator (C·β/α) Volta gives 191.906, not 0."""
    row = next(h for h in seed003_result.hypotheses if h["model"] == "volta-fp16-fp32"
               and h["dataflow"] == "c_entry=accumulator,c_scale=beta/alpha,epilogue=alpha_acc")
    assert row["values"] == [f"0x{int(np.array(191.90625, np.float32).view(np.uint32)):08x}"]


def _small(tmp_path, seed=1, M=6, N=5, K=24):
    rng = np.random.default_rng(seed)
    ri, cj = rng.integers(0, 3, M), rng.integers(0, 2, N)
    a = (rng.standard_normal((3, K)) * 4).astype(np.float16)[ri]          # repeated rows
    b = (rng.standard_normal((K, 2)) * 4).astype(np.float16)[:, cj]       # repeated columns
    c = (rng.standard_normal((3, 2)) * 8).astype(np.float32)[np.ix_(ri, cj)]
    c[0, :] = 1.5                                                          # one row of C apart
    paths = []
    for name, x in (("a", a), ("b", b), ("c", c)):
        paths.append(str(tmp_path / f"{name}.npy"))
        np.save(paths[-1], x)
    return a, b, c, paths


def test_structure_reduction_spreads_back_to_the_full_gemm(tmp_path):
    a, b, c, _ = _small(tmp_path)
    bits = lambda x, t: x.view(t).astype(np.uint64)
    s = from_arrays(bits(a, np.uint16), bits(b, np.uint16), bits(c, np.uint32))
    A, B, C, r, q = s.reduced()
    assert A.shape[0] <= 4 and B.shape[1] == 2
    m = get_model("ampere-fp16-fp32")
    for df in ("cutlass2", "S=2", "c=accumulator,epilogue=alpha_acc"):
        full = gemm_bits(m, bits(a, np.uint16), bits(b, np.uint16), bits(c, np.uint32), dataflow=df, backend="numpy")
        red = gemm_bits(m, A, B, C, dataflow=df, backend="tabulated")
        assert np.array_equal(spread(red, r, q), full), df


def test_matrix_observation_finds_the_hidden_pair_and_the_deciding_element(tmp_path):
    a, b, c, (pa, pb, pc) = _small(tmp_path)
    p = from_npy(pa, pb, pc, "fp16", "fp32", 1.0, 1.0)
    bits = lambda x, t: x.view(t).astype(np.uint64)
    m, df = get_model("ampere-fp16-fp32"), parse_dataflow("cutlass3-sm90")
    d = gemm_bits(m, bits(a, np.uint16), bits(b, np.uint16), bits(c, np.uint32), dataflow=df, backend="numpy")
    models = [get_model(x) for x in ("ampere-fp16-fp32", "volta-fp16-fp32", "hopper-fp16-fp32")]
    dfs = [parse_dataflow(x) for x in ("cutlass2", "cutlass3-sm90", "S=2", "c=accumulator,epilogue=alpha_acc")]
    res = explain_gemm(p, [Observation("gpu", matrix=d, text="gpu=out.npy")], models, dfs)
    fits = {(r["model"], r["dataflow"]) for r in res.devices[0]["fits"]}
    assert ("ampere-fp16-fp32", "cutlass3-sm90") in fits
    bad = d.copy()
    bad[4, 3] ^= 1                           # one element off by one ulp: nothing fits
    res = explain_gemm(p, [Observation("gpu", matrix=bad, text="gpu=bad.npy")], models, dfs)
    dev = res.devices[0]
    assert not dev["fits"] and dev["conflicts"]


def test_cli_seed003_writes_json(tmp_path, capsys):
    out = tmp_path / "x.json"
    rc = main(["explain", "--gemm", "seed003", "--models", "volta-fp16-fp32,cdna2-fp16-fp32-fmachain,cdna2-fp16-fp32",
               "--dataflow", "cutlass2", "--dataflow", "S=2", "--observe", "V100=0", "--observe", "MI250X=0",
               "-o", str(out), "--quiet"])
    assert rc == 0
    obj = json.loads(out.read_text())
    assert obj["distinct_elements"] == 1 and len(obj["devices"]) == 2
    assert obj["conflicts"] and "MI250X" in obj["conflicts"][0]
    assert "CONFLICT" in capsys.readouterr().out


@pytest.mark.parametrize("argv, msg", [
    (["--gemm", "seed003:k=8", "--observe", "gpu=SHAPE"], "but the GEMM's D is 8x8"),
    (["--gemm", "seed003:k=8", "--dataflow", "cutlass9", "--observe", "V100=0"], "unknown dataflow profile"),
    (["--gemm", "seed007", "--observe", "V100=0"], "unknown generator"),
    (["--gemm", "seed003:k=8", "--observe", "V100@cdna9=0"], "unknown architecture"),
    (["--gemm", "seed003:k=8", "--observe", "V100=0.1"], "not exactly representable"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, capsys, argv, msg):
    bad = tmp_path / "wrong.npy"
    np.save(bad, np.zeros((3, 2), np.float32))
    out = tmp_path / "out.json"
    argv = [x.replace("SHAPE", str(bad)) for x in argv]
    argv = [x.replace("seed003:k=8", "seed003:m=8,n=8,k=8") for x in argv]
    rc = main(["explain"] + argv + ["-o", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("mmaprobe: error: ") and msg in err[0], err
    assert not out.exists()


def test_observation_syntax():
    assert parse_observation("MI250X=0").arch == "cdna2"
    assert parse_observation("mygpu@hopper=1.5").arch == "hopper"
    assert parse_observation("mygpu=1.5").arch is None
    with pytest.raises(InputError):
        parse_observation("nothing")
