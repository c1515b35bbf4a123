"""Every size bounded before the work: a size whose memory is beyond the machine, or beyond a
documented limit, is one line ``mmaprobe: error: ...`` naming the limit and the option to lower,
exit 2, within a second, and nothing allocated first. The commands run in one child process under
an address-space limit of 2 GiB (``resource.setrlimit(RLIMIT_AS)``), so an allocation attempted
before the check would end in MemoryError (exit 70) instead. ``--timeout`` is honoured at every
k: a property check still building its formula is abandoned when the time is up (exit 3).

The sizes are the ones a user tried: ``property --k 100000`` grew to 24 GB, ``scheme ozaki-claim
--n 100000`` and ``ozaki-gemm --m 100000 --n 100000`` asked NumPy for 74.5 GiB and more, and
``property --k 1000 --timeout 30`` was still running at 120 s."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmaprobe.cli import main

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "property --k": (["property", "permutation", "volta-fp16-fp32", "--k", "100000"], "--k"),
    "ozaki-claim --n": (["scheme", "ozaki-claim", "ozaki1-s3", "--n", "100000"], "--n"),
    "ozaki-claim dynamic --n": (["scheme", "ozaki-claim", "--mode", "dynamic", "--n", "100000"], "--n"),
    "ozaki-gemm --m --n": (["scheme", "ozaki-gemm", "ozaki1-s3", "--m", "100000", "--n", "100000"], "--m"),
    "ozaki-gemm --k": (["scheme", "ozaki-gemm", "ozaki2-n8", "--m", "2000", "--n", "2000", "--k", "100000"], "--k"),
    "scheme claim --n": (["scheme", "claim", "oy-fp16", "markidis", "--n", "100000000"], "--n"),
    # every other size-taking option; {tmp} is a fresh folder (outputs, journals, the GEMM's inputs)
    "invariance --limit": (["invariance", "batch", "--profile", "cublaslt-h100pcie-fp8", "--n", "2048", "--k", "8192",
                            "--limit", "1000000000"], "--limit"),
    "invariance --k": (["invariance", "batch", "--profile", "torch-h100-gemmex", "--a", "fp16", "--b", "fp16",
                        "--out", "fp32", "--n", "2048", "--k", "1000000000", "--m", "1:64"], "--k"),
    "identify --k": (["identify", "--device", "twin:hopper-fp16-fp32", "--k", "100000000",
                      "--journal", "{tmp}/j1.jsonl", "--quiet"], "--k"),
    "identify --batch": (["identify", "--device", "twin:hopper-fp16-fp32", "--batch", "100000000",
                          "--journal", "{tmp}/j2.jsonl", "--quiet"], "--batch"),
    "identify --verify": (["identify", "--device", "twin:hopper-fp16-fp32", "--verify", "10000000000",
                           "--journal", "{tmp}/j3.jsonl", "--quiet"], "--verify"),
    "verify --cases": (["verify", "hopper-fp16-fp32", "--device", "twin:volta-fp16-fp32", "--cases", "10000000000",
                        "-o", "{tmp}/v1.jsonl", "--workers", "0", "--quiet"], "--cases"),
    "verify --k": (["verify", "hopper-fp16-fp32", "--device", "twin:volta-fp16-fp32", "--k", "100000000",
                    "--cases", "100", "-o", "{tmp}/v2.jsonl", "--workers", "0", "--quiet"], "--k"),
    "verify --chunk": (["verify", "hopper-fp16-fp32", "--device", "twin:volta-fp16-fp32", "--cases", "100000000",
                        "--chunk", "100000000", "-o", "{tmp}/v3.jsonl", "--workers", "0", "--quiet"], "--chunk"),
    "plot errors --cases": (["plot", "errors", "--model", "hopper-fp16-fp32", "--cases", "100000000",
                             "-o", "{tmp}/pe"], "--cases"),
    "plot errors --k": (["plot", "errors", "--model", "hopper-fp16-fp32", "--k", "100000000", "-o", "{tmp}/pk"], "--k"),
    "plot discrepancy --cases": (["plot", "discrepancy", "--model", "hopper-fp16-fp32", "--model", "volta-fp16-fp32",
                                  "--cases", "100000000", "-o", "{tmp}/pd"], "--cases"),
    "plot schemes --cases": (["plot", "schemes", "--cases", "100000000", "-o", "{tmp}/ps", "--workers", "0"], "--cases"),
    "report --cases": (["report", "-o", "{tmp}/site", "--cases", "100000000", "--models", "hopper-fp16-fp32",
                        "--workers", "0"], "--cases"),
    "distinguish --k": (["distinguish", "volta-fp16-fp32", "turing-fp16-fp32", "--k", "100000"], "--k"),
    "distinguish --count": (["distinguish", "volta-fp16-fp32", "turing-fp16-fp32", "--count", "100000000"], "--count"),
    "equivalent --k": (["equivalent", "volta-fp16-fp32", "turing-fp16-fp32", "--k", "100000"], "--k"),
    "explain --k": (["explain", "--observe", "hopper-fp16-fp32=1.0", "--k", "100000"], "--k"),
    "explain --gemm m=": (["explain", "--gemm", "seed003:m=1000000000", "--observe", "D[0,0]=1.0"], "m="),
    "scheme compare --k": (["scheme", "compare", "oy-fp16", "markidis", "--k", "100000"], "--k"),
    "scheme worst --k": (["scheme", "worst", "oy-fp16", "--k", "100000"], "--k"),
    "scheme bound --k": (["scheme", "bound", "oy-fp16", "--k", "100000"], "--k"),
    "scheme stats --m --n": (["scheme", "stats", "markidis", "--m", "100000", "--n", "100000"], "--n"),
    "scheme table --n": (["scheme", "table", "--n", "100000000"], "--n"),
    "ozaki-table --n": (["scheme", "ozaki-table", "--n", "100000"], "--n"),
    "identify --gemm --k": (["identify", "--gemm", "--device", "twin-gemm:ampere-fp16-fp32:cutlass2",
                             "--k", "100000000", "--quiet"], "--k"),
    "survey --cases": (["survey", "--device", "dry:sm_90", "--cases", "100000000", "-o", "{tmp}/sv1", "--quiet"],
                       "--cases"),
    "survey --verify": (["survey", "--device", "dry:sm_90", "--verify", "100000000", "-o", "{tmp}/sv2", "--quiet"],
                        "--verify"),
    "gemm (M, N from the inputs)": (["gemm", "{tmp}/A.npy", "{tmp}/B.npy", "--model", "hopper-fp16-fp32",
                                     "-o", "{tmp}/D.npy"], "100000x1"),
}

CHILD = r"""
import contextlib, io, json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))
from mmaprobe.cli import main
out = {}
for name, argv in json.loads(sys.argv[1]).items():
    err = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(argv)
    out[name] = [rc, err.getvalue().splitlines(), time.perf_counter() - t]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A folder holding only the GEMM's inputs: A (100000 x 1) and B (1 x 100000), 200 kB each,
    whose product is 10^10 outputs."""
    import numpy as np
    tmp = tmp_path_factory.mktemp("sizes")
    np.save(tmp / "A.npy", np.ones((100_000, 1), np.float16))
    np.save(tmp / "B.npy", np.ones((1, 100_000), np.float16))
    return tmp


@pytest.fixture(scope="module")
def refused(scratch):
    argvs = {k: [a.replace("{tmp}", str(scratch)) for a in v[0]] for k, v in CASES.items()}
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(argvs)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.splitlines()[-1])


@pytest.mark.parametrize("name", list(CASES))
def test_a_size_beyond_the_machine_is_one_line_within_a_second(refused, name):
    rc, lines, seconds = refused[name]
    assert (rc, len(lines)) == (2, 1), (name, rc, lines)
    assert lines[0].startswith("mmaprobe: error: ") and CASES[name][1] in lines[0], lines
    assert "GiB" in lines[0] or "limit" in lines[0], lines
    assert seconds < 1.0, (name, seconds)


def test_a_refused_size_writes_nothing(refused, scratch):
    """No output, journal or figure is begun for a size refused before the work."""
    assert sorted(p.name for p in scratch.iterdir()) == ["A.npy", "B.npy"]


def test_property_timeout_is_honoured_at_a_large_k(tmp_path, capsys):
    """permutation of volta-fp16-fp32 at k = 1000 spends minutes building its formula (about 90 s
    at k = 128 on a 2-core machine); with --timeout 2 the check is abandoned after 2 s and the
    2 s of grace: exit 3, and the SMT-LIB2 file it was to write is not half-written."""
    smt2 = tmp_path / "f.smt2"
    t = time.perf_counter()
    rc = main(["property", "permutation", "volta-fp16-fp32", "--k", "1000", "--timeout", "2", "--smt2", str(smt2)])
    elapsed = time.perf_counter() - t
    assert rc == 3 and elapsed < 8, (rc, elapsed)
    assert "did not finish within --timeout 2 s" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
