"""MATLAB tensor-core toolbox files: layout and round trips (with ../shared/hwdata sets)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hw_runner.errors import HarnessError
from hw_runner.matlab_io import export_matlab, import_matlab
from smtmodel.vectors import VectorFile, make_header, read_vectors

HWDATA = Path(__file__).resolve().parents[1].parent / "shared" / "hwdata"
needs_hwdata = pytest.mark.skipif(not HWDATA.is_dir(), reason="shared/hwdata not beside the repository")


def _subset(name, n=40):
    vf = read_vectors(HWDATA / name)
    return VectorFile(vf.header, vf.cases[:n])


@needs_hwdata
@pytest.mark.parametrize("name,gpu", [("h100_fp16_fp32.jsonl.gz", "H100"), ("a100_fp16_fp16.jsonl.gz", "A100"),
                                      ("ada_fp8e4m3_fp16.jsonl.gz", "Ada"), ("b200_tf32_fp32.jsonl.gz", "B200"),
                                      ("l40s_bf16_fp32.jsonl.gz", "L40S")])
def test_round_trip_of_hardware_sets(tmp_path, name, gpu):
    vf = _subset(name)
    h = vf.header
    written = export_matlab(vf, tmp_path, gpu)
    assert sorted(p.name[0] for p in written.values()) == ["a", "b", "c", "d"]
    back = import_matlab(tmp_path, gpu, h["in_fmt"], h["out_fmt"], h["c_fmt"])
    assert back.header["k"] == h["k"] and len(back.cases) == len(vf.cases)
    for x, y in zip(vf.cases, back.cases):
        assert (x["a"], x["b"], x["c"]) == (y["a"], y["b"], y["c"])
        assert list(x["observed"].values()) == [y["observed"][gpu]]


@needs_hwdata
def test_file_layout_matches_toolbox(tmp_path):
    vf = _subset("h100_fp16_fp32.jsonl.gz", 3)
    w = export_matlab(vf, tmp_path, "H100")
    assert w["a"].name == "a_H100_fp16.txt" and w["c"].name == "c_H100_fp32.txt" and w["d"].name == "d_H100_fp32.txt"
    a_lines = w["a"].read_text().splitlines()
    assert len(a_lines) == 3 and all(re.fullmatch(r"[0-9a-f]{8}( [0-9a-f]{8}){15}", ln) for ln in a_lines)
    # fp16 0x3bd5-style inputs widen exactly to binary32 hex
    first = np.array([int(vf.cases[0]["a"][0], 16)], dtype=np.uint16).view(np.float16).astype(np.float32)
    assert a_lines[0].split()[0] == f"{int(first.view(np.uint32)[0]):08x}"
    assert all(re.fullmatch(r"[01]{32}", ln) for ln in w["d"].read_text().splitlines())


def test_fp16_output_rounds_c_and_widens_d(tmp_path):
    (tmp_path / "a_X_fp16.txt").write_text("3f800000 00000000\n")
    (tmp_path / "b_X_fp16.txt").write_text("40000000 3f000000\n")
    (tmp_path / "c_X_fp32.txt").write_text(f"{0x3f801000:032b}\n")     # 1 + 2^-11 -> fp16 RNE: 1.0
    (tmp_path / "d_X_fp16.txt").write_text(f"{0x40400000:032b}\n")     # 3.0
    vf = import_matlab(tmp_path, "X", "fp16", "fp16")
    assert vf.header["c_fmt"] == "fp16" and vf.cases[0]["c"] == "0x3c00"
    assert vf.cases[0]["a"] == ["0x3c00", "0x0000"] and vf.cases[0]["b"] == ["0x4000", "0x3800"]
    assert vf.cases[0]["observed"] == {"X": "0x4200"}


def test_inexact_input_and_bad_lines_are_errors(tmp_path):
    (tmp_path / "a_X_E4M3.txt").write_text("3f800001\n")               # not an e4m3 value
    (tmp_path / "b_X_E4M3.txt").write_text("3f800000\n")
    with pytest.raises(HarnessError, match="not exact in fp8e4m3"):
        import_matlab(tmp_path, "X", "fp8e4m3", "fp32")
    (tmp_path / "a_X_E4M3.txt").write_text("zz\n")
    with pytest.raises(HarnessError, match="a_X_E4M3.txt:1"):
        import_matlab(tmp_path, "X", "fp8e4m3", "fp32")


def test_export_needs_a_source_when_ambiguous(tmp_path):
    cases = [{"id": "0", "a": ["0x3c00"], "b": ["0x3c00"], "c": "0x00000000",
              "expect": {"m": "0x3f800000"}, "observed": {"G1": "0x3f800000", "G2": "0x3f800000"}}]
    vf = VectorFile(make_header("fp16", "fp32", "fp32", 1), cases)
    with pytest.raises(HarnessError, match="choose one with --source"):
        export_matlab(vf, tmp_path, "G")
    w = export_matlab(vf, tmp_path, "G", source="m")
    assert w["d"].read_text() == f"{0x3f800000:032b}\n"
