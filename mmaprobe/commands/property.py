"""``mmaprobe properties`` / ``property NAME MODEL``: a property of one unit proved or refuted.

Exit status: 0 proved; 1 refuted (a witness pair, confirmed by the twin, both evaluations
shown); 2 user error, and a property that does not apply to the model; 3 unknown (the timeout is
named); 4 the twin contradicts a solver (a bug, never a result). With ``--certify DIR``, 0 needs
the proof certified too: a proved property whose certificate is not accepted exits 3.
"""

from __future__ import annotations

import os
import sys

from queries.distinguish.errors import QueryError
from queries.properties import CHOICES, PROPERTIES, check_property
from queries.properties.certify import CERTIFIED, certify, require_tools
from queries.properties.check import REDUCTION, REWRITING
from smtmodel.catalog import unvalidated_ids
from smtmodel.formats import get_format
from smtmodel.fp.classify import value_text
from smtmodel.limits import check_at_most, run_within

from ..args import add_k, add_output, add_solver
from ..errors import EXIT_OTHER, EXIT_UNKNOWN, CliError
from ..io import write_json
from .catalog import note_unvalidated


def cmd_properties(args) -> int:
    for p in PROPERTIES.values():
        print(f"{p.name:<22} {p.title}  [{p.source}]")
    return 0


def _seq(xs, f) -> str:
    return "[" + ", ".join(f.hex(x) for x in xs) + "]"


def _vals(xs, f) -> str:
    return "[" + ", ".join(value_text(x, f) for x in xs) + "]"


def print_witness(res, out=None) -> None:
    out = out or sys.stdout
    fa, fb, fc, fo = (get_format(f) for f in res.formats)
    w = res.witness
    for cp in w.copies:
        print(f"  {cp['label']}:", file=out)
        print(f"    a = {_seq(cp['a'], fa)}\n      = {_vals(cp['a'], fa)}", file=out)
        print(f"    b = {_seq(cp['b'], fb)}\n      = {_vals(cp['b'], fb)}", file=out)
        print(f"    c = {fc.hex(cp['c'])} = {value_text(cp['c'], fc)}", file=out)
        if "a_scale" in cp:
            print(f"    a_scale = {cp['a_scale']}, b_scale = {cp['b_scale']} (raw)", file=out)
        print(f"    -> {fo.hex(cp['d'])} = {value_text(cp['d'], fo)}", file=out)
    for line in w.notes:
        print(f"  {line}", file=out)


K_MAX = 1024
"""The largest k ``property`` takes: the formula's size and the time to build it grow with k
(permutation of volta-fp16-fp32: about 20 s at k = 64 and 90 s at k = 128 before any solver
runs), so a larger k could only run out of memory or time."""

GRACE_S = 2.0
"""Seconds past ``--timeout`` before a check still building its formula is abandoned."""


def print_certificate(cert, out=None) -> None:
    out = out or sys.stdout
    c, s, p, k = cert.cnf, cert.solver, cert.proof, cert.checker
    if c:
        print(f"  CNF: {c['variables']} variables, {c['clauses']} clauses ({c['bit-blasting']}, {c['seconds']:.1f} s)",
              file=out)
    if s:
        print(f"  solver: {s['tool']} {' '.join(s['options'])}: {s['answer']} in {s['seconds']:.1f} s", file=out)
    if p:
        print(f"  proof: {p['format']}, {p['lines']} lines, {p['bytes']} bytes", file=out)
    if k:
        print(f"  checker: {k['tool']}, engine {k.get('engine', '?')}: {k['verdict']} in {k['seconds']:.1f} s", file=out)
    if cert.status == CERTIFIED:
        print(f"certified: the checker accepts the proof ({', '.join(cert.files.values())})", file=out)
    else:
        print(f"not certified: {cert.reason}" + (f" ({cert.files['summary']})" if cert.files else ""), file=out)


