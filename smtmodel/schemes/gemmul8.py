"""GEMMul8's Ozaki scheme II (INT8 backend, real double) as its source computes it, step by step.

Source read for facts (not copied): ``RIKEN-RCCS/GEMMul8`` at commit
71296f99a812fb3cb694768d01855837a57c5086 (2026-03-29), files ``GEMMul8/src/gemmul8_real.hpp``
(the driver), ``scaling_fast_real.hpp`` (fast mode), ``scaling_accu_real.hpp`` (accurate mode),
``scaling.hpp`` (``trunc_scalbn_*``, ``trunc_scalbn_8i``), ``find_max.hpp`` (the reductions),
``template_math.hpp`` (``Tilogb``, ``Taxpby_scal``, the warp sums), ``mod.hpp`` (the modular
reductions), ``conv_hi2mid_real.hpp``, ``inverse_scaling_real.hpp`` (the CRT), ``table.hpp``
(constants), ``common.hpp`` (``threshold``, ``TILE_DIM``, ``threads_scaling``).

What the library does for C = alpha·A·B + beta·C with N moduli p_0..p_(N-1) (the first N of
:data:`GEMMUL8_INT8_MODULI`, 2 <= N <= 20, k <= 2^17):

1. **Shifts** sft_i per row of A and sft_j per column of B (integers), by one of two modes:

   * *fast* (``scaling_fast_real.hpp`` ``compute_sft``): amax = max |x| and the sum of squares
     s = sum |x|^2 accumulated with ``__fma_ru`` (round up) in the kernel's thread order (below);
     e = ilogb(s) (0 for s = 0); v = RU-float(s·2^-e); l = RU(log2f(v) + e);
     h = RU(0x1.000006p-1 · l); t = RD(RD(log2P - 1.5) - max(1, h)); sft = floor(t) - ilogbf(RN-float(amax))
     (``Tilogb<float>``: 0 for a zero). All in binary32.
   * *accurate* (``scaling_accu_real.hpp``): sft0 = 5 - ilogb(amax); the int8 upper bounds
     ceil(|x|·2^sft0) (``trunc_scalbn_8i``, at least 1 for x != 0) of A and B are multiplied by one
     int8 GEMM (int32); per row (column) of that product its maximum M, and
     sft = sft0 + floor(RD-fmaf(-0x1.000006p-1, log2f(RN-float(M)), log2P)).

2. **Integers** A' = trunc(a·2^sft) (``trunc_scalbn_to_i32`` for N <= 7, ``_i64`` for N <= 15,
   ``_to_fp`` for N >= 16: for a subnormal input the last reads the significand shifted one bit
   too far; modelled as written, :func:`trunc_scalbn_fp_value`).
3. **Residues** the symmetric residue of A', B' mod p_i as int8 (p = 256: [-128, 127]); the
   library's reductions (``mod_small``/``mod_middle``/``mod_large``: multiply-high quotients,
   then one wrap) give exactly these values (the tests check the transcription).
4. **Products** one int8 GEMM per modulus with int32 accumulation (the catalog IMMA model,
   ``ampere-s8-s32``), reduced to its symmetric residue c_i (``conv_hi2mid``).
5. **CRT** per output, in binary64 (``invscal_device``): for N <= 6 (``threshold::P_is_double``)
   X = fma(q_i·P/p_i, c_i, X) over i in order from X = +0, quot = rint(invP·X),
   r = fma(-P, quot, X); for N >= 7 a double-double weight (hi, lo):
   X = fma(hi_i, c_i, X), Y = fma(lo_i, c_i, Y), quot = rint(invP·X),
   r = fma(P_lo, quot, fma(P_hi, quot, X) + Y) with -P = P_hi + P_lo.
6. **Scaling back and epilogue** AB = scalbn(r, -(sft_i + sft_j)); host scalars (alpha, beta) =
   (1, 0): AB; (1, 1): C + AB; (-1, 0): -AB; (-1, 1): C - AB; otherwise (and for scalars in
   device memory) fma(beta, C, alpha·AB) -- which reads C even where beta = 0.

Every floating-point rounding above goes through the core's IEEE operations (:func:`fma`,
:func:`fp_add`, :func:`fp_mul`, :func:`convert` with the stated rounding); the integer steps are
exact integer arithmetic. The constants are computed from the moduli (:func:`constants`) by the
rules ``table.hpp`` states, and equal its tables, with one exception: its ``log2P`` for N = 2
(0x1.dfd1ecp+2) is not the stated round-down of log2(P - 1)/2 - 0.5 (0x1.dfd18ep+2, 2.2e-5
lower); the library's value is used (:data:`LOG2P_TABLE_EXCEPTIONS`).

**Inferred, stated:** ``__log2f`` is the SFU's approximation (MUFU.LG2), whose bits are not
public; it is modelled as log2 correctly rounded to binary32. :func:`plan` flags every shift
whose floor could change within the CUDA Programming Guide's error bound of ``__log2f``
(widened: 2^-21 absolute on [0.5, 2], 4 ulps elsewhere); an unflagged shift is the hardware's for
any approximation within that bound. Where the source's integer arithmetic overflows, nothing is
evaluated into bits: an all-zero row (column) of accurate mode's bound product whose exact
products are all zero gets shift 0 (it scales only zeros; the result is +0); a bound row without a
positive entry but with non-zero products (subnormal bounds wrapped by the int8 cast), fast mode
with a max |x| that rounds to binary32 inf (>= 2^128 - 2^103) or a sum of squares that overflows
binary64 are refused.
Fast mode's binary32 amax also makes a row whose max |x| is at most 2^-150 scale as if its
maximum were 1 (``Tilogb`` of 0 is 0): its elements truncate to 0 -- evaluated, as the source
does it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

from ..bv import NUMPY
from ..fp import convert
from ..fp.value import EXP_W
from .core import scale_pow2
from .ieee import as_bits, as_values, ieee_add, ieee_fma, ieee_mul
from .integer import OzakiError, check_shapes, int_gemm, refuse_specials, sym_residue

GEMMUL8_SOURCE = ("RIKEN-RCCS/GEMMul8 @71296f99a812fb3cb694768d01855837a57c5086: src/gemmul8_real.hpp, "
                  "scaling_fast_real.hpp, scaling_accu_real.hpp, scaling.hpp, find_max.hpp, mod.hpp, "
                  "inverse_scaling_real.hpp, table.hpp")

MODULI_MIN, MODULI_MAX = 2, 20
"""``include/gemmul8.hpp``: 2 <= num_moduli <= 20 for FP64."""
K_MAX = 1 << 17
"""``include/gemmul8.hpp``: inner dimension <= 2^17."""
P_IS_DOUBLE = 6
"""``common.hpp`` ``threshold<INT8>::P_is_double``: up to 6 moduli the CRT runs in plain double."""
TRUNC_INT32_MAX, TRUNC_INT64_MAX = 7, 15
"""``threshold<INT8>::S`` and ``::M``: A' through int32 up to 7 moduli, int64 up to 15, then double."""
TILE_LANES, BLOCK_THREADS = 32, 256
"""``TILE_DIM`` (rows of an op-N matrix: 32 lanes) and ``threads_scaling`` (columns: 256 threads)."""
MAX_UFP = 5
"""``maxUFP<INT8>``: accurate mode's first shift keeps |x|·2^sft0 < 2^6."""
SAFETY = float.fromhex("0x1.0000060000000p-1")
LOG2P_TABLE_EXCEPTIONS = {2: float.fromhex("0x1.dfd1ec0000000p+2")}
"""``table.hpp`` ``log2P<INT8, 2>``, which differs from its stated rule (module docstring)."""
LOG2F_ABS_ERR = 2.0 ** -21           # widened from the Programming Guide's bound on [0.5, 2]
LOG2F_ULPS = 4                       # widened from its 2 ulps elsewhere

