"""Input constraints of a distinguishing query and the simple-mode readability levels, written as
core predicates (so a solver reads them symbolically and the twin concretely, one lane per case).
Every format rule comes from :mod:`smtmodel.fp.classify`."""

from __future__ import annotations

from dataclasses import dataclass

from smtmodel.bv.core import Bool
from smtmodel.formats import Format
from smtmodel.fp.classify import (exponent_in, is_special, is_subnormal, is_well_formed, low_mantissa_zero, one_bits,
                                  sign_of)

from .errors import QueryError


@dataclass(frozen=True)
class Constraints:
    """Restrictions on the inputs of a query (all default to "anything the format encodes").

    finite         no infinities or NaNs among a, b and c.
    no_subnormals  a, b and c are normal numbers or zeros.
    exp_range      (lo, hi): every non-zero a_i, b_i is finite with unbiased exponent in [lo, hi]
                   (subnormals count as the format's emin).
    c_exp_range    the same for c.
    fixed          (("a0", 0x3c00), ("c", 0), ...): entries fixed to raw bit patterns.
    a_signs, b_signs  one character per entry ('+' sign bit 0, '-' sign bit 1, '?' free); a
                   single character applies to every entry.
    c_sign         '+', '-' or '?'.
    c_zero         c = +0.
    """

    finite: bool = False
    no_subnormals: bool = False
    exp_range: tuple | None = None
    c_exp_range: tuple | None = None
    fixed: tuple = ()
    a_signs: str | None = None
    b_signs: str | None = None
    c_sign: str | None = None
    c_zero: bool = False

    def describe(self) -> str:
        parts = []
        for f in ("finite", "no_subnormals", "c_zero"):
            if getattr(self, f):
                parts.append(f)
        for f in ("exp_range", "c_exp_range", "a_signs", "b_signs", "c_sign"):
            if getattr(self, f) is not None:
                parts.append(f"{f}={getattr(self, f)}")
        if self.fixed:
            parts.append("fixed=" + ",".join(f"{n}={v:#x}" for n, v in self.fixed))
        return "; ".join(parts) or "none"


def sign_is(x, fmt: Format, ch: str) -> Bool:
    sign = sign_of(x, fmt)
    if ch == "?" or sign is None:
        return x.B.true()
    if ch == "+":
        return ~sign
    if ch == "-":
        return sign
    raise QueryError(f"sign pattern character {ch!r}: use '+', '-' or '?'")


def signs(pattern: str | None, k: int, what: str) -> str | None:
    """A sign pattern expanded to k characters (one character applies to every entry)."""
    if pattern is None:
        return None
    if len(pattern) == 1:
        return pattern * k
    if len(pattern) != k:
        raise QueryError(f"{what}={pattern!r}: give one character or k={k} characters")
    return pattern


def _finite_normal(xs) -> list:
    return [~is_special(x, f) for x, f in xs] + [~is_subnormal(x, f) for x, f in xs]


def constraint_terms(v: dict, fi: Format, fc: Format, k: int, cons: Constraints,
                     fb: Format | None = None) -> list[Bool]:
    """The constraints as core predicates over the inputs ``v`` (names a0.., b0.., c); a in
    ``fi``, b in ``fb`` (default ``fi``: one input format)."""
    fb = fb or fi
    out = []
    ab = [(v[f"a{i}"], fi) for i in range(k)] + [(v[f"b{i}"], fb) for i in range(k)]
    c = v["c"]
    xs = ab + [(c, fc)]
    out += [is_well_formed(x, f) for x, f in xs]
    if cons.finite:
        out += [~is_special(x, f) for x, f in xs]
    if cons.no_subnormals:
        out += [~is_subnormal(x, f) for x, f in xs]
    if cons.exp_range is not None:
        lo, hi = cons.exp_range
        out += [exponent_in(x, f, lo, hi) for x, f in ab]
    if cons.c_exp_range is not None:
        lo, hi = cons.c_exp_range
        out.append(exponent_in(c, fc, lo, hi))
    for name, f, pat in (("a", fi, signs(cons.a_signs, k, "a_signs")), ("b", fb, signs(cons.b_signs, k, "b_signs"))):
        if pat:
            out += [sign_is(v[f"{name}{i}"], f, ch) for i, ch in enumerate(pat)]
    if cons.c_sign:
        out.append(sign_is(c, fc, cons.c_sign))
    if cons.c_zero:
        out.append(c.eq(0))
    for name, bits in cons.fixed:
        if name not in v:
            raise QueryError(f"fixed entry {name!r}: inputs are a0..a{k - 1}, b0..b{k - 1} and c")
        if int(bits) >> v[name].w:
            raise QueryError(f"fixed entry {name}={int(bits):#x} does not fit {v[name].w} bits")
        out.append(v[name].eq(int(bits)))
    return out


SIMPLE_LEVELS = (
    # (name, description) -- the constraints are in level_terms
    ("b=1,a=2^e", "every b_i = 1.0, every a_i a power of two (or zero), c with <= 3 mantissa bits"),
    ("2^e", "every a_i, b_i a power of two (or zero), c with <= 3 mantissa bits"),
    ("3bit", "a_i, b_i with <= 3 leading mantissa bits, c with <= 8, all finite and normal"),
    ("finite", "all inputs finite and normal"),
    ("any", "only the caller's constraints"),
)


def level_terms(level: int, v: dict, fi: Format, fc: Format, k: int, fb: Format | None = None) -> list[Bool]:
    """The readability constraints of simple-mode level ``level`` (an index of SIMPLE_LEVELS);
    a in ``fi``, b in ``fb`` (default ``fi``)."""
    fb = fb or fi
    a = [(v[f"a{i}"], fi) for i in range(k)]
    b = [(v[f"b{i}"], fb) for i in range(k)]
    c = v["c"]
    out = []
    if level <= 3:
        out += _finite_normal(a + b + [(c, fc)])
    if level == 0:
        out += [y.eq(one_bits(f)) for y, f in b] + [low_mantissa_zero(x, f, 0) for x, f in a]
        out.append(low_mantissa_zero(c, fc, 3))
    elif level == 1:
        out += [low_mantissa_zero(x, f, 0) for x, f in a + b] + [low_mantissa_zero(c, fc, 3)]
    elif level == 2:
        out += [low_mantissa_zero(x, f, 3) for x, f in a + b] + [low_mantissa_zero(c, fc, 8)]
    return out
