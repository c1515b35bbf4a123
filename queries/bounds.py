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

from smtmodel.bv import NUMPY, Bool, all_of, smax_all
from smtmodel.catalog import all_models, get_model
from smtmodel.formats import get_format
from smtmodel.fp import decode
from smtmodel.model import Model
from smtmodel.ops.fdpa import RHO, rho_format
from smtmodel.ops.fused import product_term, value_term
from smtmodel.schemes.exact import Window, abs_fixed, exact_fixed, pow2_units, products, to_fixed, ulp_units

from .schemes import TwinDisagreement, _backend, check


def tfdpa_models(include_rivals: bool = True) -> list[Model]:
    return [m for m in all_models() if m.op == "tfdpa" and (include_rivals or "rival" not in m.source
                                                             and "seed 002" not in m.source
                                                             and m.id.count("-") <= 2 + m.id.startswith("rtx"))]


def signature(m: Model) -> tuple:
    """Models with equal signatures have the same formula (their proofs are shared)."""
    return (get_format(m.in_fmt).name, get_format(m.c_fmt).name, get_format(m.out_fmt).name, m.L, m.F, m.rho,
            m.carry, m.normalize, m.zero_align, m.flush_inputs, m.specials)


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
        Am = [m._dec(x, fi) for x in a]
        Bm = [m._dec(y, fi) for y in b]
        Cm = m._dec(c, fc)
        P = products(A, Bv)
        Pm = products(Am, Bm)
        aexps = [product_term(x, y, p, m.normalize, m.zero_align).aexp for x, y, p in zip(Am, Bm, Pm)]
        aexps.append(value_term(Cm, m.zero_align).aexp)
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


def _value(bits: int, fmt) -> Fraction:
    """Exact value of finite raw bits (independent of the core: integer arithmetic)."""
    fmt = get_format(fmt)
    enc = bits >> fmt.shift
    m, e = fmt.mbits, fmt.ebits
    M = enc & ((1 << m) - 1)
    E = (enc >> m) & ((1 << e) - 1)
    s = (enc >> (m + e)) & 1 if fmt.signed else 0
    if E == 0:
        v = Fraction(M, 1 << m) * Fraction(2) ** fmt.emin
    else:
        v = Fraction((1 << m) + M, 1 << m) * Fraction(2) ** (E - fmt.bias)
    return -v if s else v


def _ulp(x: Fraction, p: int, emin: int) -> Fraction:
    if x == 0:
        return Fraction(2) ** (emin - p + 1)
    e = math.floor(math.log2(abs(x)))
    while Fraction(2) ** e > abs(x):
        e -= 1
    while Fraction(2) ** (e + 1) <= abs(x):
        e += 1
    return Fraction(2) ** (max(e, emin) - p + 1)


