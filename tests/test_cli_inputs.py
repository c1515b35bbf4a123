"""The command line on inputs as users hold them, and on user errors: ml_dtypes arrays saved by
np.save, scales typed as decimals, damaged journals and files, output paths, and the one-line
error / exit-code contract (mmaprobe/cli.py's docstring). Expected values come from an
independent computation: NumPy's / ml_dtypes' own casts (float64 -> float32 is round to nearest
even), the in-memory ml_dtypes arrays, or integer arithmetic in Python."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from mmaprobe import cli
from mmaprobe.errors import EXIT_UNKNOWN, EXIT_USAGE
from smtmodel.gemm import gemm, round_scale, to_bits
from smtmodel.model import ModelError

FP8 = "ada-fp8e4m3-fp32:zero_align=ignore"
FP8_DF = "cublaslt-ada-fp8-slow:S=3,combine=pairwise,out=bf16"


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mmaprobe: error: "), err
    assert "RuntimeWarning" not in err[0] and ".tmp" not in err[0]
    return err[0]


def _fp8_mats(tmp_path, M=4, K=32, N=3, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)).astype(ml_dtypes.float8_e4m3fn)
    B = rng.standard_normal((K, N)).astype(ml_dtypes.float8_e4m3fn)
    np.save(tmp_path / "A8.npy", A)
    np.save(tmp_path / "B8.npy", B)
    return A, B, str(tmp_path / "A8.npy"), str(tmp_path / "B8.npy")


# ---- ml_dtypes arrays saved by np.save ------------------------------------------------------------

def test_np_save_of_ml_dtypes_loads_as_void():
    """The premise (NumPy's own behaviour): the .npy header keeps no ml_dtypes type name."""
    import io
    buf = io.BytesIO()
    np.save(buf, np.zeros(2, ml_dtypes.float8_e4m3fn))
    buf.seek(0)
    assert np.load(buf).dtype == np.dtype("V1")


def test_gemm_reads_fp8_saved_by_np_save_as_the_models_format(tmp_path, capsys):
    """V1 arrays read as the model's FP8 bits: D equals the library on the in-memory ml_dtypes
    arrays (the reference), and the sidecar and the summary state the reading."""
    A, B, pa, pb = _fp8_mats(tmp_path)
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", pa, pb, "--model", FP8, "--dataflow", FP8_DF, "--beta", "0",
                     "--scale-a", "0.3", "--scale-b", "1.7", "-o", str(out)]) == 0
    want = gemm(FP8, A, B, None, beta=0.0, scale_a=np.float32(0.3), scale_b=np.float32(1.7), dataflow=FP8_DF)
    got = np.load(out)
    assert got.dtype == np.dtype("V2") and np.array_equal(got.view(np.uint16), want.view(np.uint16))
    side = json.loads((tmp_path / "D.npy.json").read_text())
    assert "fp8e4m3" in side["read_as"]["A"] and "V1" in side["read_as"]["A"]
    err = capsys.readouterr().err
    assert "A: raw fp8e4m3 bits from dtype |V1" in err
    # the same bytes with --bits, and as unsigned integers with --bits: the same D
    for a, b in ((pa, pb), (str(tmp_path / "Au.npy"), str(tmp_path / "Bu.npy"))):
        np.save(tmp_path / "Au.npy", A.view(np.uint8))
        np.save(tmp_path / "Bu.npy", B.view(np.uint8))
        assert cli.main(["gemm", a, b, "--bits", "--model", FP8, "--dataflow", FP8_DF, "--beta", "0",
                         "--scale-a", "0.3", "--scale-b", "1.7", "-o", str(out)]) == 0
        assert np.array_equal(np.load(out), want.view(np.uint16))


@pytest.mark.parametrize("model, arr, match", [
    ("hopper-fp16-fp32", np.zeros((2, 2), np.uint8).view("V1"), "np.float16"),          # fp16 has its own name
    ("ada-bf16-fp32", np.zeros((2, 2), np.uint8).view("V1"), "has 2"),                    # bf16 is V2
    ("blackwell-fp6e2m3-fp32", np.full((2, 2), 0xFF, np.uint8).view("V1"), "bits above"),  # FP6 in a byte
])
def test_gemm_refuses_void_arrays_that_do_not_fit(tmp_path, capsys, model, arr, match):
    np.save(tmp_path / "A.npy", arr)
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", str(tmp_path / "A.npy"), str(tmp_path / "A.npy"), "--model", model,
                     "-o", str(out)]) == EXIT_USAGE
    assert match in _one_error_line(capsys)
    assert not out.exists()


