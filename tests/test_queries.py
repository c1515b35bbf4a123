"""Solver queries: distinguishing vectors, equivalence proofs, timeouts, crashes, the CLI."""

from __future__ import annotations

import os

import numpy as np
import pytest

from mmaprobe.cli import main
from queries import distinguish as qd
from queries.distinguish import Constraints, QueryError, TwinDisagreement, distinguish, equivalent
from smtmodel.catalog import get_model
from smtmodel.model import ModelError
from smtmodel.solve import BitwuzlaEngine, Z3Engine
from smtmodel.vectors import read_vectors

VOLTA, TURING = "volta-fp16-fp32", "turing-fp16-fp32"


def twin_differs(res, vec):
    """Re-evaluate a vector with the twin, independently of the module's own check."""
    ma, mb = (get_model(m) for m in res.models)
    a = np.array([vec.a], dtype=np.uint64)
    b = np.array([vec.b], dtype=np.uint64)
    c = np.array([vec.c], dtype=np.uint64)
    da, db = int(ma.evaluate(a, b, c)[0]), int(mb.evaluate(a, b, c)[0])
    assert (da, db) == (vec.d[ma.id], vec.d[mb.id])
    return da != db


# ---- answers ------------------------------------------------------------------------------------

def test_volta_vs_turing_simple_confirmed_by_twin():
    res = distinguish(VOLTA, TURING, simple=True, timeout=120)
    assert res.status == "sat", res.reason
    assert res.k == 8
    (vec,) = res.vectors
    assert twin_differs(res, vec)
    assert vec.level  # found at one of the readability levels


def test_simple_twin_vector_no_worse_than_the_solver_walk():
    """Simple mode answers volta vs turing from the twin search alone, at the most readable level,
    with a vector at least as readable as the one the level-by-level solver walk gave before
    (Bitwuzla at level b=1,a=2^e, reduced: a7 = -8.0, b0 = b7 = 1.0, c = 0x4d100000; recorded from
    `mmaprobe distinguish volta-fp16-fp32 turing-fp16-fp32 --simple` at commit 0eb5cd9)."""
    from queries.distinguish.reduce import readability
    res = distinguish(VOLTA, TURING, simple=True, timeout=60)
    assert res.status == "sat" and res.solver.startswith("twin"), (res.solver, res.log)
    (vec,) = res.vectors
    assert twin_differs(res, vec) and vec.level == "b=1,a=2^e"
    before = {f"a{i}": 0 for i in range(8)} | {f"b{i}": 0 for i in range(8)} | {"a7": 0xC800, "b0": 0x3C00,
                                                                                 "b7": 0x3C00, "c": 0x4D100000}
    now = {f"a{i}": x for i, x in enumerate(vec.a)} | {f"b{i}": x for i, x in enumerate(vec.b)} | {"c": vec.c}
    ma = get_model(VOLTA)
    assert readability(now, ma, 8)[:3] <= readability(before, ma, 8)[:3]   # products, mantissa bits, spread


@pytest.mark.slow          # the same query by Bitwuzla: test_smt2_dump_is_parsed_back; z3's reading of the terms: test_differential
def test_volta_vs_turing_k4_z3_fast():
    res = distinguish(VOLTA, TURING, k=4, solver="z3", timeout=60)
    assert res.status == "sat" and res.solver == "z3"
    assert twin_differs(res, res.vectors[0])


def test_carry2_vs_carry3_distinguished():
    # seed 002 §4.3: two carry bits are not enough on Volta
    res = distinguish("volta-fp16-fp32-carry2", "volta-fp16-fp32-carry3", solver="bitwuzla", timeout=120)
    assert res.status == "sat", res.reason
    assert twin_differs(res, res.vectors[0])


def test_carry3_vs_carry4_proved_equivalent():
    res = equivalent("volta-fp16-fp32-carry3", "volta-fp16-fp32-carry4", solver="bitwuzla", timeout=120)
    assert res.status == "unsat" and res.equivalent is True and not res.vectors


@pytest.mark.slow
def test_ampere_carry3_vs_carry4_distinguished():
    res = distinguish("ampere-fp16-fp32-carry3", "ampere-fp16-fp32-carry4", timeout=300)
    assert res.status == "sat", res.reason
    assert twin_differs(res, res.vectors[0])


def test_count_gives_distinct_vectors():
    res = distinguish(VOLTA, TURING, k=4, solver="bitwuzla", count=3, timeout=120)
    assert res.status == "sat" and len(res.vectors) == 3
    keys = {(tuple(v.a), tuple(v.b), v.c) for v in res.vectors}
    assert len(keys) == 3
    assert all(twin_differs(res, v) for v in res.vectors)


def test_constraints_are_respected():
    cons = Constraints(finite=True, no_subnormals=True, c_zero=True, fixed=(("a0", 0x3C00),), b_signs="+",
                       exp_range=(-10, 10))
    res = distinguish(VOLTA, TURING, k=4, solver="bitwuzla", constraints=cons, timeout=120)
    assert res.status == "sat", res.reason
    vec = res.vectors[0]
    assert vec.c == 0 and vec.a[0] == 0x3C00
    for x in vec.a + vec.b:
        e = (x >> 10) & 0x1F
        assert e != 31 and (e != 0 or x & 0x3FF == 0)
        assert x & 0x7FFF == 0 or -10 <= e - 15 <= 10
    assert all(x >> 15 == 0 for x in vec.b)
    assert twin_differs(res, vec)


