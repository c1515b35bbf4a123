"""Vector files (spec/vectors.md): the real hardware captures, round trips, atomic writes and
validation errors.

Expected values come from /work/shared/hwdata/INDEX.txt (rows, k, device of each file) and the
spec text; the round trips compare with the Python objects written.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest

import smtmodel.vectors as vectors
from smtmodel.formats import get_format
from smtmodel.vectors import KIND, VectorFile, VectorFileError, make_header, read_vectors, write_vectors

HWDATA = Path(__file__).resolve().parents[2] / "shared" / "hwdata"
if not HWDATA.exists():                                    # the shared checkout beside main
    HWDATA = Path("/work/shared/hwdata")


def _index():
    rows = []
    for line in (HWDATA / "INDEX.txt").read_text().splitlines():
        if line.strip():
            name, n, k, device = line.split("\t")
            rows.append((name, int(n), int(k), device))
    return rows


INDEX = _index() if (HWDATA / "INDEX.txt").exists() else []


def test_index_lists_48_files():
    if not INDEX:
        pytest.skip("no hardware data checkout")
    assert len(INDEX) == 48
    assert {r[0] for r in INDEX} == {p.name for p in HWDATA.glob("*.jsonl.gz")}


class _Files:
    """Hardware files read when a test asks for one (each test reads only its own; kept files
    would leave millions of strings for the garbage collector to walk)."""

    def __getitem__(self, name):
        return read_vectors(HWDATA / name)


@pytest.fixture(scope="module")
def hw_files():
    if not INDEX:
        pytest.skip("no hardware data checkout")
    return _Files()


ARRAY_SAMPLE = ["h100_tf32_fp32.jsonl.gz", "b200_fp8e4m3_fp16.jsonl.gz", "v100_fp16_fp16.jsonl.gz",
                "a2_bf16_fp32.jsonl.gz"]


# The default run reads the sample's headers and cases here; every file is parsed (and its every
# case checked bit for bit) by tests/test_catalog_hwdata.py; -m slow checks every file's header here.
@pytest.mark.parametrize("row", [pytest.param(r, id=r[0], marks=() if r[0] in ARRAY_SAMPLE else pytest.mark.slow)
                                 for r in INDEX])
def test_hardware_file_parses(hw_files, row):
    name, n, k, device = row
    vf = hw_files[name]
    gpu, in_fmt, out_fmt = name.removesuffix(".jsonl.gz").split("_")
    h = vf.header
    assert h["kind"] == KIND and h["version"] == 1
    assert h["in_fmt"] == in_fmt and h["out_fmt"] == out_fmt and vf.k == k
    assert h["device"] == device
    # fp16-output sets carry c in fp16 (README), the others in fp32
    assert h["c_fmt"] == ("fp16" if out_fmt == "fp16" else "fp32")
    assert len(vf.cases) == n
    assert all(len(case["a"]) == k and len(case["b"]) == k for case in vf.cases)
    assert all(len(case["observed"]) == 1 for case in vf.cases)
    cs = [int(case["c"], 16) for case in vf.cases]
    if "wgmma" in device:
        assert all(c == 0 for c in cs)                     # wgmma path: D starts at 0 (INDEX)
    else:
        assert any(c != 0 for c in cs)                     # c in C[0][0] (INDEX): the capture's c
    assert vf.scales() is None


@pytest.mark.parametrize("name", ARRAY_SAMPLE)
def test_hardware_arrays(hw_files, name):
    """arrays() of a sample (one per input format): shapes, TF32 containers, c format."""
    vf = hw_files[name]
    n, k = len(vf.cases), vf.k
    a, b, c = vf.arrays()
    assert a.shape == (n, k) and b.shape == (n, k) and c.shape == (n,)
    assert a.dtype == np.uint64
    assert int(a[0, 0]) == int(vf.cases[0]["a"][0], 16) and int(c[-1]) == int(vf.cases[-1]["c"], 16)
    if vf.in_fmt.name == "tf32":
        assert not np.any(a & np.uint64(0x1FFF)) and not np.any(b & np.uint64(0x1FFF))
    assert np.all(c < np.uint64(1 << vf.c_fmt.width))


def _sample_file(k=4, n=3, **extra) -> VectorFile:
    h = make_header("fp16", "fp32", "fp32", k, models=["m1"], source={"tool": "test", "seed": 7}, **extra)
    cases = []
    for i in range(n):
        cases.append({"id": f"case-{i}", "a": [f"0x{(0x3c00 + i + j):04x}" for j in range(k)],
                      "b": ["0x0000"] * k, "c": "0x3f800000", "expect": {"m1": "0x3f800000"},
                      "observed": {"dev": "0x3f800000"}, "note": "kept", "extra_field": [1, {"x": 2}]})
    return VectorFile(h, cases)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_write_read_round_trip(tmp_path, suffix):
    vf = _sample_file(custom_header_field={"anything": [1, 2]})
    path = tmp_path / "sub" / f"v{suffix}"
    write_vectors(path, vf)
    assert vf.path == str(path)
    back = read_vectors(path)
    assert back.header == vf.header
    assert back.cases == vf.cases                          # extra fields kept as they were
    assert back.header["custom_header_field"] == {"anything": [1, 2]}
    raw = path.read_bytes()
    assert (raw[:2] == b"\x1f\x8b") == suffix.endswith(".gz")
    # rewriting a read file is byte-identical
    path2 = tmp_path / f"w{suffix}"
    write_vectors(path2, back)
    text = lambda p: gzip.decompress(p.read_bytes()) if suffix.endswith(".gz") else p.read_bytes()
    assert text(path2) == text(path)


def test_hardware_file_rewrite_keeps_everything(hw_files, tmp_path):
    name = INDEX[0][0]
    vf = hw_files[name]
    out = tmp_path / name
    write_vectors(out, vf)
    back = read_vectors(out)
    assert back.header == vf.header and back.cases == vf.cases


def test_set_expect_and_scales(tmp_path):
    vf = _sample_file()
    vf.set_expect("m2", np.array([0x3F800000, 0x40000000, 0x7FC00000], np.uint64))
    assert vf.header["models"] == ["m1", "m2"]
    assert [c["expect"]["m2"] for c in vf.cases] == ["0x3f800000", "0x40000000", "0x7fc00000"]
    vf.set_expect("m2", np.array([0, 0, 0], np.uint64))
    assert vf.header["models"] == ["m1", "m2"]

    h = make_header("fp8e4m3", "fp32", "fp32", 4, scale_fmt="e8m0", scale_block=2)
    case = {"a": ["0x38"] * 4, "b": ["0x38"] * 4, "c": "0x00000000",
            "a_scale": ["0x7f", "0x80"], "b_scale": ["0x7f", "0x7e"]}
    path = tmp_path / "s.jsonl"
    write_vectors(path, VectorFile(h, [case]))
    sa, sb = read_vectors(path).scales()
    assert sa.tolist() == [[0x7F, 0x80]] and sb.tolist() == [[0x7F, 0x7E]]


def test_tf32_hex_in_container(tmp_path):
    h = make_header("tf32", "fp32", "fp32", 1)
    path = tmp_path / "t.jsonl"
    write_vectors(path, VectorFile(h, [{"a": ["0x3f802000"], "b": ["0x3f800000"], "c": "0x00000000"}]))
    assert read_vectors(path).arrays()[0].tolist() == [[0x3F802000]]


class _Boom(Exception):
    pass


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    """An exception in the middle of writing leaves neither the target nor a temporary file."""
    vf = _sample_file(n=50)
    path = tmp_path / "atomic.jsonl"
    real_dumps = json.dumps
    calls = {"n": 0}

    def failing_dumps(obj, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 20:
            raise _Boom("disk on fire")
        return real_dumps(obj, *a, **kw)

    monkeypatch.setattr(vectors.json, "dumps", failing_dumps)
    with pytest.raises(_Boom):
        write_vectors(path, vf)
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "keep.jsonl.gz"
    old = _sample_file(n=2)
    write_vectors(path, old)
    before = path.read_bytes()

    class Unserialisable:
        pass

    bad = _sample_file(n=5)
    bad.cases[3]["note"] = Unserialisable()
    with pytest.raises(TypeError):
        write_vectors(path, bad)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.jsonl.gz"]
    assert read_vectors(path).cases == old.cases


# ---------------------------------------------------------------------------------------------
# malformed inputs: VectorFileError naming file:line
# ---------------------------------------------------------------------------------------------

GOOD_HEADER = {"kind": KIND, "version": 1, "in_fmt": "fp16", "c_fmt": "fp32", "out_fmt": "fp32", "k": 2}
GOOD_CASE = {"a": ["0x3c00", "0x0000"], "b": ["0x3c00", "0x0000"], "c": "0x00000000"}


def _write_lines(path: Path, lines: list[str], gz: bool = False):
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _j(obj):
    return json.dumps(obj)


def _with(d, **kw):
    out = dict(d)
    for k, v in kw.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


BAD = [
    # (name, lines, line number of the error, message fragment)
    ("bad-json-case", [_j(GOOD_HEADER), _j(GOOD_CASE), '{"a": ["0x3c00", '], 3, "not JSON"),
    ("bad-json-header", ["{kind: 1}", _j(GOOD_CASE)], 1, "not JSON"),
    ("not-object", [_j(GOOD_HEADER), "[1, 2]"], 2, "JSON object"),
    ("missing-header", [_j(GOOD_CASE)], 1, "kind"),
    ("wrong-kind", [_j(_with(GOOD_HEADER, kind="other"))], 1, "kind"),
    ("wrong-version", [_j(_with(GOOD_HEADER, version=2))], 1, "version"),
    ("no-in-fmt", [_j(_with(GOOD_HEADER, in_fmt=None))], 1, "in_fmt"),
    ("unknown-format", [_j(_with(GOOD_HEADER, c_fmt="fp24"))], 1, "unknown format 'fp24'"),
    ("bad-k", [_j(_with(GOOD_HEADER, k=0))], 1, "'k' must be a positive integer"),
    ("string-k", [_j(_with(GOOD_HEADER, k="2"))], 1, "'k' must be a positive integer"),
    ("wrong-k", [_j(GOOD_HEADER), _j(GOOD_CASE), _j(_with(GOOD_CASE, a=["0x3c00"]))], 3, "k=2"),
    ("wrong-width-hex", [_j(GOOD_HEADER), _j(_with(GOOD_CASE, b=["0x3c00", "0x13c00"]))], 2, "does not fit fp16"),
    ("short-c", [_j(GOOD_HEADER), _j(_with(GOOD_CASE, c="0x100000000"))], 2, "does not fit fp32"),
    ("not-hex", [_j(GOOD_HEADER), _j(_with(GOOD_CASE, a=["0x3c00", "1.0"]))], 2, "not a hex bit pattern"),
    ("no-c", [_j(GOOD_HEADER), _j(_with(GOOD_CASE, c=None))], 2, "lacks 'c'"),
    ("bad-expect", [_j(GOOD_HEADER), _j(_with(GOOD_CASE, expect={"m": "0x1ffffffff"}))], 2, "does not fit"),
    ("expect-not-object", [_j(GOOD_HEADER), _j(_with(GOOD_CASE, expect=["0x0"]))], 2, "must be an object"),
    ("bad-scale-block", [_j(_with(GOOD_HEADER, scale_fmt="e8m0", scale_block=3))], 1, "scale_block"),
    ("bad-scale-fmt", [_j(_with(GOOD_HEADER, scale_fmt="fp24", scale_block=2))], 1, "scale_fmt"),
    ("missing-scales", [_j(_with(GOOD_HEADER, scale_fmt="e8m0", scale_block=2)), _j(GOOD_CASE)], 2, "a_scale"),
    ("tf32-low-bits", [_j(_with(GOOD_HEADER, in_fmt="tf32")),
                       _j(_with(GOOD_CASE, a=["0x3f801000", "0x0"], b=["0x0", "0x0"]))], 2, "low bits"),
]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("name,lines,lineno,msg", BAD, ids=[b[0] for b in BAD])
def test_malformed_files_raise_with_location(tmp_path, name, lines, lineno, msg, gz):
    path = _write_lines(tmp_path / (f"{name}.jsonl" + (".gz" if gz else "")), lines, gz)
    with pytest.raises(VectorFileError) as ei:
        read_vectors(path)
    text = str(ei.value)
    assert f"{path}:{lineno}:" in text, text
    assert msg in text, text


def test_blank_lines_are_skipped_but_counted(tmp_path):
    path = _write_lines(tmp_path / "b.jsonl", [_j(GOOD_HEADER), "", _j(GOOD_CASE), "",
                                                _j(_with(GOOD_CASE, c="0xzz"))])
    with pytest.raises(VectorFileError, match=r"b\.jsonl:5:"):
        read_vectors(path)
    ok = _write_lines(tmp_path / "ok.jsonl", [_j(GOOD_HEADER), "", _j(GOOD_CASE)])
    assert len(read_vectors(ok).cases) == 1


@pytest.mark.parametrize("content,msg", [(b"", "empty file"), (b"\x1f\x8bnot really gzip", "cannot read"),
                                         (b"\xff\xfe\x00bad", "cannot read")])
def test_unreadable_files(tmp_path, content, msg):
    path = tmp_path / ("x.jsonl.gz" if content.startswith(b"\x1f") else "x.jsonl")
    path.write_bytes(content)
    with pytest.raises(VectorFileError, match=msg):
        read_vectors(path)


def test_missing_file(tmp_path):
    with pytest.raises(VectorFileError, match="no such file"):
        read_vectors(tmp_path / "nope.jsonl")


def test_header_only_file_is_valid(tmp_path):
    path = _write_lines(tmp_path / "h.jsonl", [_j(GOOD_HEADER)])
    vf = read_vectors(path)
    assert vf.cases == [] and vf.k == 2
    a, b, c = vf.arrays()
    assert a.shape == (0, 2) and c.shape == (0,)


def test_make_header_normalises_formats():
    h = make_header(get_format("fp16"), "fp32", "fp32", 8, source={"x": 1})
    assert h == {"kind": KIND, "version": 1, "in_fmt": "fp16", "c_fmt": "fp32", "out_fmt": "fp32",
                 "k": 8, "source": {"x": 1}}


def test_written_hex_is_padded_lowercase(tmp_path):
    vf = _sample_file(n=1)
    vf.set_expect("m3", np.array([0x7F800000], np.uint64))
    path = tmp_path / "p.jsonl"
    write_vectors(path, vf)
    case = json.loads(path.read_text().splitlines()[1])
    assert case["expect"]["m3"] == "0x7f800000"
    assert os.path.getsize(path) > 0
