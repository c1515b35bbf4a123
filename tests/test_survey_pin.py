"""The survey's pin part (survey/pin.py) without a GPU.

Expected values: the committed files' candidates are the kernels' own catalog models with one
override each, re-evaluated here by the twin (Model.evaluate) on the files' cases; the witnesses'
violations are the properties' own predicates read on the catalog model's outputs. In a dry run
the twin answers with each kernel's own catalog model, so every parameter must be pinned to the
catalog's value and every witness observed; the wrong twin answers with another GPU's model, which
the deciding cases separate from the catalog's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mmaprobe.cli import main
from smtmodel.catalog import get_model
from smtmodel.formats import get_format
from smtmodel.vectors import read_vectors
from survey import pin
from survey.store import MAX_BYTES, MAX_FILES

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "generated_tests" / "pin"
KERNELS = "mma_m16n8k16_bf16_f32,mma_m16n8k8_tf32_f32,mma_m8n8k4_f64_f64"


def _files():
    return sorted(FOLDER.glob("*.jsonl"))


def test_every_pin_kernel_has_its_files():
    """Each kernel with an open parameter on sm_90 has a vector file per parameter."""
    for spec in pin.pin_kernels("sm_90"):
        for p in pin.parameters(spec.in_fmt, spec.out_fmt):
            assert (FOLDER / pin.file_name(spec, p)).is_file(), (spec.id, p.name)


@pytest.mark.parametrize("path", [p for p in _files() if p.name != pin.WITNESSES], ids=lambda p: p.name)
def test_parameter_files_split_the_candidates_as_their_header_says(path):
    """The twin, on the file's cases: each candidate's outputs are the file's expected outputs, and
    the candidates fall into exactly the header's classes; the catalog value is alone in its class
    wherever the twin search split it from every other candidate."""
    vf = read_vectors(path)
    src = vf.header["source"]
    a, b, c = vf.arrays()
    sigs = []
    for mid, v in zip(vf.header["models"], src["values"]):
        d = np.asarray(get_model(mid).evaluate(a, b, c, jobs=1), np.uint64)
        assert [vf.out_fmt.hex(int(x)) for x in d] == [case["expect"][mid] for case in vf.cases]
        sigs.append(d.tobytes())
    assert sorted(map(sorted, pin.classes(src["values"], sigs))) == sorted(map(sorted, src["classes"]))
    unsplit = {x for pair in src["unsplit"] for x in pair}
    if src["catalog"] not in unsplit:
        assert [src["catalog"]] in src["classes"]


def test_bf16_zero_floors_each_decided():
    """Every bf16 floor the H100 captures leave open (-133 ... -124) answers differently from every
    other: one capture of these cases picks exactly one."""
    vf = read_vectors(FOLDER / "hopper-bf16-fp32.zero_floor.jsonl")
    assert sorted(vf.header["source"]["classes"]) == sorted([[str(e)] for e in range(-133, -123)]
                                                           + [["ignore"], ["seed000"]])


def test_tf32_low_cases_have_low_bits_and_split_all_four_readings():
    vf = read_vectors(FOLDER / "hopper-tf32-fp32.tf32_low.jsonl")
    a, _, _ = vf.arrays()
    assert np.any(a & 0x1FFF) and len(vf.header["source"]["classes"]) == 4


def test_witnesses_violate_their_property_on_the_models_outputs():
    """Each witness: the property's predicates see the violation on the model's outputs, and do not
    when every copy answers the first copy's bits (the check can fail)."""
    ws = pin.read_witnesses(FOLDER)
    cells = {(m.id, prop) for m, prop, _ in pin.refuted_cells("sm_90")}
    assert cells and cells == {(w["model"], w["property"]) for w in ws}
    for w in ws:
        fo = get_format(get_model(w["model"]).out_fmt)
        d = [fo.parse_hex(cp["d"]) for cp in w["copies"]]
        assert pin.violation(w, d), (w["model"], w["property"])
        assert not pin.violation(w, [d[0]] * len(d)), (w["model"], w["property"])


