"""Seed 000 Table 9's error bound for T-FDPA models, proved (UNSAT of a violation) or refuted.

For one FDPA operation of a catalog model (K = L products and c), the claim is

    |Phi(a, b, c) - (c + sum a_k b_k)|  <=  alpha * 2^(e_max - F)  +  beta * ulp(d)

with alpha = L + 1 (fused summation: L + 1 summands each truncated below 2^(e_max - F)) and
beta = 1/2 for RNE outputs, 1 for RZ outputs (seed 000 §6.1; ulp of the result d in the output
precision: fp32, fp16, or E8M13 for RZ-E8M13). e_max is the model's own alignment exponent
(max over Exp(a_k) + Exp(b_k) and Exp(c), with the model's zero rule), computed with the same
core code as the model (:func:`smtmodel.ops.fused.product_term`). Inputs are any finite values;
results that overflow to infinity are excluded. The violation is a QF_BV formula in the semantic
core; z3 (bit-blasting) answers it. UNSAT proves the bound for every such input; SAT gives a
witness that the twin and exact rationals re-check. :func:`tightest` then bisects alpha (beta
fixed) for the smallest constant the solver can prove.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction

import numpy as np

from smtmodel.bv import NUMPY, Bool, smax_all
from smtmodel.catalog import all_models, get_model
from smtmodel.formats import get_format
from smtmodel.fp import decode
from smtmodel.fp.classify import classify_bits, encode_fields
from smtmodel.model import Model, ModelError
from smtmodel.ops.fdpa import RHO, rho_format
from smtmodel.ops.fused import product_term, value_term
from smtmodel.sampling import special_heavy
from smtmodel.schemes.exact import Window, abs_fixed, exact_fixed, pow2_units, products, to_fixed, ulp_units
from smtmodel.solve import make_engine

from ..distinguish.errors import TwinDisagreement
from .exact import floor_log2, ulp_of, value_of


def tfdpa_models(include_rivals: bool = True) -> list[Model]:
    """Every T-FDPA model of the catalog; without ``include_rivals`` only the GPUs' own (kind catalog).
    Mixed-operand models are left out: the bound's formulas read one input format."""
    return [m for m in all_models() if m.op == "tfdpa" and not m.mixed and (include_rivals or m.kind == "catalog")]


def signature(m: Model) -> tuple:
    """Models with equal signatures have the same formula (their proofs are shared)."""
    return (m.op, get_format(m.in_fmt).name, get_format(m.c_fmt).name, get_format(m.out_fmt).name, m.L, m.F, m.rho,
            m.carry, m.normalize, m.zero_prod, m.zero_c, m.flush_inputs, m.specials, m.scale_fmt, m.G,
            m.round_products, m.flush_outputs, m.c_entry, m.c_rm)


def by_signature(models) -> list[list[Model]]:
    """Models grouped by signature, in first-seen order (one proof serves each group)."""
    groups: dict = {}
    for m in models:
        groups.setdefault(signature(m), []).append(m)
    return list(groups.values())


def beta_for(m: Model) -> Fraction:
    return Fraction(1) if RHO[m.rho].rm == "RZ" else Fraction(1, 2)


