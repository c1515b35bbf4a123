"""Inputs of the scheme queries: fp32 input ranges as core predicates, scheme setups, random
inputs within a range. Every format rule comes from :mod:`smtmodel.fp.classify`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smtmodel.bv import BV, Bool, all_of
from smtmodel.formats import get_format
from smtmodel.fp.classify import (exponent_in, is_special, is_subnormal, is_zero, low_mantissa_zero,
                                  sign_of)
from smtmodel.sampling import in_exponent_range
from smtmodel.schemes import get_scheme
from smtmodel.schemes.core import Scheme, SchemeError

F32 = "fp32"


# ---- input ranges ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class InputRange:
    """Restrictions on the fp32 inputs (and results) of a query.

    exp_range     (lo, hi): every non-zero a_k, b_k has unbiased exponent in [lo, hi] (seed 002
                  restricts to [-15, 14], O-Y's "type 1" inputs); None: any finite value.
    c_exp_range   the same for c; ``c_zero`` forces c = +0.
    allow_zero    zeros allowed among a, b (and c) besides the exponent range.
    mant_bits     keep only the top ``mant_bits`` of the 23 fp32 fraction bits (e.g. 10: inputs
                  exactly representable with fp16 precision).
    nonneg        all inputs >= 0.
    fixed         (("a0", bits), ...) entries fixed to raw fp32 patterns.
    Always: inputs finite, every scheme's result finite (errors are not defined otherwise).
    """

    exp_range: tuple | None = (-15, 14)
    c_exp_range: tuple | None = (-15, 14)
    c_zero: bool = False
    allow_zero: bool = True
    mant_bits: int | None = None
    nonneg: bool = False
    fixed: tuple = ()

    def __post_init__(self):
        mbits = get_format(F32).mbits
        if self.mant_bits is not None and not 0 <= self.mant_bits <= mbits:
            raise SchemeError(f"mant_bits must be in 0..{mbits}, got {self.mant_bits}")
        for name, r in (("exp_range", self.exp_range), ("c_exp_range", self.c_exp_range)):
            if r is not None and (len(r) != 2 or r[0] > r[1]):
                raise SchemeError(f"{name} must be (lo, hi) with lo <= hi, got {r!r}")

    def describe(self) -> str:
        p = [f"a,b exponents in {list(self.exp_range)}" if self.exp_range else "a,b any finite"]
        p.append("c = +0" if self.c_zero else (f"c exponent in {list(self.c_exp_range)}" if self.c_exp_range
                                                else "c any finite"))
        if self.allow_zero:
            p.append("zeros allowed")
        if self.mant_bits is not None:
            p.append(f"{self.mant_bits} fraction bits")
        if self.nonneg:
            p.append("non-negative")
        if self.fixed:
            p.append("fixed: " + ", ".join(f"{n}=0x{v:08x}" for n, v in self.fixed))
        return "; ".join(p)


def input_ok(x: BV, rng: tuple | None, allow_zero: bool, mant_bits, nonneg) -> Bool:
    """One fp32 input within a range: finite, exponent in [lo, hi] (subnormals only where lo is
    below fp32's emin, as if their exponent were emin - 1), zero as allowed, fraction bits, sign."""
    conds = [~is_special(x, F32)]
    if rng is not None:
        sub = is_subnormal(x, F32)
        inr = exponent_in(x, F32, *rng) & ~sub
        if rng[0] < get_format(F32).emin:
            inr = inr | sub
        conds.append(inr if allow_zero else inr & ~is_zero(x, F32))
    elif not allow_zero:
        conds.append(~is_zero(x, F32))
    if mant_bits is not None:
        conds.append(low_mantissa_zero(x, F32, mant_bits))
    if nonneg:
        conds.append(~sign_of(x, F32))
    return all_of(conds)


def range_terms(v: dict, k: int, r: InputRange) -> list[Bool]:
    out = []
    for n in [f"a{i}" for i in range(k)] + [f"b{i}" for i in range(k)]:
        out.append(input_ok(v[n], r.exp_range, r.allow_zero, r.mant_bits, r.nonneg))
    if r.c_zero:
        out.append(v["c"].eq(0))
    else:
        out.append(input_ok(v["c"], r.c_exp_range, r.allow_zero, r.mant_bits, r.nonneg))
    for n, bits in r.fixed:
        out.append(v[n].eq(int(bits)))
    return out


@dataclass
class Setup:
    name: str
    scheme: Scheme
    model: str | None

    @property
    def label(self) -> str:
        return f"{self.name}@{self.model}" if self.model else self.name


def setup(spec, model=None) -> Setup:
    s = get_scheme(spec)
    m = None if s.fp32 else (model or s.model)
    if m is not None:
        s.resolve_model(m)
    return Setup(s.name, s, m)


def random_inputs(k: int, rng: InputRange, n: int, seed: int = 0) -> dict:
    """``n`` random fp32 input sets inside the range (structured: exponents uniform in the range,
    a fifth of the entries zero where allowed, fraction bits random or sparse)."""
    g = np.random.default_rng(seed)

    def draw(r, size):
        return in_exponent_range(F32, size, g, r, rng.mant_bits, rng.nonneg, rng.allow_zero)

    v = {f"a{i}": draw(rng.exp_range, n) for i in range(k)}
    v.update({f"b{i}": draw(rng.exp_range, n) for i in range(k)})
    v["c"] = np.zeros(n, np.uint64) if rng.c_zero else draw(rng.c_exp_range, n)
    for name, bits in rng.fixed:
        v[name] = np.full(n, int(bits), np.uint64)
    return v