def recheck(m: Model, vals: dict, alpha: Fraction, beta: Fraction) -> dict:
    """Twin output and exact rationals on a witness: returns the measured quantities and raises
    TwinDisagreement if the bound is not in fact violated."""
    L = m.L
    fi, fc, fo = (get_format(f) for f in (m.in_fmt, m.c_fmt, m.out_fmt))
    a = np.array([[vals[f"a{i}"] for i in range(L)]], dtype=np.uint64)
    b = np.array([[vals[f"b{i}"] for i in range(L)]], dtype=np.uint64)
    c = np.array([vals["c"]], dtype=np.uint64)
    d = int(m.evaluate(a, b, c)[0])
    exact = sum((_value(vals[f"a{i}"], fi) * _value(vals[f"b{i}"], fi) for i in range(L)), _value(vals["c"], fc))
    dv = _value(d, fo)
    # e_max per seed 000 Algorithm 7 with the model's zero rule (independent re-computation)
    def ex(bits, fmt):
        fmt = get_format(fmt)
        E = (bits >> fmt.shift >> fmt.mbits) & ((1 << fmt.ebits) - 1)
        return fmt.emin if E == 0 else E - fmt.bias
    def is_zero(bits, fmt):
        fmt = get_format(fmt)
        return (bits >> fmt.shift) & ((1 << (fmt.ebits + fmt.mbits)) - 1) == 0
    es = []
    for i in range(L):
        x, y = vals[f"a{i}"], vals[f"b{i}"]
        zx, zy = is_zero(x, fi), is_zero(y, fi)
        if (zx or zy) and m.zero_align == "ignore":
            continue
        e = (-126 if zx else ex(x, fi)) + (-126 if zy else ex(y, fi))
        if m.normalize and not (zx or zy):
            e += int(abs(_value(x, fi) * _value(y, fi)) >= Fraction(2) ** (e + 1))
        es.append(e)
    if not (is_zero(vals["c"], fc) and m.zero_align == "ignore"):
        es.append(-126 if is_zero(vals["c"], fc) else ex(vals["c"], fc))
    emax = max(es) if es else -(1 << 14)
    rf = rho_format(RHO[m.rho])
    bound = alpha * Fraction(2) ** (emax - m.F) + beta * _ulp(dv, rf.precision, rf.emin)
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
        raise ValueError(f"{m.id}: the Table 9 T-FDPA bound applies to op tfdpa, not {m.op}")
    alpha = Fraction(m.L + 1) if alpha is None else Fraction(alpha)
    beta = beta_for(m) if beta is None else Fraction(beta)
    B = _backend(solver)
    f = BoundFormula(B, m)
    st, dt, reason, vals = check(solver, B, f.base + [f.violation(alpha, beta)], f.v, timeout)
    res = BoundResult(m.id, m.L, m.F, m.rho, str(alpha), str(beta),
                      {"unsat": "proved", "sat": "refuted"}.get(st, "unknown"), dt, solver)
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
    B = _backend(solver)
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
        st, dt, reason, vals = check(solver, B, f.base + [f.violation(mid, beta)], f.v, timeout)
        res.tight_queries.append({"alpha": str(mid), "status": st, "seconds": round(dt, 2)})
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
    models = models or tfdpa_models()
    groups: dict = {}
    for m in models:
        groups.setdefault(signature(m), []).append(m)
    out = []
    for sig, ms in groups.items():
        r = prove_bound(ms[0], solver, timeout)
        if tight and r.status == "proved":
            r = tightest(ms[0], solver, timeout, res=r)
        r.same_as = [m.id for m in ms[1:]]
        out.append(r)
        if log:
            log(r)
    return out


# ---- compositional proof: the two error sources of Table 9 as separate lemmas ----------------------

@dataclass
class LemmaResult:
    name: str
    status: str
    seconds: float
    solver: str

    def to_dict(self):
        return asdict(self)


def _lemma_term(B, m: Model, which: str):
    """Lemma A for one summand: for every finite product a*b (or c) and every alignment exponent
    e_max >= its own, |align_term(t, e_max) * 2^(e_max - F) - t| < 2^(e_max - F) (truncation to F
    fraction bits loses less than one unit) -- the very align_term the model's t_fdpa sums."""
    from smtmodel.bv import BV
    from smtmodel.fp import mul_exact
    from smtmodel.fp.value import EXP_W
    from smtmodel.ops.fused import acc_width, align_term

    fi, fc = get_format(m.in_fmt), get_format(m.c_fmt)
    if which == "product":
        x, y = B.var("x", fi.width), B.var("y", fi.width)
        X, Y = m._dec(x, fi), m._dec(y, fi)
        P = mul_exact(X, Y)
        term = product_term(X, Y, P, m.normalize, m.zero_align)
        exact_t = products([decode(x, fi)], [decode(y, fi)])[0]
        fin = [~(X.nan | X.inf), ~(Y.nan | Y.inf)]
        ibits_max = 2
    else:
        c = B.var("c", fc.width)
        Cm = m._dec(c, fc)
        term = value_term(Cm, m.zero_align)
        exact_t = decode(c, fc)
        fin = [~(Cm.nan | Cm.inf)]
        ibits_max = 1
    L = m.L
    # the accumulator geometry of the model's truncated_sum (terms: L products + c)
    W = 1 + 2 + (m.carry if m.carry is not None else max(1, L.bit_length())) + m.F
    if m.normalize:
        W = 1 + 1 + (m.carry if m.carry is not None else max(1, L.bit_length())) + m.F
    emax = B.var("emax", EXP_W)
    lo_e = -126 - 4
    hi_e = 2 * (max(fi.emax, 0) + 2) + 2
    S = align_term(term, emax, m.F, W)
    win = Window.covering([exact_t], extra_terms=2)
    lowest = lo_e - m.F - 2
    top = hi_e + W + 2
    win = Window(min(win.lsb0, lowest), max(win.lsb0 + win.W, top) - min(win.lsb0, lowest) + 2)
    Sw = S.sresize(win.W)
    from smtmodel.bv import clamp_shift
    sh = clamp_shift(emax - m.F - win.lsb0, win.W - 1, max(2, win.W.bit_length() + 1)).uresize(win.W)
    Sfix = Sw << sh
    diff = abs_fixed(Sfix - to_fixed(exact_t, win.lsb0, win.W))
    unit = pow2_units(emax - m.F, win)
    conds = fin + [emax.sge(term.aexp), emax.sge(lo_e), emax.sle(hi_e)]
    # also: the summand fits the accumulator without wrapping (|S| < 2^(ibits + F))
    absS = abs_fixed(S)
    viol = diff.uge(unit) | absS.uge(1 << (ibits_max + m.F))
    return conds + [viol], {"emax": emax}


