"""``mmaprobe chain-equal MODEL1 MODEL2``: two models' chained GEMMs under one dataflow proved
equal for every K (identical parameters, or induction over the chain's blocks), or refuted at
the smallest K with a witness the GEMM twin confirms (:mod:`queries.crossgpu`).

Exit status: 0 proved; 1 refuted (the witness is printed); 2 user error (unknown model, models of
different formats, a dataflow that does not apply, a bad --k-max); 3 unknown; 4 the twin
contradicts a solver (a bug, never a result).
"""

from __future__ import annotations

from queries.crossgpu import K_MAX_LIMIT, chain_equal
from smtmodel.formats import get_format
from smtmodel.fp.classify import value_text
from smtmodel.solve import SOLVER_CHOICES

from ..args import add_output, add_solver
from ..errors import EXIT_OTHER, EXIT_UNKNOWN
from ..io import write_json
from .gemm import _dataflow_arg


def _seq(xs, f) -> str:
    return "[" + ", ".join(f.hex(x) for x in xs) + "]"


def _vals(xs, f) -> str:
    return "[" + ", ".join(value_text(x, f) for x in xs) + "]"


def _obligation_line(ob) -> str:
    who = ob.cached if ob.cached else ob.solver
    tail = f" ({ob.reason})" if ob.reason else ""
    return f"  {ob.status:<8} {ob.name}  [{who}, {ob.seconds:.2f} s]{tail}"


def _runs(checked) -> list:
    """The search's (K, status, who, seconds) with consecutive K of one status and engine merged."""
    out = []
    for K, st, who, sec in checked:
        kind = who.split(" (")[0] if not who.startswith("cached") else "proof cache"
        if out and out[-1][1] == st and out[-1][4] == kind and out[-1][0][1] == K - 1:
            (k0, _), _s, w, t, _k = out[-1]
            out[-1] = ((k0, K), st, w if w == who else kind, t + sec, kind)
        else:
            out.append(((K, K), st, who, sec, kind))
    return [(f"{a}" if a == b else f"{a}..{b}", st, who, sec) for (a, b), st, who, sec, _k in out]


def print_result(res) -> None:
    a_id, b_id = res.models
    fa, fb, fc, fo = (get_format(f) for f in res.formats)
    print(f"{a_id} vs {b_id}: chained GEMMs under dataflow {res.dataflow}")
    for line in res.notes:
        print(f"note: {line}")
    if res.status == "proved":
        print(f"proved: the GEMMs agree for every K and every input ({res.how}: {res.reason}; {res.seconds:.2f} s)")
    for ob in res.obligations:
        print(_obligation_line(ob))
    if res.step_witness:
        s = res.step_witness
        fs = get_format(s["acc_fmt"])
        print(f"step-level difference ({s['obligation']}): a = {_seq(s['a'], fa)}, b = {_seq(s['b'], fb)}, "
              f"accumulator {fs.hex(s['c'])} = {value_text(s['c'], fs)} -> {fo.hex(s['d'][0])} vs {fo.hex(s['d'][1])} "
              "(a step, not necessarily reachable by a real chain)")
    if res.status == "refuted":
        w = res.witness
        fd = get_format(w["out_fmt"])
        least = ("the smallest K the dataflow admits" if res.k == res.k_first else
                 "the smallest K: every K below it proved equal" if res.smallest else
                 f"not proved the smallest: {res.reason}")
        print(f"refuted at K = {res.k} ({least}); witness found by {w['found_by']}, reachable: a real GEMM "
              f"({w['call']}) confirmed by the GEMM twin")
        print(f"  a = {_seq(w['a'], fa)}\n    = {_vals(w['a'], fa)}")
        print(f"  b = {_seq(w['b'], fb)}\n    = {_vals(w['b'], fb)}")
        print(f"  c = {fc.hex(w['c'])} = {value_text(w['c'], fc)}")
        for mid, d in zip(res.models, w["d"]):
            print(f"  D[{mid}] = {fd.hex(d)} = {value_text(d, fd)}")
    for ks, st, who, sec in _runs(res.checked):
        print(f"  K = {ks}: {st} [{who}, {sec:.2f} s]")
    if res.status == "unknown":
        print(f"unknown: {res.reason} ({res.seconds:.2f} s)")


def cmd_chain_equal(args) -> int:
    res = chain_equal(args.model_a, args.model_b, dataflow=_dataflow_arg(args.dataflow), k_max=args.k_max,
                      solver=args.solver, timeout=args.timeout, twin_seconds=args.twin_seconds)
    print_result(res)
    if args.output:
        write_json(args.output, {"tool": "mmaprobe chain-equal"} | res.to_dict())
    return {"proved": 0, "refuted": EXIT_OTHER}.get(res.status, EXIT_UNKNOWN)


def register(sub) -> None:
    s = sub.add_parser("chain-equal", help="prove two models' chained GEMMs equal for every K, or refute at the "
                                          "smallest K (two GPUs under one dataflow)")
    s.add_argument("model_a", help="catalog model id[:overrides]")
    s.add_argument("model_b", help="catalog model id[:overrides] of the same formats")
    s.add_argument("--dataflow", help="the GEMM dataflow: PROFILE, PROFILE:key=value,..., key=value,..., a JSON "
                                      "object or @FILE (default cutlass2; `mmaprobe dataflows` lists the profiles)")
    s.add_argument("--k-max", type=int, default=None,
                   help=f"the largest K the refutation search tries (default: four blocks, at least two chunks of "
                        f"the dataflow; at most {K_MAX_LIMIT})")
    s.add_argument("--twin-seconds", type=float, default=2.0, help="seconds of twin search per K (default 2)")
    add_solver(s, SOLVER_CHOICES, "portfolio", 60.0, what="each solver query",
               help="solver (default: portfolio, the twin search first, then bitwuzla and z3 raced)")
    add_output(s, help="write the result (obligations, witness, the K checked) as JSON")
    s.set_defaults(func=cmd_chain_equal)