def test_to_bits_reads_bf16_void_as_bf16():
    x = np.array([1.5, -2.0, np.inf], ml_dtypes.bfloat16)
    assert np.array_equal(to_bits(x.view("V2"), "bf16"), x.view(np.uint16).astype(np.uint64))


# ---- scales typed as decimals ---------------------------------------------------------------------

def test_scales_are_rounded_to_fp32_like_torch():
    """0.3 in fp32 is 0x3e99999a (float64 -> float32 by NumPy, round to nearest even, which is
    what torch.tensor(0.3, dtype=torch.float32) stores)."""
    assert int(round_scale(0.3)) == int(np.float32(0.3).view(np.uint32)) == 0x3E99999A
    assert int(round_scale(np.float32(1.7))) == int(np.float32(1.7).view(np.uint32))
    with pytest.raises(ModelError, match="scale_a 1e\\+40 overflows fp32"):
        round_scale(1e40, "fp32", "scale_a")


def test_readme_python_fp8_example_runs():
    """README's FP8 example: scale_a=0.3 as a Python float (a torch user's habit)."""
    rng = np.random.default_rng(1)
    A8 = rng.standard_normal((4, 32)).astype(ml_dtypes.float8_e4m3fn)
    B8 = rng.standard_normal((32, 5)).astype(ml_dtypes.float8_e4m3fn)
    D = gemm(FP8, A8, B8, None, beta=0.0, scale_a=0.3, scale_b=1.7, dataflow=FP8_DF)
    same = gemm(FP8, A8, B8, None, beta=0.0, scale_a=np.float32(0.3), scale_b=np.float32(1.7), dataflow=FP8_DF)
    assert D.dtype == ml_dtypes.bfloat16 and np.array_equal(D.view(np.uint16), same.view(np.uint16))


def test_cli_scales_state_the_rounded_value(tmp_path, capsys):
    A, B, pa, pb = _fp8_mats(tmp_path)
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", pa, pb, "--model", FP8, "--dataflow", FP8_DF, "--beta", "0",
                     "--scale-a", "0.3", "--scale-b", "2", "-o", str(out)]) == 0
    side = json.loads((tmp_path / "D.npy.json").read_text())
    sa = side["scalars"]["scale_a"]
    assert side["scale_a"] == sa["value"] == float(np.float32(0.3)) and sa["given"] == 0.3
    assert sa["bits"] == "0x3e99999a" and sa["rounded"] is True
    assert side["scalars"]["scale_b"]["rounded"] is False
    err = capsys.readouterr().err
    assert "scale_a 0.3 -> 0.30000001192092896" in err and "scale_b" not in err


@pytest.mark.parametrize("extra, names", [
    (["--scale-a", "1e40", "--scale-b", "1"], "--scale-a"),
    (["--scale-a", "1", "--scale-b", "-1e39"], "--scale-b"),
    (["--alpha", "0.1"], "--alpha 0.1 is not exactly representable in fp32 (the nearest fp32 value is 0.10000000149011612)"),
    (["--beta", "1e-50"], "--beta"),
])
def test_cli_scalar_errors_name_the_option(tmp_path, capsys, extra, names):
    _, _, pa, pb = _fp8_mats(tmp_path)
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", pa, pb, "--model", FP8, "--dataflow", FP8_DF, *extra, "-o", str(out)]) == EXIT_USAGE
    assert names in _one_error_line(capsys)
    assert not out.exists()


# ---- files that are not what they are named ---------------------------------------------------------