GEMMUL8_INT8_MODULI = (256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197,
                       193, 191, 181, 179, 173)
"""``table.hpp`` ``moduli<INT8, i>``, in the order the library takes them."""


class Gemmul8Error(OzakiError):
    """A configuration or input the model refuses (its source's behaviour is undefined there)."""


# ---- constants ------------------------------------------------------------------------------

def _round_bin(q: Fraction, p: int, emin: int, mode: str) -> float:
    """q rounded to a binary format with p bits and minimum exponent emin (RN even, RU, RD);
    used for the constants and log2 only (exact rationals in, one rounding)."""
    if q == 0:
        return 0.0
    s = -1 if q < 0 else 1
    a = abs(q)
    e = max(a.numerator.bit_length() - a.denominator.bit_length(), emin)
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, emin)
    ulp = Fraction(2) ** (e - p + 1)
    n, r = divmod(a / ulp, 1)
    n = int(n)
    up = {"RN": r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2 == 1),
          "RU": r > 0 and s > 0, "RD": r > 0 and s < 0}[mode]
    return s * float((n + up) * ulp)


def _log2_decimal(v: Fraction, prec: int = 60) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = prec
        return (Decimal(v.numerator).ln() - Decimal(v.denominator).ln()) / Decimal(2).ln()


@dataclass(frozen=True)
class Constants:
    n: int
    moduli: tuple
    P: int
    P_hi: float              # -P as a double-double (P_hi + P_lo), table.hpp ``P``
    P_lo: float
    invP: float              # RN(1/P), ``invP``
    log2P: float             # binary32 value, ``log2P``
    weights: tuple           # N <= 6: RN(q_i P/p_i); else (hi, lo) pairs, ``qPi_1`` / ``qPi_2``


