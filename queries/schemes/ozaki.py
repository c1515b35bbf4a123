"""Proofs and bounds for the Ozaki schemes (smtmodel.schemes.ozaki) through the solver layer.

* :func:`prove_no_overflow` -- the int32 accumulation of k products of β-bit slices cannot
  overflow, for every k up to ``k_max`` under a β rule (ozIMMU's, or a fixed β), as three QF_BV
  lemmas: (A) one slice product is at most (2^β - 1)^2 in magnitude; (B) for every k in range,
  k·(2^β(k) - 1)^2 <= 2^31 - 1 (β(k) written in the core: ceil(log2 k) by count-leading-zeros);
  (C) the catalog IMMA model's output of one instruction equals the exact c + sum whenever that
  sum lies in int32 (the model neither clamps nor truncates in range): the model's term is first
  checked to be a function of the exact sum alone (its products hash-cons to the reference's;
  the sum is then abstracted by a variable, which spares the solver 32 multipliers). (A) and (B) bound the exact sum by the triangle inequality; with
  wrap-around the chained s32 result is that sum modulo 2^32, so the GEMM's int32 is exact. A rule
  that fails (B) gets the smallest k that overflows (solver bisection) and a witness re-run by
  the IMMA model's twin.
* :func:`prove_slicing` -- for every fp64 pattern and row scale, ozIMMU's slices (the core's
  :func:`~smtmodel.schemes.ozaki.ozimmu_slices`, the twin's own code) hold the truncation of
  |x| to multiples of U·2^(1-sβ) (U = 2^(F-1023), the row's max_exp), with |v_1| <= 2^(β-1) - 1
  and |v_s| <= 2^β - 1: shifts and additions only, so the solver decides it for every
  configuration.
* :func:`ozaki1_gamma` -- the error bound of one output element stated as a formula in units of
  k·U_A·U_B·|α| (U_A, U_B: the row / column scales), from the slicing lemma (truncation and
  dropped pairs, exact rationals) and Higham's recursive-summation bound for the fp64
  accumulation (*Accuracy and Stability*, §4.2: |ŝ - s| <= γ_{n-1} Σ|x_i|); :func:`check_bound`
  compares it with the twin on random and adversarial inputs.
* :func:`comparison` -- error tables of the Ozaki configurations against O-Y tf32, 3xTF32 and the
  fp64 FMA chain (DMMA), per K and per exponent spread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from smtmodel.bv import all_of, clz, sum_all
from smtmodel.ops.integer import sum_width
from smtmodel.catalog import get_model
from smtmodel.schemes.ozaki import (Ozaki, OzakiError, get_ozaki, int_gemm, overflow_k, ozimmu_beta,
                                    ozimmu_slices)
from smtmodel.solve import solve

INT32_MAX = (1 << 31) - 1
U64 = Fraction(1, 1 << 53)


@dataclass
class Lemma:
    name: str
    status: str                   # "proved" (unsat), "refuted" (sat, with a witness) or "unknown"
    seconds: float
    solver: str
    witness: dict | None = None
    note: str = ""


@dataclass
class OverflowReport:
    rule: str
    k_max: int
    lemmas: list = field(default_factory=list)
    holds: bool = False
    smallest_k: int | None = None     # a rule that fails: the smallest k that overflows
    twin_confirms: str = ""

    def lines(self) -> list[str]:
        out = [f"int32 no-overflow, β rule {self.rule}, 1 <= k <= {self.k_max}: "
               + ("PROVED" if self.holds else "REFUTED" if self.smallest_k else "not decided")]
        for lm in self.lemmas:
            w = f"  witness {lm.witness}" if lm.witness else ""
            out.append(f"  {lm.name}: {lm.status} ({lm.solver}, {lm.seconds:.2f} s){w}{'  ' + lm.note if lm.note else ''}")
        if self.smallest_k:
            out.append(f"  smallest overflowing k = {self.smallest_k}; {self.twin_confirms}")
        return out


def _beta_term(B, k, rule: str, w: int):
    """β(k) as a w-bit core term: ozIMMU's min(7, (31 - ceil(log2 k)) // 2), or a constant."""
    if rule != "ozimmu":
        return B.const(int(rule), w)
    km1 = k - 1
    c = B.const(w, w) - clz(km1)                     # bit length of k - 1 = ceil(log2 k) for k >= 1
    b = (B.const(31, w) - c).lshr(1)
    return b.ult(7).ite(b, B.const(7, w))


