"""Reductions of the open property cells to smaller formulas, each decided by one solver with a
timeout: what a proof by lemmas would need the solvers to close. Nothing here is a result of
the property table; it measures whether a reduction brings a cell within a solver's reach.

    python bench/property_lemmas.py step MODEL [--prop monotonicity-inputs] [--what a] [--ulp]
                                         [--binade same|cross] [--timeout 60] [--solver bitwuzla]
    python bench/property_lemmas.py scale1 MODEL [--k K] [--timeout 60]

``step``: monotonicity reduced to one input moving (the others shared by the two copies). Any move
of several inputs is a chain of one-input moves, each between inputs that meet the hypothesis,
so the property follows from the one-input lemma at every position (at one position per block
where ``permutation`` holds). The lemma's violation is d' < d, or d' NaN where d is not (so that
the chain composes). ``--ulp`` (nonnegative inputs): the moved input grows by at most one
encoding, the chain of encodings between a_i and a_i'; ``--binade``: only moves that keep (same)
or change (cross) its exponent field.

``scale1``: scaling with s fixed at 1. For s > 0 the hypothesis (every exponent range an
interval) holds for each step 2^j x -> 2^(j+1) x, j < s, so scaling by 2^s is s steps of
scaling by 2; s < 0 is the same steps read backwards.

Prints one line per formula: the answer (unsat: the reduced formula holds), the solver and its
seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from queries.distinguish.api import resolve_model  # noqa: E402
from queries.properties.check import formula  # noqa: E402
from queries.properties.copies import copy_of, finite_inputs, summands, variable_names, well_formed  # noqa: E402
from queries.properties.defs import _out, get_property  # noqa: E402
from queries.properties.predicates import pattern_le, pattern_lt, value_le  # noqa: E402
from smtmodel.bv.canonical_backend import CanonicalFormula  # noqa: E402
from smtmodel.formats import get_format  # noqa: E402
from smtmodel.fp.classify import is_subnormal, sign_of  # noqa: E402
from smtmodel.solve import run_engines  # noqa: E402


def step_formula(prop_name: str, m, k: int, what: str, i: int, ulp: bool, binade: str, mant: int | None = None):
    """build(B) of the one-input lemma: ``what`` is a, b (input i), p (product i: a_i and b_i) or c;
    ``mant``: one case of a split on the moved input's mantissa field (its value in the first copy)."""
    prop = get_property(prop_name)
    fa, fb = m.operand_fmts

    def build(B):
        names = variable_names(m, k)
        v = {n: B.var(n, w) for n, w in names.items()}
        moved = [f"{what}{i}"] if what in "ab" else [f"a{i}", f"b{i}"] if what == "p" else ["c"]
        for nm in moved:
            v[nm + "_2"] = B.var(nm + "_2", names[nm])
        one = copy_of(v, m, k, "d")
        two = copy_of({n: v.get(n + "_2", x) for n, x in v.items()}, m, k, "d'")
        hyp = [t for cp in (one, two) for t in well_formed(m, cp)] + finite_inputs(m, one) + finite_inputs(m, two)
        if prop.inputs:
            for nm in [f"a{j}" for j in range(k)] + [f"b{j}" for j in range(k)] + [x + "_2" for x in moved]:
                s = sign_of(v[nm], fa if nm[0] == "a" else fb)
                if s is not None:
                    hyp.append(~s)
            for nm in moved:
                f = get_format(fa if nm[0] == "a" else fb)
                hyp.append(pattern_le(v[nm], v[nm + "_2"], f))
                if mant is not None:
                    hyp.append(v[nm].extract(f.shift + f.mbits - 1, f.shift).eq(mant))
                hi, lo = f.width - 1, f.shift
                u0, u1 = v[nm].extract(hi, lo), v[nm + "_2"].extract(hi, lo)
                if ulp:
                    hyp.append(u1.eq(u0) | u1.eq(u0 + 1))
                e0 = v[nm].extract(f.width - 2, f.shift + f.mbits)
                e1 = v[nm + "_2"].extract(f.width - 2, f.shift + f.mbits)
                if binade == "same":
                    hyp.append(e0.eq(e1))
                elif binade == "cross":
                    hyp.append(e0.ne(e1))
        elif what == "p":
            hyp.append(value_le(summands(m, one)[i], summands(m, two)[i]))
        else:
            hyp.append(pattern_le(one.c, two.c, m.c_fmt))
        if prop_name == "monotonicity-normal":
            for cp in (one, two):
                hyp += [~is_subnormal(x, fa) for x in cp.a] + [~is_subnormal(y, fb) for y in cp.b]
                hyp.append(~is_subnormal(cp.c, m.c_fmt))
        d1, d2 = one.build(m), two.build(m)
        x, y = _out(m, d1), _out(m, d2)
        return hyp + [pattern_lt(d2, d1, m.out_fmt) | (~x.nan & y.nan)], v
    return build


