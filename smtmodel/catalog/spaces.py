"""Hypothesis spaces as data: families of models and the ranges of the parameters the seeds vary.

A point of a space is a catalog model plus parameter overrides (``hopper-fp16-fp32:op=tfdpa,L=8,
F=24,...``): the family names the op and the fields it fixes, the ranges name the override keys of
:data:`smtmodel.model.OVERRIDES` and their values. A :class:`Space` is built for a format pair
(``in_fmt -> out_fmt``): by default the union of every family that takes those formats, NVIDIA
and AMD alike (a user with an unknown unit does not know its family). Points are enumerated
lazily (:meth:`Space.points`), never materialised; :meth:`Space.sample` draws a few for design.

Where the ranges come from:

- T-FDPA (seed 000 Algorithm 7, Table 4): L (products per block), F (fraction bits kept below
  the largest exponent), ρ (RZ/RNE in the output format or E8M13), carry bits (seed 002 §4.3,
  seed 001 §IV-A5), product normalisation (seed 002 Algorithm 1), zero products in the
  alignment (seed 000's simulator vs ignored), input subnormal flushing (seed 002 §4.4), where c
  enters (in the alignment or late with RNE, seeds 003/004 §III), NaN encoding (seed 000 §4.2);
  for TF32, how a container with non-zero low 13 bits is read (ignored, rounded RNE/RNA,
  rejected as NaN: the seeds do not say, so identify decides it). Zero rules (docs/zeros.md):
  ``zero_align`` (zero products and c together) takes seed000, ignore and every fixed e_zero a
  catalog model of the pair names (MMA-Sim 2.1.1's constants).
- FP8 through fp16 halves (seed 001 §IV-A5/A6): halves {k mod 4 in 0,1} / {2,3}, L, F, ρ.
- E-FDPA (seed 000 Algorithm 6, Table 6, CDNA1): L.
- FTZ-Add/FTZ-Mul (seed 000 Algorithm 2, CDNA2): pair group size P (= L); the same order with
  IEEE fp32 operations and no flushing (CDNA1's rival reading as pairwise fp32 additions).
- TR-FDPA / GTR-FDPA (seed 000 Algorithms 10/11, CDNA3): L, F, F2 (the even/odd grouping is
  GTR's op); zero products at -126 + Exp(other) or left out, c = 0 left out or at -126. GTR-FDPA
  also takes the OCP FP8, FP6 and FP4 formats, unscaled or with E8M0 scales per 32: the CDNA4
  (gfx950) hypotheses of :mod:`smtmodel.catalog.cdna4`, whose NVIDIA-like rivals lie in the
  T-FDPA and ST-FDPA families of the same pairs.
- FMA chain (seed 000 Algorithm 4): same-format pairs only.

``--space NAME`` narrows to one family (or a comma list); ``--space open`` (or ``open:NAME,...``)
takes the open ranges (:data:`_OPEN`: what hardware could plausibly do, 10^5-10^6 points per
pair); ``--space file.json`` gives a space as data: ``{"families": [{"family": NAME, "params":
{KEY: [values]}}...]}`` (``"open": true`` starts from the open ranges) (a listed family's
ranges replaced key by key; a family that does not take the pair is left out, so one file serves
several pairs) or ``{"points": ["ID:overrides", ...]}``. A space with no point is an error.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from ..formats import get_format, operand_formats, operand_key
from ..model import FLUSH, Model, ModelError

FP8 = ("fp8e4m3", "fp8e5m2")
FNUZ = ("fp8e4m3fnuz", "fp8e5m2fnuz")
LOWP = FP8 + ("fp6e2m3", "fp6e3m2", "fp4e2m1")


class SpaceError(ModelError):
    """An unknown family, an empty space, a malformed space file."""


@dataclass(frozen=True)
class Family:
    """A family of hypotheses: an op, the fields it fixes, and the ranges of its parameters.

    ``takes(in_fmt, out_fmt)`` says whether the family applies to a format pair; ``ranges(in,
    out)`` gives the parameter ranges there (override key -> tuple of values); ``tie`` copies one
    parameter's value to another (CDNA2's L = P)."""

    name: str
    vendor: str
    op: str
    source: str
    ins: tuple
    outs: tuple
    fixed: tuple = ()                 # ((key, value), ...) always set
    tie: tuple = ()                   # ((dst, src), ...)
    same_format: bool = False
    scales: tuple = ()                # block-scaled: the (scale_fmt, scale_block) it takes; () unscaled

    def takes(self, in_fmt: str, out_fmt: str, scale: tuple | None = None) -> bool:
        """Whether the family applies to the pair, unscaled (``scale`` None) or with block scales
        ``(scale_fmt, scale_block)``."""
        if (tuple(scale) if scale else None) not in (self.scales or (None,)):
            return False
        if self.same_format:
            return in_fmt == out_fmt and in_fmt in self.ins
        return in_fmt in self.ins and out_fmt in self.outs

    def ranges(self, in_fmt: str, out_fmt: str, open_: bool = False) -> dict:
        """The seeds' values and near neighbours, or with ``open_`` what hardware could
        plausibly do (:data:`OPEN`)."""
        return (_OPEN if open_ else _RANGES)[self.name](in_fmt, out_fmt)


def _rho(out: str) -> tuple:
    return ("RZ-FP32", "RNE-FP32") if out == "fp32" else ("RNE-FP16", "RZ-FP16")


TF32_LOW = ("ignore", "RNE", "RNA", "nan")    # smtmodel.model.TF32_LOW: the seeds do not say


def _zero_readings(op: str, fin: str, fout: str, names=("seed000", "ignore")) -> tuple:
    """Zero rules in the space (docs/zeros.md): the named readings and every fixed e_zero a
    catalog model of this op and format pair names (MMA-Sim 2.1.1's constants)."""
    from . import all_models
    from ..model import ZERO_RULES
    fixed = {getattr(m, r) for m in all_models() if m.op == op and (m.in_fmt, m.out_fmt) == (fin, fout)
             for r in ZERO_RULES if isinstance(getattr(m, r), int)}
    return tuple(names) + tuple(sorted(fixed - set(names), reverse=True))


def _tfdpa(fin, fout):
    fp8 = fin in LOWP
    rho = _rho(fout) + (("RZ-E8M13",) if fp8 and fout == "fp32" else ())
    L = (16, 32) if fp8 else (4, 8) if fin == "tf32" else (4, 8, 16, 32)
    r = {"L": L, "F": (13, 24, 25) if fp8 else (23, 24, 25),
         "rho": rho, "carry": (None, 2, 3, 4, 5), "normalize": (False, True),
         "zero_align": _zero_readings("tfdpa", fin, fout), "flush_inputs": (None, "signed"),
         "c_entry": ("align", "end"), "specials": ("nvidia", "ieee")}
    if fin == "tf32":
        r["tf32_low"] = TF32_LOW
    return r


def _trfdpa(fin, fout):
    r = {"L": (4, 8, 16), "F": (23, 24, 25), "F2": (30, 31, 32), **_tr_zeros()}
    if fin == "tf32":
        r["tf32_low"] = TF32_LOW
    return r


def _tr_zeros():
    """CDNA3 zero readings: products at -126 + Exp(other) or left out; c = 0 left out or at -126."""
    return {"zero_prod": ("seed000", "ignore"), "zero_c": ("ignore", -126)}


def _fp8_halves(fin, fout):
    return {"L": (8, 16), "F": (24, 25), "rho": _rho(fout)[:1], "carry": (None, 3),
            "zero_align": _zero_readings("fp8_via_fp16", fin, fout)}


def _stfdpa(fin, fout):
    """ST-FDPA (seed 000 Algorithm 8): T-FDPA whose products carry the block's scale exponents
    (sa.exp + sb.exp) before alignment; a NaN scale (E8M0 0xFF) makes the output NaN."""
    return {"L": (16, 32), "F": (24, 25, 26), "rho": ("RZ-FP32", "RNE-FP32"), "carry": (None, 2, 3),
            "zero_align": _zero_readings("stfdpa", fin, fout)}


def _gst_zeros(fin, fout) -> tuple:
    """GST-FDPA's zero readings, one rule for c = +-0, all-zero groups and zero scales
    (``zero_c``, copied to ``zero_group`` and ``zero_scale``, docs/zeros.md): seed 000's and every fixed e_zero of a catalog GST model."""
    return _zero_readings("gstfdpa", fin, fout, names=("seed000",))


def _gstfdpa(fin, fout):
    """GST-FDPA (seed 000 Algorithm 9): exact group sums of G products times the groups' scales,
    aligned at the largest scale exponent sum (F bits kept), rounded by ρ."""
    return {"L": (32, 64), "G": (8, 16), "F": (25, 34, 35, 36, 37), "rho": ("RZ-FP32", "RNE-FP32"),
            "zero_c": _gst_zeros(fin, fout)}


def _open_stfdpa(fin, fout):
    return {"L": (4, 8, 16, 32), "F": tuple(range(get_format(fin).precision, MAX_F + 1)),
            "rho": _open_rho(fout)[:6], "carry": (None,) + tuple(range(7)), "normalize": (False, True),
            "zero_align": _zero_readings("stfdpa", fin, fout)}


def _open_gstfdpa(fin, fout):
    return {"L": (16, 32, 64), "G": (2, 4, 8, 16), "F": tuple(range(20, MAX_F + 1)), "rho": _open_rho(fout)[:6],
            "zero_c": _gst_zeros(fin, fout) + ("ignore",)}


SCALES = {"mx": ("e8m0", 32), "nvfp4": ("ue4m3", 16)}
"""The block scales of a scaled space (``--scale mx|nvfp4`` or ``FMT/BLOCK``): MX's E8M0 per 32
(OCP MX v1.0), NVFP4's UE4M3 per 16 (seed 000 Table 5)."""


def parse_scale(text) -> tuple | None:
    """``mx``, ``nvfp4``, ``e8m0/32``, a (fmt, block) pair, or None (unscaled)."""
    if text is None or isinstance(text, tuple):
        return text
    if text in SCALES:
        return SCALES[text]
    fmt, _, blk = str(text).partition("/")
    try:
        out = (get_format(fmt).name, int(blk))
    except (ModelError, ValueError, KeyError):
        out = None
    if out not in SCALES.values():
        raise SpaceError(f"unknown block scale {text!r}: mx (e8m0/32) or nvfp4 (ue4m3/16)")
    return out


POW2 = (1, 2, 4, 8, 16, 32, 64)
"""Block sizes a kernel can take (products per block, pair group sizes)."""

MAX_F = 40
"""The widest alignment (fraction bits kept) an open space ranges to; a space file may not go
beyond it (the accumulator then stays within 64 bits)."""

MODES6 = ("RZ", "RNE", "RD", "RU", "RNA", "RTO")
"""Every rounding of the core (smtmodel.fp.rounding.MODES)."""


def _open_rho(fout: str) -> tuple:
    """Every rounding of the core into the output format, and into an intermediate E8M13
    (stored as fp32, seed 000's RZ-E8M13 generalised) where the output is fp32."""
    tgt = fout.upper()
    out = tuple(f"{m}-{tgt}" for m in MODES6)
    return out + (tuple(f"{m}-E8M13" for m in MODES6) if fout == "fp32" else ())


def _open_F(fin: str) -> tuple:
    return tuple(range(get_format(fin).precision, MAX_F + 1))


def _open_tfdpa(fin, fout):
    r = {"L": POW2, "F": _open_F(fin), "rho": _open_rho(fout), "carry": (None,) + tuple(range(7)),
         "normalize": (False, True), "zero_align": _zero_readings("tfdpa", fin, fout),
         "flush_inputs": (None, "signed", "positive"), "c_entry": ("align", "end"), "specials": ("nvidia", "ieee")}
    if fin == "tf32":
        r["tf32_low"] = TF32_LOW
    return r


def _open_trfdpa(fin, fout, L=(4, 8, 16, 32)):
    r = {"L": L, "F": tuple(range(21, 29)), "F2": tuple(range(28, MAX_F + 1)), **_tr_zeros()}
    if fin == "tf32":
        r["tf32_low"] = TF32_LOW
    return r


_OPEN = {
    "t-fdpa": _open_tfdpa,
    "fp8-halves": lambda fin, fout: {"L": (4, 8, 16, 32), "F": _open_F("fp16"), "rho": _open_rho(fout)[:6],
                                     "carry": (None,) + tuple(range(7)),
                                     "zero_align": _zero_readings("fp8_via_fp16", fin, fout)},
    "e-fdpa": lambda fin, fout: {"L": POW2},
    "ftz-addmul": lambda fin, fout: {"P": POW2[1:]},
    "pairwise-fp32": lambda fin, fout: {"P": POW2[1:]},
    "tr-fdpa": _open_trfdpa,
    "gtr-fdpa": lambda fin, fout: _open_trfdpa(fin, fout, (16, 32)),
    "fma": lambda fin, fout: {"specials": ("ieee", "nvidia", "propagate")},
    "fma-chain": lambda fin, fout: {"flush_inputs": FLUSH, "flush_outputs": FLUSH},   # none, signed, positive
    "st-fdpa": _open_stfdpa,
    "gst-fdpa": _open_gstfdpa,
}
"""Open ranges: L any power of two 1..64, F from the input's precision to MAX_F,
every rounding of the core in the output format or E8M13, carry 0..6 or unbounded, every
normalisation, zero, flushing, c entry and NaN reading; CDNA pair sizes 2..64; TR/GTR-FDPA's F
21..28 and F2 28..40. ``--space open`` (or ``open:FAMILY,...``)."""

_RANGES = {
    "t-fdpa": _tfdpa,
    "fp8-halves": _fp8_halves,
    "e-fdpa": lambda fin, fout: {"L": (2, 4, 8, 16)},
    "ftz-addmul": lambda fin, fout: {"P": (2, 4, 8)},
    "pairwise-fp32": lambda fin, fout: {"P": (2, 4, 8)},
    "tr-fdpa": _trfdpa,
    "gtr-fdpa": lambda fin, fout: {"L": (16, 32), "F": (23, 24, 25), "F2": (30, 31, 32), **_tr_zeros()},
    "fma": lambda fin, fout: {"specials": ("ieee", "nvidia", "propagate")},
    "fma-chain": lambda fin, fout: {"flush_inputs": (None, "positive"), "flush_outputs": (None, "signed")},
    "st-fdpa": _stfdpa,
    "gst-fdpa": _gstfdpa,
}

FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("t-fdpa", "nvidia", "tfdpa", "seed 000 Algorithm 7, Table 4; seed 002 §4.3-4.4; seed 001 §IV-A5",
           ("fp16", "bf16", "tf32") + LOWP, ("fp32", "fp16")),
    Family("fp8-halves", "nvidia", "fp8_via_fp16", "seed 001 §IV-A5/A6 (FP8 mma.sync on Hopper/Blackwell)",
           FP8, ("fp32", "fp16")),
    Family("e-fdpa", "amd", "efdpa", "seed 000 Algorithm 6, Table 6 (CDNA1)", ("fp16", "bf16"), ("fp32",),
           fixed=(("specials", "ieee"),)),
    Family("ftz-addmul", "amd", "ftz_addmul", "seed 000 Algorithm 2, Table 6 (CDNA2)", ("fp16", "bf16"), ("fp32",),
           fixed=(("specials", "ieee"),), tie=(("L", "P"),)),
    Family("pairwise-fp32", "amd", "addmul", "rival of seed 000 Table 6 (CDNA1 as pairwise fp32 additions)",
           ("fp16", "bf16"), ("fp32",), fixed=(("specials", "ieee"),), tie=(("L", "P"),)),
    Family("tr-fdpa", "amd", "trfdpa", "seed 000 Algorithm 10, Tables 6-7 (CDNA3)", ("fp16", "bf16", "tf32"),
           ("fp32",), fixed=(("specials", "ieee"), ("rho", "RNE-FP32"))),
    Family("gtr-fdpa", "amd", "gtrfdpa", "seed 000 Algorithm 11, Tables 6-7 (CDNA3 FP8); the CDNA4 hypotheses "
           "(OCP FP8, FP6, FP4; E8M0 scales per 32 added as ST-FDPA adds them)", FNUZ + LOWP, ("fp32",),
           fixed=(("specials", "ieee"), ("rho", "RNE-FP32")), scales=(None, SCALES["mx"])),
    Family("fma", "any", "fma", "seed 000 Algorithm 4, Tables 3 and 6", ("fp16", "fp32", "fp64"), (),
           fixed=(("L", 1),), same_format=True),
    Family("fma-chain", "amd", "fma", "seed 003 Table III (MI250X fp16/bf16: FMA unit width 1, RTN-TE)",
           ("fp16", "bf16"), ("fp32",), fixed=(("L", 1), ("specials", "ieee"))),
    Family("st-fdpa", "nvidia", "stfdpa", "seed 000 Algorithm 8, Table 4 (MXFP8/6/4: one E8M0 scale per block)",
           LOWP, ("fp32",), scales=(SCALES["mx"],)),
    Family("gst-fdpa", "nvidia", "gstfdpa", "seed 000 Algorithm 9, Table 5 (MXFP4 / NVFP4 group scales)",
           ("fp4e2m1",), ("fp32",), tie=(("zero_group", "zero_c"), ("zero_scale", "zero_c")),
           scales=(SCALES["mx"], SCALES["nvfp4"])),
)}


