"""Fuzzing the command line in-process (``mmaprobe.cli.main``): random subcommands with random
flags, random and malformed files (bad JSON, wrong widths, empty, binary junk, text named .npy,
ml_dtypes arrays saved by np.save) and random values (huge, negative, NaN text, 1e40).

The contract (mmaprobe/cli.py's docstring): the exit status is 0, 1, 2 or 3 -- never 70 (a
bug) or 4; exit 2 prints exactly one line, ``mmaprobe: error: ...``, on stderr; a failed command
(exit 2) leaves no output file, and no command leaves a temporary file behind; no warning (NumPy's RuntimeWarnings
included) is raised. Seeded and bounded (hypothesis, derandomize=True): the commands chosen run
in milliseconds (small matrices, the NumPy reading, a small identify space, explain over one
model and one dataflow); solver queries are fuzzed only up to their argument checks."""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mmaprobe import cli

ALLOWED = {0, 1, 2, 3}
FUZZ = settings(max_examples=int(os.environ.get("MMAPROBE_FUZZ_EXAMPLES", "20")),
                derandomize=not os.environ.get("MMAPROBE_FUZZ_RANDOM"), deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
"""20 seeded examples per test in the default suite; a longer hunt: MMAPROBE_FUZZ_EXAMPLES=2000
MMAPROBE_FUZZ_RANDOM=1 (new examples each run)."""

VALUES = st.sampled_from(["0", "1", "-1", "2", "0.3", "-0.5", "1e40", "-1e39", "1e-50", "nan", "-nan", "inf", "-inf",
                          "NaN", "abc", "", "99999999999999999999", "-0", "0x10", "1e308", "3.4028235e38", "65504",
                          "7", "-3"])
MODELS = st.sampled_from(["hopper-fp16-fp32", "hopper-fp16-fp16", "ada-fp8e4m3-fp32", "ada-fp8e4m3-fp32:zero_align=ignore",
                          "ada-bf16-fp32", "ampere-tf32-fp32", "ampere-s8-s32", "ampere-u8-s32-satfinite",
                          "blackwell-fp8e4m3-fp32-mx", "blackwell-fp6e2m3-fp32", "volta-fp16-fp32",
                          "hopper-fp16-fp32:F=24,carry=3", "hopper-fp16-fp32:F=999", "hopper-fp16-fp32:bogus=1",
                          "nosuch", "", ":", "cdna3-fp8e4m3fnuz-fp32"])
DATAFLOWS = st.sampled_from([None, "cutlass2", "cutlass3-sm90:S=2", "cublaslt-ada-fp8-slow", "instruction",
                             "cutlass2:S=0", "bogus", "{}", '{"out": 7}', "[1]", "@nosuch.json", "key=value",
                             "cutlass2:out=bf16", "cutlass2:epi_fmt=fp16"])
K_ORDERS = st.sampled_from([None, "plain", "split:2", "interval:16", "split:x", "interval:0", "zigzag"])

DTYPES = ["float16", "float32", "float64", "uint8", "uint16", "uint32", "uint64", "int8", "int32", "int64",
          "bool", "complex64", "fp8e4m3", "fp8e5m2", "bf16", "fp6e2m3", "V3", "U3"]


@st.composite
def arrays(draw):
    """A .npy file's array: any of DTYPES, 0-3 dimensions of 0-5, values normal or special."""
    dt = draw(st.sampled_from(DTYPES))
    nd = draw(st.sampled_from([2, 2, 2, 1, 0, 3]))
    shape = tuple(draw(st.integers(0, 5)) for _ in range(nd))
    n = int(np.prod(shape)) if shape else 1
    special = draw(st.sampled_from(["normal", "normal", "ints", "specials", "huge"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if special == "normal":
        v = rng.standard_normal(n)
    elif special == "ints":
        v = rng.integers(-300, 300, n).astype(np.float64)
    elif special == "specials":
        v = rng.choice([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, 65504.0, 1e-8], n)
    else:
        v = rng.choice([1e40, -1e300, 3e38, 1e5, 70000.0], n)
    v = v.reshape(shape)
    with np.errstate(all="ignore"):
        if dt in ("fp8e4m3", "fp8e5m2", "bf16", "fp6e2m3"):
            t = {"fp8e4m3": ml_dtypes.float8_e4m3fn, "fp8e5m2": ml_dtypes.float8_e5m2, "bf16": ml_dtypes.bfloat16,
                 "fp6e2m3": ml_dtypes.float6_e2m3fn}[dt]
            return v.astype(t)                  # saved by np.save: loads as V1 / V2
        if dt == "V3":
            return np.zeros(shape, "V3")
        if dt == "U3":
            return np.full(shape, "abc")
        if dt.startswith(("uint", "int", "bool")):
            return np.nan_to_num(v, nan=0, posinf=0, neginf=0).astype(np.float64).clip(-1e9, 1e9).astype(dt)
        return v.astype(dt)


@st.composite
def files(draw, npy=True):
    """(kind, payload) of a file to write: an array, or something that is not one."""
    kind = draw(st.sampled_from(["array"] * 5 + ["text", "empty", "junk", "json", "npz", "cut", "missing", "dir"]
                                if npy else ["text", "empty", "junk", "json", "missing", "dir"] + ["vectors"] * 6))
    if kind == "array":
        return kind, draw(arrays())
    if kind == "text":
        return kind, draw(st.text(max_size=40)).encode("utf-8", "replace")
    if kind == "junk":
        return kind, draw(st.binary(max_size=64))
    if kind == "json":
        return kind, json.dumps(draw(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                                                  lambda c: st.lists(c, max_size=3) | st.dictionaries(
                                                      st.text(max_size=5), c, max_size=3), max_leaves=6))).encode()
    if kind == "cut":
        return kind, draw(arrays())
    if kind == "vectors":
        return kind, draw(vector_files())
    return kind, None


@st.composite
def vector_files(draw):
    """A vector file (../shared/spec/vectors.md): valid fp16 -> fp32 cases, or mutated ones (bad
    widths, bad hex, missing keys, bad JSON, a wrong header)."""
    bad = draw(st.integers(0, 3)) == 0
    k = 4
    header = {"kind": "mmaprobe.vectors", "version": 1, "in_fmt": "fp16", "c_fmt": "fp32", "out_fmt": "fp32", "k": k}
    if bad:
        header[draw(st.sampled_from(["version", "in_fmt", "c_fmt", "k", "kind"]))] = draw(st.sampled_from(
            [2, "1", "nosuch", 7, 0, -1, 1000, "int32", "bf16", None]))
        if draw(st.booleans()):
            header.pop(draw(st.sampled_from(sorted(header))))
    hexes = st.sampled_from(["0x3c00", "0x0000", "0x8000", "0x7c00", "0x7e00", "0x0001", "0xc400"])
    worse = st.sampled_from(["0x1ffff", "0x3c", "3c00", "zz", 5, None])
    lines = [json.dumps(header)]
    for i in range(draw(st.integers(0, 4))):
        case = {"id": f"c{i}", "a": draw(st.lists(hexes, min_size=k, max_size=k)),
                "b": draw(st.lists(hexes, min_size=k, max_size=k)),
                "c": draw(st.sampled_from(["0x00000000", "0x3f800000", "0x80000000", "0x7fc00000"]))}
        if draw(st.booleans()):
            case["observed"] = {"gpu": draw(st.sampled_from(["0x3f800000", "0x40000000", "0x7fffffff"]))}
        if bad and draw(st.booleans()):
            key = draw(st.sampled_from(["a", "b", "c", "observed", "id"]))
            case[key] = draw(st.one_of(worse, st.lists(worse, max_size=5), st.just({"gpu": "0xzz"})))
        lines.append(json.dumps(case))
    if bad and draw(st.booleans()):
        lines.append(draw(st.sampled_from(["{not json", "[]", "1", '"s"', "{}"])))
    return ("\n".join(lines) + draw(st.sampled_from(["\n", ""]))).encode()


def _write(d: Path, name: str, spec) -> str:
    kind, payload = spec
    p = d / name
    if kind == "array":
        np.save(p, payload)
    elif kind == "cut":
        np.save(p, payload)
        b = p.read_bytes()
        p.write_bytes(b[: max(len(b) - 3, 0)] if len(b) > 140 else b[:20])
    elif kind == "npz":
        with open(p, "wb") as fh:
            np.savez(fh, a=np.zeros(2))
    elif kind == "empty":
        p.write_bytes(b"")
    elif kind == "dir":
        p.mkdir()
    elif kind == "missing":
        pass
    else:
        p.write_bytes(payload)
    return str(p)


def _run(argv, d: Path, capsys, outputs=()):
    """Run ``argv`` in the folder ``d`` (relative paths, e.g. a value taken for an output, land
    there); check the contract; return (rc, out, err)."""
    capsys.readouterr()
    before = {p: p.exists() for p in outputs}
    here = os.getcwd()
    os.chdir(d)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rc = cli.main(argv)
        except SystemExit as e:             # argparse: a bad option (one line, exit 2)
            rc = e.code
        finally:
            os.chdir(here)
    out, err = capsys.readouterr()
    note = f"argv={argv}\nrc={rc}\nstderr={err[-2000:]}"
    assert rc in ALLOWED, note
    assert not [w for w in caught if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))], \
        f"{note}\nwarnings={[str(w.message) for w in caught]}"
    assert "RuntimeWarning" not in err and "Traceback" not in err, note
    if rc == 2:
        lines = [x for x in err.splitlines() if x.strip() and not x.startswith("mmaprobe: note:")]
        assert len(lines) == 1 and lines[0].startswith("mmaprobe: error: "), note
    if rc == 2:                          # a refused command writes nothing (exit 1 and 3 may keep evidence)
        for p in outputs:
            assert p.exists() == before[p] or not p.exists(), f"{note}\n{p} left behind"
    left = [x for x in _all_files(d) if x.name.endswith(".tmp")]
    assert not left, f"{note}\ntemporary files left: {left}"
    return rc, out, err


def _all_files(d: Path):
    for root, _dirs, names in os.walk(d):
        for n in names:
            yield Path(root) / n


# ---- gemm -----------------------------------------------------------------------------------------

GOOD_MODELS = ["hopper-fp16-fp32", "hopper-fp16-fp16", "ada-fp8e4m3-fp32:zero_align=ignore", "ada-bf16-fp32",
               "ampere-tf32-fp32", "ampere-s8-s32", "ampere-u8-s32-satfinite", "blackwell-fp6e2m3-fp32",
               "hopper-fp8e5m2-fp16"]


def _values(rng, fmt: str, shape, bits: bool):
    """Values of ``fmt`` (rounded by NumPy / ml_dtypes, the format's own type), or their raw bits."""
    from smtmodel.formats import get_format, numpy_dtype, uint_dtype
    f = get_format(fmt)
    if f.name in ("int8", "uint8", "int32"):
        lo, hi = (0, 255) if f.name == "uint8" else (-128, 127) if f.name == "int8" else (-2**31, 2**31 - 1)
        x = rng.integers(lo, hi, shape, endpoint=True).astype(numpy_dtype(f))
    else:
        v = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 6, shape))
        with np.errstate(all="ignore"):
            x = v.astype(numpy_dtype(f))
        if f.name == "tf32":
            x = (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return x.view(uint_dtype(f)) if bits else x


@st.composite
def fitting_gemm(draw):
    """A GEMM whose files fit the model (shapes, formats); options drawn around the valid ones."""
    from smtmodel.catalog import get_model
    mid = draw(st.sampled_from(GOOD_MODELS))
    m = get_model(mid)
    M, N = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    K = draw(st.sampled_from([1, 3, 16, 32]))
    bits = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    fa, fb = m.operand_fmts
    A, B = _values(rng, fa, (M, K), bits), _values(rng, fb, (K, N), bits)
    C = _values(rng, m.c_fmt, (M, N), bits) if draw(st.booleans()) else None
    return mid, ("array", A), ("array", B), None if C is None else ("array", C), bits


@st.composite
def random_gemm(draw):
    return (draw(MODELS), draw(files()), draw(files()), draw(st.one_of(st.none(), files())), draw(st.booleans()))


SCALARS = st.lists(st.tuples(st.sampled_from(["--alpha", "--beta", "--scale-a", "--scale-b", "--scale-result"]),
                             st.one_of(VALUES, st.sampled_from(["1", "2", "0.5", "0.3", "1.7"]))), max_size=3)


@FUZZ
@given(case=st.one_of(fitting_gemm(), fitting_gemm(), random_gemm()),
       dataflow=st.one_of(st.none(), st.none(), DATAFLOWS), k_order=st.one_of(st.none(), st.none(), K_ORDERS),
       trans=st.tuples(st.booleans(), st.booleans()), scalars=SCALARS,
       out_kind=st.sampled_from(["file", "file", "file", "dir", "under-file", "nested"]))
def test_fuzz_gemm(capsys, case, dataflow, k_order, trans, scalars, out_kind):
    model, a, b, c, bits = case
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        if trans[0] and a[0] == "array":
            a = ("array", np.ascontiguousarray(np.asarray(a[1]).T))
        if trans[1] and b[0] == "array":
            b = ("array", np.ascontiguousarray(np.asarray(b[1]).T))
        argv = ["gemm", _write(d, "A.npy", a), _write(d, "B.npy", b)]
        if c is not None:
            argv.append(_write(d, "C.npy", c))
        argv += ["--model", model, "--backend", "numpy", "-j", "1"]
        if dataflow is not None:
            argv += ["--dataflow", dataflow]
        if k_order is not None:
            argv += ["--k-order", k_order]
        argv += ["--bits"] * bits + ["--transa"] * trans[0] + ["--transb"] * trans[1]
        for opt, v in scalars:
            argv += [opt, v]
        out = {"file": d / "D.npy", "dir": d, "under-file": d / "A.npy" / "D.npy", "nested": d / "x" / "y" / "D.npy"}[out_kind]
        argv += ["-o", str(out)]
        outs = [d / "D.npy", d / "D.npy.json", d / "x" / "y" / "D.npy"]
        rc, _, _ = _run(argv, d, capsys, outs)
        if rc == 0:
            assert Path(str(out)).is_file() and Path(str(out) + ".json").is_file()
            side = json.loads(Path(str(out) + ".json").read_text())
            assert side["model"] and side["described"]


# ---- eval / check / run / verdict on vector files ----------------------------------------------------

@FUZZ
@given(f=files(npy=False), cmd=st.sampled_from(["eval", "check", "run", "verdict", "run-tpu"]),
       model=st.one_of(st.sampled_from(["hopper-fp16-fp32", "volta-fp16-fp32", "turing-fp16-fp32"]), MODELS))
def test_fuzz_vector_commands(capsys, f, cmd, model):
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        path = _write(d, "v.jsonl", f)
        out = d / "o.jsonl"
        argv = {"eval": ["eval", path, "--model", model, "--backend", "numpy", "-o", str(out)],
                "check": ["check", path, "--model", model, "--backend", "numpy"],
                "run": ["run", path, "--device", f"twin:{model}", "--backend", "numpy", "-o", str(out)],
                "run-tpu": ["run", path, "--device", "tpu", "-o", str(out)],
                "verdict": ["verdict", path]}[cmd]
        _run(argv, d, capsys, [out])


# ---- small commands with random flags ---------------------------------------------------------------

@FUZZ
@given(argv=st.one_of(
    st.tuples(st.just("formats"), st.lists(st.sampled_from(["fp16", "e4m3", "e5m2,bias=3", "nosuch", "e99m99", "int8",
                                                            "e4m3,policy=x", "tf32", ""]), max_size=3)),
    st.tuples(st.just("models"), st.sampled_from([[], ["--arch", "hopper"], ["--arch", "pascal"], ["--arch", ""],
                                                  ["--cite"], ["--arch"]])),
    st.tuples(st.just("dataflows"), st.sampled_from([[], ["--sources"], ["--json"], ["--bogus"]])),
    st.tuples(st.just("scheme"), st.tuples(st.just("ozaki-gemm"), st.sampled_from(["ozaki1-s3", "ozaki2-n8", "nosuch"]),
                                           st.just("--m"), st.sampled_from(["2", "2", "0", "-1", "x"]),
                                           st.just("--n"), st.sampled_from(["3", "3", "0"]),
                                           st.just("--k"), st.sampled_from(["8", "8", "0", "-4", "100000000000"]),
                                           st.just("--spread"), st.one_of(st.sampled_from(["4", "30"]), VALUES),
                                           st.just("--sample"), st.sampled_from(["4", "4", "0", "-2"]),
                                           st.just("--alpha"), st.one_of(st.sampled_from(["1", "0.5"]), VALUES))),
    st.tuples(st.just("explain"), st.tuples(st.just("--observe"), st.tuples(st.sampled_from(["hopper-fp16-fp32", "V100",
                                                                                              "nosuch", ""]), VALUES))),
    st.tuples(st.just("identify"), st.tuples(st.just("--device"), st.sampled_from(
        ["twin:nosuch", "bogus:x", "file:", "tpu", "cuda-gemm", "twin:hopper-fp16-fp32"]),
        st.just("--space"), st.sampled_from(["nosuch-family", "gtr-fdpa", "open:bogus", "[]"]),
        st.just("--k"), st.sampled_from(["16", "0", "-1"]))),
))
def test_fuzz_small_commands(capsys, argv):
    cmd, rest = argv
    flat = [cmd]
    for x in rest:
        if isinstance(x, tuple):            # explain's MODEL=VALUE
            flat.append("=".join(x))
        else:
            flat.append(x)
    if cmd == "explain":
        flat += ["--k", "4", "--timeout", "0.001", "--solver", "z3"]
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        if cmd in ("identify", "scheme", "explain"):
            flat += ["-o", str(d / "o.json")] if cmd != "scheme" else ["--save", str(d / "D.npy")]
        if cmd == "identify":
            flat += ["--journal", str(d / "j.jsonl"), "--quiet", "--verify", "0", "--max-launches", "1"]
        _run(flat, d, capsys, [d / "o.json", d / "D.npy"])


# ---- any flag of the fast commands, any value ----------------------------------------------------------

FAST = [("formats",), ("models",), ("dataflows",), ("features",), ("scheme", "list"), ("scheme", "table5"),
        ("import-matlab",), ("export-matlab",), ("verdict",), ("eval",), ("check",), ("gemm",),
        ("distinguish",), ("equivalent",)]
SLOW_OPTIONS = {"--timeout", "--scheduler", "--workers", "--connect-timeout"}


def _subparser(path):
    p = cli.build_parser()
    for name in path:
        sub = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
        p = sub.choices[name]
    return p


@FUZZ
@given(data=st.data())
def test_fuzz_any_flags(capsys, data):
    """Random options of a fast command with random values and positionals (files of any kind).
    distinguish and equivalent always get one bad model, so they stop at their argument checks."""
    path = data.draw(st.sampled_from(FAST))
    p = _subparser(path)
    opts = [a for a in p._actions if a.option_strings and not {"-h", "--help", "--debug"} & set(a.option_strings)
            and not SLOW_OPTIONS & set(a.option_strings)]
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        pool = [_write(d, f"f{i}.{ext}", data.draw(files(npy=ext == "npy")))
                for i, ext in enumerate(("npy", "jsonl", "npy", "json"))]
        words = st.one_of(VALUES, MODELS, st.sampled_from(pool + [str(d / "out.jsonl"), str(d / "newdir"), "fp16",
                                                                  "fp32", "H100", "-", "--", "x" * 300]))
        argv = list(path)
        positionals = [a for a in p._actions if not a.option_strings and a.dest not in ("help",)]
        for a in positionals:
            n = {None: 1, "?": data.draw(st.integers(0, 1)), "*": data.draw(st.integers(0, 2)),
                 "+": data.draw(st.integers(1, 2))}.get(a.nargs, 1 if not isinstance(a.nargs, int) else a.nargs)
            argv += [data.draw(words) for _ in range(n)]
        for a in data.draw(st.lists(st.sampled_from(opts), max_size=4)) if opts else []:
            argv.append(data.draw(st.sampled_from(a.option_strings)))
            if a.nargs == 0 or a.const is not None and a.nargs in (None, "?") and a.__class__.__name__ != "_StoreAction":
                continue
            argv.append(data.draw(words))
        if path[0] in ("distinguish", "equivalent"):
            argv[1:3] = ["nosuch", "hopper-fp16-fp32"] if data.draw(st.booleans()) else ["hopper-fp16-fp32:F=999", "x"]
            argv += ["--timeout", "0.01"]
        if path[0] == "gemm" or path[0] == "eval":
            argv += ["--backend", "numpy"]
        _run(argv, d, capsys, [d / "out.jsonl"])


# ---- explain on small GEMMs (one model, one dataflow) --------------------------------------------------

@st.composite
def fp16_pair(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    M, K, N = draw(st.integers(1, 3)), draw(st.integers(1, 8)), draw(st.integers(1, 3))
    return ("array", _values(rng, "fp16", (M, K), False)), ("array", _values(rng, "fp16", (K, N), False))


@st.composite
def explain_inputs(draw):
    if draw(st.integers(0, 2)):
        return draw(fp16_pair())
    return draw(files()), draw(files())


@FUZZ
@given(ab=explain_inputs(), observe=st.lists(st.tuples(st.sampled_from(["dev", "V100", "dev@hopper", "dev@pascal", ""]),
                                                         st.one_of(VALUES, st.just("OUT.npy"))), min_size=1, max_size=2),
       out=files(), fmt=st.sampled_from(["fp16", "fp16", "fp16", "fp8e4m3", "bf16", "nosuch"]))
def test_fuzz_explain_gemm(capsys, ab, observe, out, fmt):
    a, b = ab
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        argv = ["explain", "--a", _write(d, "A.npy", a), "--b", _write(d, "B.npy", b), "--in", fmt,
                "--models", "hopper-fp16-fp32", "--dataflow", "cutlass2", "--quiet"]
        obs_file = _write(d, "OUT.npy", out)
        for dev, v in observe:
            argv += ["--observe", f"{dev}={obs_file if v == 'OUT.npy' else v}"]
        argv += ["-o", str(d / "x.json")]
        _run(argv, d, capsys, [d / "x.json"])


# ---- identify journals, damaged ----------------------------------------------------------------------

SPACE = {"families": [{"family": "t-fdpa", "params": {
    "L": [8, 16], "F": [24, 25], "rho": ["RZ-FP32"], "carry": [None], "normalize": [False], "zero_align": [-133],
    "flush_inputs": [None], "c_entry": ["align"], "specials": ["nvidia"]}}]}


@pytest.fixture(scope="module")
def journal_lines(tmp_path_factory):
    """A complete identify run's journal lines (a twin device, a 4-point space)."""
    d = tmp_path_factory.mktemp("journal")
    (d / "space.json").write_text(json.dumps(SPACE))
    argv = ["identify", "--device", "twin:hopper-fp16-fp32", "--space", str(d / "space.json"), "--verify", "100",
            "--solver-pairs", "0", "--journal", str(d / "j.jsonl"), "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli.main(argv) == 0
    return (d / "j.jsonl").read_text().splitlines(), d / "space.json"


JUNK_LINES = st.sampled_from(["[1, 2]", '"text"', "7", "null", "{}", '{"answers": 1}', '{"answers": "x", "d": []}',
                              '{"answers": 1, "d": 5}', '{"answers": 1, "d": ["0xzz"]}', '{"launch": "1"}',
                              '{"launch": 9, "digest": "x"}', "{not json", "\x00\x01", '{"answers": 1, "d": ["0x1"]}'])


@FUZZ
@given(data=st.data())
def test_fuzz_identify_resume_on_damaged_journals(capsys, journal_lines, data):
    lines, space = journal_lines
    lines = list(lines)
    op = data.draw(st.sampled_from(["insert", "replace", "truncate", "tear", "drop", "bytes"]))
    i = data.draw(st.integers(0, len(lines) - 1))
    if op == "insert":
        lines.insert(i, data.draw(JUNK_LINES))
    elif op == "replace":
        lines[i] = data.draw(JUNK_LINES)
    elif op == "drop":
        del lines[i]
    text = "\n".join(lines) + "\n"
    if op == "truncate":
        text = text[: data.draw(st.integers(0, len(text)))]
    elif op == "tear":
        text = text[: len(text) - data.draw(st.integers(2, 60))]
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        j = d / "j.jsonl"
        if op == "bytes":
            j.write_bytes(text.encode()[:200] + data.draw(st.binary(min_size=1, max_size=40)))
        else:
            j.write_text(text)
        argv = ["identify", "--device", "twin:hopper-fp16-fp32", "--space", str(space), "--verify", "100",
                "--solver-pairs", "0", "--journal", str(j), "--quiet", "--resume", "-o", str(d / "id.json")]
        _run(argv, d, capsys, [d / "id.json"])