def _lemma_round(B, m: Model):
    """Lemma B: for every accumulator value S (the model's W-bit two's complement sum) and e_max
    in range, the output conversion rho of seed 000 Algorithm 7 step 3 (ops.fdpa.finish, the one
    t_fdpa calls) is within beta * ulp(d) of S * 2^(e_max - F), or overflows to infinity."""
    from smtmodel.fp.value import EXP_W
    from smtmodel.ops.fdpa import NVIDIA, IEEE, finish
    from smtmodel.ops.fused import signed_value

    fi = get_format(m.in_fmt)
    L = m.L
    ib = 1 if m.normalize else 2
    W = 1 + ib + (m.carry if m.carry is not None else max(1, L.bit_length())) + m.F
    S = B.var("S", W)
    emax = B.var("emax", EXP_W)
    lo_e = -126 - 4
    hi_e = 2 * (max(fi.emax, 0) + 2) + 2
    sign, mag = signed_value(S)
    specials = NVIDIA if m.specials == "nvidia" else IEEE
    d = finish(sign, mag, emax, m.F, B.false(), B.false(), B.false(), RHO[m.rho], specials)
    fo = get_format(m.out_fmt)
    D = decode(d, fo)
    rf = rho_format(RHO[m.rho])
    win = Window.covering([D], extra_terms=2)
    lowest = lo_e - m.F - 2
    top = max(win.lsb0 + win.W, hi_e + W + 2)
    win = Window(min(win.lsb0, lowest), top - min(win.lsb0, lowest) + 2)
    from smtmodel.bv import clamp_shift
    sh = clamp_shift(emax - m.F - win.lsb0, win.W - 1, max(2, win.W.bit_length() + 1)).uresize(win.W)
    Sfix = S.sresize(win.W) << sh
    Dfix = to_fixed(D, win.lsb0, win.W)
    err = abs_fixed(Dfix - Sfix)
    ulp = ulp_units(abs_fixed(Dfix), win, rf.precision, rf.emin)
    beta = beta_for(m)
    q = 1
    bn = int(beta * 2)
    w = win.W + 4
    viol = (err.uresize(w) << q).ugt(ulp.uresize(w) * bn) & ~(D.inf | D.nan)
    return [emax.sge(lo_e), emax.sle(hi_e), viol], {"S": S, "emax": emax}


def prove_compositional(spec, solver: str = "z3", timeout: float = 120) -> list[LemmaResult]:
    """Table 9 by its two error sources: lemma A (each of the L + 1 summands loses < 2^(e_max - F)
    in the alignment/truncation, for products and for c) and lemma B (rho is within beta ulp(d)).
    With S = sum of the truncated summands (exact: the accumulator cannot wrap, lemma A's size
    clause and acc_width), the triangle inequality gives the Table 9 bound; UNSAT of all three
    violations proves it."""
    m = get_model(spec)
    out = []
    for name in ("product", "c", "round"):
        B = _backend(solver)
        if name == "round":
            terms, v = _lemma_round(B, m)
        else:
            terms, v = _lemma_term(B, m, name)
        st, dt, reason, vals = check(solver, B, terms, v, timeout)
        out.append(LemmaResult(f"{'A' if name != 'round' else 'B'}:{name}", st, dt, solver))
    return out


# ---- relative-unit lemmas (narrow formulas; what prove_compositional runs) --------------------------

def _shift_in(B, amount, lo: int, hi: int, W: int):
    """(in_range, amount clamped to [0, W-1] as a W-bit shift) for a signed EXP_W amount."""
    from smtmodel.bv import clamp_shift
    ok = amount.sge(lo) & amount.sle(hi)
    return ok, clamp_shift(amount, W - 1, max(2, W.bit_length() + 1)).uresize(W)