class BoundFormula:
    def __init__(self, B, m: Model, inputs: dict | None = None):
        self.B, self.m = B, m
        L = m.L
        fi, fc, fo = (get_format(f) for f in (m.in_fmt, m.c_fmt, m.out_fmt))
        self.fi, self.fc = fi, fc
        if inputs is not None:          # concrete arrays (twin reading)
            self.v = {n: NUMPY.input(arr, fc.width if n == "c" else fi.width) for n, arr in inputs.items()}
        else:
            self.v = {f"a{i}": B.var(f"a{i}", fi.width) for i in range(L)}
            self.v.update({f"b{i}": B.var(f"b{i}", fi.width) for i in range(L)})
            self.v["c"] = B.var("c", fc.width)
        a = [self.v[f"a{i}"] for i in range(L)]
        b = [self.v[f"b{i}"] for i in range(L)]
        c = self.v["c"]
        self.d = m.build(a, b, c)
        A = [decode(x, fi) for x in a]
        Bv = [decode(y, fi) for y in b]
        C = decode(c, fc)
        Am = [m.decode_input(x, fi) for x in a]
        Bm = [m.decode_input(y, fi) for y in b]
        Cm = m.decode_input(c, fc)
        P = products(A, Bv)
        Pm = products(Am, Bm)
        aexps = [product_term(x, y, p, m.normalize, m.zero_prod).aexp for x, y, p in zip(Am, Bm, Pm)]
        aexps.append(value_term(Cm, m.zero_c).aexp)
        self.emax = smax_all(aexps)
        rf = rho_format(RHO[m.rho])
        D = decode(self.d, fo)
        terms = P + [C]
        win = Window.covering(terms + [D], extra_terms=2)
        lowest = min(-126 - 126, fi.emin * 2, fc.emin) - m.F - 4       # below any 2^(e_max - F)
        if lowest < win.lsb0:
            win = Window(lowest, win.W + (win.lsb0 - lowest))
        self.win = win
        self.exact = exact_fixed(terms, win)
        self.err = to_fixed(D, win.lsb0, win.W) - self.exact
        self.abs_err = abs_fixed(self.err)
        self.unit_sum = pow2_units(self.emax - m.F, win)
        self.ulp_d = ulp_units(abs_fixed(to_fixed(D, win.lsb0, win.W)), win, rf.precision, rf.emin)
        finite = []
        for x in a + b:
            X = decode(x, fi)
            finite.append(~(X.nan | X.inf))
        Cd = decode(c, fc)
        finite.append(~(Cd.nan | Cd.inf))
        finite.append(~(D.nan | D.inf))
        self.base = finite

    def violation(self, alpha: Fraction, beta: Fraction) -> Bool:
        q = 0
        while alpha.denominator > 1 << q or beta.denominator > 1 << q:
            q += 1
        an, bn = int(alpha * (1 << q)), int(beta * (1 << q))
        w = self.win.W + q + max(an.bit_length(), bn.bit_length()) + 4
        lhs = self.abs_err.uresize(w) << q
        rhs = self.unit_sum.uresize(w) * an + self.ulp_d.uresize(w) * bn
        return lhs.ugt(rhs)


def recheck(m: Model, vals: dict, alpha: Fraction, beta: Fraction) -> dict:
    """Twin output and exact rationals on a witness: returns the measured quantities and raises
    TwinDisagreement if the bound is not in fact violated."""
    L = m.L
    fi, fc, fo = (get_format(f) for f in (m.in_fmt, m.c_fmt, m.out_fmt))
    a = np.array([[vals[f"a{i}"] for i in range(L)]], dtype=np.uint64)
    b = np.array([[vals[f"b{i}"] for i in range(L)]], dtype=np.uint64)
    c = np.array([vals["c"]], dtype=np.uint64)
    d = int(m.evaluate(a, b, c)[0])
    exact = sum((value_of(vals[f"a{i}"], fi) * value_of(vals[f"b{i}"], fi) for i in range(L)), value_of(vals["c"], fc))
    dv = value_of(d, fo)
    # e_max per seed 000 Algorithm 7 with the model's zero rule (independent re-computation)
    def ex(bits, fmt):
        fmt = get_format(fmt)
        v = value_of(bits, fmt)
        return fmt.emin if v == 0 or classify_bits(bits, fmt).subnormal else floor_log2(v)

    def is_zero(bits, fmt):
        return classify_bits(bits, fmt).zero
    es = []
    for i in range(L):
        x, y = vals[f"a{i}"], vals[f"b{i}"]
        zx, zy = is_zero(x, fi), is_zero(y, fi)
        if (zx or zy) and m.zero_prod == "ignore":
            continue
        if (zx or zy) and isinstance(m.zero_prod, int):
            es.append(m.zero_prod)
            continue
        e = (-126 if zx else ex(x, fi)) + (-126 if zy else ex(y, fi))
        if m.normalize and not (zx or zy):
            e += int(abs(value_of(x, fi) * value_of(y, fi)) >= Fraction(2) ** (e + 1))
        es.append(e)
    zc = m.zero_c if m.zero_c != "seed000" else -126
    if not (is_zero(vals["c"], fc) and zc == "ignore"):
        es.append(zc if is_zero(vals["c"], fc) else ex(vals["c"], fc))
    emax = max(es) if es else -(1 << 14)
    rf = rho_format(RHO[m.rho])
    bound = alpha * Fraction(2) ** (emax - m.F) + beta * ulp_of(dv, rf.precision, rf.emin)
    err = dv - exact
    if not abs(err) > bound:
        raise TwinDisagreement(f"{m.id}: solver claims a violation of alpha={alpha}, beta={beta} on {vals}, but "
                               f"the twin/exact arithmetic give |err| = {float(abs(err))} <= {float(bound)}")
    return {"d": f"0x{d:0{fo.hex_digits}x}", "d_value": float(dv), "exact": float(exact), "abs_error": float(abs(err)),
            "e_max": emax, "bound": float(bound), "err_over_2^(emax-F)": float(abs(err) / Fraction(2) ** (emax - m.F))}


