"""The copies of a unit a property compares: their input variables, each copy's inputs
(:class:`Copy`), and the statements every property makes of a copy (well-formed and finite
inputs, the exact summands a_i*b_i). :mod:`.defs` states the properties on them and
:mod:`.reductions` the premise of a proof by reduction."""

from __future__ import annotations

from dataclasses import dataclass

from smtmodel.bv import BV, Bool
from smtmodel.formats import get_format
from smtmodel.fp import decode, mul_exact
from smtmodel.fp.classify import is_special, is_well_formed
from smtmodel.model import Model

from .predicates import product


@dataclass
class Copy:
    """The inputs of one copy of the unit: a, b (lists of k patterns), c, the block scales."""

    label: str
    a: list
    b: list
    c: BV
    scales: tuple | None = None

    def build(self, m: Model) -> BV:
        return m.build(self.a, self.b, self.c, *(self.scales or (None, None)))


def variable_names(m: Model, k: int, suffix: str = "", scales: bool = True) -> dict:
    """name -> width of one copy's inputs: a0..a{k-1}, b0..b{k-1}, c (and the block scales sa, sb),
    each name followed by ``suffix``."""
    (wa, wb), wc = m.operand_widths, get_format(m.c_fmt).width
    out = {f"a{i}{suffix}": wa for i in range(k)} | {f"b{i}{suffix}": wb for i in range(k)} | {f"c{suffix}": wc}
    if m.scale_fmt and scales:
        ws, n = get_format(m.scale_fmt).width, k // m.scale_block
        out |= {f"sa{i}{suffix}": ws for i in range(n)} | {f"sb{i}{suffix}": ws for i in range(n)}
    return out


def copy_of(v: dict, m: Model, k: int, label: str, suffix: str = "", scale_suffix: str | None = None) -> Copy:
    """The copy whose inputs are the variables ``v`` named with ``suffix`` (its scales with
    ``scale_suffix``, default the same)."""
    ss = suffix if scale_suffix is None else scale_suffix
    scales = None
    if m.scale_fmt:
        n = k // m.scale_block
        scales = ([v[f"sa{i}{ss}"] for i in range(n)], [v[f"sb{i}{ss}"] for i in range(n)])
    return Copy(label, [v[f"a{i}{suffix}"] for i in range(k)], [v[f"b{i}{suffix}"] for i in range(k)],
                v[f"c{suffix}"], scales)


def well_formed(m: Model, cp: Copy) -> list[Bool]:
    """Every input of the copy is a pattern of its format."""
    fa, fb = m.operand_fmts
    out = [is_well_formed(x, fa) for x in cp.a] + [is_well_formed(y, fb) for y in cp.b]
    return out + [is_well_formed(cp.c, m.c_fmt)]


def finite_inputs(m: Model, cp: Copy) -> list[Bool]:
    """No input of the copy (a, b, c and the scales) is an infinity or a NaN."""
    fa, fb = m.operand_fmts
    xs = [(x, fa) for x in cp.a] + [(y, fb) for y in cp.b] + [(cp.c, m.c_fmt)]
    return [~is_special(x, f) for x, f in xs] + finite_scales(m, cp)


def finite_scales(m: Model, cp: Copy) -> list[Bool]:
    if not cp.scales:
        return []
    return [~is_special(s, m.scale_fmt) for s in cp.scales[0] + cp.scales[1]]


def summands(m: Model, cp: Copy) -> list:
    """The exact summands a_i b_i (times the block's scales) of a copy, as its formats read them."""
    fa, fb = m.operand_fmts
    out = []
    for i, (x, y) in enumerate(zip(cp.a, cp.b)):
        p = product(x, y, fa, fb)
        if cp.scales:
            j = i // m.scale_block
            p = mul_exact(mul_exact(p, decode(cp.scales[0][j], m.scale_fmt)), decode(cp.scales[1][j], m.scale_fmt))
        out.append(p)
    return out
