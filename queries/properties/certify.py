"""Proof certificates for a proved property: the formula bit-blasted to CNF, a DRAT proof of its
unsatisfiability from CaDiCaL, and that proof checked by a DRAT checker that shares no code with
the solvers.

:func:`certify` writes three files for one property cell (model x property x k) into a folder:

- ``NAME.cnf``: the formula the solvers read (``hypothesis and violation`` in the canonical
  reading, :func:`~queries.properties.check.canonical_formula`) bit-blasted by z3's tactics
  ``simplify; bit-blast; tseitin-cnf`` into DIMACS CNF;
- ``NAME.drat``: CaDiCaL's DRAT proof (text) that the CNF is unsatisfiable;
- ``NAME.json``: what was checked -- CNF and proof sizes and SHA-256, the solver, the checker,
  their verdicts and seconds, and the status.

The status is ``certified`` only when the checker (dratify, a forward DRAT checker in pure Python:
every added clause is checked by reverse unit propagation, or as a resolution asymmetric
tautology, and the empty clause must be reached) accepts the proof; a rejected proof, a checker
that runs out of time or fails, a solver that does not answer unsat, are ``not certified`` with
the reason. Nothing is half-written: the files are staged in a temporary folder and moved in at
the end.

Trusted: the model's build, the canonical reading and z3's bit-blasting (they make the CNF).
Not trusted: CaDiCaL (its proof is checked) and the SMT solvers (they are not asked).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..distinguish.api import resolve_model as resolve
from ..distinguish.errors import QueryError
from .defs import get_property

CADICAL = "cadical"
CADICAL_OPTIONS = ("-q", "--no-binary", "--plain")
"""``--no-binary``: a text proof (any DRAT checker reads it); ``--plain``: no preprocessing or
inprocessing, which on the catalog's formulas gives a proof about a quarter as long (sign
symmetry of volta-fp16-fp32 at k = 1: 58,221 added clauses against 205,063 with the defaults),
and the checker, not the solver, is what takes the time."""
CHECKER = "dratify"
TACTICS = ("simplify", "bit-blast", "tseitin-cnf")
MAX_PROOF_BYTES = 512 << 20
"""A proof larger than this (512 MiB) is stopped and the cell reported not certified: the checker
holds the whole proof in memory, about 14 bytes per byte of proof text (a 100 MB proof: 1.4 GB),
so a larger one could exhaust the machine's memory."""
CERTIFIED, NOT_CERTIFIED = "certified", "not certified"

# The checker runs in a child process of its own (a time limit that can be enforced, and nothing
# shared with this process's solvers). It prints one JSON line.
_CHECK = r"""
import json, sys
import dratify
from dratify import check_proof, parse_dimacs_file
engine = sys.argv[3]
if engine in ("auto", "native"):
    try:
        import cdclkit_native
        dratify.register_native(cdclkit_native)
        engine = "native"
    except ImportError:
        if engine == "native":
            raise SystemExit("engine native: cdclkit-native is not installed (pip install cdclkit-native)")
        engine = "python"
f = parse_dimacs_file(sys.argv[1])
with open(sys.argv[2], encoding="utf-8", errors="replace") as fh:
    proof = fh.read()
r = check_proof(f, proof, engine=engine)
print(json.dumps({"ok": bool(r.ok), "reached_empty": bool(r.reached_empty), "reason": str(r.reason),
                  "steps": r.steps, "rup_steps": r.rup_steps, "rat_steps": r.rat_steps,
                  "deletions": r.deletions, "failed_step": r.failed_step, "engine": engine,
                  "version": dratify.__version__}))
"""
ENGINES = ("auto", "python", "native")
"""dratify's engines: ``python`` (pure Python), ``native`` (its Rust checker, which the PyPI
package cdclkit-native carries and registers), ``auto`` (native when installed)."""


class CertifyError(QueryError):
    """A certificate that cannot be attempted: a missing tool, a bad folder (one line, exit 2)."""


@dataclass
class Certificate:
    status: str                      # CERTIFIED or NOT_CERTIFIED
    property: str
    model: str
    k: int
    claim: str = ""
    certifies: str = ""              # the formula certified: the property's, or a reduction's premise
    reason: str = ""                 # not certified: why
    files: dict = field(default_factory=dict)      # cnf, proof, summary -> path
    cnf: dict = field(default_factory=dict)        # variables, clauses, bytes, sha256, bit-blasting
    solver: dict = field(default_factory=dict)     # tool, options, answer, seconds
    proof: dict = field(default_factory=dict)      # format, lines, bytes, sha256
    checker: dict = field(default_factory=dict)    # tool, verdict, steps, seconds
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