def cmd_property(args) -> int:
    if args.certify is not None:
        if not 0 < args.certify_timeout < float("inf"):
            raise QueryError(f"--certify-timeout must be positive and finite, got {args.certify_timeout:g}")
        if os.path.exists(args.certify) and not os.path.isdir(args.certify):
            raise QueryError(f"--certify {args.certify}: exists and is not a folder")
        require_tools()                     # a missing solver or checker: one line, before the work
    if args.k is not None:
        check_at_most("--k", args.k, K_MAX, "the formula grows with k")
    if not (isinstance(args.timeout, (int, float)) and 0 < args.timeout < float("inf")):
        raise CliError(f"--timeout must be positive and finite, got {args.timeout!r}")
    finished, res = run_within(
        lambda: check_property(args.name, args.model, k=args.k, timeout=args.timeout, solver=args.solver,
                               smt2_path=args.smt2),
        args.timeout + GRACE_S, f"property {args.name} of {args.model}", "lower --k")
    if not finished:
        print(f"property {args.name} of {args.model}" + (f" (k={args.k})" if args.k else ""))
        print(f"unknown: the check did not finish within --timeout {args.timeout:g} s (it was still building "
              f"the formula; a smaller --k or a longer --timeout may settle it)")
        note_unvalidated(unvalidated_ids([args.model]))
        return EXIT_UNKNOWN
    if args.smt2:
        print(f"wrote SMT-LIB2 formula to {args.smt2}", file=sys.stderr)
    head = f"property {res.property} of {res.model} (k={res.k})"
    print(f"{head}\n  claim: {res.claim}")
    if res.status == "proved":
        who = f"{res.cached}; read from the proof cache, --no-cache proves it again" if res.cached else \
            f"proved by {res.solver}" + (": the formula reduces to false in the canonical reading" if res.solver == REWRITING else "")
        print(f"proved: no input violates it ({who}; the check took {res.seconds:.2f} s)")
        if res.argument:
            print(f"  argument: {res.argument}")
        rc = 0
    elif res.status == "refuted":
        print(f"refuted: witness found by {res.solver} in {res.seconds:.2f} s (confirmed by the twin)")
        print_witness(res)
        rc = EXIT_OTHER
    else:
        hint = "" if args.solver == REWRITING else "; a longer --timeout may settle it"
        print(f"unknown: {res.reason} (neither proved nor refuted{hint})")
        rc = EXIT_UNKNOWN
    note_unvalidated(unvalidated_ids([res.model]))
    if args.certify is not None:
        if res.status != "proved":
            print(f"not certified: the property is {res.status}, there is no proof to certify")
        elif res.solver == REWRITING:
            print("not certified: proved by rewriting, whose formula is the constant false (a certificate would "
                  "check nothing)")
            rc = EXIT_UNKNOWN
        elif res.solver == REDUCTION and not res.premise_by:
            print("not certified: proved by reduction, an identity of terms and a theorem about rounding (no "
                  "solver answer to certify)")
            rc = EXIT_UNKNOWN
        else:
            cert = certify(res.property, args.model, args.certify, k=res.k, timeout=args.certify_timeout,
                           premise=res.solver == REDUCTION)
            if cert.certifies.startswith("the premise"):
                print(f"  certifies {cert.certifies}")
            print_certificate(cert)
            if cert.status != CERTIFIED:
                rc = EXIT_UNKNOWN
    if args.output:
        write_json(args.output, {"tool": "mmaprobe property"} | res.to_dict())
    return rc


def register(sub) -> None:
    s = sub.add_parser("properties", help="list the properties `mmaprobe property` proves or refutes")
    s.set_defaults(func=cmd_properties)

    s = sub.add_parser("property", help="prove or refute a property of one unit (monotonicity, permutation, ...)")
    s.add_argument("name", help="property name (`mmaprobe properties` lists them)")
    s.add_argument("model", help="catalog model id[:overrides]")
    add_k(s, help="products per case (default: the property's, usually the instruction K)")
    add_solver(s, CHOICES, "portfolio", 60.0, what="the whole check",
               help="portfolio (default: rewriting and the reductions, the twin search, then bitwuzla and z3 "
                    "raced, first on the restricted question (products after the first two zero) where 10 s or "
                    "more are left), twin (search only: refutes), rewriting (rewriting and the reductions only: proves), "
                    "or one solver")
    s.add_argument("--smt2", metavar="FILE", help="also write the formula (hypothesis and violation) as SMT-LIB2")
    add_output(s, help="write the result (status, solver, witness) as JSON")
    s.add_argument("--certify", metavar="DIR",
                   help="when proved, also write a proof certificate into DIR: the formula bit-blasted to CNF, "
                        "CaDiCaL's DRAT proof and a JSON summary; certified only if the DRAT checker dratify accepts "
                        "the proof (needs cadical and dratify)")
    s.add_argument("--certify-timeout", type=float, default=600.0, metavar="S",
                   help="seconds for the certificate's solver and checker together (default 600)")
    s.set_defaults(func=cmd_property)