@pytest.mark.parametrize("content, says", [
    (b"hello\n", "no NumPy header"),
    (b"", "empty"),
    (b"PK\x03\x04junk", ".npz archive"),
    (bytes(range(256)), "no NumPy header"),
    ("object", "an object array"),
    ("cut", "cannot read the .npy array"),
])
def test_gemm_bad_npy_is_one_clear_line(tmp_path, capsys, content, says):
    p = tmp_path / "A.npy"
    if content == "object":
        np.save(p, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    elif content == "cut":
        np.save(p, np.ones((4, 4), np.float16))
        p.write_bytes(p.read_bytes()[:-5])
    else:
        p.write_bytes(content)
    np.save(tmp_path / "B.npy", np.ones((4, 4), np.float16))
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", str(p), str(tmp_path / "B.npy"), "--model", "hopper-fp16-fp32", "-o", str(out)]) == EXIT_USAGE
    line = _one_error_line(capsys)
    assert says in line and "allow_pickle" not in line and str(p) in line
    assert not out.exists()


def test_fp32_values_too_big_for_fp16_give_no_warning(tmp_path, capsys):
    np.save(tmp_path / "A.npy", np.ones((2, 2), np.float16))
    np.save(tmp_path / "C.npy", np.array([[1e30, 2], [3, 4]], np.float32))
    p = str(tmp_path / "A.npy")
    assert cli.main(["gemm", p, p, str(tmp_path / "C.npy"), "--model", "hopper-fp16-fp16",
                     "-o", str(tmp_path / "D.npy")]) == EXIT_USAGE
    assert "not exactly representable in fp16" in _one_error_line(capsys)


# ---- output paths: checked before the work, the user's path named ----------------------------------

def test_output_path_is_checked_before_the_work(tmp_path, capsys, monkeypatch):
    from mmaprobe.commands import gemm as gemm_cmd

    def no_work(*a, **k):
        raise AssertionError("the GEMM ran before the output path was checked")
    monkeypatch.setattr(gemm_cmd, "gemm_bits", no_work)
    np.save(tmp_path / "A.npy", np.ones((2, 2), np.float16))
    a = str(tmp_path / "A.npy")
    (tmp_path / "afile").write_text("x")
    for out, says in ((tmp_path, "is a folder"), (tmp_path / "afile" / "D.npy", "is a file, not a folder")):
        assert cli.main(["gemm", a, a, "--model", "hopper-fp16-fp32", "-o", str(out)]) == EXIT_USAGE
        line = _one_error_line(capsys)
        assert says in line and str(out) in line
    (tmp_path / "D.npy.json").mkdir()           # the sidecar's path is a folder
    assert cli.main(["gemm", a, a, "--model", "hopper-fp16-fp32", "-o", str(tmp_path / "D.npy")]) == EXIT_USAGE
    assert "D.npy.json" in _one_error_line(capsys)
    assert not (tmp_path / "D.npy").exists()


def test_other_commands_check_their_outputs(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    for argv in (["scheme", "ozaki-gemm", "ozaki1-s3", "--m", "2", "--n", "2", "--k", "4", "--save", str(tmp_path)],
                 ["identify", "--device", "twin:hopper-fp16-fp32", "-o", str(tmp_path)],
                 ["suite", "-o", str(tmp_path / "f")],
                 ["bound", "volta-fp16-fp32", "-o", str(tmp_path)]):
        assert cli.main(argv) == EXIT_USAGE, argv
        _one_error_line(capsys)


def test_atomic_writer_names_the_users_path(tmp_path):
    from smtmodel.io import atomic_open
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("keep")
    with pytest.raises(OSError, match=f"cannot write {tmp_path / 'd'}"):
        with atomic_open(tmp_path / "d") as fh:
            fh.write("text")
    assert [p.name for p in tmp_path.iterdir()] == ["d"]


# ---- identify journals --------------------------------------------------------------------------------

# test_identify's narrowed fp16 -> fp32 space (it holds Hopper's point)
SMALL_SPACE = {"families": [{"family": "t-fdpa", "params": {
    "L": [4, 8, 16], "F": [23, 24, 25], "rho": ["RZ-FP32", "RNE-FP32", "RNE-FP16"], "carry": [None, 3],
    "normalize": [False], "zero_align": [-19, -131, -132, -133], "flush_inputs": [None], "c_entry": ["align"],
    "specials": ["nvidia"]}}, {"family": "e-fdpa"}, {"family": "ftz-addmul"}]}


def _identify(tmp_path, *extra):
    sp = tmp_path / "space.json"
    sp.write_text(json.dumps(SMALL_SPACE))
    return cli.main(["identify", "--device", "twin:hopper-fp16-fp32", "--space", str(sp), "--verify", "200",
                     "--solver-pairs", "0", "--journal", str(tmp_path / "j.jsonl"), "--quiet", *extra])


@pytest.fixture(scope="module")
def journal_text(tmp_path_factory):
    """The journal of one complete identify run (a twin device, the small space)."""
    d = tmp_path_factory.mktemp("journal")
    assert _identify(d) == 0
    return (d / "j.jsonl").read_text()


def test_identify_resumes_after_a_torn_last_line(tmp_path, capsys, journal_text):
    j = tmp_path / "j.jsonl"
    text = journal_text
    j.write_text(text[:-40])                     # the last record cut mid-write (no newline)
    capsys.readouterr()
    assert _identify(tmp_path, "--resume") == 0
    err = capsys.readouterr().err
    assert "dropped its last line" in err and "resuming" in err
    lines = j.read_text().splitlines()
    assert j.read_text().endswith("\n") and all(json.loads(x) for x in lines)
    assert lines[-1] == text.splitlines()[-1]    # the same answers again, appended whole


@pytest.mark.parametrize("damage, says", [
    (lambda ls: ls[:2] + ["[1, 2]"] + ls[2:], ":3: not a JSON object (a JSON list"),
    (lambda ls: ls[:2] + ['{"answers": 1}'] + ls[3:], ":3: an answers record needs"),
    (lambda ls: ls[:2] + ['{"answers": 1, "d": 7}'] + ls[3:], ":3: an answers record needs"),
    (lambda ls: ls[:2] + ['{"answers": 1, "d": ["0x1"]}'] + ls[3:], "1 answers for"),
    (lambda ls: ls[:1] + ["{not json"] + ls[1:], ":2: not JSON"),
    (lambda ls: ls[:1] + ['"text"'] + ls[1:], ":2: not a JSON object (a JSON str"),
])
def test_identify_damaged_journal_is_one_line(tmp_path, capsys, damage, says, journal_text):
    j = tmp_path / "j.jsonl"
    j.write_text("\n".join(damage(journal_text.splitlines())) + "\n")
    capsys.readouterr()
    assert _identify(tmp_path, "--resume") == EXIT_USAGE
    assert says in _one_error_line(capsys)


def test_identify_gemm_waiting_for_answers_exits_3(tmp_path, capsys):
    rc = cli.main(["identify", "--gemm", "--device", f"file:{tmp_path / 'cap.npz'}", "--in", "fp16",
                   "--out", "fp32", "--quiet"])
    out = capsys.readouterr().out
    assert rc == EXIT_UNKNOWN and "pending:" in out
    nxt = Path(next(x for x in out.splitlines() if x.startswith("next probes: ")).split()[2])
    assert nxt.is_file() and nxt.parent != tmp_path          # never beside the capture
    import shutil
    shutil.rmtree(nxt.parent)                                # the temporary folder the run made


def test_identify_pending_names_the_hypotheses_left(tmp_path, capsys):
    """A file device answered for its design probes but not its verification: the hypotheses that
    fit so far are named. Answers come from the hidden twin (an independent evaluation)."""
    from smtmodel.catalog import get_model
    from smtmodel.vectors import read_vectors, write_vectors
    sp = tmp_path / "space.json"
    sp.write_text(json.dumps(SMALL_SPACE))
    obs, nxt = tmp_path / "obs.jsonl", tmp_path / "obs.next.jsonl"
    twin = get_model("hopper-fp16-fp32")
    argv = ["identify", "--device", f"file:{obs}", "--in", "fp16", "--out", "fp32", "--space", str(sp),
            "--verify", "200", "--solver-pairs", "0", "--k", "16", "--journal", str(tmp_path / "j.jsonl"),
            "--next", str(nxt), "--quiet"]
    for attempt in range(6):
        rc = cli.main(argv + (["--resume"] if attempt else []))
        out = capsys.readouterr().out
        assert rc == EXIT_UNKNOWN, out
        if "pending: verification" in out:
            break
        vf = read_vectors(nxt)
        a, b, c = vf.arrays()
        for case, d in zip(vf.cases, twin.evaluate(a, b, c)):
            case.setdefault("observed", {"gpu": "0x%08x" % int(d)})
        write_vectors(nxt, vf)                  # the answers go into the next file, as identify says
    head = [x for x in out.splitlines() if "fit every answer so far" in x][0]
    n = int(head.split()[0])
    named = [x for x in out.splitlines() if x.startswith("  ") and "op=" in x]
    assert n >= 1 and len(named) == min(n, 12)


# ---- small commands -----------------------------------------------------------------------------------

def test_models_unknown_arch_lists_the_archs(capsys):
    assert cli.main(["models", "--arch", "pascal"]) == EXIT_USAGE
    line = _one_error_line(capsys)
    assert "pascal" in line and "volta" in line and "cdna3" in line


def test_unknown_model_said_once_and_devices_listed(tmp_path, capsys):
    vec = str(next((Path(__file__).parent.parent / "generated_tests" / "fp16-fp32-fp32").glob("*.jsonl")))
    assert cli.main(["run", vec, "--device", "twin:nosuch", "-o", str(tmp_path / "o.jsonl")]) == EXIT_USAGE
    assert _one_error_line(capsys).count("nosuch") == 1
    assert cli.main(["run", vec, "--device", "tpu", "-o", str(tmp_path / "o.jsonl")]) == EXIT_USAGE
    assert "rocm" in _one_error_line(capsys)
    assert not (tmp_path / "o.jsonl").exists()


def test_integer_gemm_describes_the_integer_path(tmp_path, capsys):
    """D = A·B + C for int8 x int8 + int32, checked by Python integers."""
    A = np.array([[1, -2, 127], [3, 4, -128]], np.int8)
    B = np.array([[5, -6], [7, 8], [-128, 127]], np.int8)
    C = np.array([[1, -2], [2**31 - 1, 4]], np.int32)
    for n, x in (("A", A), ("B", B), ("C", C)):
        np.save(tmp_path / f"{n}.npy", x)
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", *(str(tmp_path / f"{n}.npy") for n in "ABC"), "--model", "ampere-s8-s32",
                     "-o", str(out)]) == 0
    want = [[(sum(int(A[i, t]) * int(B[t, j]) for t in range(3)) + int(C[i, j]) + 2**31) % 2**32 - 2**31
             for j in range(2)] for i in range(2)]
    assert np.load(out).tolist() == want
    err = capsys.readouterr().err
    side = json.loads((tmp_path / "D.npy.json").read_text())
    for text in (err, side["described"]):
        assert "s32 accumulator" in text and "wrapped mod 2^32" in text
        assert "RN(alpha*acc)" not in text and "NaN" not in text