# ---- the tools -------------------------------------------------------------------------------------

def require_tools() -> tuple[str, str]:
    """(CaDiCaL's path, dratify's version); a missing one is a one-line :class:`CertifyError`."""
    exe = shutil.which(CADICAL)
    if exe is None:
        raise CertifyError("--certify needs the SAT solver cadical on PATH (Debian: apt-get install cadical); "
                           "not found")
    from importlib.metadata import PackageNotFoundError, version
    try:
        ver = version(CHECKER)
    except PackageNotFoundError:
        raise CertifyError("--certify needs the DRAT checker dratify (pip install dratify); not installed") from None
    return exe, ver


def cadical_version(exe: str) -> str:
    try:
        return subprocess.run([exe, "--version"], check=False, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


# ---- the CNF ----------------------------------------------------------------------------------------

def cnf_text(prop, m, k: int, canon=None) -> tuple[str, int, int]:
    """(DIMACS text, variables, clauses) of the property's formula bit-blasted by z3. A formula
    that the tactics decide false is the CNF with one empty clause; one they decide true has no
    certificate (:class:`CertifyError`: the formula is satisfiable, the property does not hold).

    The terms are translated into a z3 context of their own first, so the CNF does not depend on
    what the process built before (z3's tactics follow term ids), and the variables are numbered
    again 1..n in order of first use (z3's DIMACS header can count fewer variables than its
    clauses use)."""
    import z3

    from smtmodel.bv.z3_backend import Z3Backend

    from .check import canonical_formula
    terms, _v = (canon or canonical_formula(prop, m, k)).on(Z3Backend())
    ctx = z3.Context()
    g = z3.Goal(ctx=ctx)
    g.add([t.v.translate(ctx) for t in terms])
    sub = z3.Then(*TACTICS, ctx=ctx)(g)
    if len(sub) != 1:
        raise CertifyError(f"z3's bit-blasting split the formula into {len(sub)} goals; no single CNF")
    sg = sub[0]
    if sg.inconsistent():
        return "p cnf 0 1\n0\n", 0, 1
    if len(sg) == 0:
        raise CertifyError(f"{prop.name} on {m.id} (k={k}): the bit-blasted formula is true, so the property is "
                           "violated; there is nothing to certify")
    return renumber(sg.dimacs(False))


def renumber(text: str) -> tuple[str, int, int]:
    """DIMACS ``text`` with its variables numbered 1..n in order of first use and a header that
    counts them: (text, n, clauses). Comment and header lines are dropped."""
    ids: dict[int, int] = {}
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "cp%":
            continue
        lits = [int(x) for x in line.split()]
        if lits[-1] != 0 or 0 in lits[:-1]:
            raise CertifyError(f"z3 wrote a DIMACS line that is not one clause: {line[:80]!r}")
        cl = []
        for x in lits[:-1]:
            v = ids.setdefault(abs(x), len(ids) + 1)
            cl.append(str(v if x > 0 else -v))
        out.append(" ".join(cl + ["0"]))
    return f"p cnf {len(ids)} {len(out)}\n" + "\n".join(out) + "\n", len(ids), len(out)


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


# ---- the solver and the checker --------------------------------------------------------------------

def _run(cmd: list, timeout: float, watch: Path | None = None, max_bytes: int = MAX_PROOF_BYTES):
    """(returncode or None, stdout, stderr, why stopped): ``cmd`` stopped after ``timeout`` s, or
    when ``watch`` grows beyond ``max_bytes``."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, text=True)
        why = ""
        try:
            while p.poll() is None:
                if time.perf_counter() - t0 > timeout:
                    why = f"timeout after {timeout:g} s"
                elif watch is not None and watch.exists() and watch.stat().st_size > max_bytes:
                    why = f"the proof grew beyond {max_bytes} bytes, the checker's memory limit"
                if why:
                    p.kill()
                    p.wait()
                    break
                time.sleep(0.05)
        except BaseException:
            p.kill()
            p.wait()
            raise
        out.seek(0)
        err.seek(0)
        return (None if why else p.returncode), out.read(), err.read(), why


def solve_cnf(exe: str, cnf: Path, proof: Path, timeout: float) -> dict:
    """CaDiCaL on ``cnf`` writing a DRAT proof to ``proof``: answer unsat (exit 20), sat (10) or
    unknown, with the seconds."""
    t0 = time.perf_counter()
    rc, _out, err, why = _run([exe, *CADICAL_OPTIONS, str(cnf), str(proof)], timeout, watch=proof,
                                 max_bytes=MAX_PROOF_BYTES)
    answer = {20: "unsat", 10: "sat"}.get(rc, "unknown")
    reason = why or ("" if answer != "unknown" else f"exit {rc}: {err.strip()[-200:]}")
    return {"answer": answer, "reason": reason, "seconds": round(time.perf_counter() - t0, 3)}


def check_drat(cnf: Path, proof: Path, timeout: float, engine: str = "auto") -> dict:
    """The independent checker on (``cnf``, ``proof``) in a child process: verdict ``accepted``
    (the checker's ``ok`` and the empty clause reached), ``rejected`` (its reason and the failed
    step), ``timeout`` or ``error``; with its counts and seconds."""
    t0 = time.perf_counter()
    rc, out, err, why = _run([sys.executable, "-c", _CHECK, str(cnf), str(proof), engine], timeout)
    res = {"seconds": None}
    if why:
        res.update(verdict="timeout", reason=why)
    else:
        try:
            r = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            last = (err.strip().splitlines() or [f"exit {rc}"])[-1]
            res.update(verdict="error", reason=f"the checker failed: {last[-300:]}")
        else:
            accepted = r.pop("ok") and r["reached_empty"]
            res.update(r, verdict="accepted" if accepted else "rejected")
    res["seconds"] = round(time.perf_counter() - t0, 3)
    return res


def _why(chk: dict) -> str:
    head = {"rejected": "the checker rejected the proof", "timeout": "the checker ran out of time"}.get(
        chk["verdict"], "the checker failed")
    return head + (f": {chk['reason']}" if chk.get("reason") else "")


# ---- the API ----------------------------------------------------------------------------------------

def cell_name(prop_name: str, model_id: str, k: int) -> str:
    """The files' stem: ``PROPERTY.MODEL.kK`` with every character of an override other than
    letters, digits, '.', '_' and '-' written as '_'."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{prop_name}.{model_id}.k{k}")