def _acc_W(m: Model) -> tuple[int, int]:
    ib = 1 if m.normalize else 2
    return 1 + ib + (m.carry if m.carry is not None else max(1, m.L.bit_length())) + m.F, ib


def lemma_term_rel(B, m: Model, which: str, at_emax: bool = False):
    """Lemma A in units of 2^(e_max - F - G): for every finite summand t (a product of two inputs,
    or c) and every e_max >= its alignment exponent, the model's align_term S satisfies
    |S * 2^G - t| < 2^G (less than one unit 2^(e_max - F) lost) and |S| < 2^(ibits + F)."""
    from smtmodel.fp import mul_exact
    from smtmodel.fp.value import EXP_W
    from smtmodel.ops.fused import align_term

    fi, fc = get_format(m.in_fmt), get_format(m.c_fmt)
    if which == "product":
        x, y = B.var("x", fi.width), B.var("y", fi.width)
        X, Y = m._dec(x, fi), m._dec(y, fi)
        term = product_term(X, Y, mul_exact(X, Y), m.normalize, m.zero_align)
        t = mul_exact(decode(x, fi), decode(y, fi))
        fin = [~(X.nan | X.inf), ~(Y.nan | Y.inf)]
        ib_t = 1 if m.normalize else 2
        v = {"x": x, "y": y}
    else:
        c = B.var("c", fc.width)
        Cm = m._dec(c, fc)
        term = value_term(Cm, m.zero_align)
        t = decode(c, fc)
        fin = [~(Cm.nan | Cm.inf)]
        ib_t = 1
        v = {"c": c}
    W, ib = _acc_W(m)
    emax = B.var("emax", EXP_W)
    v["emax"] = emax
    S = align_term(term, emax, m.F, W)
    G = t.sig.w + 2
    Wr = W + G + t.sig.w + 4
    r = t.exp - t.frac - (emax - m.F - G)              # position of t's last bit in relative units
    ok, sh = _shift_in(B, r, 0, Wr - t.sig.w - 2, Wr)
    tr = t.sig.uresize(Wr) << sh
    tr = ite_signed(t, tr, Wr)
    Sr = S.sresize(Wr) << G
    diff = abs_fixed(Sr - tr)
    neg_pos = r.slt(0)
    # r < 0: |t| < 2^(sig.w + r) <= 2^(G - 2) units of 2^(e_max-F-G), i.e. below one unit: S must be 0
    viol = (~neg_pos & (~ok | diff.uge(1 << G))) | (neg_pos & S.ne(0)) | abs_fixed(S).uge(1 << (ib_t + m.F))
    if at_emax:     # lemma A0: the summand that sets e_max loses nothing at all
        viol = (~neg_pos & (~ok | diff.ne(0))) | (neg_pos & t.finite_nonzero)
    lo_e, hi_e = -130, 2 * (max(fi.emax, 0) + 2) + 2
    conds = fin + [emax.eq(term.aexp) if at_emax else emax.sge(term.aexp), emax.sge(lo_e), emax.sle(max(hi_e, fc.emax + 2)), t.finite_nonzero, viol]
    return conds, v


def ite_signed(t, mag, W):
    from smtmodel.bv import ite
    return ite(t.sign, -mag, mag)


