"""Proof certificates of properties (queries/properties/certify.py, `mmaprobe property --certify`).

Expected values come from the independent DRAT checker (dratify, which shares no code with z3,
Bitwuzla or CaDiCaL) and from the DIMACS and DRAT formats themselves: a CNF header counts its
clauses, a proof whose first step is the empty clause is wrong unless unit propagation on the CNF
alone reaches a conflict (it does not here: CaDiCaL needs 26,248 added clauses), a proof cut short
never reaches the empty clause. The sign-symmetry proof of the cell (hopper-fp8e4m3-fp16, k = 1)
is Bitwuzla's (the property table: proved at the instruction K, and at k = 1 in about 3 s).
CI installs cadical (Debian) and dratify (PyPI), so there a missing tool fails these tests
instead of skipping them.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from mmaprobe import cli
from mmaprobe.errors import EXIT_OTHER, EXIT_USAGE
from queries.properties import certify as cz
from queries.properties.certify import CERTIFIED, NOT_CERTIFIED, CertifyError, recheck

CELL = ("sign-symmetry", "hopper-fp8e4m3-fp16", 1)
STEM = "sign-symmetry.hopper-fp8e4m3-fp16.k1"


def _tools_or_skip():
    try:
        cz.require_tools()
    except CertifyError as exc:
        if os.environ.get("CI"):
            raise                              # CI installs both: a missing one is a failure there
        pytest.skip(str(exc))


def _certify_through_the_cli(out: Path):
    """The cell certified through the command line: (exit status, printed text)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli.main(["property", CELL[0], CELL[1], "--k", str(CELL[2]), "--timeout", "120",
                       "--certify", str(out)])
    return rc, buf.getvalue()


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _corrupt(out: Path, tmp_path: Path, edit) -> Path:
    """A copy of the certificate with its proof text passed through ``edit``; the summary path."""
    tmp_path.mkdir()
    for p in out.iterdir():
        shutil.copy(p, tmp_path / p.name)
    proof = tmp_path / f"{STEM}.drat"
    proof.write_text(edit(proof.read_text()))
    summary = tmp_path / f"{STEM}.json"
    d = json.loads(summary.read_text())
    d["files"] = {k: str(tmp_path / Path(v).name) for k, v in d["files"].items()}
    summary.write_text(json.dumps(d))
    return summary


def test_a_proved_cell_is_certified_and_a_corrupted_proof_is_not(tmp_path):
    """The certificate of the cell (about 12 s of CPU: the check, the CNF, CaDiCaL, the checker's
    Rust engine), its files, then two mutations of its proof, each rejected and reported not
    certified: the empty clause as the first step (unit propagation on the CNF alone reaches no
    conflict, so the first step must fail; dratify numbers the steps from 1), and the first
    2,000 steps only (each correct, but the empty clause is never derived). One test, so that
    one certificate is made whichever pytest-xdist worker runs it."""
    _tools_or_skip()
    out = tmp_path / "cert"
    rc, text = _certify_through_the_cli(out)
    assert rc == 0 and "proved:" in text and "certified: the checker accepts the proof" in text
    assert sorted(p.name for p in out.iterdir()) == [f"{STEM}.cnf", f"{STEM}.drat", f"{STEM}.json"]   # no leftovers
    d = json.loads((out / f"{STEM}.json").read_text())
    assert d["status"] == CERTIFIED and d["checker"]["verdict"] == "accepted" and d["checker"]["reached_empty"]
    cnf, proof = out / f"{STEM}.cnf", out / f"{STEM}.drat"
    head = cnf.read_text().splitlines()[0].split()
    # the DIMACS header counts the clause lines, and the summary records the same numbers
    assert head[:2] == ["p", "cnf"] and int(head[3]) == d["cnf"]["clauses"] == len(cnf.read_text().splitlines()) - 1
    assert max(abs(int(x)) for x in cnf.read_text().split()[4:]) <= int(head[2]) == d["cnf"]["variables"]
    assert d["cnf"]["sha256"] == _sha(cnf) and d["proof"]["sha256"] == _sha(proof)
    # every proof line is one step the checker verified (an addition or a deletion), the last the empty clause
    lines = proof.read_text().splitlines()
    assert d["checker"]["steps"] == len(lines) == d["proof"]["lines"] and lines[-1].strip() == "0"
    assert d["checker"]["rup_steps"] + d["checker"]["rat_steps"] + d["checker"]["deletions"] == len(lines)
    assert d["solver"]["answer"] == "unsat" and d["solver"]["tool"].startswith("cadical")

    c = recheck(_corrupt(out, tmp_path / "m1", lambda t: "0\n" + t))
    assert c.status == NOT_CERTIFIED and c.checker["verdict"] == "rejected" and c.checker["failed_step"] == 1
    assert "differs from the one recorded" in c.reason and "rejected" in c.reason
    c = recheck(_corrupt(out, tmp_path / "m2", lambda t: "\n".join(t.splitlines()[:2000]) + "\n"))
    assert c.status == NOT_CERTIFIED and c.checker["verdict"] == "rejected" and not c.checker["reached_empty"]


