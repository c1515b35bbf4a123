"""The Ozaki schemes: FP64 GEMM emulated on integer tensor cores, as data, and their twin.

**Ozaki scheme I** as the ozIMMU library implements it (Ootomo, Ozaki, Yokota, "DGEMM on integer
matrix multiplication unit", IJHPCA 2024; ``enp1s0/ozIMMU``, read for facts):

* bits per slice β: ``get_bits_per_int8(k) = min(7, (31 - ceil(log2 k)) / 2)`` (integer
  division; defined at the end of ozIMMU's ``src/split.cu``, called by ``gemm_int8`` in
  ``src/gemm.cu``);
* scaling: per row of A (per column of B) the largest exponent, ``max_exp = 2 *
  mask_exponent(max |x|)`` = 2^(e_max + 1) (``src/split.cu``, ``split_int8_kernel``,
  ``get_exp_max_element`` and ``x2``);
* slicing: the 53-bit significand (hidden bit set) is placed at the top of a 128-bit register and
  shifted right by the exponent distance to ``max_exp`` (at least 1, so bit 127 stays 0), then
  cut into ``num_split`` slices of β bits from the top, each multiplied by the sign
  (``cut_int8_core``): **truncation** of |x| (round toward zero), the first slice holds β - 1
  significant bits;
* products: the int8 GEMM (``cublasGemmEx`` CUDA_R_8I, ``CUBLAS_COMPUTE_32I``) for the slice
  pairs (i, j) with i + j <= s + 1, in the order of ``get_split_config`` (``src/config.cu``):
  ``for sum in 2..s+1: for i in 1..sum-1: (i, sum - i)`` -- **triangular**, most significant first;
* reassembly: an fp64 accumulator starts at 0; for each pair, ``acc += (double)((int64)C32 << 32)
  * 2^-(β (i + j - 2) - 2 (7 - β))`` (``accumulate_in_f64``; the product is exact, the addition
  rounds to nearest even), then ``x = acc / 2^44 * max_exp_A[row] * max_exp_B[col]`` and
  ``D = alpha * x + beta * C`` (``axby_kernel``).

Inputs containing inf or NaN are refused (:class:`OzakiError`): ozIMMU's slicing reads their
exponent field as a number (the row's scale becomes inf), which no library user wants modelled.

**Ozaki scheme II** (Uchino, Ozaki, Imamura 2025; ``RIKEN-RCCS/GEMMul8``, read for facts): A and
B are scaled per row / column by powers of two and truncated to integers A', B' so that
|A'B'| < P/2, P = prod p_t; residues of A', B' modulo each p_t (GEMMul8's INT8 moduli table
``src/table.hpp``: 256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197,
193, 191, 181, 179, 173) are int8 in a symmetric range; one int8 GEMM per modulus (int32, k <=
2^17 per ``gemmul8::workSize``); the products are reduced mod p_t and combined by the Chinese
remainder theorem, then scaled back. The ``ozaki2-n*`` twin follows the paper's algorithm with
**exact** integer CRT and one final rounding (an idealisation: its error is the scaling truncation
alone); GEMMul8's own arithmetic -- its fast/accurate shifts, integer paths and floating-point CRT
-- is modelled bit for bit in :mod:`smtmodel.schemes.gemmul8` (kind ``"G8"``,
``ozaki2-gemmul8-fast`` / ``-accurate``).

**Unsigned slicing** (kind ``"U"``; NVIDIA, arXiv 2511.13778 §"unsigned slicing", as the public
cuBLASDx Ozaki example computes it: ``slicing.hpp`` ``max_to_exponent_shift``,
``slices_from_fp64``, ``nth_slice_to_fp64``; ``emulation_kernels.hpp`` ``fused_epilogue_kernel``):

* per row of A (column of B) ``shift = 7 - E'`` with E' = unbiased exponent + 1 of the row's
  largest |x|, plus 1 when any of its top 6 fraction bits is set;
* each x becomes r = trunc(|x| · 2^(shift + 8(S - 1))) with x's sign (a 64-bit integer; subnormals
  enter by their value), cut from the least significant byte up into S int8 digits with carry:
  d = low byte read as int8, r = (r >> 8) + (byte >> 7) -- all 8 bits of every slice are used;
* the diagonals d = S-1 .. 0 (most significant last): the int8 GEMMs A_i·B_(d-i), i = 0..d, in one
  int32 accumulator; x_d = c32 · 2^(-8d - shift_A - shift_B) in fp64 (exact unless subnormal);
  D = alpha·x_(S-1) + beta·C, then D = alpha·x_d + D (cublasdx::axpby, one FMA each: *inferred*).

The slice count: FIXED mode S = ceil((N + 1) / 8) for N mantissa bits (55 bits -> 7 slices, as
GEMMul8's test harness sizes cuBLAS's workspace: ``GEMMul8/testing/ozaki1.hpp``; 79 bits -> 10
in NVIDIA's ``cuBLAS/Emulation/dgemm_dynamic`` sample). DYNAMIC mode (:class:`Dynamic`,
:func:`adp_gemm`) picks S from the Exponent Span Capacity of the inputs. The paper's text was not
available; its rules are taken from two secondary readings that agree on the ESC: the blog posts
"(Mis)understanding NVIDIA's ESC calculation" and "Short Update: Actually Understanding NVIDIA's
ESC Calculation" (the slice formula after a correction by NVIDIA) and the Z3 model of the paper
formalised in Lean (``pauljiang03/TC-EFT`` ``ozaki/Ozaki/ADP.lean``, ``ADPError.lean``,
``ozaki/OzakiTC/ADP.lean``). They differ by one bit in the width (``Dynamic.pad``), and in the
slice products (the Z3 model takes all S^2; this twin the cuBLASDx sample's diagonals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..bv import BV, NUMPY
from ..catalog import get_model
from ..fp import EXP_W, FPValue, decode, exp_const, fp_add, fp_mul, round_value
from ..model import Model
from .core import scale_pow2
from .ieee import ieee_fma
from .integer import OzakiError, check_shapes as _check_shapes, int_gemm, refuse_specials as _refuse_specials
from .integer import sym_residue
from .gemmul8 import GEMMUL8_INT8_MODULI, GEMMUL8_SOURCE, K_MAX, Gemmul8Error, check_moduli, gemmul8_gemm

F64_BITS = 64
MANT = 52


def ozimmu_beta(k: int) -> int:
    """ozIMMU's bits per slice: min(7, (31 - ceil(log2 k)) // 2)."""
    if k < 1:
        raise OzakiError(f"k={k}: a dot product needs k >= 1")
    return min(7, (31 - (k - 1).bit_length()) // 2)


@dataclass(frozen=True)
class Ozaki:
    """One Ozaki configuration (the data ``mmaprobe scheme list`` shows).

    ``kind``: ``"I"`` (slices) or ``"II"`` (moduli). Scheme I: ``slices`` s, ``beta`` (``"ozimmu"``:
    the library's rule from k, or a fixed int), ``slice_rm`` (``"RZ"``: ozIMMU's truncation),
    ``pairs`` (``"triangular"``: i + j <= s + 1; ``"all"``: every i, j <= s). Scheme II:
    ``moduli``. Both: ``imma`` (the catalog integer model that computes the int8 GEMM; its
    wrap-around or ``.satfinite`` is applied), ``target`` (fp64)."""

    name: str
    kind: str
    description: str
    source: str
    slices: int = 0
    beta: "str | int" = "ozimmu"
    slice_rm: str = "RZ"
    pairs: str = "triangular"
    moduli: tuple = ()
    accumulate: str = "fp64"      # Scheme I: "fp64" (ozIMMU: one RNE addition per slice pair) or "exact"
                                  # (the pair products summed exactly, then one rounding: a reference variant)
    imma: str = "ampere-s8-s32"
    target: str = "fp64"
    mode: str = ""                # kind "G8" (GEMMul8): "fast" or "accurate" scaling
    tags: tuple = field(default=(), compare=False)

    # ---- the rules as data --------------------------------------------------------------------
    def bits(self, k: int) -> int:
        """β for a K-term dot product."""
        return ozimmu_beta(k) if self.beta == "ozimmu" else int(self.beta)

    def pair_list(self) -> list[tuple[int, int]]:
        """Slice pairs (i, j), 1-based, in the order they are accumulated."""
        s = self.slices
        if self.pairs == "all":
            return [(i, t - i) for t in range(2, 2 * s + 1) for i in range(1, t) if i <= s and t - i <= s]
        return [(i, t - i) for t in range(2, s + 2) for i in range(1, t)]

    def describe(self) -> str:
        if self.kind == "G8":
            return (f"Ozaki II as GEMMul8 computes it: {len(self.moduli)} moduli {self.moduli[0]}..{self.moduli[-1]}, "
                    f"{self.mode} scaling, trunc(x·2^sft), int8 residues, one int8 GEMM per modulus, CRT in "
                    f"{'double' if len(self.moduli) <= 6 else 'double-double'} fma order, scalbn, epilogue")
        if self.kind == "U":
            return (f"Ozaki I, unsigned slicing (cuBLASDx example / arXiv 2511.13778): {self.slices} int8 digits of "
                    f"8 bits with carry, shift = 7 - E' per row / column, {self.slices * (self.slices + 1) // 2} slice "
                    f"GEMMs by diagonal into int32, fp64 epilogue least significant diagonal first")
        if self.kind == "I":
            b = "β = min(7, (31 - ceil(log2 k)) // 2)" if self.beta == "ozimmu" else f"β = {self.beta}"
            return (f"Ozaki I: {self.slices} int8 slices, {b}, scale 2^(e_max+1) per row of A / column of B, "
                    f"slicing {'truncation' if self.slice_rm == 'RZ' else 'nearest'}, "
                    f"{len(self.pair_list())} slice GEMMs ({self.pairs}), fp64 accumulation most significant "
                    f"first, then x/2^44·scaleA·scaleB, D = alpha·x + beta·C")
        return (f"Ozaki II: {len(self.moduli)} moduli {self.moduli[0]}..{self.moduli[-1]} (P ~ 2^"
                f"{math.log2(math.prod(self.moduli)):.1f}), power-of-two scaling per row/column, truncation, "
                f"one int8 GEMM per modulus, exact CRT, one rounding")

    def model(self) -> Model:
        m = get_model(self.imma)
        if m.op != "imma":
            raise OzakiError(f"{self.name}: {m.id} is not an integer MMA model")
        return m

    # ---- what must hold -------------------------------------------------------------------------
    def check(self, k: int) -> None:
        """Refuse a configuration whose int32 accumulation can overflow for this k."""
        if self.kind == "I":
            if self.slices < 1:
                raise OzakiError(f"{self.name}: needs at least one slice")
            if self.slice_rm != "RZ" or self.pairs not in ("triangular", "all") or \
                    self.accumulate not in ("fp64", "exact"):
                raise OzakiError(f"{self.name}: slicing must be RZ, pairs triangular or all, accumulate fp64 or exact")
            b = self.bits(k)
            if not 1 <= b <= 7:
                raise OzakiError(f"{self.name}: β={b} bits per int8 slice must be in 1..7")
            worst = k * ((1 << b) - 1) ** 2
            if worst > (1 << 31) - 1:
                raise OzakiError(f"{self.name}: β={b} is too large for k={k}: k·(2^β-1)^2 = {worst} exceeds "
                                 f"int32 (smallest k that overflows: {overflow_k(b)}); use β <= {safe_beta(k)}")
        elif self.kind == "G8":
            try:
                check_moduli(len(self.moduli))
            except Gemmul8Error as exc:
                raise OzakiError(f"{self.name}: {exc}") from None
            if self.moduli != GEMMUL8_INT8_MODULI[:len(self.moduli)]:
                raise OzakiError(f"{self.name}: GEMMul8 takes the first n of its moduli table, in order")
            if self.mode not in ("fast", "accurate"):
                raise OzakiError(f"{self.name}: GEMMul8 mode must be fast or accurate, not {self.mode!r}")
            if k > K_MAX:
                raise OzakiError(f"{self.name}: k={k} > 2^17, GEMMul8's int32 bound (include/gemmul8.hpp)")
        elif self.kind == "U":
            if not 1 <= self.slices <= 8:
                raise OzakiError(f"{self.name}: {self.slices} unsigned slices is out of range 1..8 (the 64-bit "
                                 "integer the slices are cut from holds 8 bytes)")
            most = unsigned_k_max(self.slices)
            if k > most:
                raise OzakiError(f"{self.name}: k={k} exceeds the exactness limit {most}: {self.slices} int8 "
                                 f"GEMMs of the longest diagonal share one int32 accumulator (|product| <= 2^14)")
        else:
            if k > 1 << 17:
                raise OzakiError(f"{self.name}: k={k} > 2^17, the int32 bound of the int8 moduli GEMMs")
            if any(math.gcd(p, q) != 1 for i, p in enumerate(self.moduli) for q in self.moduli[i + 1:]):
                raise OzakiError(f"{self.name}: moduli are not pairwise coprime")


def unsigned_k_max(slices: int) -> int:
    """The largest k for which a diagonal of ``slices`` int8 GEMMs (|a_i b_j| <= 128·128) cannot
    leave int32: slices · k · 2^14 <= 2^31 - 1."""
    return ((1 << 31) - 1) // (slices * (1 << 14))


def mantissa_bits_to_slices(bits: int) -> int:
    """FIXED mantissa control: the unsigned slices for N mantissa bits, ceil((N + 1) / 8) (55 -> 7;
    the rule GEMMul8's ``testing/ozaki1.hpp`` uses for cuBLAS's workspace)."""
    if not 1 <= bits <= 63:
        raise OzakiError(f"mantissa bit count {bits} is out of range 1..63 (at most 8 slices of 8 bits)")
    return -(-(bits + 1) // 8)


def unsigned_shift(xmax: BV) -> BV:
    """cuBLASDx ``max_to_exponent_shift`` of the fp64 bits of a row's largest |x| (sign ignored):
    7 - (E + 1 - 1023) - [any of the top 6 fraction bits set], as a signed 16-bit value."""
    B = xmax.B
    e = xmax.extract(62, 52).zext(5)
    bump = xmax.extract(51, 46).ne(0).ite(B.const(1, 16), B.const(0, 16))
    return B.const(7 + 1023 - 1, 16) - e - bump


def unsigned_slices(x: BV, shift: BV, slices: int) -> list[BV]:
    """cuBLASDx ``slices_from_fp64`` in the semantic core: int8 digits (most significant first) of
    r = trunc(|x| · 2^(shift + 8(slices - 1))) with x's sign, cut from the low byte up with carry
    (digit = byte as int8, r = (r >> 8) + (byte >> 7)). Zeros give zero digits; a subnormal
    enters by its value (the library normalises it by 2^52 and compensates)."""
    B = x.B
    e = x.extract(62, 52).zext(5)                                   # 16-bit field
    sub = e.eq(0)
    mant = x.extract(51, 0).zext(12)
    sig = sub.ite(mant, mant | (1 << 52))
    e_eff = sub.ite(B.const(1, 16), e)
    t = e_eff + shift + B.const((8 * (slices - 1) - 1075) & 0xFFFF, 16)   # signed 16-bit
    right = t.slt(0)
    nt = (-t)
    r = right.ite(nt.uge(64).ite(B.const(0, 64), sig.lshr(nt.zext(48))), sig << t.zext(48))
    r = x.extract(63, 63).eq(1).ite(-r, r)
    out = []
    for _ in range(slices):
        byte = r.extract(7, 0)
        out.append(byte)
        r = r.ashr(8) + byte.extract(7, 7).zext(63)
    return out[::-1]


def overflow_k(beta: int) -> int:
    """The smallest k at which k·(2^β - 1)^2 leaves int32 (every slice at ±(2^β - 1))."""
    return (1 << 31) // (((1 << beta) - 1) ** 2) + 1


def safe_beta(k: int) -> int:
    """The largest β with k·(2^β-1)^2 <= 2^31 - 1."""
    b = 7
    while b > 1 and k * ((1 << b) - 1) ** 2 > (1 << 31) - 1:
        b -= 1
    return b


# ---- the twin ---------------------------------------------------------------------------------

def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)


def row_scale_field(x: np.ndarray) -> np.ndarray:
    """Biased exponent field of max_exp per row: 2 * mask_exponent(max) (0 for an all-zero or
    all-subnormal row, whose mask is 0.0; 0x7FF when doubling overflows)."""
    e = (_bits(x) >> np.uint64(MANT)) & np.uint64(0x7FF)
    emax = e.max(axis=1).astype(np.int64)
    return np.where(emax == 0, 0, np.minimum(emax + 1, 0x7FF))


def ozimmu_slices(x: BV, field_: BV, slices: int, beta: int) -> list[BV]:
    """ozIMMU's ``cut_int8_core`` in the semantic core: the int8 slices of fp64 bits ``x`` in a row
    whose max_exp has the biased exponent field ``field_`` (11 bits), so that
    x ~ sum_s v_s · 2^(F - 1023) · 2^(1 - s β).

    Slice s (1-based) is bits [127 - (s-1)β, 128 - sβ] of (significand << 75) >> shift with
    shift = F - E(x) and significand = fraction | 2^52 (the hidden bit is set even for zeros and
    subnormals, as the library does); a shift of 128 or more gives 0 (undefined in C++; it only
    arises in rows whose largest element is below 2^-895). Written with 64-bit shifts:
    slice_s = floor(significand · 2^t) mod 2^β, t = sβ - 53 - shift. The sign is
    ``x > 0 ? +1 : -1`` (+0 slices carry a minus sign)."""
    B = x.B
    e = x.extract(62, 52).zext(5)                                   # 16-bit exponent field
    mant = x.extract(51, 0).zext(12) | (1 << 52)                    # 64-bit significand
    shift = field_.zext(16 - field_.w) - e                          # F >= E for a row's elements
    positive = x.extract(63, 63).eq(0) & x.ne(0)
    out = []
    for s in range(1, slices + 1):
        t = B.const(s * beta - 53, 16) - shift                      # signed 16-bit
        right = t.slt(0)
        r = mant.lshr((-t).zext(48))
        lft = mant << t.zext(48)
        v = right.ite(r, lft).extract(beta - 1, 0).zext(8 - beta)
        v = shift.uge(128).ite(B.const(0, 8), v)
        out.append(positive.ite(v, -v))
    return out


def slice_rows(x: np.ndarray, scale_field: np.ndarray, slices: int, beta: int, rm: str = "RZ") -> np.ndarray:
    """:func:`ozimmu_slices` on every element of x (rows share ``scale_field``), read by the
    NumPy twin: int8 slices as int64, shape (slices, rows, cols)."""
    if rm != "RZ":
        raise OzakiError(f"slicing rounding {rm!r} is not modelled (only RZ, ozIMMU's truncation)")
    u = _bits(x).reshape(-1)
    f = np.broadcast_to(np.asarray(scale_field, dtype=np.uint64)[:, None], x.shape).reshape(-1)
    v = ozimmu_slices(NUMPY.input(u, 64), NUMPY.input(np.ascontiguousarray(f), 11), slices, beta)
    out = np.stack([np.broadcast_to(np.asarray(t.v, dtype=np.uint64), u.shape) for t in v]).astype(np.int64)
    out = np.where(out >= 128, out - 256, out)
    return out.reshape((slices,) + x.shape)


def _row_field(xs: list[BV]) -> BV:
    """The core's max_exp field of a row (or column) of fp64 bits: e_max + 1, 0 for an all-zero /
    all-subnormal row, 0x7FF when doubling overflows (as :func:`row_scale_field`)."""
    e = xs[0].extract(62, 52)
    for x in xs[1:]:
        f = x.extract(62, 52)
        e = f.ugt(e).ite(f, e)
    return e.eq(0).ite(e, e + 1)                         # 0x7FE + 1 = 0x7FF: doubling overflows to inf


def _int_to_fp64(c: BV, shift: int) -> BV:
    """An s32 value times 2^shift as fp64 bits (exact: 32 bits fit fp64's 53)."""
    B = c.B
    neg = c.slt(0)
    mag = neg.ite(-c.sext(1), c.sext(1))                     # 33 bits, no overflow at -2^31
    v = FPValue(neg, exp_const(B, shift), mag, 0, B.false(), B.false(), c.eq(0), shift, shift + 33)
    return round_value(v, "fp64")


def _times_scale(x: BV, field_: BV) -> BV:
    """fl64(x · U) with U = 2^(field - 1023) the max_exp value (field 0: U = 0.0, 0x7FF: inf)."""
    B = x.B
    v = decode(x, "fp64")
    d = field_.zext(EXP_W - 11) - 1023
    scaled = round_value(FPValue(v.sign, v.exp + d, v.sig, v.frac, v.nan, v.inf, v.zero,
                                 v.exp_lo - 1023, v.exp_hi + 0x7FE - 1023), "fp64")
    sign = x.extract(63, 63)
    zero = sign.concat(B.const(0, 63))
    inf = sign.concat(B.const(0x7FF << 52, 63))
    nan = B.const(0x7FF8 << 48, 64)
    at_inf = (v.zero | v.nan).ite(nan, inf)
    return field_.eq(0).ite(v.nan.ite(nan, zero), field_.eq(0x7FF).ite(at_inf, scaled))


def ozaki1_element(s: "Ozaki", a: list[BV], b: list[BV], alpha_bits: int | None = None) -> BV:
    """One output of Ozaki-I in the semantic core: fp64 bits of D = alpha · (row a) · (column b)
    with β = s.bits(k), slices by :func:`ozimmu_slices`, the int8 slice products by the scheme's
    integer MMA model (``Model.build``, its wrap or clamp), each int32 times its weight converted
    exactly to fp64 and added into an fp64 accumulator by the core's IEEE adder in ozIMMU's pair
    order, then ``/ 2^44 · U_A · U_B`` and ``alpha ·`` (beta = 0). The GEMM twin (:func:`gemm`)
    computes the same numbers with BLAS for the integer sums; the tests check them equal."""
    k = len(a)
    if s.kind != "I" or len(b) != k or s.accumulate != "fp64":
        raise OzakiError("ozaki1_element: an Ozaki-I scheme with fp64 accumulation and len(a) == len(b)")
    s.check(k)
    beta = s.bits(k)
    m = s.model()
    B = a[0].B
    fa, fb = _row_field(a), _row_field(b)
    sa = [ozimmu_slices(x, fa, s.slices, beta) for x in a]
    sb = [ozimmu_slices(y, fb, s.slices, beta) for y in b]
    acc = B.const(0, 64)
    for i, j in s.pair_list():
        c32 = m.build([t[i - 1] for t in sa], [t[j - 1] for t in sb], B.const(0, 32))
        rshift = beta * (i + j - 2) - 2 * (7 - beta)
        acc = fp_add(acc, _int_to_fp64(c32, 32 - rshift), "fp64")
    x = scale_pow2(acc, "fp64", -44)
    x = _times_scale(_times_scale(x, fa), fb)
    if alpha_bits is None:
        return x
    return fp_mul(B.const(alpha_bits, 64), x, "fp64")


def _pow2(field_: np.ndarray) -> np.ndarray:
    """2^(field - 1023) as float64 (field 0 -> 0.0, 0x7FF -> inf): the max_exp values."""
    return (field_.astype(np.uint64) << np.uint64(MANT)).view(np.float64)


def gemm(s: Ozaki, A, B, C=None, alpha: float = 1.0, beta: float = 0.0) -> np.ndarray:
    """D = alpha·A·B + beta·C (float64 arrays) emulated by scheme ``s``, bit for bit as the GPU
    library computes it (Ozaki I; Ozaki II: the idealised exact-CRT reading, see the module)."""
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    C = None if C is None else np.asarray(C, dtype=np.float64)
    _check_shapes(A, B, C)
    _refuse_specials(A, B, C if beta != 0 else None, np.array([alpha, beta]))
    s.check(A.shape[1])
    if s.kind == "U":
        return _ozaki_unsigned(s, A, B, C, alpha, beta)
    if s.kind == "G8":
        try:
            return gemmul8_gemm(A, B, C, alpha, beta, n=len(s.moduli), mode=s.mode, imma=s.model())
        except Gemmul8Error as exc:
            raise OzakiError(f"{s.name}: {exc}") from None
    x = _ozaki1(s, A, B) if s.kind == "I" else _ozaki2(s, A, B)
    with np.errstate(over="ignore", invalid="ignore"):
        if beta == 0 or C is None:
            return alpha * x
        return ieee_fma(alpha, x, beta * C)


def _ozaki1(s: Ozaki, A, B) -> np.ndarray:
    K = A.shape[1]
    beta = s.bits(K)
    m = s.model()
    fa, fb = row_scale_field(A), row_scale_field(B.T)
    SA = slice_rows(A, fa, s.slices, beta, s.slice_rm)
    SB = slice_rows(B.T, fb, s.slices, beta, s.slice_rm)
    pairs = s.pair_list()
    if s.accumulate == "exact":                       # sum of c32 · 2^(2 - (i+j)β) U_A U_B, one rounding
        top = max(i + j for i, j in pairs) * beta
        acc = np.zeros((A.shape[0], B.shape[1]), dtype=object)
        for i, j in pairs:
            acc = acc + int_gemm(SA[i - 1], SB[j - 1].T, m).astype(object) * (1 << (top - (i + j) * beta))
        e = (fa[:, None] + fb[None, :] - 2 * 1023 + 2 - top).astype(object)
        return np.vectorize(_ldexp_exact, otypes=[np.float64])(acc, e)
    acc = np.zeros((A.shape[0], B.shape[1]), dtype=np.float64)
    for i, j in pairs:
        c32 = int_gemm(SA[i - 1], SB[j - 1].T, m)
        rshift = beta * (i + j - 2) - 2 * (7 - beta)
        acc = acc + c32.astype(np.float64) * 2.0 ** (32 - rshift)     # product exact; the sum rounds (RNE)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return acc / 2.0 ** 44 * _pow2(fa)[:, None] * _pow2(fb)[None, :]


def _unsigned_rows(X: np.ndarray, slices: int):
    """Per row: the shift (from the row's largest |x|, read as bits) and the int8 digits of every
    element, by :func:`unsigned_shift` and :func:`unsigned_slices` (NumPy reading)."""
    u = _bits(X)
    mag = u & np.uint64(0x7FFFFFFFFFFFFFFF)
    mx = mag.max(axis=1)
    sh = np.asarray(unsigned_shift(NUMPY.input(mx, 64)).v, dtype=np.int64)
    sh = np.broadcast_to(np.where(sh >= 1 << 15, sh - (1 << 16), sh), (X.shape[0],))
    flat = u.reshape(-1)
    shf = np.broadcast_to(sh[:, None], X.shape).reshape(-1).astype(np.int64) & 0xFFFF
    v = unsigned_slices(NUMPY.input(flat, 64), NUMPY.input(shf.astype(np.uint64), 16), slices)
    out = np.stack([np.broadcast_to(np.asarray(t.v, dtype=np.uint64), flat.shape) for t in v]).astype(np.int64)
    out = np.where(out >= 128, out - 256, out)
    return sh, out.reshape((slices,) + X.shape)


def _ozaki_unsigned(s: Ozaki, A, B, C, alpha: float, beta: float) -> np.ndarray:
    m = s.model()
    S = s.slices
    sa, SA = _unsigned_rows(A, S)
    sb, SB = _unsigned_rows(B.T, S)
    D = None
    for d in range(S - 1, -1, -1):
        c = sum(int_gemm(SA[i], SB[d - i].T, m) for i in range(d + 1))     # one int32 accumulator, no overflow (check)
        e = (-8 * d - sa[:, None] - sb[None, :]).astype(object)
        x = np.vectorize(_ldexp_exact, otypes=[np.float64])(c.astype(object), e)
        if D is None:
            if beta == 0 or C is None:
                D = x if alpha == 1.0 else alpha * x
            else:
                D = ieee_fma(alpha, x, beta * C)
        else:
            D = x + D if alpha == 1.0 else ieee_fma(alpha, x, D)
    return D


def _ozaki2(s: Ozaki, A, B) -> np.ndarray:
    """Scale each row of A (column of B) by 2^sft with ||a'||_2 <= 2^(log2(P/2)/2 - 1), truncate
    (so |sum a'b'| <= ||a'|| ||b'|| < P/8 by Cauchy-Schwarz: the CRT value is the integer itself),
    take symmetric residues (fmod is exact on float64), one int8 GEMM per modulus through the
    integer MMA model, exact CRT in Python integers, one rounding of the scaled-back value."""
    P = math.prod(s.moduli)
    m = s.model()
    half = math.log2(P / 2) / 2

    def shifts(X):
        nrm = np.sqrt(np.sum(X * X, axis=1))
        with np.errstate(divide="ignore"):
            e = np.floor(half - np.log2(np.where(nrm > 0, nrm, 1.0))).astype(np.int64) - 2
        return np.where(nrm > 0, e, 0)
    sa, sb = shifts(A), shifts(B.T)
    Ai, Bi = np.trunc(np.ldexp(A, sa[:, None])), np.trunc(np.ldexp(B.T, sb[:, None]))
    acc = np.zeros((A.shape[0], B.shape[1]), dtype=object)
    for p in s.moduli:
        c = int_gemm(sym_residue(Ai, p), sym_residue(Bi, p).T, m)
        Mp = P // p
        acc = acc + np.mod(c, p).astype(object) * (Mp * pow(Mp, -1, p))
    acc = np.mod(acc, P)
    acc = np.where(acc > P // 2, acc - P, acc)
    e = (-sa[:, None] - sb[None, :]).astype(object)
    return np.vectorize(_ldexp_exact, otypes=[np.float64])(acc, e)


def _ldexp_exact(v: int, e: int) -> float:
    """RN64(v·2^e) for a Python int v of any size, one rounding (int -> float is correctly
    rounded in Python; the power-of-two scaling is exact unless the result leaves the normal
    range, where the exact Fraction is rounded instead)."""
    x = math.ldexp(float(v), int(e))
    if x != 0 and 2.0 ** -1021 < abs(x) < 2.0 ** 1023:
        return x
    from fractions import Fraction
    f = Fraction(int(v)) * Fraction(2) ** int(e)
    try:
        return float(f)
    except OverflowError:
        return math.copysign(math.inf, v)


OZAKI: dict[str, Ozaki] = {}


def _add(o: Ozaki) -> None:
    OZAKI[o.name] = o


_SRC1 = ("Ootomo-Ozaki-Yokota IJHPCA 2024; enp1s0/ozIMMU src/split.cu (cut_int8_core, split_int8_kernel), "
         "src/config.cu (get_split_config), src/gemm.cu (gemm_int8, accumulate_in_f64, axby_kernel)")
for _s in range(3, 19):
    _add(Ozaki(f"ozaki1-s{_s}", "I", f"ozIMMU fp64_int8_{_s}: {_s} int8 slices, triangular pairs", _SRC1,
               slices=_s))
_add(Ozaki("ozaki1-s8-beta7", "I", "misconfiguration: β = 7 fixed for every k (no int32 headroom rule)",
           _SRC1 + "; β fixed by hand", slices=8, beta=7))
_add(Ozaki("ozaki1-s8-all", "I", "8 slices, all s^2 pairs (the dropped-pair error removed)", _SRC1,
           slices=8, pairs="all"))
for _s in (8, 12, 18):
    _add(Ozaki(f"ozaki1-s{_s}-exactsum", "I", f"{_s} slices, the slice products summed exactly and rounded once "
               "(a reference variant: isolates ozIMMU's fp64 accumulation error)", _SRC1 + "; exact sum by mmaprobe",
               slices=_s, accumulate="exact"))
_SRC2 = ("Uchino-Ozaki-Imamura 2025 (Ozaki scheme II); RIKEN-RCCS/GEMMul8 src/table.hpp (INT8 moduli), "
         "include/gemmul8.hpp (k <= 2^17); exact CRT (idealised)")
for _n in (8, 10, 12, 14, 16, 18, 20):
    _add(Ozaki(f"ozaki2-n{_n}", "II", f"Ozaki II with GEMMul8's first {_n} INT8 moduli", _SRC2,
               moduli=GEMMUL8_INT8_MODULI[:_n]))


_SRCU = ("arXiv 2511.13778 (unsigned slicing); NVIDIA cuBLASDx Ozaki example slicing.hpp (max_to_exponent_shift, "
         "slices_from_fp64, nth_slice_to_fp64), emulation_kernels.hpp (fused_epilogue_kernel)")
for _s in range(3, 9):
    _add(Ozaki(f"ozaki-unsigned-s{_s}", "U", f"unsigned int8 slicing, {_s} slices ({8 * _s - 1} mantissa bits "
               f"in FIXED mode)", _SRCU, slices=_s, beta=8))


# ---- cuBLAS DYNAMIC mantissa control: Automatic Dynamic Precision (ESC) -----------------------

def fp64_exponent(x: BV) -> BV:
    """The exponent ESC reads from an fp64 (sign ignored): the unbiased IEEE exponent component,
    floor(log2|x|) for normal x and -1022 for subnormals (max(field, 1) - 1023, a signed 16-bit
    value). Zeros are told apart by the caller (their exponent is -inf in the estimate)."""
    B = x.B
    e = x.extract(62, 52).zext(5)
    return e.eq(0).ite(B.const(1, 16), e) - B.const(1023, 16)


ESC_NONE = -(1 << 30)          # the exponent of a zero: -inf in the estimate


def _exponents(X: np.ndarray) -> np.ndarray:
    """:func:`fp64_exponent` of every element (NumPy reading), ``ESC_NONE`` for zeros."""
    u = _bits(X)
    e = np.asarray(fp64_exponent(NUMPY.input(u.reshape(-1), 64)).v, dtype=np.int64).reshape(X.shape)
    e = np.where(e >= 1 << 15, e - (1 << 16), e)
    return np.where((u & np.uint64(0x7FFFFFFFFFFFFFFF)) == 0, ESC_NONE, e)


@dataclass(frozen=True)
class Dynamic:
    """cuBLAS's DYNAMIC mantissa control (``CUDA_EMULATION_MANTISSA_CONTROL_DYNAMIC``) as data over
    unsigned slicing. Per dot product of a row x of A and a column y of B (arXiv 2511.13778 §4 as
    quoted by the sources in the module docstring):

    * ESC = e(max x) + e(max y) - e(max z), z = x ⊙ y, e = :func:`fp64_exponent`;
    * e(max z) estimated block by block along k (``block`` elements; 1 = the exact value):
      max over blocks of max(Max_x + Min_y, Min_x + Max_y), zeros as -inf, so the estimate never
      exceeds e(max z) and the ESC never falls below the exact one;
    * the GEMM's ESC is the largest over its dot products (one slice count per GEMM); a dot
      product of an all-zero row or column is exactly 0 and takes no part (*inferred*); an
      estimate of -inf with nonzero row and column is unbounded: native FP64;
    * mantissa bits N = 53 + ESC + ``pad`` + ``offset``; ``pad`` = 0 is the count in NVIDIA's
      clarification quoted by the blog (slices = ceil((1 + 52 + ESC + 1) / 8)), 1 the width
      W = 53 + ESC + 1 of the Z3/Lean model of the paper (one more bit: the sign of the slices);
      slices S = ceil((N + 1) / 8) (the API's relation: 79 bits "allows up to 10 INT8 slices");
    * N > ``max_bits`` (``cublasSetFixedPointEmulationMaxMantissaBitCount``): native FP64.

    ``max_bits`` is at most 63: the unsigned core cuts a 64-bit integer (8 slices); cuBLAS's
    default (0: "optimal for the current GPU") is not published, so 0 is refused.

    ``strategy`` (``cublasSetEmulationStrategy`` / ``CUBLAS_EMULATION_STRATEGY``): the
    ``dgemm_dynamic`` sample of ``NVIDIA/CUDALibrarySamples`` states *performant* (cuBLAS's default)
    "enables a layer of heuristics to pick between emulation and native algorithms to choose the
    most performant option" and *eager* "will leverage emulation whenever possible". Only
    ``"eager"`` is modelled (emulation wherever the ESC and ``max_bits`` allow; the sample sets it);
    ``"performant"`` is refused: its heuristic is not public.

    ``special`` (``cudaEmulationSpecialValuesSupport_t``: NONE = 0, INFINITY = 1, NAN = 2, DEFAULT =
    0xFFFF, CUDA 13.0 Update 2 ``library_types.h``): the cuSOLVER documentation of the same mask
    states that with DEFAULT special values "are propagated as expected" and with NONE "the
    propagation of special values is undefined". ``"refuse"`` (the model's default) refuses inf/NaN
    in A, B (and C where it is read) with one line. ``"default"``, ``"infinity"``, ``"nan"`` take the
    classes the mask covers to native FP64 for the whole GEMM (*inferred*: the paper's abstract names
    "exception handling" and "seamless fallback to native FP64"; the Z3/Lean model of the paper sends
    them to native; which kernel cuBLAS runs and its NaN payloads are not public); a class the mask
    does not cover (and every class under ``"none"``) is refused as undefined."""

    pad: int = 1
    block: int = 1
    offset: int = 0
    max_bits: int = 63
    strategy: str = "eager"
    special: str = "refuse"

    def check(self) -> None:
        if self.strategy == "performant":
            raise OzakiError("emulation strategy performant (cuBLAS's default) chooses emulation or native FP64 "
                             "by a performance heuristic that is not public; only eager is modelled")
        if self.strategy != "eager":
            raise OzakiError(f"emulation strategy {self.strategy!r} is not one of eager, performant")
        if self.special not in SPECIAL_MASKS:
            raise OzakiError(f"special-value support {self.special!r} is not one of {', '.join(SPECIAL_MASKS)}")
        if self.max_bits == 0:
            raise OzakiError("maximum mantissa bit count 0 is cuBLAS's default ('optimal for the current GPU'), "
                             "whose value is not published; give 1..63")
        if self.pad not in (0, 1, 2):
            raise OzakiError(f"ESC padding {self.pad} is not one of 0, 1, 2 bits")
        if self.block < 1:
            raise OzakiError(f"ESC block {self.block} must be >= 1")
        if not 1 <= self.max_bits <= 63:
            raise OzakiError(f"maximum mantissa bit count {self.max_bits} is out of range 1..63 (the unsigned "
                             "core holds at most 8 slices)")
        if 53 + self.pad + self.offset < 1:
            raise OzakiError(f"mantissa bit offset {self.offset} leaves no mantissa bits")

    def bits(self, esc: int) -> int:
        return 53 + esc + self.pad + self.offset

    def slices(self, esc: int) -> int:
        """ceil((N + 1) / 8) for the N this ESC asks for (also where N exceeds the maximum)."""
        return -(-(self.bits(esc) + 1) // 8)


SPECIAL_MASKS = {"refuse": None, "none": (), "infinity": ("inf",), "nan": ("nan",), "default": ("inf", "nan")}
"""``Dynamic.special``: the special-value classes each ``cudaEmulationSpecialValuesSupport_t`` value
covers (``"refuse"``: the model evaluates none)."""


def _special_route(cfg: Dynamic, mats) -> str | None:
    """None where no operand holds inf/NaN; ``"native"`` where the mask covers every class present
    (*inferred*, :class:`Dynamic`); otherwise one-line refusal."""
    present = set()
    for x in mats:
        if x is not None:
            if np.isnan(x).any():
                present.add("nan")
            if np.isinf(x).any():
                present.add("inf")
    if not present:
        return None
    cover = SPECIAL_MASKS[cfg.special]
    if cover is None:
        raise OzakiError(f"inputs with inf or NaN ({', '.join(sorted(present))}): DYNAMIC's special-value path is not "
                         "modelled bit for bit (Dynamic.special='default' takes them to native FP64, inferred); "
                         "refused")
    missing = present - set(cover)
    if missing:
        raise OzakiError(f"inputs with {' and '.join(sorted(missing))} under special-value support "
                         f"{cfg.special!r}: their propagation is undefined (cudaEmulationSpecialValuesSupport_t); "
                         "refused")
    return "native"


def esc_matrix(A: np.ndarray, B: np.ndarray, block: int = 1) -> np.ndarray:
    """ESC of every dot product (rows of A, columns of B) as :class:`Dynamic` defines it: an int64
    matrix, ``ESC_NONE`` where the row or column is all zero, ``-ESC_NONE`` where the estimate is
    unbounded."""
    ex, ey = _exponents(np.asarray(A, dtype=np.float64)), _exponents(np.asarray(B, dtype=np.float64).T)
    k = ex.shape[1]
    zero = ex == ESC_NONE
    zy = ey == ESC_NONE
    ep = np.where(zero.all(axis=1), ESC_NONE, ex.max(axis=1))
    eq = np.where(zy.all(axis=1), ESC_NONE, ey.max(axis=1))
    F = np.full((ex.shape[0], ey.shape[0]), ESC_NONE, dtype=np.int64)
    for s in range(0, k, block):
        bx, by = ex[:, s:s + block], ey[:, s:s + block]
        mx, nx = bx.max(axis=1), np.where((bx == ESC_NONE).any(axis=1), ESC_NONE, bx.min(axis=1))
        my, ny = by.max(axis=1), np.where((by == ESC_NONE).any(axis=1), ESC_NONE, by.min(axis=1))

        def add(a, b):
            return np.where((a[:, None] == ESC_NONE) | (b[None, :] == ESC_NONE), ESC_NONE, a[:, None] + b[None, :])
        F = np.maximum(F, np.maximum(add(mx, ny), add(nx, my)))
    none = (ep[:, None] == ESC_NONE) | (eq[None, :] == ESC_NONE)
    esc = np.where(F == ESC_NONE, -ESC_NONE, ep[:, None] + eq[None, :] - F)
    return np.where(none, ESC_NONE, esc)


def dynamic_plan(A, B, cfg: Dynamic = Dynamic()) -> dict:
    """What DYNAMIC does with these inputs: the GEMM's ESC, the mantissa bits and slices it asks
    for, and the path (``"emulated"`` or ``"native"``, with the reason)."""
    cfg.check()
    E = esc_matrix(A, B, cfg.block)
    live = E[E != ESC_NONE]
    if live.size and (live == -ESC_NONE).any():
        return {"path": "native", "reason": "unbounded ESC estimate", "esc": None, "bits": None, "slices": None}
    esc = int(live.max()) if live.size else 0
    n, s = cfg.bits(esc), cfg.slices(esc)
    plan = {"esc": esc, "bits": n, "slices": s}
    if n > cfg.max_bits:
        return {"path": "native", "reason": f"N = {n} > maximum {cfg.max_bits}", **plan}
    return {"path": "emulated", "reason": "", **plan}


def adp_gemm(A, B, C=None, alpha: float = 1.0, beta: float = 0.0, cfg: Dynamic = Dynamic(),
             native: str = "hopper-fp64-fp64"):
    """D = alpha·A·B + beta·C by DYNAMIC: :func:`dynamic_plan`, then unsigned slicing with the
    planned slice count (:func:`gemm`), or the native FP64 GEMM (the catalog model ``native``:
    the DMMA FMA chain in K order) where it falls back. Inputs with inf/NaN: as ``cfg.special``
    says (refused by default; :class:`Dynamic`). Returns (D, plan)."""
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    C = None if C is None else np.asarray(C, dtype=np.float64)
    _check_shapes(A, B, C)
    cfg.check()
    _refuse_specials(np.array([alpha, beta]))
    if _special_route(cfg, (A, B, C if beta != 0 else None)) == "native":
        plan = {"path": "native", "reason": "special values (inferred fallback)", "esc": None, "bits": None,
                "slices": None}
    else:
        plan = dynamic_plan(A, B, cfg)
    if plan["path"] == "native":
        from ..gemm import gemm as mgemm
        D = mgemm(native, A, B, C if beta != 0 else None, alpha=alpha, beta=beta if C is not None else 0.0)
        return np.asarray(D, dtype=np.float64), plan
    S = plan["slices"]
    s = Ozaki(f"ozaki-unsigned-s{S}", "U", f"DYNAMIC: {S} unsigned slices", _SRCU, slices=S, beta=8)
    return gemm(s, A, B, C, alpha, beta), plan


_SRCG8 = f"Uchino-Ozaki-Imamura 2025; {GEMMUL8_SOURCE} (smtmodel/schemes/gemmul8.py)"
for _m in ("fast", "accurate"):
    _add(Ozaki(f"ozaki2-gemmul8-{_m}", "G8", f"GEMMul8 {_m} mode, bit for bit as its source computes it (15 moduli, "
               "as its sample; ':moduli=N' or --moduli for 2..20)", _SRCG8, moduli=GEMMUL8_INT8_MODULI[:15], mode=_m))


def with_moduli(s: Ozaki, n: int) -> Ozaki:
    """A GEMMul8 scheme with its first n moduli (2..20), refused for other kinds or counts."""
    if s.kind != "G8":
        raise OzakiError(f"{s.name}: the moduli count is a parameter of the GEMMul8 schemes only")
    try:
        check_moduli(n)
    except Gemmul8Error as exc:
        raise OzakiError(f"{s.name}: {exc}") from None
    return replace(s, name=f"{s.name.split(':')[0]}:moduli={n}", moduli=GEMMUL8_INT8_MODULI[:n])


def get_ozaki(name: str) -> Ozaki:
    base, _, opt = name.partition(":")
    if opt:
        key, _, val = opt.partition("=")
        if base not in OZAKI or key != "moduli" or not val.lstrip("-").isdigit():
            raise OzakiError(f"{name!r}: the only parameter is ':moduli=N' of a GEMMul8 scheme")
        return with_moduli(OZAKI[base], int(val))
    if name not in OZAKI:
        raise OzakiError(f"unknown Ozaki scheme {name!r}; one of {', '.join(OZAKI)}")
    return OZAKI[name]


def gemm_memory(s: Ozaki, m: int, n: int, k: int) -> int:
    """Bytes :func:`gemm` allocates at most for an (m, k) x (k, n) product, an upper estimate:
    8 bytes per element of A, B and D times (4 + 3 · slices or moduli). Measured peaks (RSS over
    NumPy's own, m = n = k = 256 and 1024 x 1024 x 256, 256 x 256 x 2048): 6.6-11.3 times for 3
    slices, 10.2-23.7 times for 8 (the factor here: 13 and 28)."""
    width = max(s.slices, len(s.moduli), 8 if s.kind == "G8" else 1)
    return 8 * (m * k + k * n + m * n) * (4 + 3 * width)
