"""The command line's twin options (--backend, --jobs) and ``mmaprobe gemm``.

Expected values come from the library (``smtmodel.gemm``, tested against per-element dot products
in test_gemm.py), from the NumPy reading, and from the GPUs' own outputs (../shared/hwdata)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from mmaprobe import cli
from mmaprobe.errors import EXIT_INTERRUPTED, EXIT_USAGE
from smtmodel import native
from smtmodel.catalog import get_model
from smtmodel.gemm import gemm
from smtmodel.sampling import round_to
from smtmodel.formats import bits_to_numpy
from smtmodel.vectors import read_vectors

HW = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "hwdata")


def test_check_reads_a_hardware_set_with_numpy_by_default_and_compiled_on_request(capsys):
    """``check`` on a 5,000-case hardware set (cases x K far below native.AUTO_MIN_WORK) reads it
    with NumPy by default, compiling nothing; ``--backend native`` compiles; both match."""
    path = os.path.join(HW, "h100_fp16_fp32.jsonl.gz")
    m = get_model("hopper-fp16-fp32:F=23")          # a point no other test compiles at this K
    k = read_vectors(path).header["k"]
    assert 5000 * k < native.AUTO_MIN_WORK
    assert cli.main(["check", path, "--model", "hopper-fp16-fp32", "-j", "2"]) == 0
    assert "5000/5000 match" in capsys.readouterr().out
    assert cli.main(["check", path, "--model", m.id]) in (0, 1)
    capsys.readouterr()
    assert not native.is_cached(m, k, 0, native.row_layout(k))
    assert cli.main(["check", path, "--model", "hopper-fp16-fp32", "--backend", "native"]) == 0
    assert "5000/5000 match" in capsys.readouterr().out


def test_eval_backends_write_the_same_predictions(tmp_path, capsys):
    path = os.path.join(HW, "a100_bf16_fp32.jsonl.gz")
    outs = []
    for be in ("native", "numpy"):
        out = tmp_path / f"{be}.jsonl"
        assert cli.main(["eval", path, "--model", "ampere-bf16-fp32", "-o", str(out), "--backend", be, "-j", "1"]) == 0
        outs.append([c["expect"] for c in read_vectors(str(out)).cases])
    assert outs[0] == outs[1]


@pytest.mark.parametrize("argv", [["-j", "0"], ["--jobs", "x"], ["--backend", "gpu"]])
def test_bad_twin_options_are_usage_errors(argv, capsys):
    path = os.path.join(HW, "v100_fp16_fp32.jsonl.gz")
    with pytest.raises(SystemExit) as exc:
        cli.main(["check", path, "--model", "volta-fp16-fp32", *argv])
    assert exc.value.code == EXIT_USAGE
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_native_unavailable_is_one_line(monkeypatch, capsys):
    from smtmodel.native import jit

    def broken(*a, **k):
        raise ImportError("no llvmlite")
    monkeypatch.setattr(jit, "compile_ir", broken)
    path = os.path.join(HW, "v100_fp16_fp32.jsonl.gz")
    assert cli.main(["check", path, "--model", "volta-fp16-fp32:carry=9", "--backend", "native"]) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "native backend unavailable" in err[0] and "numpy" in err[0]


# ---- mmaprobe gemm ------------------------------------------------------------------------------

def _mats(tmp_path, m, M=5, N=11, K=40, seed=0):
    rng = np.random.default_rng(seed)
    A = bits_to_numpy(round_to(rng.standard_normal((M, K)), m.in_fmt), m.in_fmt)
    B = bits_to_numpy(round_to(rng.standard_normal((K, N)), m.in_fmt), m.in_fmt)
    C = bits_to_numpy(round_to(rng.standard_normal((M, N)), m.c_fmt), m.c_fmt)
    paths = []
    for name, x in (("A", A), ("B", B), ("C", C)):
        p = tmp_path / f"{name}.npy"
        np.save(p, x)
        paths.append(str(p))
    return (A, B, C), paths


def test_gemm_command_equals_the_library(tmp_path, capsys):
    m = get_model("hopper-fp16-fp32")
    (A, B, C), (pa, pb, pc) = _mats(tmp_path, m)
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", pa, pb, pc, "--model", m.id, "-o", str(out), "--alpha", "2", "--beta", "-0.5",
                     "--k-order", "split:2", "-j", "2"]) == 0
    want = gemm(m, A, B, C, alpha=2.0, beta=-0.5, k_order="split:2", backend="numpy")
    assert np.array_equal(np.load(out).view(np.uint32), want.view(np.uint32))
    np.save(tmp_path / "At.npy", np.ascontiguousarray(A.T))
    assert cli.main(["gemm", str(tmp_path / "At.npy"), pb, "--transa", "--model", m.id, "-o", str(out)]) == 0
    assert np.array_equal(np.load(out).view(np.uint32), gemm(m, A, B, None, beta=0.0).view(np.uint32))


def test_gemm_command_raw_bits(tmp_path):
    m = get_model("hopper-fp8e4m3-fp32")
    (A, B, C), _ = _mats(tmp_path, m, K=33)
    ab, bb, cb = (x.view(np.uint8 if x.dtype.itemsize == 1 else np.uint32) for x in (A, B, C))
    for name, x in (("a", ab), ("b", bb), ("c", cb)):
        np.save(tmp_path / f"{name}.npy", x)
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", *(str(tmp_path / f"{n}.npy") for n in "abc"), "--bits", "--model", m.id,
                     "-o", str(out)]) == 0
    assert np.array_equal(np.load(out), gemm(m, A, B, C).view(np.uint32))


@pytest.mark.parametrize("extra, fix", [
    (["--k-order", "split:0"], None),
    (["--k-order", "zigzag"], None),
    (["--alpha", "0.1"], None),                      # not an fp32 value
    ([], "shape"),
    ([], "values"),
    ([], "scaled"),
])
def test_gemm_bad_input_is_one_line_exit_2(tmp_path, capsys, extra, fix):
    m = get_model("hopper-fp16-fp32")
    (A, B, C), (pa, pb, pc) = _mats(tmp_path, m)
    mid = m.id
    if fix == "shape":
        np.save(pb, B[:-1])
    elif fix == "values":
        np.save(pa, A.astype(np.float32) + np.float32(1e-4))
    elif fix == "scaled":
        mid = "blackwell-fp8e4m3-fp32-mx"
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", pa, pb, pc, "--model", mid, "-o", str(out), *extra]) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mmaprobe: error:")
    assert not out.exists()


def test_gemm_interrupted_leaves_no_file(tmp_path, monkeypatch, capsys):
    from mmaprobe.commands import gemm as gemm_cmd
    m = get_model("hopper-fp16-fp32")
    _, (pa, pb, pc) = _mats(tmp_path, m)
    out = tmp_path / "D.npy"
    out.write_bytes(b"old")

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(gemm_cmd.np, "save", interrupted)      # interrupted while writing D
    assert cli.main(["gemm", pa, pb, pc, "--model", m.id, "-o", str(out)]) == EXIT_INTERRUPTED
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_native_fallback_is_one_note_line(tmp_path, capsys):
    """A GEMM whose model does not compile (4203-bit exact sums of an E-FDPA fp64 override) runs on
    NumPy and the command line says so in one ``mmaprobe: note:`` line, no Python warning text;
    D = 3 * (1 * 2) = 6 exactly (computed by hand)."""
    import numpy as np
    from mmaprobe.cli import main
    np.save(tmp_path / "a.npy", np.full((2, 3), 1.0))
    np.save(tmp_path / "b.npy", np.full((3, 4), 2.0))
    out = tmp_path / "d.npy"
    assert main(["gemm", "--model", "ampere-fp64-fp64:op=efdpa,L=2", str(tmp_path / "a.npy"),
                 str(tmp_path / "b.npy"), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "NumPy reading" in line]
    assert len(notes) == 1 and notes[0].startswith("mmaprobe: note:")
    assert "Warning" not in err and "gemm.py:" not in err and "numpy reading)" in err
    assert np.all(np.load(out) == 6.0)
