"""Input sampling: every random or structured input the project draws, as raw bit patterns.

All values are raw bit patterns (uint64 arrays) of the named formats (:mod:`smtmodel.formats`);
fields are packed and classified by the core (:func:`smtmodel.fp.value.pack`,
:mod:`smtmodel.fp.classify`) read through NumPy, never by hand.

- :func:`validation_mix` — the validation cases of the harness and the catalog tests (the ISSM
  step of seed 001 §III-B, widened), cycling over four kinds because random normal inputs
  "rarely reach subnormals, specials, overflow or heavy cancellation" (../shared/hwdata/README.md):

  - ``normal``: standard normal values rounded to the format (seed 001 §IV-B);
  - ``wide``: random sign, exponent uniform over the whole normal range, random significand;
  - ``cancel``: pairs a_i*b_i and (-a_i)*b_i that cancel exactly, one significand nudged by an
    ulp and a small c, so the result is a tiny residue of large terms;
  - ``raw``: uniformly random bit patterns, a quarter of them replaced by
    :func:`boundary_patterns` (+-0, +-inf, NaN, smallest/largest subnormal, smallest normal,
    largest finite).
- :func:`round_to` — float64 values rounded (RNE) to a format's bits.
- :func:`edge_patterns` / :func:`edge_heavy` — edge encodings and seeded draws that over-weight
  them (differential tests of the core).
- :func:`special_heavy` — raw patterns weighted to subnormals and extremes (bound searches).
- :func:`finite_raw` — random finite patterns with some zeros (block-scaled references).
- :func:`in_exponent_range` — finite values with exponents in a range, sparse significands
  (scheme queries' random inputs).
- :func:`scale_mix` — block scales (E8M0, UE4M3) of every kind in turn, drawn apart from the
  elements (:data:`SCALE_KINDS`).
"""

from __future__ import annotations

import numpy as np

from .bv import NUMPY
from .formats import Format, get_format, is_int_format, numpy_dtype, numpy_to_bits
from .fp import convert
from .fp.classify import encode_fields, is_nan, is_special
from .fp.value import pack

KINDS = ("normal", "wide", "cancel", "raw")


# ---- the core read through NumPy ------------------------------------------------------------

def _bits(x) -> np.ndarray:
    return np.asarray(x.v, dtype=np.uint64)


def pack_fields(fmt: "Format | str", sign, exp_field, mant_field) -> np.ndarray:
    """Raw patterns of arrays of (sign bit, biased exponent field, mantissa field), packed by
    the core's :func:`~smtmodel.fp.value.pack`."""
    fmt = get_format(fmt)
    e = np.asarray(exp_field).astype(np.uint64)
    shape = np.broadcast_shapes(np.shape(sign), e.shape, np.shape(mant_field))
    flat = lambda v: np.broadcast_to(np.asarray(v).astype(np.uint64), shape).reshape(-1)
    s = NUMPY.input(flat(sign), 1).bit(0)
    bits = pack(fmt, s, NUMPY.input(flat(e), fmt.ebits), NUMPY.input(flat(mant_field), max(fmt.mbits, 1)))
    return np.broadcast_to(_bits(bits), (int(np.prod(shape)),)).reshape(shape).copy()


def _mask(pred, fmt: "Format | str", bits: np.ndarray) -> np.ndarray:
    """A classify predicate over an array of patterns, as a boolean array of the same shape."""
    fmt = get_format(fmt)
    flat = np.asarray(bits, dtype=np.uint64).reshape(-1)
    v = np.asarray(pred(NUMPY.input(flat, fmt.width), fmt).v, dtype=bool)
    return np.broadcast_to(v, flat.shape).reshape(np.shape(bits))


def round_to(values, fmt_name: str) -> np.ndarray:
    """Round float64 values to the format (round to nearest even) and return raw bits.

    Formats with a NumPy / ml_dtypes type are cast by that library; the others (TF32 in its
    32-bit container) go through the core's :func:`~smtmodel.fp.convert`, so a NaN becomes the
    format's canonical NaN like every conversion of the models."""
    fmt = get_format(fmt_name)
    if getattr(fmt, "kind", "") == "int":      # integer formats: nearest integer (ties to even), in range
        return numpy_to_bits(np.rint(np.asarray(values, dtype=np.float64)), fmt)
    if numpy_dtype(fmt) is not None and not fmt.shift:
        return numpy_to_bits(np.asarray(values, dtype=np.float64), fmt)
    x = np.ascontiguousarray(np.asarray(values, dtype=np.float64))
    flat = x.reshape(-1).view(np.uint64)
    d = convert(NUMPY.input(flat, 64), "fp64", fmt, "RNE")
    return np.broadcast_to(_bits(d), flat.shape).reshape(x.shape).copy()