def _text(v) -> str:
    return "none" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


def base_model(in_fmt: str, out_fmt: str, scale=None) -> Model:
    """The catalog model every point of the pair's space overrides: the first catalog entry
    (not a rival) with these formats and block scales (``scale``: (scale_fmt, scale_block), None
    for none); ``in_fmt`` may be a mixed operand key (``fp8e4m3xfp8e5m2``,
    :func:`smtmodel.formats.operand_formats`)."""
    from . import all_models
    fi, fo = operand_key(*operand_formats(in_fmt)), get_format(out_fmt).name
    scale = parse_scale(scale)
    for m in all_models():
        if m.kind == "catalog" and ((m.scale_fmt, m.scale_block) if m.scale_fmt else None) == scale \
                and m.in_key == fi and get_format(m.out_fmt).name == fo:
            return m
    what = f" with {scale[0]} scales per {scale[1]}" if scale else ""
    raise SpaceError(f"no catalog model takes {fi} -> {fo}{what}; a space needs one as its base")


@dataclass
class Part:
    """One family's share of a space: its ranges for the format pair (after narrowing)."""

    family: Family
    ranges: dict

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.ranges.values())

    def overrides(self, i: int) -> str:
        """The override text of point ``i`` (mixed-radix over the ranges, keys in order)."""
        kv = {"op": self.family.op}
        kv.update(dict(self.family.fixed))
        for key, vals in self.ranges.items():
            kv[key] = vals[i % len(vals)]
            i //= len(vals)
        for dst, src in self.family.tie:
            kv[dst] = kv[src]
        return ",".join(f"{k}={_text(v)}" for k, v in kv.items())