def _subterms(t):
    seen, todo = set(), [t]
    while todo:
        x = todo.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        yield x
        todo.extend(x.children())


def _decide(name, build, solver, timeout) -> Lemma:
    r = solve(build, solver, timeout)
    st = {"unsat": "proved", "sat": "refuted"}.get(r.status, "unknown")
    return Lemma(name, st, r.seconds, r.solver or solver, r.model if r.status == "sat" else None, r.reason)


def prove_no_overflow(rule: str = "ozimmu", k_max: int = 1 << 29, solver: str = "bitwuzla",
                      timeout: float = 60, model: str = "ampere-s8-s32") -> OverflowReport:
    """The three lemmas of the module docstring for β rule ``rule`` ("ozimmu" or a fixed β)."""
    if rule != "ozimmu" and not (str(rule).isdigit() and 1 <= int(rule) <= 7):
        raise OzakiError(f"β rule {rule!r}: ozimmu or a fixed β in 1..7")
    if not 1 <= k_max < 1 << 40:
        raise OzakiError(f"k_max={k_max}: 1 <= k_max < 2^40")
    if rule == "ozimmu" and k_max >= 1 << 29:
        k_max = (1 << 29) - 1          # beyond, ozIMMU's β reaches 0: no slice fits
    rep = OverflowReport(str(rule), k_max)
    W = 64

    def lemma_a(B):                    # |x·y| <= (2^β - 1)^2 for |x|, |y| <= 2^β - 1, β in 1..7
        x, y, beta = B.var("x", 8), B.var("y", 8), B.var("beta", 8)
        lim = (B.const(1, 8) << beta) - 1
        xs, ys = x.sext(24), y.sext(24)
        p = xs * ys
        lim2 = lim.zext(24) * lim.zext(24)
        ok = all_of([beta.uge(1), beta.ule(7), xs.sle(lim.zext(24)), xs.sge(-lim.zext(24)),
                     ys.sle(lim.zext(24)), ys.sge(-lim.zext(24))])
        return [ok, p.sgt(lim2) | p.slt(-lim2)], {"x": x, "y": y, "beta": beta}

    def lemma_b(bound_k):
        def build(B):
            k = B.var("k", W)
            beta = _beta_term(B, k, rule, W)
            lim = (B.const(1, W) << beta) - 1
            worst = k * (lim * lim)
            return ([k.uge(1), k.ule(bound_k), beta.uge(1), worst.ugt(INT32_MAX)],
                    {"k": k, "beta": beta})
        return build

    def lemma_c(B):                    # one IMMA instruction returns the exact sum whenever it is in int32
        import z3
        from smtmodel.bv import BV
        m = get_model(model)
        a = [B.var(f"a{i}", 8) for i in range(m.L)]
        b = [B.var(f"b{i}", 8) for i in range(m.L)]
        c = B.var("c", 32)
        d = m.build(a, b, c)
        w = sum_width(8, m.L)          # the exact c + sum, written as the model's own terms (they hash equal)
        exact = sum_all([c.sext(w - 32)] + [x.sext(w - 8) * y.sext(w - 8) for x, y in zip(a, b)])
        S = B.var("S", w)              # abstract the exact sum: d must be a function of it alone
        dv = z3.substitute(d.v, (exact.v, S.v))
        if any(str(t.decl()) == "bvmul" for t in _subterms(dv)):
            raise AssertionError(f"{m.id}: the output is not a function of the exact sum")
        d = BV(B, dv, 32)
        in_range = S.sle(INT32_MAX) & S.sge(-(1 << 31))
        return [in_range, d.sext(w - 32).ne(S)], {"S": S}

    rep.lemmas.append(_decide("(A) one slice product <= (2^β-1)^2", lemma_a, solver, timeout))
    lb = _decide(f"(B) k·(2^β(k)-1)^2 <= 2^31-1 for 1 <= k <= {k_max}", lemma_b(k_max), solver, timeout)
    rep.lemmas.append(lb)
    rep.lemmas.append(_decide(f"(C) {model} (one instruction, K={get_model(model).L}) = exact sum in int32",
                              lemma_c, solver if solver != "cvc5" else "z3", timeout))
    rep.holds = all(lm.status == "proved" for lm in rep.lemmas)
    if lb.status == "refuted":
        lo, hi = 1, int(lb.witness["k"])          # overflow at hi; find the smallest k by bisection
        while lo < hi:
            mid = (lo + hi) // 2
            r = solve(lemma_b(mid), solver, timeout)
            if r.status == "sat":
                hi = int(r.model["k"])
            elif r.status == "unsat":
                lo = mid + 1
            else:
                break
        rep.smallest_k = hi
        rep.twin_confirms = _confirm_overflow(hi, rule, model)
    return rep