# ---- the validation mix ---------------------------------------------------------------------

def _encodings(f: Format, fields) -> list[int]:
    """Sorted patterns of (exponent field, mantissa field) pairs in range, both signs where the
    format has a sign, and the format's NaN."""
    top, full = (1 << f.ebits) - 1, (1 << f.mbits) - 1
    vals = {encode_fields(f, s, e, m) for s in ((0, 1) if f.signed else (0,)) for e, m in fields
            if 0 <= e <= top and 0 <= m <= full}
    if f.canonical_nan is not None:
        vals.add(f.canonical_nan)
    return sorted(vals)


def boundary_patterns(fmt_name: str) -> np.ndarray:
    """Boundary and special encodings of a format (raw bits): +-0, smallest and largest
    subnormal, smallest normal, largest finite, +-inf where the format has it, its NaN."""
    f = get_format(fmt_name)
    full = (1 << f.mbits) - 1
    fields = [(0, 0), (0, 1), (0, full), (1, 0), (f.emax + f.bias, f.max_mantissa)]
    if f.has_inf:
        fields.append(((1 << f.ebits) - 1, 0))
    return np.array(_encodings(f, fields), dtype=np.uint64)


def _wide(fmt_name: str, shape, rng) -> np.ndarray:
    f = get_format(fmt_name)
    e = rng.integers(1, f.emax + f.bias + 1, size=shape, dtype=np.int64).astype(np.uint64)
    m = rng.integers(0, 1 << f.mbits, size=shape, dtype=np.int64).astype(np.uint64)
    s = rng.integers(0, 2, size=shape, dtype=np.int64).astype(np.uint64)
    bits = pack_fields(f, s, e, m)
    nan = _mask(is_nan, f, bits)          # OCP fn: S.1111.111 is NaN, use the largest finite instead
    if nan.any():
        m[nan] = np.uint64(f.max_mantissa)
        bits = pack_fields(f, s, e, m)
    return bits


def _raw(fmt_name: str, shape, rng) -> np.ndarray:
    f = get_format(fmt_name)
    bits = rng.integers(0, 1 << (f.width - f.shift), size=shape, dtype=np.uint64) << np.uint64(f.shift)
    sp = boundary_patterns(fmt_name)
    pick = rng.random(shape) < 0.25
    bits[pick] = sp[rng.integers(0, len(sp), size=int(pick.sum()))]
    return bits


def _cancel(in_fmt: str, c_fmt: str, k: int, n: int, rng):
    f = get_format(in_fmt)
    h = k // 2
    x = round_to(rng.standard_normal((n, h)), in_fmt)
    y = round_to(rng.standard_normal((n, h)), in_fmt)
    sign = np.uint64(encode_fields(f, 1, 0, 0))
    a = np.concatenate([x, x ^ sign, round_to(rng.standard_normal((n, k - 2 * h)), in_fmt)], axis=1)
    b = np.concatenate([y, y, round_to(rng.standard_normal((n, k - 2 * h)), in_fmt)], axis=1)
    perm = np.argsort(rng.random((n, k)), axis=1)
    a, b = np.take_along_axis(a, perm, 1), np.take_along_axis(b, perm, 1)
    j = rng.integers(0, k, size=n)
    rows = np.arange(n)
    nonzero = (a[rows, j] & ~sign) != 0
    a[rows[nonzero], j[nonzero]] ^= np.uint64(encode_fields(f, 0, 0, 1))   # one ulp off the cancelling pair
    c = round_to(rng.standard_normal(n) * 2.0 ** -12, c_fmt)
    return a, b, c