def constants(n: int) -> Constants:
    """The CRT constants for the first n moduli, by the rules ``table.hpp`` states: P = prod p_i;
    -P as double-double; invP = RN(1/P); log2P = RD-binary32(log2(P - 1)/2 - 0.5); weights
    w_i = q_i·P/p_i with q_i in [1, p_i) the inverse of P/p_i mod p_i: RN(w_i) for n <= 6, else
    hi_i = w_i cut to a multiple of 2^g, g = bitlength(P) - (53 - ceil(log2 rho)),
    rho = sum floor(p/2) (so sum hi_i c_i is exact), lo_i = RN(w_i - hi_i)."""
    check_moduli(n)
    mods = GEMMUL8_INT8_MODULI[:n]
    P = math.prod(mods)
    P_hi = float(-P)
    P_lo = float(-P - int(P_hi))
    invP = float(Fraction(1, P))
    if n in LOG2P_TABLE_EXCEPTIONS:
        log2P = LOG2P_TABLE_EXCEPTIONS[n]
    else:
        d = _log2_decimal(Fraction(P - 1)) / 2 - Decimal("0.5")
        log2P = _round_bin(Fraction(d), 24, -126, "RD")
    w = []
    rho = sum(p // 2 for p in mods)
    g = P.bit_length() - (53 - math.ceil(math.log2(rho)))
    for p in mods:
        Mi = P // p
        wi = pow(Mi, -1, p) * Mi
        if n <= P_IS_DOUBLE:
            w.append(float(wi))
        else:
            hi = wi - wi % (1 << g)
            w.append((float(hi), float(wi - hi)))
    return Constants(n, mods, P, P_hi, P_lo, invP, log2P, tuple(w))


def check_moduli(n: int) -> None:
    if not MODULI_MIN <= n <= MODULI_MAX:
        raise Gemmul8Error(f"GEMMul8 takes {MODULI_MIN}..{MODULI_MAX} moduli for FP64, not {n} "
                           "(include/gemmul8.hpp)")


# ---- IEEE steps through the core --------------------------------------------------------------

def to_fp32(x, rm="RNE") -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return as_values(convert(as_bits(x), "fp64", "fp32", rm), x.shape, "fp32")


def rint64(x) -> np.ndarray:
    """rint (round half even to an integer) of binary64 values with |x| < 2^51, as
    fl(fl(x + 1.5·2^52) - 1.5·2^52) with the core's RN adder (exact for that range)."""
    x = np.asarray(x, dtype=np.float64)
    if np.any(np.abs(x) >= 2.0 ** 51):
        raise Gemmul8Error("rint64: |x| >= 2^51 (the CRT quotient is far below this by construction)")
    m = 1.5 * 2.0 ** 52
    return ieee_add(ieee_add(x, m), -m)


def scalbn64(x, s) -> np.ndarray:
    """scalbn(x, s) for binary64 x and integer s, correctly rounded (RN) by the core's rounding."""
    x = np.asarray(x, dtype=np.float64)
    s = np.broadcast_to(np.asarray(s, dtype=np.int64), x.shape)
    sb = NUMPY.input((s.reshape(-1) & ((1 << EXP_W) - 1)).astype(np.uint64), EXP_W)
    r = scale_pow2(as_bits(x), "fp64", sb, s_range=(int(s.min(initial=0)), int(s.max(initial=0))))
    return as_values(r, x.shape)


def log2f_rn(x: np.ndarray) -> np.ndarray:
    """log2 of binary32 values >= 0, correctly rounded to binary32 (the model of ``__log2f``;
    *inferred*: the hardware approximation's bits are not public). log2(0) = -inf."""
    x = np.asarray(x, dtype=np.float32)
    out = np.empty(x.shape, dtype=np.float32)
    cache: dict = {}
    for idx, v in np.ndenumerate(x):
        v = float(v)
        if v not in cache:
            if v == 0:
                cache[v] = -np.inf
            elif v == math.inf:
                cache[v] = np.inf
            else:
                f = Fraction(v)
                e = math.frexp(v)[1] - 1
                if f == Fraction(2) ** e:
                    cache[v] = float(e)
                else:
                    cache[v] = _round_bin(Fraction(_log2_decimal(f)), 24, -126, "RN")
        out[idx] = cache[v]
    return out


def ilogb64(x: np.ndarray) -> np.ndarray:
    """``Tilogb<double>``: floor(log2 |x|) (subnormals included), 0 for zeros."""
    x = np.asarray(x, dtype=np.float64)
    _, e = np.frexp(x)
    return np.where(x == 0, 0, e - 1).astype(np.int64)


def ilogb32(x: np.ndarray) -> np.ndarray:
    """``Tilogb<float>``: floor(log2 |x|) of binary32 values (subnormals included), 0 for zeros."""
    x = np.asarray(x, dtype=np.float32)
    _, e = np.frexp(x.astype(np.float64))
    return np.where(x == 0, 0, e - 1).astype(np.int64)


# ---- the shifts --------------------------------------------------------------------------------

def _tree_ru(V: np.ndarray) -> np.ndarray:
    """A 32-lane warp sum (``inner_warp_sum``: shfl_down 16, 8, 4, 2, 1, ``__dadd_ru``): lane 0."""
    V = V.copy()
    o = 16
    while o:
        V[:, :o] = ieee_add(V[:, :o], V[:, o:2 * o], "fp64", "RU")
        o //= 2
    return V[:, 0]


def sum_squares_ru(X: np.ndarray, lanes: int) -> np.ndarray:
    """The fast mode's sum of squares of each row of X in the kernel's order: ``lanes`` threads
    each accumulate fma_ru(|x|, |x|, s) over the elements t, t + lanes, ... from +0; then the
    32-lane tree of each warp, then (``lanes`` = 256: ``find_amax_and_nrm``) the tree over the
    warps' sums with the missing lanes +0. ``lanes`` = 32 is ``find_amax_and_nrm_tile``."""
    X = np.abs(np.asarray(X, dtype=np.float64))
    r, k = X.shape
    S = np.zeros((r, lanes))
    for t0 in range(0, k, lanes):
        blk = np.zeros((r, lanes))
        blk[:, :min(lanes, k - t0)] = X[:, t0:t0 + lanes]
        S = ieee_fma(blk, blk, S, "fp64", "RU")
    if lanes == TILE_LANES:
        return _tree_ru(S)
    W = np.zeros((r, 32))
    for w in range(lanes // 32):
        W[:, w] = _tree_ru(S[:, 32 * w:32 * w + 32])
    return _tree_ru(W)


def _fast_log2(vecnrm: np.ndarray):
    """(e, log2 of the significand in [1, 2) rounded up to binary32) of the sums of squares."""
    e = ilogb64(vecnrm)
    v32 = to_fp32(np.ldexp(vecnrm, -e), "RU")                    # scalbn exact: the result is in [1, 2)
    return e, log2f_rn(v32)


def _fast_floor(e: np.ndarray, lg: np.ndarray, log2P: float, delta: float = 0.0):
    if delta:
        lg = (lg.astype(np.float64) + delta).astype(np.float32)
    l = ieee_add(lg, e.astype(np.float32), "fp32", "RU")
    h = ieee_mul(np.float32(SAFETY), l, "fp32", "RU")
    t = ieee_add(ieee_add(np.float32(log2P), np.float32(-1.5), "fp32", "RD"),
                 -np.maximum(np.float32(1.0), h), "fp32", "RD")
    return np.floor(t.astype(np.float64)).astype(np.int64)


def fast_shifts(X: np.ndarray, c: Constants, lanes: int):
    """Fast-mode shifts of the rows of X (``compute_sft``): (sft, ambiguous)."""
    X = np.asarray(X, dtype=np.float64)
    amax = np.abs(X).max(axis=1)
    a32 = to_fp32(amax)
    if np.any(np.isinf(a32)):
        raise Gemmul8Error("GEMMul8 fast mode: a row/column with max |x| >= 2^128 - 2^103 has no binary32 "
                           "exponent (ilogbf(inf) overflows the shift: undefined in the source); refused")
    s = sum_squares_ru(X, lanes)
    if np.any(np.isinf(s)):
        raise Gemmul8Error("GEMMul8 fast mode: a row/column's sum of squares overflows binary64 (the "
                           "shift computation leaves int range: undefined in the source); refused")
    e, lg = _fast_log2(s)
    f = _fast_floor(e, lg, c.log2P)
    amb = np.zeros(f.shape, dtype=bool)
    for d in (-LOG2F_ABS_ERR, LOG2F_ABS_ERR):
        amb |= _fast_floor(e, lg, c.log2P, delta=d) != f
    return f - ilogb32(a32), amb


def upper_bound_int8(x: np.ndarray, sft: np.ndarray) -> np.ndarray:
    """``trunc_scalbn_8i``: ceil(|x|·2^sft), at least 1 for x != 0, 0 for zeros; for a subnormal x
    the source's normalisation ``(frac << (clz - 12)) | 2^52`` with exponent -1022 - (clz - 12),
    modelled as written (it reads 1.5-3x the value, and the int8 cast wraps a result of 128..191)."""
    x = np.asarray(x, dtype=np.float64)
    sft = np.broadcast_to(np.asarray(sft, dtype=np.int64), x.shape)
    u = x.view(np.uint64) & np.uint64(0x7FFFFFFFFFFFFFFF)
    out = np.zeros(x.shape, dtype=np.int64)
    with np.errstate(under="ignore", over="ignore"):          # a normal x: ceil(|x|·2^sft), at least 1,
        v = np.maximum(np.ceil(np.ldexp(np.abs(x), sft)), 1.0)   # exact below 2^53 (ldexp only scales)
    fast = ((u >> np.uint64(52)) != 0) & (v < 2.0 ** 53)
    out[fast] = (v[fast].astype(np.int64) + 128) % 256 - 128   # the int8_t cast (modular)
    for idx in zip(*np.nonzero((u != 0) & ~fast)):            # subnormals (and huge values) as written
        bits = int(u[idx])
        ex, frac = bits >> 52, bits & ((1 << 52) - 1)
        if ex:
            mant, e = frac | (1 << 52), ex - 1023
        else:
            k = (64 - frac.bit_length()) - 12
            mant, e = (frac << k) | (1 << 52), (1 - 1023) - k
        e += int(sft[idx])
        shift = 52 - e
        if shift <= 0:
            v = mant << -shift
        elif shift >= 53:
            v = 1
        else:
            v = (mant >> shift) + ((mant & ((1 << shift) - 1)) != 0)
        out[idx] = (v + 128) % 256 - 128                         # the int8_t cast (modular; only the
    return out                                                   # subnormal reading exceeds 127)


def _accurate_floor(m32: np.ndarray, lg: np.ndarray, log2P: float, delta_ulps: float = 0.0):
    if delta_ulps:
        with np.errstate(invalid="ignore"):
            sp = np.where(np.abs(m32) <= 2, LOG2F_ABS_ERR / LOG2F_ULPS, np.spacing(np.abs(lg)).astype(np.float64))
        lg = (lg.astype(np.float64) + delta_ulps * sp).astype(np.float32)
    t = ieee_fma(np.float32(-SAFETY), lg, np.float32(log2P), "fp32", "RD")
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(t), np.floor(t.astype(np.float64)), 0).astype(np.int64)


def accurate_shifts(A: np.ndarray, B: np.ndarray, c: Constants, imma):
    """Accurate-mode shifts (``scaling_accu_real.hpp``): (sftA, sftB, ambiguousA, ambiguousB).
    An all-zero row (column) of the bound product gets 0: the source's shift overflows int
    there (``__float2int_rd(+inf)``), and every product it scales is zero."""
    amaxA, amaxB = np.abs(A).max(axis=1), np.abs(B).max(axis=0)
    s0A, s0B = MAX_UFP - ilogb64(amaxA), MAX_UFP - ilogb64(amaxB)
    Ahi = upper_bound_int8(A, s0A[:, None])
    Bhi = upper_bound_int8(B, s0B[None, :])
    Chi = int_gemm(Ahi, Bhi, imma)
    Mr, Mc = np.maximum(Chi.max(axis=1), 0), np.maximum(Chi.max(axis=0), 0)
    live = (A != 0).astype(np.int64) @ (B != 0).astype(np.int64) > 0     # some product a_it b_tj != 0
    if np.any((Mr == 0) & live.any(axis=1)) or np.any((Mc == 0) & live.any(axis=0)):
        raise Gemmul8Error("GEMMul8 accurate mode: a row/column of the bound product has no positive "
                           "entry although its exact products are not all zero (subnormal inputs whose "
                           "upper bounds wrap in int8); its shift overflows int (undefined in the source); "
                           "refused")
    out = []
    for M, s0 in ((Mr, s0A), (Mc, s0B)):
        m32 = to_fp32(M.astype(np.float64))                 # __int2float_rn (M < 2^30: exact in binary64)
        lg = log2f_rn(m32)
        f = _accurate_floor(m32, lg, c.log2P)
        amb = np.zeros(f.shape, dtype=bool)
        for d in (-LOG2F_ULPS, LOG2F_ULPS):
            amb |= _accurate_floor(m32, lg, c.log2P, d) != f
        out.append((np.where(M == 0, 0, s0 + f), amb & (M != 0)))
    return out[0][0], out[1][0], out[0][1], out[1][1]


# ---- integers, residues, CRT ----------------------------------------------------------------------

def trunc_scalbn_fp_value(bits: int, sft: int) -> int:
    """``trunc_scalbn_to_fp`` then ``make_fp_mant_exp`` (N >= 16) on the fp64 bits of a subnormal
    x: the source normalises with ``(frac << (2 - lz)) ^ 2^52`` (one bit further than the leading
    bit, lz = 12 - clz(frac)) and ORs it into the exponent field; the integer it then reads."""
    sign = bits >> 63
    frac = bits & ((1 << 52) - 1)
    lz = 12 - (64 - frac.bit_length())
    e = lz + sft
    if e < 1023:
        return 0
    frac_full = (frac << (2 - lz)) ^ (1 << 52)
    mask = ((1 << 64) - 1) ^ ((1 << max(1075 - e, 0)) - 1)
    out = (sign << 63) | ((e << 52) & ((1 << 63) - 1)) | (frac_full & mask)
    v = np.array([out & ((1 << 64) - 1)], dtype=np.uint64).view(np.float64)[0]
    if not np.isfinite(v):
        raise Gemmul8Error("trunc_scalbn_to_fp left the finite range")
    return int(math.trunc(v))


def scaled_integers(X: np.ndarray, sft: np.ndarray, n: int) -> np.ndarray:
    """A' = trunc(x·2^sft) as float64 (exact: the product is a power-of-two scaling, trunc exact),
    with the fp path's subnormal reading for n >= 16."""
    X = np.asarray(X, dtype=np.float64)
    sft = np.broadcast_to(np.asarray(sft, dtype=np.int64), X.shape)
    with np.errstate(under="ignore", over="ignore"):
        V = np.trunc(np.ldexp(X, sft))
    if n > TRUNC_INT64_MAX:
        u = X.view(np.uint64)
        sub = ((u >> np.uint64(52)) & np.uint64(0x7FF)) == 0
        sub &= (u & np.uint64((1 << 52) - 1)) != 0
        for idx in zip(*np.nonzero(sub)):
            V[idx] = float(trunc_scalbn_fp_value(int(u[idx]), int(sft[idx])))
    lim = {True: 2.0 ** 31, False: 2.0 ** 63}[n <= TRUNC_INT32_MAX] if n <= TRUNC_INT64_MAX else 2.0 ** 1023
    if np.any(np.abs(V) >= lim):
        raise Gemmul8Error("a scaled integer leaves the source's integer type")
    return V


def crt(c: Constants, residues: list) -> np.ndarray:
    """``invscal_device`` before the scaling: the CRT value r of the residues c_i (int arrays)."""
    shape = residues[0].shape
    if c.n <= P_IS_DOUBLE:
        X = np.zeros(shape)
        for w, r in zip(c.weights, residues):
            X = ieee_fma(w, r.astype(np.float64), X)
        q = rint64(ieee_mul(c.invP, X))
        return ieee_fma(c.P_hi, q, X)
    X, Y = np.zeros(shape), np.zeros(shape)
    for (hi, lo), r in zip(c.weights, residues):
        rf = r.astype(np.float64)
        X = ieee_fma(hi, rf, X)
        Y = ieee_fma(lo, rf, Y)
    q = rint64(ieee_mul(c.invP, X))
    return ieee_fma(c.P_lo, q, ieee_add(ieee_fma(c.P_hi, q, X), Y))


def epilogue(AB: np.ndarray, C, alpha: float, beta: float, scalars: str = "host") -> np.ndarray:
    """``invscal_kernel_special`` (host scalars (±1, 0), (±1, 1)) or ``_general``:
    fma(beta, C, alpha·AB)."""
    if scalars == "host" and alpha in (1.0, -1.0) and beta in (0.0, 1.0):
        x = AB if alpha == 1.0 else -AB
        return x.copy() if beta == 0.0 else ieee_add(C, x)
    Cv = np.zeros_like(AB) if C is None else np.asarray(C, dtype=np.float64)
    return ieee_fma(beta, Cv, ieee_mul(alpha, AB))


# ---- the GEMM ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    sftA: np.ndarray
    sftB: np.ndarray
    ambiguousA: np.ndarray
    ambiguousB: np.ndarray

    @property
    def ambiguous(self) -> int:
        return int(self.ambiguousA.sum() + self.ambiguousB.sum())


def plan(A, B, n: int, mode: str, op_a: str = "N", op_b: str = "N", imma=None) -> Plan:
    """The shifts GEMMul8 picks for A (rows) and B (columns) and which of them depend on the
    ``__log2f`` approximation's last bits. ``op_a``/``op_b`` (``"N"``, ``"T"``) choose the fast
    mode's reduction kernels: rows of an op-N A use the 32-lane tile kernel, an op-T A the
    256-thread column kernel; columns of an op-N B the 256-thread kernel, an op-T B the tile."""
    c = constants(n)
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    if mode == "fast":
        la = TILE_LANES if op_a == "N" else BLOCK_THREADS
        lb = BLOCK_THREADS if op_b == "N" else TILE_LANES
        sa, aa = fast_shifts(A, c, la)
        sb, ab = fast_shifts(B.T, c, lb)
        return Plan(sa, sb, aa, ab)
    if mode == "accurate":
        if imma is None:
            from ..catalog import get_model
            imma = get_model("ampere-s8-s32")
        sa, sb, aa, ab = accurate_shifts(A, B, c, imma)
        return Plan(sa, sb, aa, ab)
    raise Gemmul8Error(f"GEMMul8 mode must be fast or accurate, not {mode!r}")


def gemmul8_gemm(A, B, C=None, alpha: float = 1.0, beta: float = 0.0, n: int = 14, mode: str = "accurate",
                 imma=None, op_a: str = "N", op_b: str = "N", scalars: str = "host", with_plan: bool = False):
    """D = alpha·A·B + beta·C as GEMMul8 (INT8 backend, double) computes it with n moduli in
    ``mode`` (module docstring). Returns D, or (D, :class:`Plan`) with ``with_plan``."""
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    C = None if C is None else np.asarray(C, dtype=np.float64)
    check_shapes(A, B, C)
    check_moduli(n)
    if A.shape[1] > K_MAX:
        raise Gemmul8Error(f"GEMMul8: k={A.shape[1]} > 2^17, its int32 bound (include/gemmul8.hpp)")
    if op_a not in "NT" or op_b not in "NT" or scalars not in ("host", "device"):
        raise Gemmul8Error("op_a/op_b must be N or T, scalars host or device")
    refuse_specials(A, B, C if beta != 0 or scalars == "device" or alpha not in (1.0, -1.0) else None,
                     np.array([alpha, beta]))
    if imma is None:
        from ..catalog import get_model
        imma = get_model("ampere-s8-s32")
    c = constants(n)
    pl = plan(A, B, n, mode, op_a, op_b, imma)
    Ai = scaled_integers(A, pl.sftA[:, None], n)
    Bi = scaled_integers(B, pl.sftB[None, :], n)
    res = []
    for p in c.moduli:
        prod = int_gemm(sym_residue(Ai, p), sym_residue(Bi, p), imma)
        res.append(sym_residue(prod.astype(np.float64), p))
    r = crt(c, res)
    AB = scalbn64(r, -(pl.sftA[:, None] + pl.sftB[None, :]))
    D = epilogue(AB, C, alpha, beta, scalars)
    return (D, pl) if with_plan else D