def lemma_round_rel(B, m: Model):
    """Lemma B in units of 2^(e_max - F - G): for every accumulator S (W bits, the model's) and
    e_max in range, d = finish(S, e_max) (ops.fdpa.finish, the step t_fdpa ends with) is finite
    only if |d - S 2^(e_max-F)| <= beta ulp(d)."""
    from smtmodel.fp.value import EXP_W
    from smtmodel.ops.fdpa import IEEE, NVIDIA, finish
    from smtmodel.ops.fused import signed_value

    fi, fc, fo = (get_format(f) for f in (m.in_fmt, m.c_fmt, m.out_fmt))
    rf = rho_format(RHO[m.rho])
    W, ib = _acc_W(m)
    S = B.var("S", W)
    emax = B.var("emax", EXP_W)
    sign, mag = signed_value(S)
    specials = NVIDIA if m.specials == "nvidia" else IEEE
    d = finish(sign, mag, emax, m.F, B.false(), B.false(), B.false(), RHO[m.rho], specials)
    D = decode(d, fo)
    G = max(rf.precision, fo.precision) + 4       # d's last container bit is >= 2^(e_max-F-G) when d ~ S
    Wr = W + 2 * G + 8
    r = D.exp - D.frac - (emax - m.F - G)
    ok, sh = _shift_in(B, r, 0, Wr - D.sig.w - 2, Wr)
    Dr = ite_signed(D, D.sig.uresize(Wr) << sh, Wr)
    from smtmodel.bv import ite, smax
    from smtmodel.fp.value import exp_const
    Sr = S.sresize(Wr) << G
    err = abs_fixed(Dr - Sr)
    # ulp(d) = 2^(max(top(d), emin) - p + 1): top(d) = exp + (sig.w - 1 - clz(sig)) - frac
    from smtmodel.bv import clz
    lz = clz(D.sig).uresize(EXP_W)
    top = D.exp + (D.sig.w - 1) - lz - D.frac
    top = ite(D.sig.eq(0), exp_const(B, rf.emin), smax(top, exp_const(B, rf.emin)))
    ru = top - (rf.precision - 1) - (emax - m.F - G)
    ok2, sh2 = _shift_in(B, ru, 0, Wr - 3, Wr)
    ulp = B.const(1, Wr) << sh2
    beta = beta_for(m)
    w = Wr + 3
    big = (err.uresize(w) << 1).ugt(ulp.uresize(w) * int(beta * 2))
    zero_ok = D.sig.eq(0)      # d = 0 ... handled by the general formula when r in range
    # ulp below one relative unit (tiny results): the error, an integer in units, must be 0
    tiny = ru.slt(0)
    # ulp far above the window (results in the output's subnormal range): |S| < beta ulp there,
    # so only d = 0 is within the bound; any d != 0 has |d| >= ulp(d) >> |S|
    viol = ~(D.inf | D.nan) & ((ok2 & big) | (tiny & err.ne(0)) | (~ok2 & ~tiny & ~zero_ok) | (~ok & ~zero_ok))
    lo_e, hi_e = -130, 2 * (max(fi.emax, 0) + 2) + 2
    return [emax.sge(lo_e), emax.sle(max(hi_e, fc.emax + 2)), viol], {"S": S, "emax": emax}


def prove_lemmas(spec, solver: str = "bitwuzla", timeout: float = 120) -> list[LemmaResult]:
    """Table 9 by its two error sources, as three narrow UNSAT queries (see lemma_term_rel,
    lemma_round_rel); with the accumulator wide enough not to wrap (checked statically:
    2^extra >= L + 1 for carry=None), the triangle inequality gives
    |Phi - exact| < (L+1) 2^(e_max - F) + beta ulp(d)."""
    m = get_model(spec)
    W, ib = _acc_W(m)
    extra = W - 1 - ib - m.F
    out = [LemmaResult("C:no-wrap (static)", "unsat" if (1 << extra) >= m.L + 1 else "sat", 0.0, "python")]
    for name in ("product", "c", "round", "product@emax", "c@emax"):
        B = _backend(solver)
        if name == "round":
            terms, v = lemma_round_rel(B, m)
        else:
            terms, v = lemma_term_rel(B, m, name.split("@")[0], at_emax="@" in name)
        st, dt, reason, vals = check(solver, B, terms, v, timeout)
        tag = "B" if name == "round" else ("A0" if "@" in name else "A")
        out.append(LemmaResult(f"{tag}:{name.split('@')[0]}", st, dt, solver))
    return out