def validation_mix(in_fmt: str, c_fmt: str, k: int, n: int, seed: int = 0, b_fmt: str | None = None):
    """``n`` cases of ``k`` products: (a, b, c, kinds) with kinds[i] in :data:`KINDS`. With a
    ``b_fmt`` other than ``in_fmt`` (mixed operands), b is drawn in its own format from its own
    stream (the same kinds, independently of a)."""
    a, b, c, kinds = _mix(in_fmt, c_fmt, k, n, seed)
    if b_fmt is not None and get_format(b_fmt).name != get_format(in_fmt).name:
        sub = (list(seed) if isinstance(seed, (list, tuple)) else [seed]) + [0xB]
        b = _mix(b_fmt, c_fmt, k, n, sub)[1]
    return a, b, c, kinds


def _mix(in_fmt: str, c_fmt: str, k: int, n: int, seed):
    rng = np.random.default_rng(seed)
    kinds = np.array([KINDS[i % len(KINDS)] for i in range(n)])
    if is_int_format(in_fmt):
        return _int_mix(get_format(in_fmt), get_format(c_fmt), k, kinds, rng) + (kinds,)
    a = np.zeros((n, k), dtype=np.uint64)
    b = np.zeros((n, k), dtype=np.uint64)
    c = np.zeros(n, dtype=np.uint64)
    for kind in KINDS:
        idx = np.flatnonzero(kinds == kind)
        m = len(idx)
        if not m:
            continue
        if kind == "normal":
            a[idx] = round_to(rng.standard_normal((m, k)), in_fmt)
            b[idx] = round_to(rng.standard_normal((m, k)), in_fmt)
            c[idx] = round_to(rng.standard_normal(m), c_fmt)
        elif kind == "wide":
            a[idx], b[idx], c[idx] = _wide(in_fmt, (m, k), rng), _wide(in_fmt, (m, k), rng), _wide(c_fmt, m, rng)
        elif kind == "cancel":
            a[idx], b[idx], c[idx] = _cancel(in_fmt, c_fmt, k, m, rng)
        else:
            a[idx], b[idx], c[idx] = _raw(in_fmt, (m, k), rng), _raw(in_fmt, (m, k), rng), _raw(c_fmt, m, rng)
    return a, b, c, kinds


def _signed_zeros(f: Format, shape, rng) -> np.ndarray:
    return pack_fields(f, rng.integers(0, 2, size=shape), np.zeros(shape, np.int64), np.zeros(shape, np.int64))


def _low(fmt_name: str, shape, rng, top: int = 12) -> np.ndarray:
    """Random normal values in the lowest ``top`` binades (random sign and significand)."""
    f = get_format(fmt_name)
    e = rng.integers(1, min(top, f.emax + f.bias) + 1, size=shape, dtype=np.int64)
    m = rng.integers(0, 1 << f.mbits, size=shape, dtype=np.int64)
    return pack_fields(f, rng.integers(0, 2, size=shape), e, m)


def zero_mix(in_fmt: str, c_fmt: str, k: int, n: int, seed=0, b_fmt: str | None = None):
    """Zero-aimed cases (a, b, c) for the zero rules (docs/zeros.md): each product is a signed zero
    with probability 1/2 (a or b ±0), c is ±0 in half the cases; the nonzero values are drawn
    over the whole range in half the cases and from the lowest binades in the other half, where
    a zero's alignment exponent decides which low bits survive. ``b_fmt``: B's format (mixed
    operands; default ``in_fmt``)."""
    rng = np.random.default_rng(seed)
    b_fmt = b_fmt or in_fmt
    fi, fb, fc = get_format(in_fmt), get_format(b_fmt), get_format(c_fmt)
    low = rng.random(n) < 0.5
    a, b = _wide(in_fmt, (n, k), rng), _wide(b_fmt, (n, k), rng)
    a[low], b[low] = _low(in_fmt, (int(low.sum()), k), rng), _low(b_fmt, (int(low.sum()), k), rng)
    c = _wide(c_fmt, n, rng)
    c[low] = _low(c_fmt, int(low.sum()), rng)
    zero = rng.random((n, k)) < 0.5
    on_a = rng.random((n, k)) < 0.5
    a = np.where(zero & on_a, _signed_zeros(fi, (n, k), rng), a)
    b = np.where(zero & ~on_a, _signed_zeros(fb, (n, k), rng), b)
    c = np.where(rng.random(n) < 0.5, _signed_zeros(fc, n, rng), c)
    return a, b, c