def test_simple_reduction_keeps_constraints():
    cons = Constraints(c_zero=True, a_signs="-")
    res = distinguish(VOLTA, TURING, k=4, solver="bitwuzla", simple=True, constraints=cons, timeout=120)
    assert res.status == "sat"
    vec = res.vectors[0]
    assert vec.c == 0 and all(x >> 15 for x in vec.a)
    assert twin_differs(res, vec)


def test_smt2_dump_is_parsed_back(tmp_path):
    import bitwuzla as bw
    path = tmp_path / "q.smt2"
    res = distinguish(VOLTA, TURING, k=4, solver="bitwuzla", timeout=60, smt2=str(path))
    assert res.status == "sat"
    text = path.read_text()
    assert "(check-sat)" in text and "a0" in text
    tm, opts = bw.TermManager(), bw.Options()
    p = bw.Parser(tm, opts)
    p.parse(text, True, False)
    assert str(p.bitwuzla().check_sat()) == "sat"


# ---- failures -----------------------------------------------------------------------------------

def test_unknown_model_id():
    with pytest.raises(ModelError, match="unknown model"):
        distinguish("volta-fp16-fp32", "no-such-model")


def test_different_formats_refused():
    with pytest.raises(QueryError, match="differ in"):
        distinguish("volta-fp16-fp32", "volta-fp16-fp16")


def test_bad_k_and_solver_refused():
    with pytest.raises(QueryError):
        distinguish(VOLTA, TURING, k=0)
    # any K >= 1 is a query: K = 6 is zero-padded to Turing's block of 8, as a kernel does
    res = distinguish(VOLTA, TURING, k=6)
    assert res.status == "sat" and len(res.vectors[0].a) == 6
    with pytest.raises(QueryError, match="unknown solver"):
        distinguish(VOLTA, TURING, solver="yices")


@pytest.mark.parametrize("solver", ["z3", "bitwuzla", "cvc5", "portfolio"])
def test_timeout_gives_unknown(solver):
    # Volta's fixed e_zero -131 vs zeros ignored: equal for fp16 products (docs/zeros.md argues it;
    # no solver proves it within 60 s even at k=4), so no answer within 0.3 s. (carry3 vs carry4
    # is no longer hard: 5 terms never fill more than 3 carry bits, so both build the same terms.)
    res = distinguish("volta-fp16-fp32", "volta-fp16-fp32:zero_align=ignore", solver=solver, timeout=0.3)
    assert res.status == "unknown"
    assert "timeout after 0.3 s" in res.reason
    assert res.seconds < 10


def test_solver_crash_reported(monkeypatch):
    def boom(self, f, terms, timeout):
        raise RuntimeError("simulated solver failure")
    monkeypatch.setattr(Z3Engine, "check", boom)
    res = distinguish(VOLTA, TURING, k=4, solver="z3", timeout=30)
    assert res.status == "error" and "z3 crashed" in res.reason and "simulated" in res.reason
    # in a portfolio the other solver still answers; the crash is reported beside it
    res = distinguish(VOLTA, TURING, k=4, solver="portfolio", solvers=("z3", "bitwuzla"), timeout=60)
    assert res.status == "sat" and res.solver.startswith("bitwuzla")
    assert "z3 crashed" in res.reason


def test_solver_process_death_reported(monkeypatch):
    def die(self, f, terms, timeout):
        os._exit(11)   # like a segfault in native code: no Python exception, no message
    monkeypatch.setattr(BitwuzlaEngine, "check", die)
    monkeypatch.setattr(Z3Engine, "check", die)
    res = distinguish(VOLTA, TURING, k=4, solver="portfolio", solvers=("bitwuzla", "z3"), timeout=30)
    assert res.status == "error"
    assert "exit code 11" in " ".join(str(x) for x in res.log)


def test_twin_disagreement_is_loud(monkeypatch):
    monkeypatch.setattr(qd.search, "twin_outputs", lambda ma, mb, vals, k: (np.zeros(len(vals), np.uint64),) * 2)
    with pytest.raises(TwinDisagreement):
        distinguish(VOLTA, TURING, k=4, solver="bitwuzla", timeout=60)


# ---- CLI ----------------------------------------------------------------------------------------