def lemma_table(models=None, solver: str = "z3", timeout: float = 60, refute: bool = False, log=None) -> list[dict]:
    """Table 9 for each model by the lemmas (one proof per signature, shared by equal models);
    with ``refute``, also a monolithic SAT query for a violation of alpha = L (a witness shows
    that the constant L + 1 cannot be lowered to L; re-checked by the twin)."""
    models = models or tfdpa_models()
    groups: dict = {}
    for m in models:
        groups.setdefault(signature(m), []).append(m)
    rows = []
    for sig, ms in groups.items():
        m = ms[0]
        lem = prove_lemmas(m, solver, timeout)
        ok = all(x.status == "unsat" for x in lem if not x.name.startswith("A0"))
        tight = ok and all(x.status == "unsat" for x in lem if x.name.startswith("A0"))
        row = {"model": m.id, "same_as": [x.id for x in ms[1:]], "L": m.L, "F": m.F, "rho": m.rho,
               "alpha": m.L + 1, "beta": str(beta_for(m)), "proved": ok,
               "alpha_proved": (m.L if tight else m.L + 1) if ok else None,
               "lemmas": [x.to_dict() for x in lem], "seconds": round(sum(x.seconds for x in lem), 2)}
        if not ok:
            t0 = time.perf_counter()
            tw = twin_refute(m)
            if tw is not None:
                row["refuted"] = {**tw, "seconds": round(time.perf_counter() - t0, 2), "by": "twin search, Fractions re-check"}
            else:
                r = prove_bound(m, "z3", timeout)
                row["monolithic"] = r.to_dict()
        if refute:
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
            log(f"{m.id:<32} L={m.L:<2} F={m.F} {m.rho:<8} |err| <= {m.L + 1}*2^(e_max-F) + {beta_for(m)} ulp: "
                f"{'PROVED' if ok else 'NOT PROVED'}" + (f", tightest alpha proved {row['alpha_proved']}" if ok else "")
                + f" ({row['seconds']:.2f}s: " +
                ", ".join(f"{x.name} {x.status} {x.seconds:.2f}s" for x in lem) + ")" + extra
                + (f"  [also {', '.join(row['same_as'])}]" if row["same_as"] else ""))
    return rows


def twin_refute(spec, alpha: Fraction | None = None, beta: Fraction | None = None, n: int = 3000,
                rounds: int = 4, seed: int = 0) -> dict | None:
    """Search special-heavy random inputs with the twin (the same violation predicate, concrete)
    for a counterexample to the bound; a hit is re-checked with exact Fractions."""
    import sys
    sys.path.insert(0, "tests")
    m = get_model(spec)
    alpha = Fraction(m.L + 1) if alpha is None else Fraction(alpha)
    beta = beta_for(m) if beta is None else Fraction(beta)
    fi, fc = get_format(m.in_fmt), get_format(m.c_fmt)
    g = np.random.default_rng(seed)
    for r in range(rounds + 1):
        if r == 0:      # structured: every product at its largest significand, one sign (carry chains)
            mx = ((1 << fi.mbits) - 1 if fi.policy != "fn" else (1 << fi.mbits) - 2)
            base = [((fi.bias + de) << fi.mbits | mx) << fi.shift for de in range(0, 3)]
            cs = [0] + [((fc.bias + de) << fc.mbits | ((1 << fc.mbits) - 1)) << fc.shift for de in range(0, 6)]
            combos = [(x, y, cc) for x in base for y in base for cc in cs]
            ins = {f"a{i}": np.array([x for x, _, _ in combos], np.uint64) for i in range(m.L)}
            ins.update({f"b{i}": np.array([y for _, y, _ in combos], np.uint64) for i in range(m.L)})
            ins["c"] = np.array([cc for _, _, cc in combos], np.uint64)
            n_r = len(combos)
        else:
            n_r = n
            ins = {f"a{i}": _draw(fi, n, g) for i in range(m.L)}
            ins.update({f"b{i}": _draw(fi, n, g) for i in range(m.L)})
            ins["c"] = _draw(fc, n, g)
        f = BoundFormula(NUMPY, m, ins)
        ok = np.ones(n_r, bool)
        for t in f.base + [f.violation(alpha, beta)]:
            ok &= np.broadcast_to(np.asarray(t.v, bool), (n_r,))
        hit = np.nonzero(ok)[0]
        if len(hit):
            vals = {k: int(v[hit[0]]) for k, v in ins.items()}
            return {"witness": {k: hex(v) for k, v in vals.items()}, "measured": recheck(m, vals, alpha, beta)}
    return None


def _draw(fmt, n, g):
    """Special-heavy raw patterns: subnormals, extremes, and random (cf. tests/conftest.draw_bits)."""
    w = fmt.width
    top = (1 << fmt.ebits) - 1
    e = np.where(g.random(n) < 0.5, g.choice([0, 1, top - 1, fmt.bias], n), g.integers(0, top + 1, n))
    mant = g.integers(0, 1 << fmt.mbits, n) if fmt.mbits else np.zeros(n, np.int64)
    s = g.integers(0, 2, n) if fmt.signed else np.zeros(n, np.int64)
    bits = ((s << (fmt.ebits + fmt.mbits)) | (e << fmt.mbits) | mant) << fmt.shift
    bits = np.where(g.random(n) < 0.1, 0, bits)
    return bits.astype(np.uint64)