@dataclass
class BoundResult:
    model: str
    L: int
    F: int
    rho: str
    alpha: str                   # the Table 9 constant tried: L + 1
    beta: str
    status: str                  # "proved", "refuted", "unknown"
    seconds: float
    solver: str
    witness: dict | None = None
    measured: dict | None = None
    tight_proved: str | None = None     # smallest alpha proved (UNSAT)
    tight_refuted: str | None = None    # largest alpha refuted (SAT witness)
    tight_queries: list = field(default_factory=list)
    same_as: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        head = (f"{self.model}: L={self.L} F={self.F} {self.rho}: |err| <= {self.alpha}*2^(e_max-F) + {self.beta} ulp: "
                f"{self.status.upper()} ({self.solver}, {self.seconds:.2f} s)")
        if self.tight_proved or self.tight_refuted:
            head += (f"; tightest alpha: proved {self.tight_proved or '-'}, refuted {self.tight_refuted or '-'}")
        if self.witness:
            head += f"\n  witness {self.witness}\n  measured {self.measured}"
        return head


def prove_bound(spec, solver: str = "z3", timeout: float = 120, alpha: Fraction | None = None,
                beta: Fraction | None = None) -> BoundResult:
    m = get_model(spec)
    if m.op != "tfdpa":
        raise ModelError(f"{m.id}: the Table 9 T-FDPA bound applies to op tfdpa, not {m.op}")
    if m.mixed:
        raise ModelError(f"{m.id}: the bound's formula reads one input format; A and B differ here")
    alpha = Fraction(m.L + 1) if alpha is None else Fraction(alpha)
    beta = beta_for(m) if beta is None else Fraction(beta)
    eng = make_engine(solver)
    B = eng.B
    f = BoundFormula(B, m)
    r = eng.check(f.base + [f.violation(alpha, beta)], f.v, timeout)
    st, dt, reason, vals = r.unpack()
    res = BoundResult(m.id, m.L, m.F, m.rho, str(alpha), str(beta),
                      {"unsat": "proved", "sat": "refuted"}.get(st, "unknown"), dt,
                      f"{solver} ({r.extra['cached']})" if r.extra.get("cached") else solver)
    if st == "sat":
        res.witness = {n: hex(v) for n, v in vals.items()}
        res.measured = recheck(m, vals, alpha, beta)
    return res


