"""The catalog against real GPUs: every hardware set in ../shared/hwdata, bit for bit.

Expected values are the GPUs' own outputs (Khattak & Mikaitis captures, seed 001).
"""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

from smtmodel.catalog import all_models, get_model
from smtmodel.vectors import read_vectors

HW = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "hwdata")
FILES = sorted(glob.glob(os.path.join(HW, "*.jsonl.gz")))
ARCH = {"v100": "volta", "a100": "ampere", "a2": "ampere", "ada": "ada", "l40s": "ada",
        "h100": "hopper", "h200": "hopper", "b200": "blackwell"}
# FP8 sets captured through mma.sync.aligned.m16n8k32 (hwdata INDEX): B200 for both outputs,
# H100/H200 for the fp16 output (their fp32-output sets come from wgmma).


def is_mmasync_fp8(gpu: str, fin: str, fout: str) -> bool:
    return fin.startswith("fp8") and (gpu == "b200" or (gpu in ("h100", "h200") and fout == "fp16"))


def model_id(path: str, mmasync: bool | None = None) -> str:
    """The catalog model of a set: its arch and formats, the FP8 mma.sync path where the set was
    captured through it (``mmasync``: None = as the capture, or forced)."""
    gpu, fin, fout = os.path.basename(path).split(".")[0].split("_")
    via = is_mmasync_fp8(gpu, fin, fout) if mmasync is None else mmasync
    (m,) = [m for m in all_models() if m.kind == "catalog" and (m.arch, m.in_fmt, m.out_fmt) == (ARCH[gpu], fin, fout)
            and not m.scale_fmt and not m.mixed and (m.op == "fp8_via_fp16") == via]
    return m.id


def observed(vf) -> np.ndarray:
    fo = vf.out_fmt
    return np.array([fo.parse_hex(next(iter(c["observed"].values()))) for c in vf.cases], dtype=np.uint64)


def test_all_48_sets_present():
    assert len(FILES) == 48


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_hardware_set_bit_exact(path):
    vf = read_vectors(path)
    a, b, c = vf.arrays()
    d = get_model(model_id(path)).evaluate(a, b, c, backend="numpy")     # the reference reading (compiled: test_native.py)
    obs = observed(vf)
    bad = np.flatnonzero(d != obs)
    assert len(bad) == 0, f"{len(bad)} mismatches, first case {bad[0]}: {d[bad[0]]:#x} vs {obs[bad[0]]:#x}"


@pytest.mark.parametrize("name", [f"{g}_{f}_fp16.jsonl.gz" for g in ("h100", "h200") for f in ("fp8e4m3", "fp8e5m2")])
def test_hopper_fp8_fp16_sets_need_the_mmasync_path(name):
    """The H100/H200 FP8 -> fp16 sets (mma.sync, c in C[0][0]) tell the two Hopper FP8 paths apart:
    the mma.sync model (fp16 halves, c added last; seed 001 sec. IV-A6) matches every case (above),
    the wgmma model (F=13 throughout) misses many; and c takes part (it is non-zero in every case)."""
    vf = read_vectors(os.path.join(HW, name))
    a, b, c = vf.arrays()
    assert np.all(c != 0)
    wgmma = get_model(model_id(os.path.join(HW, name), mmasync=False))
    assert np.count_nonzero(wgmma.evaluate(a, b, c) != observed(vf)) > 1000


def test_cli_check_on_hardware_set(capsys):
    from mmaprobe.cli import main

    path = os.path.join(HW, "v100_fp16_fp32.jsonl.gz")
    assert main(["check", path, "--model", "volta-fp16-fp32"]) == 0
    assert "5000/5000 match" in capsys.readouterr().out
    assert main(["check", path, "--model", "turing-fp16-fp32", "--show", "1"]) == 1
    out = capsys.readouterr().out
    assert "mismatch" in out and "/5000 match" in out
    assert main(["check", path, "--model", "hopper-bf16-fp32"]) == 2          # width / format mismatch
    assert main(["check", path, "--model", "no-such-model"]) == 2
    assert "unknown model" in capsys.readouterr().err
