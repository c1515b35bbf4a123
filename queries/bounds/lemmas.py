"""Seed 000 Table 9 by its error sources: narrow UNSAT queries (lemmas A, A0, B, G, V, D, R) over
the model's own alignment, accumulation and rounding code, and the constants they establish."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from smtmodel.bv import NUMPY, ite
from smtmodel.catalog import all_models, get_model
from smtmodel.formats import get_format
from smtmodel.fp import decode
from smtmodel.model import Model, ModelError
from smtmodel.ops.fdpa import RHO, rho_format
from smtmodel.ops.fused import value_term
from smtmodel.schemes.exact import Window, abs_fixed, exact_fixed, products, to_fixed
from smtmodel.solve import available_solvers, make_engine, make_session

from .formula import beta_for, tfdpa_models


# ---- the lemma proof: Table 9's error sources as separate narrow UNSAT queries ----------------------

@dataclass
class LemmaResult:
    name: str
    status: str
    seconds: float
    solver: str

    def to_dict(self):
        return asdict(self)


TABLE9_OPS = ("tfdpa", "stfdpa", "gstfdpa", "fp8_via_fp16", "trfdpa", "gtrfdpa")
"""The ops seed 000 Table 9's "T-FDPA, others" row covers here: T-FDPA, its scaled variants
ST-FDPA / GST-FDPA, the FP8 mma.sync path built from two fp16 T-FDPAs (composed bound), and
AMD CDNA3's TR-FDPA / GTR-FDPA (Algorithms 10, 11: e_max read as E = max(e_max, Exp(c)))."""
TR_OPS = ("trfdpa", "gtrfdpa")


def table9_models(include_rivals: bool = True) -> list[Model]:
    plain = None if include_rivals else {m.id for m in tfdpa_models(False)}
    return [m for m in all_models() if m.op in TABLE9_OPS and not m.mixed
            and (plain is None or m.op != "tfdpa" or m.id in plain)]


def _scale_range(m: Model) -> tuple[int, int]:
    """Static range of the scale exponent sum ea + eb (0, 0 without block scales)."""
    if not m.scale_fmt:
        return 0, 0
    f = get_format(m.scale_fmt)
    return 2 * f.emin, 2 * f.emax


def e_range(m: Model) -> tuple[int, int]:
    """A static range containing e_max for every finite input (the lemmas quantify e_max over it).
    With a zero rule for c that is not ``ignore`` c always takes part (a zero c aligns at -126
    or the fixed e_zero), so e_max >= that; a fixed e_zero of any place can set e_max."""
    fi, fc = get_format(m.in_fmt), get_format(m.c_fmt)
    s_lo, s_hi = _scale_range(m)
    if m.op == "gstfdpa":                       # a group aligns at its scale exponent sum
        top, low = s_hi + 1, s_lo
    else:
        top, low = 2 * (max(fi.emax, 0) + 2) + 2 + s_hi, 2 * fi.emin - 2 + s_lo
    zc = -126 if m.zero_c == "seed000" else m.zero_c     # c always takes part, unless ignored
    lo = min(-130, zc) if isinstance(zc, int) else min(-130, low)
    fixed = [r for r in (m.zero_prod, m.zero_group, m.zero_scale) if isinstance(r, int)]
    lo, top = min([lo] + fixed), max([top] + fixed)
    if m.op in TR_OPS:          # a zero c takes no part; a zero operand aligns at -126 (+ the other's)
        lo = min(lo, -256)
    return lo, max(top, fc.emax + 2)