def test_dry_run_pins_the_catalog_and_observes_every_witness(tmp_path):
    out = tmp_path / "pin"
    assert main(["survey", "--device", "dry:sm_90", "--parts", "pin", "--kernels", KERNELS, "-o", str(out),
                 "--quiet"]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert files == ["card.json", "card.md", "journal.jsonl", "kernels.npz"] and len(files) <= MAX_FILES
    assert all(p.stat().st_size <= MAX_BYTES for p in out.iterdir())
    card = json.loads((out / "card.json").read_text())
    part = card["pin"]
    assert set(part) == set(KERNELS.split(","))
    params = {(k, n): r for k, e in part.items() for n, r in e["parameters"].items()}
    assert {n for _, n in params} == {"zero_floor", "flush_inputs", "tf32_low", "specials"}
    for key, r in params.items():
        assert r["status"] == "pinned" and r["agrees_with_catalog"], key
    assert params[("mma_m16n8k16_bf16_f32", "zero_floor")]["survivor_classes"] == [["-133"]]
    ws = [w for e in part.values() for w in e["witnesses"]]
    assert ws and all(w["status"] == "observed" and w["gpu_equals_model"] for w in ws)
    assert {w["model"] for w in ws} == {"hopper-bf16-fp32", "hopper-tf32-fp32", "hopper-fp64-fp64"}
    assert all(e["chain_finite"]["matches"] == e["chain_finite"]["cases"] for e in part.values())
    md = (out / "card.md").read_text()
    assert "## Pinned on silicon" in md and "pinned, as the catalog" in md


def test_wrong_twin_shows_the_mismatch(tmp_path):
    out = tmp_path / "wrong"
    main(["survey", "--device", "dry:sm_90:wrong", "--parts", "pin", "--kernels", "mma_m16n8k16_bf16_f32",
          "-o", str(out), "--quiet"])
    e = json.loads((out / "card.json").read_text())["pin"]["mma_m16n8k16_bf16_f32"]
    assert any(not r["agrees_with_catalog"] for r in e["parameters"].values())
    assert e["chain_finite"]["matches"] < e["chain_finite"]["cases"]
    assert "not the catalog's" in (out / "card.md").read_text() or "none survive" in (out / "card.md").read_text()


def test_plan_row(capsys):
    assert main(["survey", "--device", "dry:sm_90", "--parts", "pin", "--plan"]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("pin:")]
    assert len(line) == 1
    steps, launches, cases = (int(x.replace(",", "")) for x in line[0].split()[-3:])
    assert steps >= 12 and launches >= steps and cases > 1024 * steps


def test_pin_imports_no_solver():
    code = ("import sys, survey.pin; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'z3', 'cvc5', 'bitwuzla', 'dask'}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert r.stdout.strip() == "[]"


def test_bad_parts_is_one_line(capsys):
    assert main(["survey", "--device", "dry:sm_90", "--parts", "pinn", "--plan"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pinn" in err[0] and "pin" in err[0]


def test_cli_summary_and_exit_status(tmp_path, capsys):
    """The command's summary counts the pin part, and a finding (a parameter pinned off the catalog,
    a witness the GPU does not show) makes the exit status 1: the wrong twin GPU answers with other
    models, the right one with the catalog's."""
    from mmaprobe.cli import main
    kid = "wgmma_m64n8k16_bf16_f32"
    assert main(["survey", "--device", "dry:sm_90", "--parts", "pin", "--kernels", kid, "--quiet",
                 "-o", str(tmp_path / "right")]) == 0
    assert "findings: none" in capsys.readouterr().out
    assert main(["survey", "--device", "dry:sm_90:wrong", "--parts", "pin", "--kernels", kid, "--quiet",
                 "-o", str(tmp_path / "wrong")]) == 1
    out = capsys.readouterr().out
    assert f"findings: {kid}" in out