def _confirm_overflow(k: int, rule: str, model: str) -> str:
    """Re-run the witness with the IMMA model's twin: k slices of 2^β - 1 (all positive) wrap, k - 1 do not."""
    beta = ozimmu_beta(k) if rule == "ozimmu" else int(rule)
    m = get_model(model)
    v = (1 << beta) - 1
    got = [int(int_gemm(np.full((1, kk), v), np.full((kk, 1), v), m)[0, 0]) for kk in (k - 1, k)]
    exact = [kk * v * v for kk in (k - 1, k)]
    if got[0] == exact[0] and got[1] != exact[1]:
        return (f"the {m.id} twin confirms: k={k} slices of {v}·{v} give {got[1]} (exact {exact[1]}), "
                f"k={k - 1} give {got[0]} (exact)")
    raise AssertionError(f"twin disagrees with the overflow witness: {got} vs {exact}")


@dataclass
class SlicingReport:
    slices: int
    beta: int
    lemma: Lemma

    def line(self) -> str:
        lm = self.lemma
        return (f"slicing s={self.slices}, β={self.beta}: {lm.status} ({lm.solver}, {lm.seconds:.2f} s)"
                + (f" witness {lm.witness}" if lm.witness else ""))


def prove_slicing(slices: int, beta: int, solver: str = "bitwuzla", timeout: float = 60) -> SlicingReport:
    """For every finite fp64 x and row scale field F >= E(x) + 1 (F <= 0x7FF; an all-zero row, F =
    0, is left out: its scale U = 0 zeroes the result whatever the slices): the slices are in
    range, carry x's sign, and sum_s |v_s| 2^((S-s)β) = floor(m·2^(E-1075) / (U·2^(1-Sβ))) with
    m = fraction | 2^52 -- i.e. shifted significand: >> d for d >= 0, << -d otherwise, d = F - E
    + 53 - Sβ. (For E = 0 that is the pseudo-value ozIMMU reads, hidden bit set.)"""
    if not (1 <= beta <= 7 and 1 <= slices <= 18):
        raise OzakiError(f"slicing: 1 <= β <= 7 and 1 <= slices <= 18 (got {beta}, {slices})")
    S = slices
    W = S * beta + 128

    def build(B):
        x, F = B.var("x", 64), B.var("F", 11)
        e = x.extract(62, 52)
        v = ozimmu_slices(x, F, S, beta)
        pos = x.extract(63, 63).eq(0) & x.ne(0)
        conds = []
        for i, t in enumerate(v, 1):
            lim = (1 << (beta - 1)) - 1 if i == 1 else (1 << beta) - 1
            conds += [t.sle(lim), t.sge(-lim), pos.ite(t.sge(0), t.sle(0))]
        R = None
        for i, t in enumerate(v, 1):
            mag = t.slt(0).ite(-t, t).zext(W - 8) << ((S - i) * beta)
            R = mag if R is None else R + mag
        mant = (x.extract(51, 0).zext(W - 52)) | (B.const(1, W) << 52)
        d = F.zext(W - 11) - e.zext(W - 11) + (53 - S * beta)            # signed in W bits
        want = d.slt(0).ite(mant << (-d), mant.lshr(d))
        pre = [e.ne(0x7FF), F.ugt(e)]      # finite; F = e_max + 1 of a row holding x (not an all-zero row)
        return pre + [~all_of(conds + [R.eq(want)])], {"x": x, "F": F}

    return SlicingReport(S, beta, _decide(f"slices s={S} β={beta}", build, solver, timeout))


