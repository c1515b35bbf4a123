"""Every command that reads a ``.npy``, ``.npz`` or vector file, fed a damaged one: exit 2, exactly
one line ``mmaprobe: error: ...`` on stderr naming the file, and nothing written (no output file,
no partial or temporary file, no input rewritten).

The damaged files are made from good ones: empty, cut in half, cut 3 bytes short of the end,
random bytes of the same length, and (for the archives) 16 random bytes written over the middle.
The contract is the project's rule for bad input (docs/development.md); before the one reader
(``smtmodel.io.read_npz``) the ``.npz`` cases ended in exit 70 (zipfile's BadZipFile, zlib's
error and EOFError escaped as internal errors). Commands run in-process (``mmaprobe.cli.main``),
as in tests/test_cli_fuzz.py."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import numpy as np
import pytest

from mmaprobe.cli import main
from smtmodel.io import ArrayFileError, DataFileError, read_npy, read_npz
from smtmodel.vectors import VectorFileError, read_vectors

ROOT = Path(__file__).resolve().parents[1]
HWDATA = ROOT.parent / "shared" / "hwdata"
CAPTURE = HWDATA / "h100_fp16_fp32.jsonl.gz"
SURVEY_KERNEL = "mma_m16n8k8_f16_f16"


def _damaged(raw: bytes, archive: bool) -> dict[str, bytes]:
    rng = np.random.default_rng(len(raw))
    out = {"empty": b"", "half": raw[: len(raw) // 2], "short3": raw[:-3], "random": rng.bytes(max(len(raw), 64))}
    if archive:
        mid = bytearray(raw)
        mid[len(raw) // 2: len(raw) // 2 + 16] = rng.bytes(16)
        out["overwritten"] = bytes(mid)
    return out


def _run(argv: list[str]) -> tuple[int, list[str]]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    return rc, err.getvalue().splitlines()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict[str, bytes]:
    """Good files of each kind: a fp16 matrix (.npy), a GEMM capture (.npz in identify --gemm's
    file: layout, with its formats) and a hardware capture (vector file, gzip)."""
    t = tmp_path_factory.mktemp("good")
    np.save(t / "A.npy", np.ones((4, 8), np.float16))
    np.savez(t / "X.npz", a0=np.zeros((4, 8), np.uint64), b0=np.zeros((8, 4), np.uint64),
             c0=np.zeros((4, 4), np.uint64), alpha0=np.float64(1), beta0=np.float64(0),
             in_fmt="fp16", c_fmt="fp32", out_fmt="fp32")
    return {"npy": (t / "A.npy").read_bytes(), "npz": (t / "X.npz").read_bytes(), "vec": CAPTURE.read_bytes(),
            "B.npy": str(t / "A.npy")}


# (name, kind of the damaged file, the name it is given, argv with {f} the damaged file, {d} its folder)
COMMANDS = [
    ("check", "vec", "v.jsonl.gz", ["check", "{f}", "--model", "hopper-fp16-fp32"]),
    ("check-text", "vec", "v.jsonl", ["check", "{f}", "--model", "hopper-fp16-fp32"]),
    ("eval", "vec", "v.jsonl.gz", ["eval", "{f}", "--model", "hopper-fp16-fp32", "-o", "{d}/out.jsonl"]),
    ("verdict", "vec", "v.jsonl.gz", ["verdict", "{f}"]),
    ("run", "vec", "v.jsonl.gz", ["run", "{f}", "--device", "twin:hopper-fp16-fp32", "-o", "{d}/out.jsonl"]),
    ("export-matlab", "vec", "v.jsonl.gz", ["export-matlab", "{f}", "--gpu", "h100", "-o", "{d}/matlab"]),
    ("identify", "vec", "v.jsonl.gz", ["identify", "--device", "file:{f}", "--in", "fp16", "--out", "fp32",
                                       "-o", "{d}/id.json", "--quiet"]),
    ("gemm", "npy", "A.npy", ["gemm", "{f}", "{B}", "--model", "hopper-fp16-fp32", "-o", "{d}/D.npy"]),
    ("gemm-archive", "npz", "A.npy", ["gemm", "{f}", "{B}", "--model", "hopper-fp16-fp32", "-o", "{d}/D.npy"]),
    ("explain", "npy", "A.npy", ["explain", "--a", "{f}", "--b", "{B}", "--in", "fp16", "--observe", "d=1",
                                 "--quiet", "-o", "{d}/e.json"]),
    ("ozaki-gemm", "npy", "A.npy", ["scheme", "ozaki-gemm", "ozaki1-s3", "--a", "{f}", "--b", "{B}",
                                    "-o", "{d}/o.json"]),
    ("identify-gemm", "npz", "X.npz", ["identify", "--gemm", "--device", "file:{f}", "--in", "fp16", "--out", "fp32",
                                       "-o", "{d}/id.json", "--quiet"]),
]


@pytest.mark.parametrize("name, kind, fname, argv", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_damaged_input_is_one_line_and_writes_nothing(tmp_path, good, name, kind, fname, argv):
    for damage, data in _damaged(good[kind], archive=kind == "npz").items():
        d = tmp_path / damage
        d.mkdir()
        f = d / fname
        f.write_bytes(data)
        before = _snapshot(d)
        rc, lines = _run([a.format(f=f, d=d, B=good["B.npy"]) for a in argv])
        assert (rc, len(lines)) == (2, 1), (damage, rc, lines)
        assert lines[0].startswith("mmaprobe: error: ") and str(f) in lines[0], (damage, lines)
        assert _snapshot(d) == before, (damage, "wrote or changed a file")


@pytest.fixture(scope="module")
def survey_folder(tmp_path_factory) -> Path:
    """A small dry-run survey (one kernel, a few cases): the folder --recheck, --export and
    --resume read."""
    out = tmp_path_factory.mktemp("survey") / "s"
    rc, lines = _run(["survey", "--device", "dry:sm_90", "--parts", "kernels", "--cases", "8", "--quiet",
                      "--kernels", SURVEY_KERNEL, "-j", "1", "-o", str(out)])
    assert rc == 0, lines
    return out


SURVEY_READS = {
    "recheck": lambda d: ["survey", "--recheck", str(d)],
    "export": lambda d: ["survey", "--export", str(d), SURVEY_KERNEL, "-o", str(d / "x.jsonl")],
    "resume": lambda d: ["survey", "--device", "dry:sm_90", "--parts", "kernels", "--cases", "8", "--quiet",
                         "--kernels", SURVEY_KERNEL, "-j", "1", "-o", str(d), "--resume"],
}


@pytest.mark.parametrize("what", list(SURVEY_READS))
@pytest.mark.parametrize("damaged_file", ["kernels.npz", "journal.jsonl"])
def test_a_damaged_survey_folder_is_one_line_and_writes_nothing(tmp_path, survey_folder, what, damaged_file):
    raw = (survey_folder / damaged_file).read_bytes()
    for damage, data in _damaged(raw, archive=damaged_file.endswith(".npz")).items():
        if damaged_file == "journal.jsonl" and damage in ("half", "short3"):
            continue                                    # a torn journal is a killed run's: read up to the tear
        d = tmp_path / damage
        shutil.copytree(survey_folder, d)
        (d / damaged_file).write_bytes(data)
        before = _snapshot(d)
        rc, lines = _run(SURVEY_READS[what](d))
        assert (rc, len(lines)) == (2, 1), (damage, rc, lines)
        assert str(d / damaged_file) in lines[0], (damage, lines)
        assert _snapshot(d) == before, (damage, "wrote or changed a file")


def test_the_readers_raise_one_error_type(tmp_path, good):
    """read_npy, read_npz and read_vectors raise DataFileError (ArrayFileError, VectorFileError)
    naming the file, and read good files back as they were written."""
    for kind, reader, err in (("npy", read_npy, ArrayFileError), ("npz", read_npz, ArrayFileError),
                              ("vec", read_vectors, VectorFileError)):
        for damage, data in _damaged(good[kind], archive=kind == "npz").items():
            f = tmp_path / f"{kind}-{damage}"
            f.write_bytes(data)
            with pytest.raises(err) as exc:
                reader(f)
            assert isinstance(exc.value, DataFileError) and str(f) in str(exc.value) and "\n" not in str(exc.value)
    (tmp_path / "ok.npz").write_bytes(good["npz"])
    z = read_npz(tmp_path / "ok.npz", required=("a0", "out_fmt"))
    assert str(z["out_fmt"]) == "fp32" and z["a0"].shape == (4, 8)
    with pytest.raises(ArrayFileError, match="lacks d0"):
        read_npz(tmp_path / "ok.npz", required=("d0",))
