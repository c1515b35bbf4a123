"""mmaprobe identify --gemm (queries.gemm.identify): the instruction model and the dataflow of a
hidden twin-gemm device, from its outputs on probe GEMMs. The expected answer is the hidden pair
itself (the device is the twin); a small space keeps the test fast."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mmaprobe.cli import main
from queries.gemm.devices import FileGemmDevice, TwinGemmDevice, parse_twin
from queries.gemm.explain import default_dataflows
from queries.gemm.identify import INTERVALS, identify_gemm
from queries.gemm.probes import design, fprev_pairs
from queries.identify.errors import IdentifyError, NeedAnswers
from smtmodel.catalog import get_model

MODELS = [get_model(m) for m in ("hopper-fp16-fp32", "ampere-fp16-fp32", "volta-fp16-fp32")]


@pytest.mark.parametrize("hidden", ["hopper-fp16-fp32:cutlass2", "ampere-fp16-fp32:cutlass3-sm90",
                                    "volta-fp16-fp32:cutlass-splitk-serial", "hopper-fp16-fp32:cuda-sample-simple-wmma",
                                    "ampere-fp16-fp32:cuda-sample-tensorcoregemm",
                                    "hopper-fp16-fp32:S=3,assign=interleaved", "volta-fp16-fp32:tile=64,restart=1"])
def test_recovers_model_and_dataflow(hidden):
    dev = TwinGemmDevice(hidden)
    out = identify_gemm(dev, MODELS, default_dataflows(INTERVALS))
    assert out.status == "identified" and out.verified
    assert out.recovered(dev.hidden)
    assert {h.model.id for h in out.live} == {dev.hidden.model.id}
    # only dataflows alike in every field, or named profiles that are (cutlass3-sm90 and tensile)
    assert len({(h.dataflow.c_entry, h.dataflow.epilogue, h.dataflow.slices, h.dataflow.restart) for h in out.live}) == 1
    assert out.launches <= 6


def test_fprev_rows_place_the_big_pair_on_edges():
    assert (0, 127) in fprev_pairs(128) and (31, 127) in fprev_pairs(128) and (0, 32) in fprev_pairs(128)
    p = design("fp16", "fp32", 128)[0]
    row = [i for i, n in enumerate(p.rows) if n == "fprev(0,127)"][0]
    vals = np.asarray(p.a[row], np.uint16).view(np.float16).astype(np.float64)
    assert vals[0] == 2 ** 15 and vals[127] == -(2 ** 15) and np.all(vals[1:127] == 2 ** -10)


def test_twin_gemm_syntax():
    h = parse_twin("hopper-fp16-fp32:F=24:cutlass-splitk-serial:S=3")
    assert h.model.F == 24 and h.dataflow.slices == 3 and h.dataflow.name == "cutlass-splitk-serial"
    assert parse_twin("volta-fp16-fp32:S=2").dataflow.slices == 2
    for bad in ("hopper-fp16-fp32", "nosuch:cutlass2", "hopper-fp16-fp32:cutlass9"):
        with pytest.raises(IdentifyError):
            parse_twin(bad)


def test_file_device_asks_for_missing_answers_then_reads_them(tmp_path):
    cap = tmp_path / "cap.npz"
    dev = FileGemmDevice(str(cap), "fp16", None, "fp32")
    p = design("fp16", "fp32", 128)[0]
    with pytest.raises(NeedAnswers):
        dev.launch(p)
    z = dict(np.load(dev.next_path))
    twin = TwinGemmDevice("ampere-fp16-fp32:cutlass2")
    z["d0"] = twin.launch(p)
    np.savez(cap, **z)
    assert np.array_equal(FileGemmDevice(str(cap)).launch(p), z["d0"])


def _verdict(obj) -> str:
    """identified where one (model, dataflow) pair survives; narrowed where several do (no proof
    makes them alike)."""
    pairs = {(h["model"], json.dumps(h["dataflow"], sort_keys=True)) for h in obj["live"]}
    return "identified" if len(pairs) == 1 else "narrowed"


def test_cli_identify_gemm(tmp_path, capsys):
    out = tmp_path / "id.json"
    rc = main(["identify", "--gemm", "--device", "twin-gemm:ampere-fp16-fp32:S=2", "--models",
               "ampere-fp16-fp32,volta-fp16-fp32", "--quiet", "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "-> recovered" in text
    obj = json.loads(out.read_text())
    assert obj["status"] == _verdict(obj) and obj["live"][0]["dataflow"]["slices"] == 2


def test_capture_keeps_every_launch_and_replays(tmp_path, capsys):
    """--capture keeps every launched GEMM with the device's outputs; the capture replayed as a
    file: device gives the same answer with no probe left to ask (the twin's own outputs, read
    back, are the expected values)."""
    cap = tmp_path / "cap.npz"
    args = ["--models", "ampere-fp16-fp32,volta-fp16-fp32", "--quiet"]
    assert main(["identify", "--gemm", "--device", "twin-gemm:ampere-fp16-fp32:S=2", "--capture", str(cap),
                 "-o", str(tmp_path / "a.json")] + args) == 0
    z = np.load(cap)
    assert "d0" in z.files and str(z["in_fmt"]) == "fp16"
    assert main(["identify", "--gemm", "--device", f"file:{cap}", "-o", str(tmp_path / "b.json")] + args) == 0
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert a["live"] == b["live"] and a["status"] == b["status"] == _verdict(a)
    assert not (tmp_path / "cap.next.npz").exists()
    capsys.readouterr()
    assert main(["identify", "--device", "twin:ampere-fp16-fp32", "--in", "fp16", "--out", "fp32",
                 "--capture", str(cap), "--quiet"]) == 2
    assert "--capture belongs to identify --gemm" in capsys.readouterr().err


@pytest.mark.parametrize("argv, msg", [
    (["--device", "twin-gemm:ampere-fp16-fp32:nosuchprofile"], "unknown dataflow profile"),
    (["--device", "twin-gemm:nosuch-model:cutlass2"], "unknown model"),
    (["--device", "gpu-gemm"], "unknown GEMM device"),
    (["--device", "twin-gemm:ampere-fp16-fp32:cutlass2", "--dataflow", "cutlas2"], "unknown dataflow profile"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, msg):
    out = tmp_path / "id.json"
    rc = main(["identify", "--gemm"] + argv + ["--quiet", "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("mmaprobe: error: ") and msg in err[0], err
    assert not out.exists()


def test_cuda_gemm_without_cupy_is_one_line(capsys):
    pytest.importorskip("numpy")
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    rc = main(["identify", "--gemm", "--device", "cuda-gemm", "--in", "fp16", "--out", "fp32", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "CuPy" in err[0]