@dataclass
class Space:
    """The hypotheses for one format pair: a base catalog model and the parts' ranges."""

    in_fmt: str
    out_fmt: str
    base: Model
    parts: list = field(default_factory=list)
    extra: list = field(default_factory=list)     # explicit points (catalog ids with overrides)

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts) + len(self.extra)

    def spec(self, i: int) -> str:
        """The ``ID:overrides`` of point ``i`` (0 <= i < size)."""
        for p in self.parts:
            if i < p.size:
                return f"{self.base.id}:{p.overrides(i)}"
            i -= p.size
        return self.extra[i]

    def points(self, start: int = 0) -> Iterator[tuple[int, str]]:
        """(index, spec) of every point, lazily."""
        for i in range(start, self.size):
            yield i, self.spec(i)

    def sample(self, n: int, seed: int = 0, include: tuple = ()) -> list[int]:
        """Up to ``n`` distinct point indices drawn uniformly, plus ``include``."""
        g = np.random.default_rng(seed)
        picked = list(dict.fromkeys(include))
        if self.size <= n:
            return list(dict.fromkeys(picked + list(range(self.size))))
        seen = set(picked)
        want = min(self.size, n + len(picked))        # never more than the space holds (no endless draw)
        while len(picked) < want:
            i = int(g.integers(0, self.size))
            if i not in seen:
                seen.add(i)
                picked.append(i)
        return picked

    def locate(self, m: Model) -> int | None:
        """The index of the point whose op, fixed fields and ranged fields equal model ``m``'s
        (None when ``m`` lies outside the space)."""
        offset = 0
        for p in self.parts:
            fam = p.family
            if m.op == fam.op and all(getattr(m, k) == v for k, v in fam.fixed) \
                    and all(getattr(m, dst) == getattr(m, src) for dst, src in fam.tie):
                i, mult = 0, 1
                for key, vals in p.ranges.items():
                    v = getattr(m, key)
                    if v not in vals:
                        break
                    i += vals.index(v) * mult
                    mult *= len(vals)
                else:
                    return offset + i
            offset += p.size
        for j, spec in enumerate(self.extra):
            if spec == m.id:
                return offset + j
        return None

    def describe(self) -> str:
        fams = ", ".join(f"{p.family.name} ({p.size})" for p in self.parts)
        more = f" + {len(self.extra)} listed points" if self.extra else ""
        sc = f" ({self.base.scale_fmt} scales per {self.base.scale_block})" if self.base.scale_fmt else ""
        return f"{self.in_fmt} -> {self.out_fmt}{sc}: {self.size} hypotheses over {fams}{more}"

    def to_dict(self) -> dict:
        sc = {"scale_fmt": self.base.scale_fmt, "scale_block": self.base.scale_block} if self.base.scale_fmt else {}
        return {"in_fmt": self.in_fmt, "out_fmt": self.out_fmt, "base": self.base.id, **sc,
                "families": [{"family": p.family.name, "params": {k: list(v) for k, v in p.ranges.items()}}
                             for p in self.parts], "points": list(self.extra)}