def tightest(spec, solver: str = "z3", timeout: float = 120, steps: int = 6, beta: Fraction | None = None,
             res: BoundResult | None = None, budget: float = 600) -> BoundResult:
    """Bisect alpha in [0, L+1] (beta fixed) on multiples of 1/8: the smallest alpha proved and
    the largest refuted (with its witness re-checked)."""
    m = get_model(spec)
    beta = beta_for(m) if beta is None else Fraction(beta)
    res = res or prove_bound(m, solver, timeout, beta=beta)
    eng = make_engine(solver)
    B = eng.B
    f = BoundFormula(B, m)
    hi = Fraction(m.L + 1) if res.status == "proved" else None
    lo = Fraction(0)
    t0 = time.perf_counter()
    if hi is None:
        return res
    for _ in range(steps):
        if time.perf_counter() - t0 > budget or hi - lo <= Fraction(1, 8):
            break
        mid = Fraction(math.floor((lo + hi) / 2 * 8), 8)
        if mid <= lo:
            mid = lo + Fraction(1, 8)
        r = eng.check(f.base + [f.violation(mid, beta)], f.v, timeout)
        st, dt, reason, vals = r.unpack()
        res.tight_queries.append({"alpha": str(mid), "status": st, "seconds": round(dt, 2)}
                                 | ({"cached": r.extra["cached"]} if r.extra.get("cached") else {}))
        if st == "unsat":
            hi = mid
        elif st == "sat":
            recheck(m, vals, mid, beta)
            lo = mid
            res.tight_refuted = str(mid)
        else:
            break
    res.tight_proved = str(hi)
    return res


def prove_all(solver: str = "z3", timeout: float = 120, tight: bool = False, models=None, log=None) -> list[BoundResult]:
    """Table 9 for every T-FDPA catalog model; models with one signature share one proof."""
    out = []
    for ms in by_signature(models or tfdpa_models()):
        r = prove_bound(ms[0], solver, timeout)
        if tight and r.status == "proved":
            r = tightest(ms[0], solver, timeout, res=r)
        r.same_as = [m.id for m in ms[1:]]
        out.append(r)
        if log:
            log(r)
    return out



def twin_refute(spec, alpha: Fraction | None = None, beta: Fraction | None = None, n: int = 3000,
                rounds: int = 4, seed: int = 0) -> dict | None:
    """Search special-heavy random inputs with the twin (the same violation predicate, concrete)
    for a counterexample to the bound; a hit is re-checked with exact Fractions."""
    m = get_model(spec)
    alpha = Fraction(m.L + 1) if alpha is None else Fraction(alpha)
    beta = beta_for(m) if beta is None else Fraction(beta)
    fi, fc = get_format(m.in_fmt), get_format(m.c_fmt)
    g = np.random.default_rng(seed)
    for r in range(rounds + 1):
        if r == 0:      # structured: every product at its largest significand, one sign (carry chains)
            mx = ((1 << fi.mbits) - 1 if fi.policy != "fn" else (1 << fi.mbits) - 2)
            base = [encode_fields(fi, 0, fi.bias + de, mx) for de in range(0, 3)]
            cs = [0] + [encode_fields(fc, 0, fc.bias + de, (1 << fc.mbits) - 1) for de in range(0, 6)]
            combos = [(x, y, cc) for x in base for y in base for cc in cs]
            ins = {f"a{i}": np.array([x for x, _, _ in combos], np.uint64) for i in range(m.L)}
            ins.update({f"b{i}": np.array([y for _, y, _ in combos], np.uint64) for i in range(m.L)})
            ins["c"] = np.array([cc for _, _, cc in combos], np.uint64)
            n_r = len(combos)
        else:
            n_r = n
            ins = {f"a{i}": special_heavy(fi, n, g) for i in range(m.L)}
            ins.update({f"b{i}": special_heavy(fi, n, g) for i in range(m.L)})
            ins["c"] = special_heavy(fc, n, g)
        f = BoundFormula(NUMPY, m, ins)
        ok = np.ones(n_r, bool)
        for t in f.base + [f.violation(alpha, beta)]:
            ok &= np.broadcast_to(np.asarray(t.v, bool), (n_r,))
        hit = np.nonzero(ok)[0]
        if len(hit):
            vals = {k: int(v[hit[0]]) for k, v in ins.items()}
            return {"witness": {k: hex(v) for k, v in vals.items()}, "measured": recheck(m, vals, alpha, beta)}
    return None