def certify(name: str, spec, outdir, k: int | None = None, timeout: float = 600.0, engine: str = "auto",
            premise: bool = False) -> Certificate:
    """A certificate for property ``name`` of model ``spec`` at ``k`` products, written to the folder
    ``outdir`` (created if absent) as ``STEM.cnf``, ``STEM.drat`` and ``STEM.json``
    (:func:`cell_name`). ``timeout``: seconds for CaDiCaL and the checker together; ``engine``:
    the checker's (:data:`ENGINES`); ``premise``: certify the premise of the property's proof by
    reduction (:func:`queries.properties.reductions.premise`, the files named ``STEM.premise``)
    instead of the property's own formula.

    The property is not proved here: the certificate is a proof of its own, and a cell whose
    proof the checker does not accept is ``not certified`` whatever the SMT solvers said.
    Raises :class:`CertifyError` (a missing tool, a formula that is not unsat-shaped) and
    QueryError (unknown property or model, a bad k, a property that does not apply)."""
    t0 = time.perf_counter()
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise QueryError(f"certificate timeout must be positive, got {timeout!r}")
    if engine not in ENGINES:
        raise QueryError(f"unknown checker engine {engine!r}; one of {', '.join(ENGINES)}")
    prop = get_property(name)
    m = resolve(spec)
    k = prop.default_k(m) if k is None else k
    prop.check(m, k)
    exe, checker_version = require_tools()
    canon, certifies = None, "the property's formula (hypothesis and violation)"
    if premise:
        from .reductions import premise as reduction_premise
        found = reduction_premise(m, k)
        if found is None:
            raise CertifyError(f"{prop.name} of {m.id} (k={k}) has no reduction premise proved by a solver to certify")
        certifies, canon = "the premise of the proof by reduction: " + found[0], found[1]
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise CertifyError(f"--certify {outdir}: exists and is not a folder")
    outdir.mkdir(parents=True, exist_ok=True)
    stem = cell_name(prop.name, m.id, k) + (".premise" if premise else "")
    cert = Certificate(NOT_CERTIFIED, prop.name, m.id, k, prop.claim, certifies)
    stage = Path(tempfile.mkdtemp(prefix=f".{stem}.", suffix=".tmp", dir=outdir))
    try:
        cnf, proof = stage / f"{stem}.cnf", stage / f"{stem}.drat"
        tb = time.perf_counter()
        text, nv, nc = cnf_text(prop, m, k, canon)
        cnf.write_text(text, encoding="ascii")
        import z3
        cert.cnf = {"variables": nv, "clauses": nc, "bytes": cnf.stat().st_size, "sha256": _sha(cnf),
                    "from": "the canonical formula (what the SMT solvers read) of " + certifies,
                    "bit-blasting": f"z3 {z3.get_version_string()}: {'; '.join(TACTICS)}",
                    "seconds": round(time.perf_counter() - tb, 3)}
        left = timeout - (time.perf_counter() - t0)
        sol = solve_cnf(exe, cnf, proof, max(1.0, left))
        cert.solver = {"tool": f"cadical {cadical_version(exe)}", "options": list(CADICAL_OPTIONS)} | sol
        if sol["answer"] != "unsat":
            cert.reason = ("CaDiCaL found the CNF satisfiable: the bit-blasted formula has a model, so the "
                           "solvers' proof and the CNF disagree (a bug; please report)" if sol["answer"] == "sat"
                           else f"CaDiCaL gave no answer ({sol['reason']})")
            proof.unlink(missing_ok=True)
        else:
            cert.proof = {"format": "DRAT (text)", "lines": _lines(proof), "bytes": proof.stat().st_size,
                          "sha256": _sha(proof)}
            left = timeout - (time.perf_counter() - t0)
            chk = check_drat(cnf, proof, max(1.0, left), engine)
            cert.checker = {"tool": f"dratify {checker_version}: forward DRAT (every RUP and RAT step checked, "
                                    "deletions applied)"} | chk
            if chk["verdict"] == "accepted":
                cert.status = CERTIFIED
            else:
                cert.reason = _why(chk)
        cert.seconds = round(time.perf_counter() - t0, 3)
        files = {"cnf": cnf, "proof": proof, "summary": stage / f"{stem}.json"}
        cert.files = {key: str(outdir / p.name) for key, p in files.items() if key == "summary" or p.exists()}
        files["summary"].write_text(json.dumps({"tool": "mmaprobe property --certify"} | cert.to_dict(), indent=1)
                                    + "\n", encoding="utf-8")
        for key in ("cnf", "proof", "summary"):         # the summary last: present means complete
            if files[key].exists():
                os.replace(files[key], outdir / files[key].name)
            else:                                      # no stale file of an earlier run beside this summary
                (outdir / files[key].name).unlink(missing_ok=True)
        return cert
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def recheck(summary, engine: str = "auto") -> Certificate:
    """The checker run again on the CNF and proof a summary (``STEM.json``) names: the status as
    it stands now (a proof changed since it was written is checked as it is)."""
    d = json.loads(Path(summary).read_text(encoding="utf-8"))
    keep = {f: d.get(f) for f in ("property", "model", "k", "claim", "files", "cnf", "solver", "proof")}
    cert = Certificate(NOT_CERTIFIED, **keep)
    files = d.get("files", {})
    if "proof" not in files:
        cert.reason = "no proof was written (" + (d.get("reason") or "the solver gave none") + ")"
        return cert
    _exe, ver = require_tools()
    cnf, proof = Path(files["cnf"]), Path(files["proof"])
    t0 = time.perf_counter()
    chk = check_drat(cnf, proof, 3600.0, engine)
    cert.checker = {"tool": f"dratify {ver}"} | chk
    if _sha(proof) != (d.get("proof") or {}).get("sha256"):
        cert.reason = "the proof differs from the one recorded; "
    if chk["verdict"] == "accepted":
        cert.status = CERTIFIED
    else:
        cert.reason += _why(chk)
    cert.seconds = round(time.perf_counter() - t0, 3)
    return cert


__all__ = ["CERTIFIED", "ENGINES", "NOT_CERTIFIED", "Certificate", "CertifyError", "certify", "check_drat", "cnf_text",
           "recheck", "require_tools", "solve_cnf"]