# ---- the error formula --------------------------------------------------------------------------

def _c(i: int, beta: int) -> int:
    return (1 << (beta - 1)) - 1 if i == 1 else (1 << beta) - 1


def ozaki1_gamma(s: Ozaki, k: int) -> Fraction:
    """γ with |D - α·Σ a_t b_t| <= γ · k · U_A · U_B · |α| for one output of Ozaki-I (β = s.bits(k)),
    assuming no overflow/underflow in the final scaling:

    γ = (E1 + γ_{T-1} M)(1 + u) + u, where per product (units U_A U_B, from the slicing lemma)
    E1 = Σ_{(i,j) not computed, i,j <= s} c_i c_j 2^(2-(i+j)β) + 2·2^(1-sβ) (dropped pairs and the
    two truncation tails), M = Σ_{(i,j) computed} c_i c_j 2^(2-(i+j)β) (|slice products|), c_1 =
    2^(β-1) - 1, c_i = 2^β - 1; T the number of slice GEMMs (γ_n = n u / (1 - n u), u = 2^-53);
    the final α·x rounds once (u). With ``accumulate="exact"`` the γ_{T-1} M term is 0."""
    beta = s.bits(k)
    computed = set(s.pair_list())
    E1 = Fraction(0)
    M = Fraction(0)
    for i in range(1, s.slices + 1):
        for j in range(1, s.slices + 1):
            t = Fraction(_c(i, beta) * _c(j, beta)) * Fraction(2) ** (2 - (i + j) * beta)
            if (i, j) in computed:
                M += t
            else:
                E1 += t
    E1 += 2 * Fraction(2) ** (1 - s.slices * beta)
    T = len(computed)
    g = Fraction(0) if s.accumulate == "exact" else (T - 1) * U64 / (1 - (T - 1) * U64)
    return (E1 + g * M) * (1 + U64) + U64


def _scale(X: np.ndarray) -> np.ndarray:
    """U per row: 2^(e_max + 1) (the max_exp ozIMMU computes)."""
    m = np.max(np.abs(X), axis=1)
    return np.where(m > 0, np.exp2(np.floor(np.log2(np.where(m > 0, m, 1.0))) + 1), 0.0)


def _exact(A, B) -> list:
    return [[sum(Fraction(A[i, t]) * Fraction(B[t, j]) for t in range(A.shape[1])) for j in range(B.shape[1])]
            for i in range(A.shape[0])]