def c_special_mix(in_fmt: str, c_fmt: str, k: int, n: int, seed=0, b_fmt: str | None = None):
    """Normal products (standard normal values) with a nonzero c: over c's whole normal range in
    half the cases, subnormal (random sign and nonzero significand) in the other half. ``b_fmt``:
    B's format (mixed operands; default ``in_fmt``)."""
    rng = np.random.default_rng(seed)
    fc = get_format(c_fmt)
    a = round_to(rng.standard_normal((n, k)), in_fmt)
    b = round_to(rng.standard_normal((n, k)), b_fmt or in_fmt)
    c = _wide(c_fmt, n, rng)
    sub = rng.random(n) < 0.5
    m = rng.integers(1, 1 << fc.mbits, size=int(sub.sum()), dtype=np.int64)
    c[sub] = pack_fields(fc, rng.integers(0, 2, size=int(sub.sum())), np.zeros(int(sub.sum()), np.int64), m)
    return a, b, c


def _int_mix(fi, fc, k: int, kinds: np.ndarray, rng):
    """The validation mix of an integer MMA (two's-complement or unsigned operands, an int32
    accumulator): ``normal`` small operands and a small c; ``wide`` operands and c over their
    whole ranges; ``cancel`` c within the products' reach of the int32 limits, so the exact sum
    leaves the range (wrap-around against ``.satfinite`` clamping); ``raw`` random bit patterns."""
    n = len(kinds)
    mask_i, mask_c = (1 << fi.width) - 1, (1 << fc.width) - 1
    a = rng.integers(fi.lo, fi.hi + 1, (n, k), dtype=np.int64)
    b = rng.integers(fi.lo, fi.hi + 1, (n, k), dtype=np.int64)
    c = rng.integers(fc.lo, fc.hi + 1, n, dtype=np.int64)
    small = kinds == "normal"
    a[small] = np.clip(rng.integers(-3, 4, (int(small.sum()), k)), fi.lo, fi.hi)
    b[small] = np.clip(rng.integers(-3, 4, (int(small.sum()), k)), fi.lo, fi.hi)
    c[small] = rng.integers(-1000, 1001, int(small.sum()))
    edge = np.flatnonzero(kinds == "cancel")
    reach = k * max(abs(fi.lo), fi.hi) ** 2
    side = rng.integers(0, 2, len(edge)).astype(bool)
    c[edge] = np.where(side, fc.hi - rng.integers(0, reach + 1, len(edge)), fc.lo + rng.integers(0, reach + 1, len(edge)))
    big = np.where(side, fi.hi, fi.lo if fi.signed else fi.hi)[:, None]
    a[edge] = np.where(rng.random((len(edge), k)) < 0.8, big, a[edge])
    b[edge] = np.where(rng.random((len(edge), k)) < 0.8, fi.hi if fi.signed else big, b[edge])
    raw = kinds == "raw"
    a[raw] = rng.integers(0, mask_i + 1, (int(raw.sum()), k))
    b[raw] = rng.integers(0, mask_i + 1, (int(raw.sum()), k))
    c[raw] = rng.integers(0, mask_c + 1, int(raw.sum()), dtype=np.int64)
    return ((a & mask_i).astype(np.uint64), (b & mask_i).astype(np.uint64), (c & mask_c).astype(np.uint64))


# ---- edge-heavy draws (differential tests of the core) --------------------------------------

def edge_patterns(fmt) -> list[int]:
    """Raw patterns of a format's edge cases (both signs where the format is signed): zeros,
    subnormal extremes, smallest normal, one and its neighbours, largest finite, the all-ones
    exponent with several mantissas (infinities, NaN payloads), the canonical NaN."""
    fmt = get_format(fmt)
    m, top = fmt.mbits, (1 << fmt.ebits) - 1
    mfull = (1 << m) - 1
    return _encodings(fmt, [(0, 0), (0, 1), (0, mfull), (0, mfull >> 1), (1, 0), (1, 1), (1, mfull),
                            (top - 1, 0), (top - 1, mfull), (top - 1, max(mfull - 1, 0)), (top, 0), (top, 1),
                            (top, mfull), (top, max(mfull - 1, 0)), (top, 1 << (m - 1) if m else 0),
                            (fmt.bias, 0), (fmt.bias, 1), (fmt.bias - 1, mfull), (top >> 1, mfull)])