def test_report_without_matplotlib_leaves_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)       # import matplotlib -> ImportError
    site = tmp_path / "site"
    assert cli.main(["report", "-o", str(site), "--models", "volta-fp16-fp32"]) == EXIT_USAGE
    assert "matplotlib" in _one_error_line(capsys)
    assert not site.exists()
    assert cli.main(["plot", "errors", "--model", "volta-fp16-fp32", "-o", str(tmp_path / "e")]) == EXIT_USAGE
    _one_error_line(capsys)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, says", [
    (["scheme", "ozaki-gemm", "ozaki1-s8", "--spread", "5000"], "--spread 5000"),
    (["scheme", "ozaki-gemm", "ozaki1-s8", "--spread", "1000", "--m", "4", "--n", "4", "--k", "16"], "overflows fp64"),
    (["explain", "--gemm", "seed003", "--observe", "V100=1e40"], "V100=1e40"),
])
def test_no_runtime_warning_before_the_error(argv, says, capsys):
    assert cli.main(argv) == EXIT_USAGE
    assert says in _one_error_line(capsys)


def test_scales_that_do_nothing_are_said(tmp_path, capsys):
    """A scale_result the dataflow does not apply (fp32 output) is stated; scales given to an
    integer model are refused (nothing depends silently on a value)."""
    np.save(tmp_path / "A.npy", np.ones((2, 4), np.float16))
    np.save(tmp_path / "B.npy", np.ones((4, 2), np.float16))
    np.save(tmp_path / "I.npy", np.ones((2, 2), np.int8))
    out = tmp_path / "D.npy"
    assert cli.main(["gemm", str(tmp_path / "A.npy"), str(tmp_path / "B.npy"), "--model", "hopper-fp16-fp32",
                     "--scale-result", "2", "-o", str(out)]) == 0
    assert "scale_result not applied" in capsys.readouterr().err
    assert json.loads((tmp_path / "D.npy.json").read_text())["scale_result_applied"] is False
    assert np.load(out).tolist() == [[4.0, 4.0], [4.0, 4.0]]
    i = str(tmp_path / "I.npy")
    assert cli.main(["gemm", i, i, "--model", "ampere-s8-s32", "--scale-a", "2", "-o", str(tmp_path / "E.npy")]) \
        == EXIT_USAGE
    assert "no scales" in _one_error_line(capsys)


def test_bits_wider_than_the_format_are_refused(tmp_path, capsys):
    np.save(tmp_path / "A.npy", np.zeros((1, 1), np.uint16))
    np.save(tmp_path / "B.npy", np.array([[0xFFFFFFFF]], np.uint32))
    assert cli.main(["gemm", str(tmp_path / "A.npy"), str(tmp_path / "B.npy"), "--bits", "--model", "hopper-fp16-fp32",
                     "-o", str(tmp_path / "D.npy")]) == EXIT_USAGE
    assert "0xffffffff does not fit fp16 (16 bits)" in _one_error_line(capsys)
    assert cli.main(["explain", "--a", str(tmp_path / "A.npy"), "--b", str(tmp_path / "B.npy"), "--in", "fp16",
                     "--models", "hopper-fp16-fp32", "--dataflow", "cutlass2", "--observe", "d=1", "--quiet"]) == EXIT_USAGE
    assert "does not fit fp16" in _one_error_line(capsys)