def adversarial(k: int, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Inputs that push Ozaki-I's error: elements with all-ones significands just below their row's
    max exponent (every slice full, the largest tails) and signs arranged so the products add up."""
    mant = 2.0 - 2.0 ** -52
    A = np.full((n, k), mant) * np.exp2(rng.integers(-1, 1, (n, k)))
    B = np.full((k, n), mant) * np.exp2(rng.integers(-1, 1, (k, n)))
    A[:, 0] = 2.0 - 2.0 ** -52            # keep each row's max exponent at 0
    B[0, :] = 2.0 - 2.0 ** -52
    return A, B


def check_bound(s: Ozaki, k: int, n: int = 8, seed: int = 0, spread: int = 4) -> dict:
    """The largest |error| / (k U_A U_B) the twin reaches on random (``spread``) and adversarial
    inputs, exact rational arithmetic, against :func:`ozaki1_gamma`."""
    from smtmodel.schemes.ozaki import gemm
    rng = np.random.default_rng(seed)
    worst = Fraction(0)
    for kind in ("random", "adversarial"):
        if kind == "random":
            A = rng.standard_normal((n, k)) * np.exp2(rng.integers(-spread, spread + 1, (n, k)))
            B = rng.standard_normal((k, n)) * np.exp2(rng.integers(-spread, spread + 1, (k, n)))
        else:
            A, B = adversarial(k, n, rng)
        D = gemm(s, A, B)
        ua, ub = _scale(A), _scale(B.T)
        ex = _exact(A, B)
        for i in range(n):
            for j in range(n):
                r = abs(Fraction(D[i, j]) - ex[i][j]) / (k * Fraction(ua[i]) * Fraction(ub[j]))
                worst = max(worst, r)
    g = ozaki1_gamma(s, k)
    return {"scheme": s.name, "k": k, "beta": s.bits(k), "gamma": float(g), "seen": float(worst),
            "ratio": float(worst / g), "holds": worst <= g}


@dataclass
class Witness:
    scheme: str
    k: int
    a: list                      # fp64 values of the row
    b: list                      # fp64 values of the column
    d: float                     # the twin's result
    ratio_of_gamma: float        # |d - exact| / (k U_A U_B) / γ
    searched: int                # dot products the twin search evaluated
    solver: Lemma | None = None  # the solver's confirmation with the inputs fixed

    def line(self) -> str:
        conf = (f"; {self.solver.solver} confirms the result bits ({self.solver.seconds:.2f} s)"
                if self.solver and self.solver.status == "proved" else
                f"; solver: {self.solver.status}" if self.solver else "")
        return (f"worst {self.scheme} k={self.k}: twin search over {self.searched} dot products reaches "
                f"{self.ratio_of_gamma:.3f} of the formula's γ{conf}")


def worst_witness(s: Ozaki, k: int, n: int = 256, seed: int = 0, solver: str | None = "bitwuzla",
                  timeout: float = 60) -> Witness:
    """Twin search (random rows of several spreads and the adversarial all-ones rows, n dot
    products each) for the largest |error| / (k U_A U_B); the winner's result is then confirmed by
    the solver on the core reading (:func:`smtmodel.schemes.ozaki.ozaki1_element`) with the inputs
    fixed -- the same check as the O-Y witnesses: the solver's bits must equal the twin's."""
    from smtmodel.schemes.ozaki import gemm, ozaki1_element
    rng = np.random.default_rng(seed)
    best = None
    searched = 0
    cands = [adversarial(k, n, rng)]
    for sp in (0, 2, 4, 8):
        cands.append((rng.standard_normal((n, k)) * np.exp2(rng.integers(-sp, sp + 1, (n, k))),
                      rng.standard_normal((k, n)) * np.exp2(rng.integers(-sp, sp + 1, (k, n)))))
    g = ozaki1_gamma(s, k)
    for A, B in cands:
        D = gemm(s, A, B)
        ua, ub = _scale(A), _scale(B.T)
        for i in range(n):                               # the diagonal: n independent dot products
            ex = sum(Fraction(A[i, t]) * Fraction(B[t, i]) for t in range(k))
            r = abs(Fraction(D[i, i]) - ex) / (k * Fraction(ua[i]) * Fraction(ub[i])) / g
            searched += 1
            if best is None or r > best[0]:
                best = (r, A[i].copy(), B[:, i].copy(), D[i, i])
    r, a, b, d = best
    w = Witness(s.name, k, [float(x) for x in a], [float(x) for x in b], float(d), float(r), searched)
    if solver:
        want = int(np.float64(d).view(np.uint64))

        def build(Bk):
            av = [Bk.var(f"a{i}", 64) for i in range(k)]
            bv = [Bk.var(f"b{i}", 64) for i in range(k)]
            fixed = [x.eq(int(np.float64(v).view(np.uint64))) for x, v in zip(av + bv, list(a) + list(b))]
            out = ozaki1_element(s, av, bv)
            return fixed + [out.ne(want)], {"d": out}
        w.solver = _decide("witness confirmation", build, solver, timeout)
    return w


# ---- comparison tables --------------------------------------------------------------------------

def _fp32_scheme_gemm(name: str, model: str | None, A32, B32) -> np.ndarray:
    from smtmodel.schemes import get_scheme
    s = get_scheme(name)
    m, k = A32.shape
    n = B32.shape[1]
    ai = np.repeat(np.arange(m), n)
    bj = np.tile(np.arange(n), m)
    a = A32[ai].view(np.uint32).astype(np.uint64)
    b = B32[:, bj].T.copy().view(np.uint32).astype(np.uint64)
    c = np.zeros(m * n, dtype=np.uint64)
    d = s.evaluate(a, b, c, model).astype(np.uint32).view(np.float32)
    return d.reshape(m, n).astype(np.float64)


def _fma_chain(A, B) -> np.ndarray:
    """The fp64 FMA chain in K order (the DMMA model of the catalog, hopper-fp64-fp64)."""
    from smtmodel.gemm import gemm as mgemm
    return np.asarray(mgemm("hopper-fp64-fp64", A, B, None, alpha=1.0, beta=0.0), dtype=np.float64)


COMPARE = ("ozaki1-s3", "ozaki1-s4", "ozaki1-s5", "ozaki1-s6", "ozaki1-s7", "ozaki1-s8",
           "ozaki2-n8", "ozaki2-n10", "ozaki2-n12", "ozaki2-n14", "ozaki2-n16", "ozaki2-n18", "ozaki2-n20",
           "oy-tf32", "3xtf32", "fp64-fma", "numpy")


def comparison(ks=(16, 64, 256), spreads=(0, 8, 16), n: int = 8, seed: int = 0, schemes=COMPARE) -> list[dict]:
    """Error of each scheme per (K, exponent spread): median and max componentwise relative error
    |D - Σ ab| / Σ|a b| over n×n outputs (exact rationals). Inputs: mantissa uniform in [1, 2),
    exponent uniform in [-spread, spread], random sign, rounded to fp32 so that the fp32 schemes
    (O-Y tf32, 3xTF32 on ampere-tf32-fp32) see the same values as the fp64 ones."""
    from smtmodel.schemes.ozaki import gemm
    rows = []
    for k in ks:
        for sp in spreads:
            rng = np.random.default_rng(seed + 1000 * k + sp)

            def draw(shape):
                x = rng.uniform(1, 2, shape) * np.exp2(rng.integers(-sp, sp + 1, shape)) * rng.choice([-1, 1], shape)
                return x.astype(np.float32)
            A32, B32 = draw((n, k)), draw((k, n))
            A, B = A32.astype(np.float64), B32.astype(np.float64)
            ex = _exact(A, B)
            den = np.abs(A) @ np.abs(B)
            for name in schemes:
                t0 = time.perf_counter()
                if name.startswith("ozaki"):
                    D = gemm(get_ozaki(name), A, B)
                elif name == "fp64-fma":
                    D = _fma_chain(A, B)
                elif name == "numpy":
                    D = A @ B
                else:
                    D = _fp32_scheme_gemm(name, "ampere-tf32-fp32", A32, B32)
                dt = time.perf_counter() - t0
                rel = [float(abs(Fraction(D[i, j]) - ex[i][j]) / Fraction(den[i, j])) for i in range(n) for j in range(n)]
                rows.append({"scheme": name, "k": k, "spread": sp, "median": float(np.median(rel)),
                             "max": float(np.max(rel)), "seconds": dt})
    return rows


def table_text(rows: list[dict], key: str = "max") -> str:
    ks = sorted({r["k"] for r in rows})
    sps = sorted({r["spread"] for r in rows})
    cols = [(k, sp) for k in ks for sp in sps]
    names = list(dict.fromkeys(r["scheme"] for r in rows))
    idx = {(r["scheme"], r["k"], r["spread"]): r for r in rows}
    head = "| scheme | " + " | ".join(f"K={k}, ±{sp}" for k, sp in cols) + " |"
    out = [head, "|---" * (len(cols) + 1) + "|"]
    for nm in names:
        out.append(f"| {nm} | " + " | ".join(f"{idx[(nm, k, sp)][key]:.2e}" for k, sp in cols) + " |")
    return "\n".join(out)


__all__ = ["Witness", "worst_witness", "Lemma", "OverflowReport", "SlicingReport", "prove_no_overflow", "prove_slicing", "ozaki1_gamma", "comparison_point",
           "check_bound", "comparison", "table_text", "adversarial", "overflow_k", "COMPARE"]


def comparison_point(k: int, spread: int, n: int, seed: int, schemes=COMPARE) -> dict:
    """One (K, spread) point of :func:`comparison` (a campaign task for ``mmaprobe plot schemes --vs ozaki``)."""
    return {"status": "done", "k": k, "spread": spread, "rows": comparison((k,), (spread,), n, seed, schemes)}



FP64_FAMILIES = ("uniform", "wide", "span", "cancel", "threshold", "trunc")


def _fp64_draw(family: str, n: int, k: int, rng):
    """fp64 inputs A (n, k), B (k, n): uniform U(-1, 1); wide (exponents uniform in [-30, 30], a
    span of 60 bits within a row: more than 55); span (each row of A one element near 1 and the
    rest near 2^-40); cancel (the second half of each row of A is minus the first half with its
    last bit flipped, B's rows repeated); threshold (U(1, 2) with random signs, column 0 of A
    times 2 and row 0 of B halved: ESC 1 or 2 for every dot product, where DYNAMIC's slice
    count steps from 7 to 8 with ``pad`` = 1); trunc (column 0 of A in [1, 2), the other
    elements in [1, 2)·2^-(40..60) with full significands, B in [1, 2): ESC 0 or 1, and the small
    elements' low bits lie below the fixed-point grid)."""
    if family == "uniform":
        return rng.uniform(-1, 1, (n, k)), rng.uniform(-1, 1, (k, n))
    if family == "wide":
        f = lambda s: rng.uniform(1, 2, s) * np.exp2(rng.integers(-30, 31, s)) * rng.choice([-1, 1], s)  # noqa: E731
        return f((n, k)), f((k, n))
    if family == "span":
        A = rng.uniform(1, 2, (n, k)) * 2.0 ** -40 * rng.choice([-1, 1], (n, k))
        A[:, 0] = rng.uniform(1, 2, n)
        return A, rng.uniform(-1, 1, (k, n))
    if family == "cancel":
        A, B = rng.uniform(-1, 1, (n, k)), rng.uniform(-1, 1, (k, n))
        h = k // 2
        if h:
            A[:, h:2 * h] = -(A[:, :h].view(np.uint64) ^ np.uint64(1)).view(np.float64)
            B[h:2 * h] = B[:h]
        return A, B
    if family == "threshold":
        A = rng.uniform(1, 2, (n, k)) * rng.choice([-1, 1], (n, k))
        B = rng.uniform(1, 2, (k, n)) * rng.choice([-1, 1], (k, n))
        A[:, 0] *= 2.0
        B[0] *= 0.5
        return A, B
    if family == "trunc":
        A = rng.uniform(1, 2, (n, k)) * np.exp2(-rng.integers(40, 61, (n, k))) * rng.choice([-1, 1], (n, k))
        A[:, 0] = rng.uniform(1, 2, n)
        return A, rng.uniform(1, 2, (k, n))
    raise OzakiError(f"unknown family {family!r}; one of {', '.join(FP64_FAMILIES)}")


def _fp64_blocked(A, B, kb: int = 32) -> np.ndarray:
    """A blocked DGEMM order: per k-block of ``kb`` an fp64 FMA chain from +0 (the DMMA model),
    the blocks added with RN into the result in K order (the order of a split-K DGEMM; the
    fp64 twin of ``fp32-blocked``)."""
    D = None
    for s in range(0, A.shape[1], kb):
        P = _fma_chain(A[:, s:s + kb], B[s:s + kb])
        D = P if D is None else D + P
    return D


def fp64_claim(name: str | None, ks=(1, 2, 4, 16, 64), families=FP64_FAMILIES, n: int = 8, seed: int = 0,
               dynamic=None) -> dict:
    """'As accurate as native FP64', element by element: the emulated GEMM (scheme ``name``, or
    cuBLAS's DYNAMIC mode with the :class:`~smtmodel.schemes.ozaki.Dynamic` ``dynamic``) against
    native FP64 -- the fp64 FMA chain in K order (DMMA, hopper-fp64-fp64), a blocked order
    (:func:`_fp64_blocked`) and NumPy's BLAS dgemm -- errors against the exact product in
    Fractions; the first witness of the emulation less accurate than the chain, and the first
    less accurate than both native orders."""
    from smtmodel.schemes.ozaki import adp_gemm, gemm, get_ozaki
    s = None if dynamic is not None else get_ozaki(name)
    rng = np.random.default_rng(seed)
    rows, witness, witness_both = [], None, None
    for k in ks:
        for fam in families:
            A, B = _fp64_draw(fam, n, k, rng)
            if dynamic is not None:
                D, plan = adp_gemm(A, B, cfg=dynamic)
            else:
                D, plan = gemm(s, A, B), None
            F, G, N = _fma_chain(A, B), _fp64_blocked(A, B), A @ B
            ex = _exact(A, B)
            worse = better = worse_bl = worse_np = 0
            mx = {"emul": 0.0, "fma": 0.0, "blocked": 0.0, "numpy": 0.0}
            for i in range(n):
                for j in range(n):
                    e = ex[i][j]
                    ed, ef, eg, en = (abs(Fraction(float(M[i, j])) - e) for M in (D, F, G, N))
                    worse += ed > ef
                    better += ed < ef
                    worse_bl += ed > eg
                    worse_np += ed > en
                    if e:
                        for key, v in (("emul", ed), ("fma", ef), ("blocked", eg), ("numpy", en)):
                            mx[key] = max(mx[key], float(v / abs(e)))
                    w = {"k": k, "family": fam, "a": [float(v).hex() for v in A[i]],
                         "b": [float(v).hex() for v in B[:, j]], "emulated": float(D[i, j]).hex(),
                         "fma_chain": float(F[i, j]).hex(), "blocked": float(G[i, j]).hex(),
                         "err_emulated": float(ed), "err_fma_chain": float(ef), "err_blocked": float(eg),
                         "plan": plan}
                    if witness is None and ed > ef:
                        witness = w
                    if witness_both is None and ed > ef and ed > eg:
                        witness_both = w
            rows.append({"k": k, "family": fam, "elements": n * n, "worse_than_fma": int(worse),
                         "better_than_fma": int(better), "worse_than_blocked": int(worse_bl),
                         "worse_than_numpy": int(worse_np), "max_rel_emulated": mx["emul"], "max_rel_fma": mx["fma"],
                         "max_rel_blocked": mx["blocked"], "max_rel_numpy": mx["numpy"],
                         "path": plan["path"] if plan else "emulated",
                         "esc": plan["esc"] if plan else None, "slices": plan["slices"] if plan else s.slices})
    return {"scheme": name or "dynamic", "dynamic": None if dynamic is None else vars(dynamic), "seed": seed,
            "rows": rows, "witness": witness, "witness_both": witness_both}


def fp64_claim_memory(name: str | None, ks, n: int) -> int:
    """Bytes :func:`fp64_claim` needs at most for ``n`` x ``n`` outputs at the largest K of
    ``ks``, an upper estimate: the emulated GEMM (:func:`smtmodel.schemes.ozaki.gemm_memory`, 8
    slices for DYNAMIC) and 512 bytes per output for the exact values (Python Fractions)."""
    from smtmodel.schemes.ozaki import Ozaki, gemm_memory, get_ozaki
    k = max(ks)
    s = get_ozaki(name) if name else Ozaki("dynamic", "I", "", "", slices=8)
    return gemm_memory(s, n, n, k) + 512 * n * n