def test_cli_writes_valid_vector_file(tmp_path, capsys):
    out = tmp_path / "vt.jsonl"
    rc = main(["distinguish", VOLTA, TURING, "--k", "4", "--solver", "bitwuzla", "--count", "2", "-o", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "vector 0" in text and "d[volta-fp16-fp32] = 0x" in text
    vf = read_vectors(out)
    assert vf.header["models"] == [VOLTA, TURING]
    assert vf.header["source"]["solver"] == "bitwuzla" and "seconds" in vf.header["source"]
    assert len(vf.cases) == 2
    a, b, c = vf.arrays()
    for mid in (VOLTA, TURING):
        d = get_model(mid).evaluate(a, b, c)
        assert [vf.out_fmt.hex(int(x)) for x in d] == [case["expect"][mid] for case in vf.cases]
    assert all(case["expect"][VOLTA] != case["expect"][TURING] for case in vf.cases)


def test_cli_equivalent(capsys, no_proof_cache):
    """The proof itself (another test of this file may have cached it: the machinery is checked here)."""
    rc = main(["equivalent", "volta-fp16-fp32-carry3", "volta-fp16-fp32-carry4", "--solver", "bitwuzla"])
    assert rc == 0
    assert "equivalent (proved by bitwuzla in" in capsys.readouterr().out


def test_cli_errors(capsys, tmp_path):
    assert main(["distinguish", VOLTA, "nope-fp16", "-o", str(tmp_path / "x.jsonl")]) == 2
    assert "unknown model 'nope-fp16'" in capsys.readouterr().err
    rc = main(["distinguish", "volta-fp16-fp32", "volta-fp16-fp32:zero_align=ignore", "--solver", "z3",
               "--timeout", "0.2"])
    assert rc == 3
    assert "unknown: timeout after 0.2 s" in capsys.readouterr().err
    assert main(["distinguish", VOLTA, TURING, "--fix", "zz=1", "--solver", "z3"]) == 2
    assert "fixed entry 'zz'" in capsys.readouterr().err


def test_cli_smt2(tmp_path):
    path = tmp_path / "q.smt2"
    assert main(["distinguish", VOLTA, TURING, "--k", "4", "--solver", "bitwuzla", "--smt2", str(path)]) == 0
    assert "(check-sat)" in path.read_text()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process groups from /proc")
def test_sigterm_stops_portfolio_children():
    """A SIGTERM to a running portfolio query unwinds through its cleanup: no solver child keeps
    running after the parent is gone (checked through the process group)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    code = ("from queries.distinguish import distinguish\n"
            "distinguish('hopper-fp16-fp32', 'hopper-fp16-fp32-normalized', solver='portfolio', timeout=60, stagger=0,\n"
            "             solvers=('bitwuzla', 'z3'))\n")   # the SMT engines: the twin search answers at once
    p = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)

    def children() -> int:                 # processes of the group besides the parent (Linux /proc)
        n = 0
        for d in os.listdir("/proc"):
            try:
                with open(f"/proc/{d}/stat") as fh:
                    stat = fh.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            n += int(stat[2]) == p.pid and int(d) != p.pid
        return n

    deadline = time.time() + 60            # wait until the solver children run (slow under load)
    while children() == 0 and p.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)
    try:
        assert p.returncode == 128 + signal.SIGTERM
    except AssertionError:
        os.killpg(p.pid, signal.SIGKILL)
        raise
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.killpg(p.pid, 0)            # anything left in the group?
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    raise AssertionError("portfolio children outlived the parent")


def test_same_parameters_proved_by_identical_terms():
    """Two GPUs that compute alike (Blackwell and RTX Blackwell FP8, seed 001): the traced
    outputs are one node, so the portfolio answers unsat without a solver; models that differ
    in a parameter go to the solvers as before (carry3 vs carry4: Bitwuzla, seed 002 §4.3)."""
    from queries.distinguish.api import same_parameters
    res = distinguish("blackwell-fp8e4m3-fp32", "rtx-blackwell-fp8e4m3-fp32", timeout=60)
    assert res.status == "unsat" and res.solver.startswith("identical terms"), res.solver
    assert same_parameters(get_model("blackwell-fp8e4m3-fp32"), get_model("rtx-blackwell-fp8e4m3-fp32"))
    assert not same_parameters(get_model("volta-fp16-fp32-carry3"), get_model("volta-fp16-fp32-carry4"))
    # the same parameters but another k chain: still one node per output
    assert distinguish("turing-fp16-fp16", "ada-fp16-fp16", k=16, timeout=60).status == "unsat"


def test_reducer_reads_zeros_and_specials_by_the_formats_own_rules():
    """The reducer's facts come from smtmodel.fp.classify (the formats' definitions, OCP and
    AMD's fnuz): fnuz's 0x80 is its NaN (no -0), E8M0's 0xFF is NaN and it has no zero; before,
    the reducer re-derived the rules and took fnuz's NaN for a finite number."""
    from queries.distinguish.reduce import _is_finite_normal_or_sub, _is_zero
    from smtmodel.formats import get_format

    fnuz, e8m0, fp16 = (get_format(n) for n in ("fp8e4m3fnuz", "e8m0", "fp16"))
    assert (_is_zero(0x80, fnuz), _is_finite_normal_or_sub(0x80, fnuz), _is_zero(0x00, fnuz)) == (False, False, True)
    assert (_is_zero(0xFF, e8m0), _is_finite_normal_or_sub(0xFF, e8m0), _is_finite_normal_or_sub(0x7F, e8m0)) == (False, False, True)
    assert (_is_zero(0x8000, fp16), _is_finite_normal_or_sub(0x7C00, fp16), _is_finite_normal_or_sub(0x0001, fp16)) == (True, False, True)