def _dummy_terms(m: Model) -> list:
    """The model's summands built over placeholder inputs: their static geometry (ibits, count)."""
    from smtmodel.ops.fdpa import group_term, scaled_product_term

    z = lambda fmt: decode(NUMPY.input(np.zeros(1, np.uint64), get_format(fmt).width), fmt)
    if m.op == "gstfdpa":
        terms = [group_term([z(m.in_fmt)] * m.G, [z(m.in_fmt)] * m.G, z(m.scale_fmt), z(m.scale_fmt))[0]
                 for _ in range(m.L // m.G)]
    elif m.op in TR_OPS:      # step 2 sums products only (GTR: each group of L/2); c enters in step 3
        n = m.L // 2 if m.op == "gtrfdpa" else m.L
        return [scaled_product_term(z(m.in_fmt), z(m.in_fmt)) for _ in range(n)]
    else:
        terms = [scaled_product_term(z(m.in_fmt), z(m.in_fmt), None, m.normalize, m.zero_prod)
                 for _ in range(m.L)]
    return terms + [value_term(z(m.c_fmt), m.zero_c)]


def _acc_W(m: Model) -> tuple[int, int]:
    """(W, summands): the width of the model's truncated_sum accumulator (ops.fused.acc_width, the
    function t_fdpa / gst_fdpa use) and how many summands it adds."""
    from smtmodel.ops.fused import acc_width

    terms = _dummy_terms(m)
    return acc_width(terms, m.F, m.carry), len(terms)


def _shift_in(B, amount, lo: int, hi: int, W: int):
    """(in_range, amount clamped to [0, W-1] as a W-bit shift) for a signed EXP_W amount."""
    from smtmodel.bv import clamp_shift
    ok = amount.sge(lo) & amount.sle(hi)
    return ok, clamp_shift(amount, W - 1, max(2, W.bit_length() + 1)).uresize(W)


def _scales(B, m: Model):
    """Block-scale variables (E8M0 / UE4M3) of ST-/GST-FDPA: (sa, sb decoded, variables, not-NaN)."""
    if not m.scale_fmt:
        return None, None, {}, []
    sf = get_format(m.scale_fmt)
    xa, xb = B.var("sa", sf.width), B.var("sb", sf.width)
    sa, sb = decode(xa, sf), decode(xb, sf)
    return sa, sb, {"sa": xa, "sb": xb}, [~sa.nan, ~sb.nan]


def _summand(B, m: Model, which: str):
    """(term as the model builds it, its exact value, side conditions, variables) for lemma A.
    ``which``: "product" (a_k b_k; for ST-FDPA times 2^(ea+eb), Algorithm 8), "group" (GST-FDPA:
    one group's scaled dot product, Algorithm 9; its exactness is lemma G) or "c"."""
    from smtmodel.fp import FPValue, mul_exact
    from smtmodel.ops.fdpa import group_term, scaled_product_term

    fi, fc = get_format(m.in_fmt), get_format(m.c_fmt)
    if which == "c":
        c = B.var("c", fc.width)
        Cm = m.decode_input(c, fc)
        return value_term(Cm, m.zero_c), decode(c, fc), [~(Cm.nan | Cm.inf)], {"c": c}
    sa, sb, v, conds = _scales(B, m)
    if which == "product":
        x, y = B.var("x", fi.width), B.var("y", fi.width)
        X, Y = m.decode_input(x, fi), m.decode_input(y, fi)
        se = sa.exp + sb.exp if sa is not None else None
        term = scaled_product_term(X, Y, se, m.normalize, m.zero_prod)
        t = mul_exact(decode(x, fi), decode(y, fi))
        if se is not None:
            s_lo, s_hi = _scale_range(m)
            t = FPValue(t.sign, t.exp + se, t.sig, t.frac, t.nan, t.inf, t.zero, t.exp_lo + s_lo, t.exp_hi + s_hi)
        return term, t, conds + [~(X.nan | X.inf), ~(Y.nan | Y.inf)], {"x": x, "y": y, **v}
    xs = [B.var(f"x{i}", fi.width) for i in range(m.G)]
    ys = [B.var(f"y{i}", fi.width) for i in range(m.G)]
    term, prods = group_term([m.decode_input(x, fi) for x in xs], [m.decode_input(y, fi) for y in ys], sa, sb)
    v.update({f"x{i}": x for i, x in enumerate(xs)})
    v.update({f"y{i}": y for i, y in enumerate(ys)})
    return term, term.v, conds + [~(p.nan | p.inf) for p in prods], v


def lemma_term_rel(B, m: Model, which: str, at_emax: bool = False, W: int | None = None, align=None,
                   erange: tuple | None = None):
    """Lemma A in units of 2^(e_max - F - G): for every finite summand t (a product, a GST group,
    or c) and every e_max >= its alignment exponent, the model's aligned summand S satisfies
    |S * 2^G - t| < 2^G (less than one unit 2^(e_max - F) lost) and |S| < 2^(ibits + F) (with a
    round-down ``align``, <=). ``at_emax`` (lemma A0): the summand that sets e_max loses nothing.
    ``W`` / ``align(term, e_max, F, W)``: the accumulator width and aligning function (default:
    the model's truncated_sum and ops.fused.align_term). ``erange``: the e_max range (default
    :func:`e_range`)."""
    from smtmodel.fp.value import EXP_W
    from smtmodel.ops.fused import align_term

    term, t, fin, v = _summand(B, m, which)
    W = W or _acc_W(m)[0]
    emax = B.var("emax", EXP_W)
    v["emax"] = emax
    S = (align or align_term)(term, emax, m.F, W)
    G = t.sig.w + 2
    Wr = W + G + t.sig.w + 4
    r = t.exp - t.frac - (emax - m.F - G)              # position of t's last bit in relative units
    ok, sh = _shift_in(B, r, 0, Wr - t.sig.w - 2, Wr)
    tr = ite_signed(t, t.sig.uresize(Wr) << sh)
    diff = abs_fixed((S.sresize(Wr) << G) - tr)
    neg_pos = r.slt(0)
    # r < 0: |t| < 2^(sig.w + r) <= 2^(G - 2) units of 2^(e_max-F-G), i.e. below one unit: S must be 0
    size = 1 << (term.ibits + m.F)
    too_big = abs_fixed(S).ugt(size) if align is not None else abs_fixed(S).uge(size)
    lost = S.ne(0) if align is None else (S.ne(0) & ~(t.sign & S.eq((1 << S.w) - 1)))   # RD: floor(-tiny) = -1
    viol = (~neg_pos & (~ok | diff.uge(1 << G))) | (neg_pos & lost) | too_big
    if at_emax:
        viol = (~neg_pos & (~ok | diff.ne(0))) | (neg_pos & t.finite_nonzero)
    lo_e, hi_e = erange or e_range(m)
    conds = fin + [emax.eq(term.aexp) if at_emax else emax.sge(term.aexp), emax.sge(lo_e), emax.sle(hi_e),
                   t.finite_nonzero, viol]
    return conds, v


def ite_signed(t, mag):
    """``mag`` with ``t``'s sign."""
    from smtmodel.bv import ite
    return ite(t.sign, -mag, mag)


def lemma_round_rel(B, m: Model, W: int | None = None, F: int | None = None, erange: tuple | None = None):
    """Lemma B in units of 2^(e_max - F - G): for every accumulator S (W bits, the model's) and
    e_max in range (``erange``, default :func:`e_range`; :func:`prove_lemmas` asks the wider
    :func:`wide_range` first), d = finish(S, e_max) (ops.fdpa.finish, the step t_fdpa ends with) is finite
    only if |d - S 2^(e_max-F)| <= beta ulp(d)."""
    from smtmodel.bv import clz, ite, smax
    from smtmodel.fp.value import EXP_W, exp_const
    from smtmodel.ops.fdpa import IEEE, NVIDIA, finish
    from smtmodel.ops.fused import signed_value

    fo = get_format(m.out_fmt)
    rf = rho_format(RHO[m.rho])
    W = W or _acc_W(m)[0]
    F = m.F if F is None else F
    S = B.var("S", W)
    emax = B.var("emax", EXP_W)
    sign, mag = signed_value(S)
    specials = NVIDIA if m.specials == "nvidia" else IEEE
    d = finish(sign, mag, emax, F, B.false(), B.false(), B.false(), RHO[m.rho], specials)
    D = decode(d, fo)
    G = max(rf.precision, fo.precision) + 4       # d's last container bit is >= 2^(e_max-F-G) when d ~ S
    Wr = W + 2 * G + 8
    r = D.exp - D.frac - (emax - F - G)
    ok, sh = _shift_in(B, r, 0, Wr - D.sig.w - 2, Wr)
    Dr = ite_signed(D, D.sig.uresize(Wr) << sh)
    err = abs_fixed(Dr - (S.sresize(Wr) << G))
    # ulp(d) = 2^(max(top(d), emin) - p + 1): top(d) = exp + (sig.w - 1 - clz(sig)) - frac
    lz = clz(D.sig).uresize(EXP_W)
    top = D.exp + (D.sig.w - 1) - lz - D.frac
    top = ite(D.sig.eq(0), exp_const(B, rf.emin), smax(top, exp_const(B, rf.emin)))
    ru = top - (rf.precision - 1) - (emax - F - G)
    ok2, sh2 = _shift_in(B, ru, 0, Wr - 3, Wr)
    ulp = B.const(1, Wr) << sh2
    w = Wr + 3
    big = (err.uresize(w) << 1).ugt(ulp.uresize(w) * int(beta_for(m) * 2))
    zero_ok = D.sig.eq(0)
    # ulp below one relative unit (tiny results): the error, an integer in units, must be 0
    tiny = ru.slt(0)
    # ulp far above the window (results in the output's subnormal range): |S| < beta ulp there,
    # so only d = 0 is within the bound; any d != 0 has |d| >= ulp(d) >> |S|
    viol = ~(D.inf | D.nan) & ((ok2 & big) | (tiny & err.ne(0)) | (~ok2 & ~tiny & ~zero_ok) | (~ok & ~zero_ok))
    lo_e, hi_e = erange or e_range(m)
    return [emax.sge(lo_e), emax.sle(hi_e), viol], {"S": S, "emax": emax}


WIDE_RANGE = (-1024, 1023)
"""The e_max range lemmas A and B are asked over first: every catalog model's :func:`e_range`
lies inside, so the lemma no longer depends on the input format's exponent range, and parameter
sets with the same accumulator width, F, rho and output format share one B formula (21 formulas
for the catalog's 70 sets), likewise A:c for the same c format; :func:`_run` proves each
formula once per process. A proof over a wider range is a stronger statement; Bitwuzla takes the
same time for it (B, hopper-fp16-fp32: 1.4 s against 1.5 s). Where the wide lemma is sat, the
model's own range decides (:func:`_run_wide`), so no verdict depends on the widening."""


def round_key(m: Model) -> tuple:
    """What lemma B over :func:`wide_range` depends on: (accumulator width, F, rho, specials,
    output format, the range). Parameter sets with one key share one B formula; ``bound all``
    hands them to one worker so that it is proved once (:func:`_run`)."""
    if m.op == "fp8_via_fp16":
        m = half_model(m)
    W, F = (tr_geometry(m)[2], m.F2) if m.op in TR_OPS else (_acc_W(m)[0], m.F)
    return (W, F, m.rho, m.specials, m.out_fmt, wide_range(m))


def wide_range(m: Model) -> tuple[int, int]:
    """:data:`WIDE_RANGE`, widened where the model's own :func:`e_range` reaches further."""
    lo, hi = e_range(m)
    return min(lo, WIDE_RANGE[0]), max(hi, WIDE_RANGE[1])


def lemma_group_exact(B, m: Model):
    """Lemma G (GST-FDPA): a group's term is exactly (sum of its G products) * sa * sb, i.e. its
    significand sig * 2^-frac equals sum a_k b_k * (sa.sig 2^-fa) * (sb.sig 2^-fb) (the common
    factor 2^(ea + eb) cancels); the sum is taken over a fixed-point window (schemes.exact)."""
    from smtmodel.ops.fdpa import group_term

    fi = get_format(m.in_fmt)
    sa, sb, v, conds = _scales(B, m)
    xs = [B.var(f"x{i}", fi.width) for i in range(m.G)]
    ys = [B.var(f"y{i}", fi.width) for i in range(m.G)]
    v.update({f"x{i}": x for i, x in enumerate(xs)})
    v.update({f"y{i}": y for i, y in enumerate(ys)})
    term, prods = group_term([m.decode_input(x, fi) for x in xs], [m.decode_input(y, fi) for y in ys], sa, sb)
    P = products([decode(x, fi) for x in xs], [decode(y, fi) for y in ys])
    win = Window.covering(P, extra_terms=1)
    E = exact_fixed(P, win)
    frac = term.v.frac
    u = min(-frac, win.lsb0 - sa.frac - sb.frac)
    w = max(term.v.sig.w + (-frac - u), E.w + sa.sig.w + sb.sig.w + (win.lsb0 - sa.frac - sb.frac - u)) + 4
    lhs = ite_signed(term.v, term.v.sig.uresize(w) << (-frac - u))
    rhs = (E.sresize(w) * sa.sig.uresize(w) * sb.sig.uresize(w)) << (win.lsb0 - sa.frac - sb.frac - u)
    fin = [~(p.nan | p.inf) for p in P]
    return conds + fin + [lhs.ne(rhs)], v


def _group_inputs(B, m: Model):
    fi = get_format(m.in_fmt)
    xs = [B.var(f"x{i}", fi.width) for i in range(m.G)]
    ys = [B.var(f"y{i}", fi.width) for i in range(m.G)]
    v = {f"x{i}": x for i, x in enumerate(xs)} | {f"y{i}": y for i, y in enumerate(ys)}
    return xs, ys, v


def lemma_group_sum(B, m: Model):
    """Lemma G1 (GST-FDPA): a group's exact sum before its scales (ops.fdpa.group_sum, the step
    group_term starts with) is sum a_k b_k exactly: (-1)^sign mag 2^-f0 equals the fixed-point
    window sum of the products (schemes.exact). No scale takes part."""
    from smtmodel.ops.fdpa import group_sum

    fi = get_format(m.in_fmt)
    xs, ys, v = _group_inputs(B, m)
    prods, sgn, mag, f0 = group_sum([m.decode_input(x, fi) for x in xs], [m.decode_input(y, fi) for y in ys])
    P = products([decode(x, fi) for x in xs], [decode(y, fi) for y in ys])
    win = Window.covering(P, extra_terms=1)
    E = exact_fixed(P, win)
    u = min(-f0, win.lsb0)
    w = max(mag.w + (-f0 - u), E.w + (win.lsb0 - u)) + 2
    lhs = ite(sgn, -(mag.uresize(w) << (-f0 - u)), mag.uresize(w) << (-f0 - u))
    rhs = E.sresize(w) << (win.lsb0 - u)
    return [~(p.nan | p.inf) for p in P] + [lhs.ne(rhs)], v


def group_sum_geometry(m: Model) -> tuple[int, int]:
    """(width of the magnitude, f0) of ops.fdpa.group_sum for the model's group: static."""
    from smtmodel.ops.fdpa import group_sum

    z = decode(NUMPY.input(np.zeros(1, np.uint64), get_format(m.in_fmt).width), m.in_fmt)
    _, _, mag, f0 = group_sum([z] * m.G, [z] * m.G)
    return mag.w, f0


def lemma_group_scales(B, m: Model):
    """Lemma G2 (GST-FDPA): the scale step (ops.fdpa.scale_group, the step group_term ends with)
    keeps the value: for every sign, every magnitude of group_sum's width and all non-NaN scales,
    it keeps the sign and its significand is mag * sa.sig * sb.sig exactly (the same unit
    2^-(f0 + fa + fb); no bit lost to the width). With G1 this is lemma G: the group's value
    is (sum a_k b_k) * sa * sb. It quantifies over every magnitude, reachable or not."""
    from smtmodel.ops.fdpa import scale_group

    Wm, f0 = group_sum_geometry(m)
    sa, sb, v, conds = _scales(B, m)
    s1, mag = B.var("sign", 1), B.var("mag", Wm)
    v.update({"sign": s1, "mag": mag})
    sgn = s1.eq(1)
    t = scale_group(sgn, mag, f0, sa, sb)
    w = Wm + sa.sig.w + sb.sig.w + 2
    assert t.frac == f0 + sa.frac + sb.frac and t.sig.w < w
    rhs = mag.uresize(w) * sa.sig.uresize(w) * sb.sig.uresize(w)
    return conds + [(t.sign ^ sgn) | t.sig.uresize(w).ne(rhs)], v


def _value_lemma_window(vals: list):
    win = Window.covering(vals, extra_terms=2)
    return win, [to_fixed(x, win.lsb0, win.W) for x in vals]


def lemma_convert_exact(B, m: Model):
    """Lemma V (FP8 mma.sync path): the conversion of every finite input to fp16 keeps its value."""
    from smtmodel.fp import convert

    fi = get_format(m.in_fmt)
    x = B.var("x", fi.width)
    X = decode(x, fi)
    H = decode(convert(x, fi, "fp16"), "fp16")
    _, (xf, hf) = _value_lemma_window([X, H])
    return [~(X.nan | X.inf), H.nan | H.inf | xf.ne(hf)], {"x": x}


def prove_late_c(m: Model, timeout: float = 120) -> LemmaResult:
    """Lemma D (FP8 mma.sync path): for all finite d and c, ops.fdpa.add_late_c (the RNE addition
    of c after the products) equals SMT-LIB ``fp.add RNE`` -- so it is within 1/2 ulp of d + c or
    overflows (IEEE 754 §4.3.1). Asked of z3's floating-point theory whatever the lemma solver:
    z3 translates the FP terms to bitvectors (fpa2bv) and Bitwuzla decides them where it is
    installed (Session.check_blasted), else z3 alone."""
    from smtmodel.ops.fdpa import IEEE, NVIDIA, add_late_c

    fo, fc = get_format(m.out_fmt), get_format(m.c_fmt)
    if fo != fc:
        return LemmaResult("D:late c = fp.add RNE", "unknown", 0.0, "none (c and output formats differ)")
    S = make_session("z3", timeout)
    x, c = S.var("x", fo.width), S.var("c", fo.width)
    r = add_late_c(x, m.out_fmt, c, m.c_fmt, NVIDIA if m.specials == "nvidia" else IEEE)
    F = lambda v: S.fp_from_bits(v, fo.ebits, fo.precision)
    X, C = decode(x, fo), decode(c, fo)
    S.add(~(X.nan | X.inf) & ~(C.nan | C.inf) & ~S.fp_same(F(r), S.fp_add("RNE", F(x), F(c))))
    name = "D:late c = fp.add RNE"
    def prove():
        if "bitwuzla" in available_solvers():     # z3's FP-to-BV translation, decided by Bitwuzla (3x faster)
            r = S.check_blasted(timeout)
            return r, cached_label(f"{r.solver} (FP theory)", r)
        r = S.check()
        return r, cached_label("z3 (FP theory)", r)
    return _once(("z3 (FP theory)", S.text()), "z3 (FP theory; ", m, name, prove)


def half_model(m: Model) -> Model:
    """The fp16 T-FDPA each half of the FP8 mma.sync path runs (c in the output format)."""
    from dataclasses import replace
    return replace(m, id=f"{m.id}/half", op="tfdpa", in_fmt="fp16", c_fmt=m.out_fmt)


_PROVED: dict = {}
"""(solver, SHA-256 of the formula's SMT-LIB2 text) -> (model id, seconds) of the lemmas proved
(unsat) in this process: a parameter set whose lemma is the very same formula as one already
proved in this run (lemma B of sets with equal accumulator, F, rho and output format) is not
proved twice. Independent of the proof cache (``--no-cache`` turns that off, not this)."""


def _once(key, who: str, m: Model, name: str, prove) -> LemmaResult:
    """``prove()`` -> (result, label), unless the formula ``key`` = (solver, text) was proved in
    this run already (:data:`_PROVED`); ``key`` None: always proved. ``who``: the label's opening
    words for the shared case."""
    import hashlib

    if key is not None:
        key = (key[0], hashlib.sha256(key[1].encode()).hexdigest())
        if key in _PROVED:
            first, secs = _PROVED[key]
            return LemmaResult(name, "unsat", 0.0, f"{who}the same formula as {first}'s, proved in {secs:.2f} s in this run)")
    r, label = prove()
    if key is not None and r.status == "unsat":
        _PROVED[key] = (m.id, r.seconds)
    return LemmaResult(name, r.status, r.seconds, label)


def _run(solver, timeout, name, build, m) -> LemmaResult:
    eng = make_engine(solver)
    terms, v = build(eng.B, m)
    # z3's term printer: the same formula, the same text (to_smt2 depends on the whole context)
    key = (solver, "\n".join(t.v.sexpr() for t in terms)) if solver in ("bitwuzla", "z3") else None
    def prove():
        r = eng.check(terms, v, timeout)
        return r, cached_label(solver, r)
    return _once(key, f"{solver} (", m, name, prove)


def _run_wide(solver, timeout, name, build, m, wide: bool = True) -> LemmaResult:
    """``build(B, m, erange)`` asked over :func:`wide_range` (shared by more parameter sets, see
    :data:`WIDE_RANGE`); where that is sat, over the model's own :func:`e_range`. ``wide=False``:
    over the model's own range only (where no other set shares the formula: the wide lemma can
    take longer, e.g. B of GST-FDPA 3.1 s against 2.3 s)."""
    if not wide:
        return _run(solver, timeout, name, lambda B, mm: build(B, mm, e_range(mm)), m)
    r = _run(solver, timeout, name, lambda B, mm: build(B, mm, wide_range(mm)), m)
    if r.status != "sat" or wide_range(m) == e_range(m):
        return r
    return _run(solver, timeout, name, lambda B, mm: build(B, mm, e_range(mm)), m)


def cached_label(solver: str, r) -> str:
    """The solver that answered, and where the answer came from the proof cache, that it did
    (``smtmodel.solve.cache``: which solver proved it, its version and the date)."""
    return f"{solver} ({r.extra['cached']})" if r.extra.get("cached") else solver


def prove_group_exact(m: Model, solver: str, timeout: float) -> list[LemmaResult]:
    """Lemma G as G1 (the exact sum) and G2 (the scale step), two small queries in place of one
    whose scale multiplications Bitwuzla bit-blasts together with the sum (NVFP4: about 60 s
    against well under a second); where either is sat, the monolithic :func:`lemma_group_exact`
    decides (G2 quantifies over unreachable magnitudes too, so its counterexample need not be
    one of G). An unknown part stays unknown (z3 does not finish G1 in 120 s, nor G itself)."""
    parts = [_run(solver, timeout, "G1:group sum exact", lemma_group_sum, m),
             _run(solver, timeout, "G2:group scales exact", lemma_group_scales, m)]
    if any(r.status == "sat" for r in parts):
        return [_run(solver, timeout, "G:group exact", lemma_group_exact, m)]
    return parts


def tr_geometry(m: Model) -> tuple[int, int, int]:
    """(W_products, W_T, W_out) of TR-/GTR-FDPA (ops.amd.tr_fdpa): the step-2 product sum (per group
    for GTR), the sum T that step 3 realigns (GTR: the two realigned groups, one bit wider), and
    the step-3 accumulator in units 2^(E - F2)."""
    from smtmodel.ops.amd import realign_width

    Wp, _ = _acc_W(m)
    WT = Wp + 1 if m.op == "gtrfdpa" else Wp
    return Wp, WT, realign_width(WT, m.F, m.F2)


def lemma_realign(B, W_in: int, up: int, W_out: int):
    """Lemma R: ops.amd's round-down realignment is floor(T * 2^(up - s)) for every W_in-bit T and
    shift s >= 0 (so exact at s = 0, and within one output unit otherwise)."""
    from smtmodel.fp.value import EXP_W
    from smtmodel.ops.amd import rd_realign

    T, s_ = B.var("T", W_in), B.var("s", EXP_W)
    Tp = rd_realign(T, W_in, s_, up, W_out)
    Wb = 2 * W_out + up + 4
    ok, sh = _shift_in(B, s_, 0, W_out - 1, Wb)
    lhs = Tp.sresize(Wb) << sh
    rhs = T.sresize(Wb) << up
    floor_ok = lhs.sle(rhs) & rhs.slt((Tp.sresize(Wb) + 1) << sh)
    # s >= W_out: |T 2^up| < 2^(W_in - 1 + up) <= 2^s, so the floor is 0 or -1
    far = Tp.ne(ite_signed_bits(T, W_out))
    viol = s_.sge(0) & ((ok & ~floor_ok) | (s_.sge(W_out) & far))
    return [viol], {"T": T, "s": s_}


def ite_signed_bits(T, W: int):
    from smtmodel.bv import ite
    return ite(T.extract(T.w - 1, T.w - 1).eq(1), T.B.const((1 << W) - 1, W), T.B.const(0, W))


def tr_alpha(m: Model, a0p: bool, a0c: bool, n: int | None = None) -> Fraction:
    """Fused-summation constant for TR-/GTR-FDPA in units 2^(E - F), E = max(e_max, Exp(c)), from the
    lemmas (A: each product or c loses < 1 unit of its alignment; A0: the one at its alignment
    exponent loses nothing; R: realignments lose < 1 output unit, nothing at shift 0), by cases:
    E = e_max (T is not shifted; GTR: one group is) or E > e_max (then c sets E and every product
    unit is <= 2^(E-1-F); T loses < 2^(E - F2)). ``n``: an FDPA of n <= L possibly non-zero
    products (a zero product aligns to 0 and loses nothing; GTR: one group holds a lone product)."""
    L = m.L if n is None else max(n, 2) if m.op == "gtrfdpa" else n
    rt = Fraction(1, 1 << (m.F2 - m.F))
    if m.op == "trfdpa":
        prods = L - a0p
        case_eq = prods + 1
        case_gt = Fraction(prods, 2) + rt + (0 if a0c else 1)
    else:
        prods = L - 2 * a0p
        case_eq = prods + 1 + 1
        case_gt = Fraction(prods + 1, 2) + rt + (0 if a0c else 1)
    return max(Fraction(case_eq), case_gt)


def _prove_tr(m: Model, solver: str, timeout: float, wide: bool = False) -> list[LemmaResult]:
    from smtmodel.ops.amd import tr_c_align

    Wp, WT, Wout = tr_geometry(m)
    Wc = Wout - (m.F2 - m.F)
    # static no-wrap: |T| < 2^(WT-1) units (acc_width), |c aligned| <= 2^(1+F): their realigned sum fits
    fits = (1 << (WT - 1 + m.F2 - m.F)) + (1 << (1 + m.F2)) < (1 << (Wout - 1))
    out = [LemmaResult("C:no-wrap (static)", "unsat" if fits else "sat", 0.0, "python")]
    c_align = lambda term, e, F, W: tr_c_align(term.v, e, F, W, m.op == "gtrfdpa")
    out.append(_run(solver, timeout, "A:product", lambda B, mm: lemma_term_rel(B, mm, "product", W=Wp), m))
    out.append(_run(solver, timeout, "A:c (RD)", lambda B, mm: lemma_term_rel(B, mm, "c", W=Wc, align=c_align), m))
    if m.op == "gtrfdpa":
        out.append(_run(solver, timeout, "R:groups", lambda B, mm: lemma_realign(B, Wp, 0, WT), m))
    out.append(_run(solver, timeout, "R:T", lambda B, mm: lemma_realign(B, WT, m.F2 - m.F, Wout), m))
    out.append(_run_wide(solver, timeout, "B:round",
                         lambda B, mm, er: lemma_round_rel(B, mm, W=Wout, F=m.F2, erange=er), m, wide))
    out.append(_run(solver, timeout, "A0:product", lambda B, mm: lemma_term_rel(B, mm, "product", True, W=Wp), m))
    out.append(_run(solver, timeout, "A0:c",
                    lambda B, mm: lemma_term_rel(B, mm, "c", True, W=Wc, align=c_align), m))
    return out


def check_table9(m: Model) -> Model:
    """``m`` if Table 9's bound covers its operation, else ModelError."""
    if m.op not in TABLE9_OPS:
        raise ModelError(f"{m.id}: Table 9's fused-summation bound covers ops {', '.join(TABLE9_OPS)}, not {m.op}")
    if m.mixed:
        raise ModelError(f"{m.id}: the lemmas read one input format; A and B differ here (not derived)")
    return m


def prove_lemmas(spec, solver: str = "bitwuzla", timeout: float = 120, wide: bool = False) -> list[LemmaResult]:
    """Table 9 by its two error sources, as narrow UNSAT queries (lemma_term_rel, lemma_round_rel;
    lemma_group_exact for GST-FDPA; for the FP8 mma.sync path the two fp16 halves' lemmas plus
    lemma_convert_exact and lemma_late_c); with the accumulator wide enough not to wrap (checked
    statically: 2^extra >= summands), the triangle inequality gives the bound (see bound_text).
    ``wide``: lemmas A and B over :func:`wide_range` first (see :data:`WIDE_RANGE`)."""
    m = check_table9(spec if isinstance(spec, Model) else get_model(spec))
    if m.op in TR_OPS:
        return _prove_tr(m, solver, timeout, wide)
    if m.op == "fp8_via_fp16":
        out = [LemmaResult(f"half/{r.name}", r.status, r.seconds, r.solver)
               for r in prove_lemmas(half_model(m), solver, timeout, wide)]
        out.append(_run(solver, timeout, "V:fp8->fp16 exact", lemma_convert_exact, m))
        out.append(prove_late_c(m, timeout))
        return out
    W, n = _acc_W(m)
    extra = W - 1 - max(t.ibits for t in _dummy_terms(m)) - m.F
    out = [LemmaResult("C:no-wrap (static)", "unsat" if (1 << extra) >= n else "sat", 0.0, "python")]
    kind = "group" if m.op == "gstfdpa" else "product"
    if kind == "group":
        out += prove_group_exact(m, solver, timeout)
    for name in (kind, "c"):
        out.append(_run_wide(solver, timeout, f"A:{name}", lambda B, mm, er: lemma_term_rel(B, mm, name, erange=er), m,
                             wide))
    out.append(_run_wide(solver, timeout, "B:round", lambda B, mm, er: lemma_round_rel(B, mm, erange=er), m, wide))
    for name in (kind, "c"):
        out.append(_run(solver, timeout, f"A0:{name}", lambda B, mm: lemma_term_rel(B, mm, name, True), m))
    return out


def summands(m: Model) -> int:
    return _acc_W(half_model(m) if m.op == "fp8_via_fp16" else m)[1]