def test_a_refuted_property_bit_blasts_to_a_satisfiable_cnf(tmp_path):
    """The CNF encodes violations, not a formula that is false anyway: sign symmetry of CDNA3
    fp16 is refuted (TR-FDPA truncates toward -inf, seed 000 Algorithm 10; the property table),
    and CaDiCaL finds its CNF satisfiable."""
    _tools_or_skip()
    from queries.distinguish.api import resolve_model
    from queries.properties.defs import get_property
    text, _nv, _nc = cz.cnf_text(get_property("sign-symmetry"), resolve_model("cdna3-fp16-fp32"), 1)
    cnf = tmp_path / "x.cnf"
    cnf.write_text(text)
    assert cz.solve_cnf(shutil.which("cadical"), cnf, tmp_path / "x.drat", 120)["answer"] == "sat"


def test_a_refuted_property_is_not_certified_and_nothing_is_written(tmp_path, capsys):
    _tools_or_skip()
    out = tmp_path / "certs"
    rc = cli.main(["property", "monotonicity", "volta-fp16-fp32", "--solver", "twin", "--timeout", "20",
                   "--certify", str(out)])
    assert rc == EXIT_OTHER and "not certified: the property is refuted" in capsys.readouterr().out
    assert not out.exists() or not any(out.iterdir())


def test_a_failure_midway_leaves_no_files(tmp_path, monkeypatch):
    """The checker's process dies (simulated): the exception goes up and the folder is empty."""
    _tools_or_skip()

    def boom(*a, **kw):
        raise OSError("killed")
    monkeypatch.setattr(cz, "check_drat", boom)
    monkeypatch.setattr(cz, "solve_cnf", lambda exe, cnf, proof, t: (proof.write_text("0\n"), {
        "answer": "unsat", "reason": "", "seconds": 0.0})[1])
    with pytest.raises(OSError):
        cz.certify(*CELL[:2], tmp_path, k=CELL[2])
    assert list(tmp_path.iterdir()) == []


def test_a_proof_beyond_the_size_limit_is_stopped_and_not_certified(tmp_path, monkeypatch):
    """The checker holds the proof in memory, so CaDiCaL is stopped once its proof passes
    MAX_PROOF_BYTES (here 1,000 bytes: the proof of this cell has 6 MB): not certified, no proof
    file (a proof an earlier run left under the same name is removed, so that the files beside the
    summary are the ones it describes)."""
    _tools_or_skip()
    (tmp_path / f"{STEM}.drat").write_text("0\n")
    monkeypatch.setattr(cz, "MAX_PROOF_BYTES", 1000)
    c = cz.certify(*CELL[:2], tmp_path, k=CELL[2], timeout=120)
    assert c.status == NOT_CERTIFIED and "grew beyond 1000 bytes" in c.reason and "proof" not in c.files
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{STEM}.cnf", f"{STEM}.json"]


@pytest.mark.parametrize("argv, words", [
    (["--certify", "FILE"], "exists and is not a folder"),
    (["--certify", "DIR", "--certify-timeout", "0"], "--certify-timeout must be positive"),
])
def test_bad_certify_arguments_are_one_line_errors(tmp_path, capsys, argv, words):
    f = tmp_path / "f.txt"
    f.write_text("x")
    argv = [str(f) if a == "FILE" else str(tmp_path / "d") if a == "DIR" else a for a in argv]
    rc = cli.main(["property", *CELL[:2], "--k", "1", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == EXIT_USAGE and len(err) == 1 and words in err[0]


def test_a_missing_solver_is_named_before_the_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cz.shutil, "which", lambda name: None)
    rc = cli.main(["property", *CELL[:2], "--k", "1", "--certify", str(tmp_path / "d")])
    err = capsys.readouterr()
    assert rc == EXIT_USAGE and "cadical" in err.err and "not found" in err.err and "proved" not in err.out
    assert not (tmp_path / "d").exists()


def test_renumber_counts_the_variables_it_uses():
    """z3's DIMACS header can count fewer variables than its clauses use; the CNF is numbered
    again 1..n in order of first use (hand-computed)."""
    text, nv, nc = cz.renumber("p cnf 2 2\n5 -9 0\n-5 0\nc 5 x\n")
    assert (text, nv, nc) == ("p cnf 2 2\n1 -2 0\n-1 0\n", 2, 2)


def test_a_proof_by_reduction_is_certified_through_its_premise(tmp_path):
    """Monotonicity of Hopper's FFMA chain is proved by reduction; its premise (on finite inputs the
    unit equals the correctly rounded sum of a*b and c) is a solver's answer, and that one-copy
    formula is what gets certified: CaDiCaL's proof, accepted by the independent checker, and the
    summary saying which formula it certifies. A reduction by identical terms has nothing to
    certify (tests/test_properties.py::test_reduction_proof_is_not_certified)."""
    _tools_or_skip()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli.main(["property", "monotonicity", "hopper-fp32-fp32", "--certify", str(tmp_path)])
    out = buf.getvalue()
    assert rc == 0 and "proved by reduction" in out and "certifies the premise" in out, out
    summary = json.loads((tmp_path / "monotonicity.hopper-fp32-fp32.k1.premise.json").read_text())
    assert summary["status"] == CERTIFIED and summary["certifies"].startswith("the premise of the proof by reduction")
    assert summary["checker"]["verdict"] == "accepted" and summary["cnf"]["sha256"] == _sha(Path(summary["files"]["cnf"]))
    assert recheck(tmp_path / "monotonicity.hopper-fp32-fp32.k1.premise.json").status == CERTIFIED
