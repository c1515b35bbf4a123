"""Table 9 rows: the lemmas per signature group, the bound they establish, and a refutation
(twin search or monolithic query) where a lemma fails."""

from __future__ import annotations

import time
from fractions import Fraction

from smtmodel.model import Model

from .formula import beta_for, by_signature, prove_bound, twin_refute
from .lemmas import TR_OPS, prove_lemmas, summands, table9_models, tr_alpha


def bound_text(m: Model, alpha) -> str:
    """The bound the lemmas establish, with fused-summation constant ``alpha``."""
    beta = beta_for(m)
    if m.op in TR_OPS:
        return f"{alpha}*2^(E-F) + {beta} ulp(d)  (E = max(e_max, Exp(c)); F2 = {m.F2})"
    if m.op == "fp8_via_fp16":
        return (f"{alpha}*(2^(e1-F) + 2^(e2-F)) + {beta}*(ulp(d1) + ulp(d2)) + 1/2 ulp(d)  "
                "(halves d1, d2 with alignment exponents e1, e2; c added with RNE)")
    return f"{alpha}*2^(e_max-F) + {beta} ulp(d)"


def lemma_table(models=None, solver: str = "z3", timeout: float = 60, refute: bool = False, log=None,
                wide: bool | None = None) -> list[dict]:
    """Table 9 for each model by the lemmas (one proof per signature, shared by equal models);
    with ``refute``, also a monolithic SAT query for a violation of alpha = L (a witness shows
    that the constant L + 1 cannot be lowered to L; re-checked by the twin; T-FDPA only).

    alpha: Table 9's constant is L + 1; the proof counts the summands n actually aligned (L + 1,
    or L/G + 1 groups for GST-FDPA), n - 1 where lemma A0 shows the e_max summand is exact.

    ``wide``: lemmas A and B over the wide e_max range (lemmas.WIDE_RANGE); default: for the
    parameter sets that share their lemma-B formula with another set of this call."""
    from collections import Counter

    from .lemmas import round_key
    rows = []
    groups = by_signature(models or table9_models())
    shared = Counter(round_key(ms[0]) for ms in groups) if wide is None else None
    for ms in groups:
        m = ms[0]
        lem = prove_lemmas(m, solver, timeout, wide if wide is not None else shared[round_key(m)] > 1)
        ok = all(x.status == "unsat" for x in lem if not x.name.split("/")[-1].startswith("A0"))
        tight = ok and all(x.status == "unsat" for x in lem if x.name.split("/")[-1].startswith("A0"))
        if m.op in TR_OPS:
            st = {x.name: x.status == "unsat" for x in lem}
            a = tr_alpha(m, st["A0:product"], st["A0:c"])
            alpha_proved = (int(a) if a.denominator == 1 else str(a)) if ok else None
            ok = ok and a <= m.L + 1
            n = m.L + 1
        else:
            n = summands(m)
            alpha_proved = (n - 1 if tight else n) if ok else None
        row = {"model": m.id, "op": m.op, "same_as": [x.id for x in ms[1:]], "L": m.L, "F": m.F, "rho": m.rho,
               "alpha": m.L + 1, "beta": str(beta_for(m)), "summands": n, "bound": bound_text(m, m.L + 1),
               "proved": ok, "alpha_proved": alpha_proved,
               "lemmas": [x.to_dict() for x in lem], "seconds": round(sum(x.seconds for x in lem), 2)}
        if not ok and m.op == "tfdpa":
            t0 = time.perf_counter()
            tw = twin_refute(m)
            if tw is not None:
                row["refuted"] = {**tw, "seconds": round(time.perf_counter() - t0, 2), "by": "twin search, Fractions re-check"}
            else:
                r = prove_bound(m, "z3", timeout)
                row["monolithic"] = r.to_dict()
        if refute and m.op == "tfdpa":
            r = prove_bound(m, "z3", timeout, alpha=Fraction(m.L))
            row["alpha_L"] = {"status": r.status, "seconds": round(r.seconds, 2), "witness": r.witness,
                              "measured": r.measured}
        rows.append(row)
        if log:
            extra = ""
            if "refuted" in row:
                extra = f"; REFUTED by witness {row['refuted']['witness']} measured {row['refuted']['measured']}"
            if "monolithic" in row:
                extra = f"; monolithic alpha=L+1: {row['monolithic']['status']} {row['monolithic']['seconds']:.1f}s"
            if "alpha_L" in row:
                extra += f"; alpha=L: {row['alpha_L']['status']} ({row['alpha_L']['seconds']:.1f}s)"
            log(f"{m.id:<32} {m.op:<12} L={m.L:<2} F={m.F} {m.rho:<8} |err| <= {row['bound']}: "
                f"{'PROVED' if ok else 'NOT PROVED'}" + (f", tightest alpha proved {alpha_proved}" if ok else "")
                + f" ({row['seconds']:.2f}s: " +
                ", ".join(f"{x.name} {x.status}{' (cached)' if 'cached, proved by' in x.solver else ''} {x.seconds:.2f}s"
                          for x in lem) + ")" + extra
                + (f"  [also {', '.join(row['same_as'])}]" if row["same_as"] else ""))
    return rows