def families_for(in_fmt: str, out_fmt: str, scale=None) -> list[Family]:
    """The families that take the pair (with block scales ``scale``, or unscaled); for mixed
    operands (``AxB``), those that take both A's and B's format and whose op reads each operand
    in its own format."""
    (fa, fb), fo = (f.name for f in operand_formats(in_fmt)), get_format(out_fmt).name
    scale = parse_scale(scale)
    if fa == fb:
        return [f for f in FAMILIES.values() if f.takes(fa, fo, scale)]
    from ..model import _OPS
    return [f for f in FAMILIES.values()
            if f.takes(fa, fo, scale) and f.takes(fb, fo, scale) and _OPS[f.op].mixed]


def _ranges(fam: Family, in_key: str, out_fmt: str, open_: bool = False) -> dict:
    """A family's ranges for the pair (A's format's ranges for mixed operands), the open ones
    with ``open_``."""
    return fam.ranges(operand_formats(in_key)[0].name, out_fmt, open_)


def build_space(in_fmt: str, out_fmt: str, narrow: "str | dict | None" = None, scale=None) -> Space:
    """The space of a format pair: every family that takes it, or ``narrow`` -- a family name, a
    comma list of names, a path to a JSON space file, or that file's dict. ``scale`` (``mx``,
    ``nvfp4``, ``(scale_fmt, scale_block)``): a block-scaled unit's space -- the format pair does
    not say whether a unit is scaled, the device does (its ``scale_fmt``/``scale_block``)."""
    fi, fo = operand_key(*operand_formats(in_fmt)), get_format(out_fmt).name
    scale = parse_scale(scale)
    base = base_model(fi, fo, scale)
    fams = families_for(fi, fo, scale)
    spec = narrow
    if isinstance(spec, str) and (spec.endswith(".json") or Path(spec).is_file()):
        try:
            spec = json.loads(Path(spec).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise SpaceError(f"space file {narrow}: {exc}") from None
    space = Space(fi, fo, base)
    open_ = False
    if isinstance(spec, str) and (spec == "open" or spec.startswith("open:")):
        open_, spec = True, spec[5:] or None
    if spec is None:
        space.parts = [Part(f, _ranges(f, fi, fo, open_)) for f in fams]
    elif isinstance(spec, str):
        names = [s.strip() for s in spec.split(",") if s.strip()]
        for n in names:
            if n not in FAMILIES:
                raise SpaceError(f"unknown family {n!r}; one of {', '.join(FAMILIES)}")
            if FAMILIES[n] not in fams:
                raise SpaceError(f"family {n} does not take {fi} -> {fo}"
                                 + (f" with {scale[0]} scales per {scale[1]}" if scale else " unscaled"))
        space.parts = [Part(FAMILIES[n], _ranges(FAMILIES[n], fi, fo, open_)) for n in names]
    elif isinstance(spec, dict):
        _from_dict(space, spec, fams, str(narrow if isinstance(narrow, str) else "space"))
    else:
        raise SpaceError(f"bad space {narrow!r}")
    if space.size == 0:
        raise SpaceError(f"the space for {fi} -> {fo} is empty")
    return space


def _check_range(where: str, fam: str, key: str, vals: list, in_fmt: str) -> None:
    """A value no kernel can take is an error naming the range that can."""
    for v in vals:
        if key in ("L", "P", "G") and v not in POW2:
            raise SpaceError(f"{where}: family {fam}: {key}={v!r}: no kernel takes it; {key} is a power of two "
                             f"{POW2[0]}..{POW2[-1]}")
        if key in ("F", "F2") and not (isinstance(v, int) and 1 <= v <= MAX_F):
            raise SpaceError(f"{where}: family {fam}: {key}={v!r} is beyond the accumulator; {key} is an integer "
                             f"1..{MAX_F} ({in_fmt} has {get_format(in_fmt).precision} bits of precision)")
        if key == "carry" and not (v is None or isinstance(v, int) and 0 <= v <= 16):
            raise SpaceError(f"{where}: family {fam}: carry={v!r}: carry is none or an integer 0..16")


def _from_dict(space: Space, d: dict, fams: list, where: str) -> None:
    if not isinstance(d, dict) or not ({"families", "points"} & set(d)) or set(d) - {"families", "points", "open"}:
        raise SpaceError(f"{where}: a space is an object with 'families' and/or 'points'")
    from . import get_model
    for item in d.get("families", []):
        name = item.get("family") if isinstance(item, dict) else None
        if name not in FAMILIES:
            raise SpaceError(f"{where}: unknown family {name!r}; one of {', '.join(FAMILIES)}")
        fam = FAMILIES[name]
        if fam not in fams:          # a space file may serve several pairs: the family sits this one out
            continue
        ranges = dict(_ranges(fam, space.in_fmt, space.out_fmt, bool(d.get("open"))))
        for key, vals in (item.get("params") or {}).items():
            if key not in ranges:
                raise SpaceError(f"{where}: family {name} has no parameter {key!r} ({', '.join(ranges)})")
            if not isinstance(vals, list):
                vals = [vals]
            _check_range(where, name, key, vals, space.in_fmt)
            if key == "rho":         # an output conversion stores the pair's output format (Table 2)
                from ..ops.fdpa import RHO
                vals = [v for v in vals if v not in RHO or get_format(RHO[v].container).name == space.out_fmt]
            ranges[key] = tuple(vals)
        space.parts.append(Part(fam, ranges))
    for p in d.get("points", []):
        m = get_model(p)      # raises ModelError on a bad id or override
        if (m.in_key, get_format(m.out_fmt).name) != (space.in_fmt, space.out_fmt):
            raise SpaceError(f"{where}: point {p} is not {space.in_fmt} -> {space.out_fmt}")
        space.extra.append(p)
    # every listed value must make a valid model: check the corners of each part
    for part in space.parts:
        for i in itertools.islice(range(part.size), 0, part.size, max(1, part.size // 7)):
            try:
                Model.with_overrides(space.base, part.overrides(i))
            except ModelError as exc:
                raise SpaceError(f"{where}: {exc}") from None


__all__ = ["FAMILIES", "SCALES", "Family", "Part", "Space", "SpaceError", "base_model", "build_space", "families_for",
           "parse_scale"]