def scale1_formula(m, k: int):
    prop = get_property("scaling")

    def build(B):
        t, v = formula(prop, m, k, B)
        return t + [v["s"].eq(B.const(1, v["s"].w))], v
    return build


def decide(build, solver: str, timeout: float) -> str:
    t0 = time.perf_counter()
    canon = CanonicalFormula(build)
    if canon.false:
        return f"unsat (rewriting, {time.perf_counter() - t0:.1f} s)"
    winner, r, notes = run_engines(canon.on, (solver,), timeout)
    status = r.status if winner and r is not None else "unknown"
    return f"{status} ({solver}, {time.perf_counter() - t0:.1f} s{'; ' + '; '.join(notes) if notes else ''})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("step", help="monotonicity, one input moving")
    st.add_argument("model")
    st.add_argument("--prop", default="monotonicity-inputs",
                    choices=("monotonicity", "monotonicity-normal", "monotonicity-products", "monotonicity-inputs"))
    st.add_argument("--what", default="a", choices=("a", "b", "p", "c"))
    st.add_argument("--at", type=int, default=0, help="the position moved (default 0)")
    st.add_argument("--ulp", action="store_true")
    st.add_argument("--binade", choices=("any", "same", "cross"), default="any")
    st.add_argument("--mant", type=int, help="one case of a split: the moved input's mantissa field in the first copy")
    sc = sub.add_parser("scale1", help="scaling with s = 1")
    sc.add_argument("model")
    sc.add_argument("--k", type=int)
    for p in (st, sc):
        p.add_argument("--timeout", type=float, default=60.0)
        p.add_argument("--solver", default="bitwuzla", choices=("bitwuzla", "z3", "cvc5"))
    a = ap.parse_args(argv)
    m = resolve_model(a.model)
    if a.cmd == "step":
        prop = get_property(a.prop)
        if a.what in "ab" and not prop.inputs or a.what == "p" and prop.inputs or a.what == "c" and not prop.move_c:
            ap.error(f"--what {a.what} is not a move of {a.prop}")
        if (a.ulp or a.binade != "any") and not prop.inputs:
            ap.error("--ulp and --binade are steps of monotonicity-inputs")
        k = prop.default_k(m)
        build = step_formula(a.prop, m, k, a.what, a.at, a.ulp, a.binade, a.mant)
        what = f"{a.prop} {m.id} k={k}: {a.what}{a.at if a.what != 'c' else ''} moves" + \
            (", one encoding" if a.ulp else "") + (f", binade {a.binade}" if a.binade != "any" else "") + \
            (f", mantissa field {a.mant}" if a.mant is not None else "")
    else:
        k = a.k or get_property("scaling").default_k(m)
        build = scale1_formula(m, k)
        what = f"scaling {m.id} k={k}: s = 1"
    print(f"{what}: {decide(build, a.solver, a.timeout)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
