"""Random validation cases (the ISSM step of seed 001 §III-B, widened) and a layout self-test.

The validation mix cycles over four kinds of case, because random normal inputs "rarely reach
subnormals, specials, overflow or heavy cancellation" (../shared/hwdata/README.md):

- ``normal``: standard normal values rounded to the format (seed 001 §IV-B);
- ``wide``: random sign, exponent uniform over the whole normal range, random significand;
- ``cancel``: pairs a_i*b_i and (-a_i)*b_i that cancel exactly, one significand nudged by an
  ulp and a small c, so the result is a tiny residue of large terms;
- ``raw``: uniformly random bit patterns, a quarter of them replaced by special encodings
  (+-0, +-inf, NaN, smallest/largest subnormal, smallest normal, largest finite).

All values are raw bit patterns (uint64) of the named formats (``smtmodel.formats``).
"""

from __future__ import annotations

import numpy as np

from smtmodel.formats import get_format, numpy_to_bits

KINDS = ("normal", "wide", "cancel", "raw")


def round_to(values: np.ndarray, fmt_name: str) -> np.ndarray:
    """Round float64 values to the format (round to nearest even) and return raw bits."""
    fmt = get_format(fmt_name)
    if fmt.name == "tf32":
        f32 = np.asarray(values, dtype=np.float32)
        b = f32.view(np.uint32).astype(np.uint64)
        lsb = (b >> np.uint64(13)) & np.uint64(1)
        out = (b + np.uint64(0xFFF) + lsb) & np.uint64(0xFFFFE000)
        nan = np.isnan(f32)
        out[nan] = (b[nan] & np.uint64(0xFFFFE000)) | np.uint64(0x400000)     # quiet NaN, sign kept
        return out
    return numpy_to_bits(np.asarray(values, dtype=np.float64), fmt)


def specials(fmt_name: str) -> np.ndarray:
    """Boundary and special encodings of a format (raw bits)."""
    f = get_format(fmt_name)
    sh, sign = f.shift, 1 << (f.width - 1)
    emax_field = f.emax + f.bias
    vals = [0, 1 << sh, ((1 << f.mbits) - 1) << sh, (1 << f.mbits) << sh,
            (emax_field << f.mbits | f.max_mantissa) << sh]
    if f.has_inf:
        vals.append(((1 << f.ebits) - 1) << f.mbits << sh)
    vals += [v | sign for v in vals]
    if f.has_nan:
        vals.append(f.canonical_nan)
    return np.array(sorted(set(vals)), dtype=np.uint64)


def _wide(fmt_name: str, shape, rng) -> np.ndarray:
    f = get_format(fmt_name)
    e = rng.integers(1, f.emax + f.bias + 1, size=shape, dtype=np.int64).astype(np.uint64)
    m = rng.integers(0, 1 << f.mbits, size=shape, dtype=np.int64).astype(np.uint64)
    if f.policy == "fn":  # S.1111.111 is NaN: use the largest finite instead
        top = (e == np.uint64(f.emax + f.bias)) & (m > np.uint64(f.max_mantissa))
        m[top] = np.uint64(f.max_mantissa)
    s = rng.integers(0, 2, size=shape, dtype=np.int64).astype(np.uint64)
    return ((s << np.uint64(f.ebits + f.mbits)) | (e << np.uint64(f.mbits)) | m) << np.uint64(f.shift)


def _raw(fmt_name: str, shape, rng) -> np.ndarray:
    f = get_format(fmt_name)
    bits = rng.integers(0, 1 << (f.width - f.shift), size=shape, dtype=np.uint64) << np.uint64(f.shift)
    sp = specials(fmt_name)
    pick = rng.random(shape) < 0.25
    bits[pick] = sp[rng.integers(0, len(sp), size=int(pick.sum()))]
    return bits


def _cancel(in_fmt: str, c_fmt: str, k: int, n: int, rng):
    f = get_format(in_fmt)
    h = k // 2
    x = round_to(rng.standard_normal((n, h)), in_fmt)
    y = round_to(rng.standard_normal((n, h)), in_fmt)
    sign = np.uint64(1 << (f.width - 1))
    a = np.concatenate([x, x ^ sign, round_to(rng.standard_normal((n, k - 2 * h)), in_fmt)], axis=1)
    b = np.concatenate([y, y, round_to(rng.standard_normal((n, k - 2 * h)), in_fmt)], axis=1)
    perm = np.argsort(rng.random((n, k)), axis=1)
    a, b = np.take_along_axis(a, perm, 1), np.take_along_axis(b, perm, 1)
    j = rng.integers(0, k, size=n)
    rows = np.arange(n)
    nonzero = (a[rows, j] & ~sign) != 0
    a[rows[nonzero], j[nonzero]] ^= np.uint64(1 << f.shift)       # one ulp off the cancelling pair
    c = round_to(rng.standard_normal(n) * 2.0 ** -12, c_fmt)
    return a, b, c


def validation_mix(in_fmt: str, c_fmt: str, k: int, n: int, seed: int = 0):
    """``n`` cases of ``k`` products: (a, b, c, kinds) with kinds[i] in :data:`KINDS`."""
    rng = np.random.default_rng(seed)
    kinds = np.array([KINDS[i % len(KINDS)] for i in range(n)])
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


def layout_probe(in_fmt: str, c_fmt: str, out_fmt: str, k: int):
    """Exact cases that any correct run reproduces whatever the arithmetic model: a = e_i,
    b = 2 e_j, c = 1, so d = 3 when i == j and 1 otherwise, for all i, j < k. A wrong fragment
    layout or chunking shows up as a wrong d. Returns (a, b, c, expected d bits)."""
    one, two = round_to(np.array([1.0]), in_fmt)[0], round_to(np.array([2.0]), in_fmt)[0]
    i, j = np.divmod(np.arange(k * k), k)
    a = np.zeros((k * k, k), dtype=np.uint64)
    b = np.zeros((k * k, k), dtype=np.uint64)
    a[np.arange(k * k), i] = one
    b[np.arange(k * k), j] = two
    c = np.full(k * k, round_to(np.array([1.0]), c_fmt)[0], dtype=np.uint64)
    d = round_to(np.where(i == j, 3.0, 1.0), out_fmt)
    return a, b, c, d