def edge_heavy(fmt, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` seeded raw patterns (uint64) of ``fmt``: every edge pattern once, then a third edge
    patterns, a third structured (exponent field from {0, 1, top-1, top, bias} or random,
    mantissa from {0, 1, all-ones, all-ones-1} or random), a third uniform."""
    fmt = get_format(fmt)
    m, top = fmt.mbits, (1 << fmt.ebits) - 1
    mfull = (1 << m) - 1
    specials = np.array(edge_patterns(fmt), dtype=np.uint64)
    k = max(n - len(specials), 0)
    n_sp, n_st = k // 3, k // 3
    n_un = k - n_sp - n_st
    sp = rng.choice(specials, n_sp)
    s = rng.integers(0, 2, n_st, dtype=np.uint64) if fmt.signed else np.zeros(n_st, np.uint64)
    e_pick = np.array(sorted({0, 1, top - 1, top, fmt.bias}), dtype=np.uint64)
    e = np.where(rng.random(n_st) < 0.6, rng.choice(e_pick, n_st),
                 rng.integers(0, top + 1, n_st, dtype=np.uint64))
    m_pick = np.array(sorted({0, 1, mfull, max(mfull - 1, 0)}), dtype=np.uint64)
    mm = np.where(rng.random(n_st) < 0.5, rng.choice(m_pick, n_st),
                  rng.integers(0, mfull + 1, n_st, dtype=np.uint64))
    structured = pack_fields(fmt, s, e, mm) if n_st else np.zeros(0, np.uint64)
    hi = 1 << fmt.enc_width
    uni = (rng.integers(0, hi, n_un, dtype=np.uint64) if hi <= 2**63
           else rng.integers(0, 2**63, n_un, dtype=np.uint64) * np.uint64(2)
           + rng.integers(0, 2, n_un, dtype=np.uint64))
    uni <<= np.uint64(fmt.shift)
    out = np.concatenate([specials, sp, structured, uni])[:n] if n >= len(specials) \
        else rng.choice(specials, n)
    return rng.permutation(out).astype(np.uint64)


# ---- other weighted draws -------------------------------------------------------------------

def special_heavy(fmt, n: int, g: np.random.Generator) -> np.ndarray:
    """Raw patterns weighted to subnormals and extremes: half the exponent fields from
    {0, 1, top-1, bias}, the rest uniform; random mantissa and sign; a tenth +0."""
    fmt = get_format(fmt)
    top = (1 << fmt.ebits) - 1
    e = np.where(g.random(n) < 0.5, g.choice([0, 1, top - 1, fmt.bias], n), g.integers(0, top + 1, n))
    mant = g.integers(0, 1 << fmt.mbits, n) if fmt.mbits else np.zeros(n, np.int64)
    s = g.integers(0, 2, n) if fmt.signed else np.zeros(n, np.int64)
    bits = pack_fields(fmt, s, e, mant)
    return np.where(g.random(n) < 0.1, np.uint64(0), bits).astype(np.uint64)


def finite_raw(fmt, n: int, g: np.random.Generator, zero_frac: float = 0.15) -> np.ndarray:
    """Uniformly random fields with a fraction ``zero_frac`` of +0; an infinity or NaN has its
    top exponent bit cleared (a NaN still left, the fnuz one, becomes +0), so every pattern is
    finite."""
    f = get_format(fmt)
    top = (1 << f.ebits) - 1
    e = g.integers(0, top + 1, n)
    mant = g.integers(0, 1 << f.mbits, n)
    s = g.integers(0, 2, n)
    bits = np.where(g.random(n) < zero_frac, np.uint64(0), pack_fields(f, s, e, mant))
    bits = np.where(_mask(is_special, f, bits), pack_fields(f, s, e & (top >> 1), mant), bits)
    return np.where(_mask(is_special, f, bits), np.uint64(0), bits).astype(np.uint64)


def in_exponent_range(fmt, size, g: np.random.Generator, exp_range=None, mant_bits: int | None = None,
                      nonneg: bool = False, allow_zero: bool = False, sparse: float = 0.3,
                      zero_frac: float = 0.15) -> np.ndarray:
    """Normal values with unbiased exponents uniform in ``exp_range`` (default: the normal
    range), a fraction ``sparse`` keeping only their top 6 mantissa bits, at most ``mant_bits``
    mantissa bits, random signs unless ``nonneg``, and a fraction ``zero_frac`` of +0 where
    ``allow_zero``."""
    f = get_format(fmt)
    lo, hi = exp_range or (f.emin, f.emax)
    e = g.integers(max(lo, f.emin), min(hi, f.emax) + 1, size) + f.bias
    m = g.integers(0, 1 << f.mbits, size)
    keep6 = ((1 << min(6, f.mbits)) - 1) << max(f.mbits - 6, 0)
    m = np.where(g.random(size) < sparse, m & keep6, m)
    if mant_bits is not None and mant_bits < f.mbits:
        m &= ((1 << mant_bits) - 1) << (f.mbits - mant_bits)
    s = np.zeros(size, np.int64) if nonneg else g.integers(0, 2, size)
    bits = pack_fields(f, s, e, m)
    if allow_zero:
        bits = np.where(g.random(size) < zero_frac, np.uint64(0), bits)
    return bits.astype(np.uint64)


SCALE_KINDS = ("one", "near", "push", "nan", "extreme", "zero", "raw")
"""How :func:`scale_mix` sets a case's block scales, independently of its elements: all 1.0;
each block within 2^+-8 of 1; one block pushed 2^1..2^40 above the others (its group decides the
alignment, the rest is cut by F); a NaN scale in one block (E8M0 0xFF, UE4M3 0x7F); the extreme
scales (smallest and largest encodings) in one block; a zero scale (UE4M3 0x00, E8M0 has none:
its smallest, 2^-127, instead); random encodings."""


def scale_one(scale_fmt: str) -> int:
    """The encoding of 1.0 in a block-scale format: E8M0 is the biased exponent alone; UE4M3
    (bias 7, 3 fraction bits) is 0bEEEE000."""
    fs = get_format(scale_fmt)
    return fs.bias if fs.policy == "e8m0" else fs.bias << fs.mbits


def scale_mix(scale_fmt: str, n: int, blocks: int, seed) -> tuple[np.ndarray, np.ndarray]:
    """Block scales for ``n`` cases (raw bits, uint64 ``(n, blocks)`` for a and for b): case i
    takes the kind :data:`SCALE_KINDS` ``[i % 7]``, so that cases drawn in order meet every kind."""
    fs = get_format(scale_fmt)
    g = np.random.default_rng(seed)
    e8 = fs.policy == "e8m0"
    one = scale_one(scale_fmt)                # 1.0; enc(e) below encodes 2^e the same way
    nan = (1 << fs.width) - 1 if e8 else (1 << (fs.width - 1)) - 1 if fs.signed else (1 << fs.width) - 1
    top = nan - 1                             # the largest finite encoding
    smallest = 0 if e8 else 1                 # 2^-127 / the smallest subnormal

    def enc(e):                               # 2^e, clipped into the finite normal range
        if e8:
            return np.clip(fs.bias + e, 0, top)
        return np.clip(fs.bias + e, 1, (top >> fs.mbits)) << fs.mbits

    sa = np.full((n, blocks), one, np.int64)
    sb = np.full((n, blocks), one, np.int64)
    kind = np.arange(n) % len(SCALE_KINDS)
    blk = g.integers(0, blocks, n)
    side = g.random(n) < 0.5
    rows = np.arange(n)
    for name_i, name in enumerate(SCALE_KINDS):
        r = rows[kind == name_i]
        if not r.size:
            continue
        if name == "near":
            sa[r] = enc(g.integers(-8, 9, (r.size, blocks)))
            sb[r] = enc(g.integers(-8, 9, (r.size, blocks)))
        elif name == "push":
            up = g.integers(1, 41, r.size)
            tgt = np.where(side[r], 0, 1)
            for j, i in enumerate(r):
                (sa if tgt[j] == 0 else sb)[i, blk[i]] = enc(min(up[j], 120 if e8 else 8))
        elif name in ("nan", "extreme", "zero"):
            val = {"nan": [nan], "extreme": [smallest, top], "zero": [0]}[name]
            pick = g.choice(val, r.size)
            for j, i in enumerate(r):
                (sa if side[i] else sb)[i, blk[i]] = pick[j]
        elif name == "raw":
            sa[r] = g.integers(0, nan + 1, (r.size, blocks))
            sb[r] = g.integers(0, nan + 1, (r.size, blocks))
    return sa.astype(np.uint64), sb.astype(np.uint64)
