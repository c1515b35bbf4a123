"""A model: one named hypothesis of how an instruction computes d = c + sum a_k b_k.

A :class:`Model` is data (the parameters of seed 000's tables); :meth:`Model.build` composes the
elementary operations in the semantic core, so the same model is evaluated on NumPy batches
(:meth:`Model.evaluate`) and turned into solver terms (:meth:`Model.symbolic`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from typing import Callable

from .bv import BV, NUMPY
from .formats import get_format, is_int_format, operand_key
from .fp import convert, decode, fma
from .fp.classify import is_subnormal, is_zero, one_bits, sign_of
from .fp.exact import fma_propagating, fp_mul, ieee_sum, mul_exact
from .fp.rounding import MODES
from .fp.value import EXP_W, FLUSH_CODES, zero_bits
from .ops.amd import ftz_addmul, tr_fdpa
from .ops.fdpa import IEEE, NVIDIA, RHO, add_late_c, e_fdpa, gst_fdpa, t_fdpa
from .ops.fused import check_zero_rule
from .ops.integer import imma_block
from .runtime import Runtime

CHUNK = 32768
"""Cases evaluated per NumPy batch by :meth:`Model.evaluate`."""

_BACKENDS = ("auto", "native", "numpy")

C_ENTRY = ("align", "end")
"""Where c enters (:attr:`Model.c_entry`)."""

FLUSH = (None, "signed", "positive")
"""Subnormal flushing: none, to a zero of the same sign, or to +0."""

ZERO_RULES = ("zero_prod", "zero_c", "zero_group", "zero_scale")
"""The places a zero can appear in an alignment, one rule each (:attr:`Model.zero_prod`, ...).
Each rule is ``"seed000"`` (the catalog's earlier convention, its first reading of seed 000's
simulator code, which never defines Exp(0): a zero product at -126 + Exp(other), c at -126, an
all-zero group and a zero-scale group at their scale exponent sum with a zero UE4M3 scale at its
minimum exponent -6), ``"ignore"`` (zeros left out of the maximum) or an int e_zero (zeros align
at e_zero, as MMA-Sim 2.1.1 has it per instruction family: nv_ptx/sim.py:24-41, 94, 101, 140,
163; then every nonzero term below e_zero is cut at 2^(e_zero - F)). See docs/zeros.md.
Override shorthands: ``zero_align=R`` sets zero_prod and zero_c (the field this replaced);
``e_zero=R`` sets all four."""

ZERO_ALIASES = {"zero_align": ("zero_prod", "zero_c"), "e_zero": ZERO_RULES}
"""Override keys that set several zero rules at once."""

TF32_LOW = ("ignore", "RNE", "RNA", "nan")
"""How a TF32 input whose 13 low container bits are not zero is read (:attr:`Model.tf32_low`):
the bits ignored (truncation), the fp32 value rounded to TF32 (RNE or RNA), or rejected (read as
NaN). The seeds do not say, so it is a parameter for identify to decide."""

SPECIALS = ("nvidia", "ieee", "propagate")
"""How special results are encoded (:attr:`Model.specials`): NVIDIA's (NaN 0x7FFF..., zero
results +0, RZ overflow to inf; for an FMA chain, op ``fma``, only the NaN: an FFMA rounds zeros
and overflow as IEEE 754 says), IEEE 754's with the canonical NaN (:data:`smtmodel.ops.fdpa.IEEE`),
or, for an FMA chain of one format, IEEE 754's with NaN operands passed on
(:func:`smtmodel.fp.exact.fma_propagating`: per FMA, b's NaN before the accumulator's before
a's, an invalid operation gives the negative default NaN, as the H100's DMMA computes)."""

F_MAX = 1 << (EXP_W - 2)
"""The largest F (and F2) the core evaluates: 16,384 fraction bits. The core's exponent arithmetic
is ``EXP_W`` = 16-bit two's complement; the rounding step computes e_max - F and shifts of up to
F + (e_max - e_min), so F and the exponents of the terms (:data:`FORMAT_EXP_MAX`: products and
scales within +-8,193, a fixed e_zero within +-1,000, an ignored zero's -16,384) must together
stay inside +-32,767. Beyond that the arithmetic wraps around (F = 100,000 gave wrong bits, not
an error), so an F above F_MAX is refused. For the named formats no F above about 4,700 changes a result (fp64 products
span 2^-2148 .. 2^2048, E8M0 scale sums +-254): every term is then kept exactly."""

FORMAT_EXP_MAX = 1 << (EXP_W - 5)
"""The widest exponent range of a format a model reads or writes: its largest finite exponent
and the exponent of its smallest subnormal's last bit (emin - mbits) lie within +-2,048 (fp64:
1,023 and -1,074). Products and scale sums then stay within +-8,193 (see :data:`F_MAX`)."""

CARRY_MAX = 64
"""The largest finite carry (integer bits above the widest term). A sum of at most 2^c terms
never wraps in c carry bits, so a carry c with 2^c >= L + 1 reads exactly as ``none``
(unbounded); 64 is past any block."""

FIELD_RANGES = {
    "op": "an op of smtmodel.model.OPS",
    "in_fmt, a_fmt, b_fmt, c_fmt, out_fmt":
        "a format of smtmodel.formats (integer formats only with op imma, and then c and out int32); "
        "an E8M0-policy format only as scale_fmt; exponents within +-FORMAT_EXP_MAX (2048); "
        "fp8_via_fp16: operands whose every value is an fp16 value",
    "L": "an integer >= 1 (products per fused block), or none (= 1; fp8_via_fp16 needs it)",
    "F": f"an integer 0..{F_MAX} (fraction bits kept below the largest exponent)",
    "F2": f"an integer F..{F_MAX} (fraction bits of the final sum)",
    "carry": f"none (unbounded) or an integer 0..{CARRY_MAX}",
    "rho": f"MODE-FP32, MODE-FP16 or MODE-E8M<n> (1 <= n <= 23), MODE one of {', '.join(MODES)}, "
           "storing out_fmt (trfdpa, gtrfdpa: none = RNE-FP32)",
    "P": "a power of two >= 1 dividing L (pairwise group size)",
    "G": "an integer >= 1 dividing L and scale_block (products per scaled group)",
    "scale_fmt": "an unsigned floating-point format (stfdpa: a power-of-two format, E8M0); none "
                 "for the ops without block scales",
    "scale_block": "an integer >= 1 (products per scale; stfdpa: a multiple of L, a block reads one "
                   "scale); none for the ops without block scales",
    "zero_prod, zero_c, zero_group, zero_scale":
        "seed000, ignore or an integer e_zero in -1000..1000 (smtmodel.ops.fused.ZERO_FIXED_RANGE)",
    "normalize, saturate": "true or false",
    "flush_inputs, flush_outputs": "none, signed or positive",
    "specials": "nvidia or ieee",
    "round_products": f"none or one of {', '.join(MODES)} (not with a_fmt != b_fmt)",
    "c_entry": "align or end",
    "c_rm": f"one of {', '.join(MODES)}",
    "tf32_low": f"one of {', '.join(TF32_LOW)}",
    "imma": "op imma reads L and saturate: round_products, flush_inputs, flush_outputs and "
            "c_entry=end are refused",
}
"""What each field of a :class:`Model` may be: the ranges :meth:`Model.validate` checks at
construction (every catalog entry, override, identified-model file and hypothesis-space point),
the ones the semantic core evaluates correctly. Which op needs which field is
:attr:`Op.needs`; :func:`field_ranges` prints both."""


def field_ranges() -> str:
    """:data:`FIELD_RANGES` as a text table, with the ops that need each field (:attr:`Op.needs`)."""
    w = max(map(len, FIELD_RANGES))
    rows = []
    for key, text in FIELD_RANGES.items():
        need = [name for name, op in _OPS.items() if any(f in op.needs for f in key.split(", "))]
        rows.append(f"{key:<{w}}  {text}" + (f"; needed by {', '.join(need)}" if need else ""))
    return "\n".join(rows)


class ModelError(ValueError):
    """Unknown model id, bad override, or inputs that do not fit the model."""


@dataclass(frozen=True)
class Model:
    """One hypothesis as data. Every field is checked at construction (:meth:`validate`; the
    allowed ranges: :data:`FIELD_RANGES`), so a model out of range never exists."""

    id: str
    op: str
    in_fmt: str
    c_fmt: str
    out_fmt: str
    # A's and B's formats where they differ (PTX mma kind::f8f6f4, FP8 e4m3 x e5m2); None = in_fmt.
    # A mixed model keeps in_fmt = A's format, so readers that know one input format see A's.
    a_fmt: str | None = None
    b_fmt: str | None = None
    L: int | None = None          # products per fused block (L_max of Algorithm 5): >= 1; None = 1
    F: int | None = None          # fraction bits kept below the largest exponent: 0..F_MAX
    F2: int | None = None         # AMD CDNA3: fraction bits of the final rounded sum: F..F_MAX
    rho: str | None = None        # output conversion, a key of ops.fdpa.RHO storing out_fmt
    carry: int | None = None      # integer bits above the widest term: 0..CARRY_MAX; None = unbounded
    normalize: bool = False       # products normalised before alignment (seed 002)
    # Zero rules (where a zero aligns; ZERO_RULES): "seed000" (earlier convention), "ignore" or an int e_zero
    zero_prod: "str | int" = "seed000"    # a zero product a_k b_k
    zero_c: "str | int" = "seed000"       # c = +-0 (and a zero accumulator between blocks)
    zero_group: "str | int" = "seed000"   # GST-FDPA: a group whose G products are all zero
    zero_scale: "str | int" = "seed000"   # GST-FDPA: a group with a zero (UE4M3) scale
    flush_inputs: str | None = None   # None, "signed" or "positive" (input FTZ)
    P: int | None = None          # CDNA2 pairwise group size: a power of two dividing L
    G: int | None = None          # GST-FDPA group size: divides L and scale_block
    scale_fmt: str | None = None  # block scales' format (stfdpa, gstfdpa only): unsigned; E8M0 for stfdpa
    scale_block: int | None = None  # products per scale (stfdpa, gstfdpa only): >= 1; stfdpa: L divides it
    specials: str = "nvidia"      # "nvidia" (NaN 0x7FFF..., +0 results, RZ overflow -> inf) or "ieee"
    round_products: str | None = None  # None: exact products; a mode: each a_k b_k first rounded to the input format
    flush_outputs: str | None = None   # None, "signed" or "positive": subnormal results flushed
    c_entry: str = "align"        # "align": c is a term of the first block; "end": added last (c_rm)
    c_rm: str = "RNE"             # rounding mode of the addition of c when c_entry = "end"
    tf32_low: str = "ignore"      # TF32 inputs with non-zero low 13 container bits: TF32_LOW
    saturate: bool = False        # integer ops: PTX .satfinite (clamp to the s32 range) instead of wrap-around
    # ---- what the model is about (data, not semantics) ----
    kind: str = "catalog"         # "catalog" (a seed's finding) or "rival" (a hypothesis against one)
    rival_of: str | None = None   # the id of the catalog model a rival contradicts
    validated: bool = True        # False: a hypothesis no hardware capture or seed measurement backs (UNVALIDATED)
    arch: str = ""
    sm: int | None = None         # NVIDIA compute capability (70, 75, 80, 89, 90, 100, 120)
    gfx: str | None = None        # AMD target (gfx908, gfx90a, gfx942)
    kernels: tuple = ()           # hw_runner kernel ids that run this instruction on ``sm``
    description: str = ""
    source: str = ""
    instruction: str = ""
    overrides: tuple = field(default=(), compare=False)

    # ---- construction --------------------------------------------------------------------
    def with_overrides(self, text: str) -> "Model":
        """Apply ``key=value,...`` overrides of :data:`OVERRIDES`: the seeds' parameter names
        (L, F, carry, ...), the op, and the variants (round_products, flush_outputs, c_entry, c_rm)."""
        kw = {}
        for item in filter(None, text.split(",")):
            key, eq, val = item.partition("=")
            key = key.strip()
            if not eq or key not in OVERRIDES:
                raise ModelError(f"bad override {item!r}: use key=value with key in {', '.join(OVERRIDES)}")
            kw[key] = _parse_value(key, val.strip())
        fields = {}
        for key, val in kw.items():
            fields.update({k: val for k in ZERO_ALIASES.get(key, (key,))})
        return replace(self, id=f"{self.id}:{text}", overrides=tuple(kw.items()), **fields)   # validated

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        """Raise :class:`ModelError` unless every field lies in the range the core evaluates
        correctly (:data:`FIELD_RANGES`): one line naming the model, the field, its value and the
        allowed range. Run at construction (``Model(...)``, ``dataclasses.replace``, overrides),
        so no model outside the ranges exists. A run-time parameter
        (:class:`smtmodel.runtime.Runtime`) is checked choice by choice."""
        op = _OPS.get(self.op) if isinstance(self.op, str) else None
        if op is None:
            raise ModelError(f"{self.id}: unknown op {self.op!r}; one of {', '.join(OPS)}")
        self._check_formats()
        for name in ("L", "F", "F2", "carry", "P", "G", "scale_block"):
            for v in _choices(getattr(self, name)):
                if v is not None and not _is_int(v):
                    self._refuse(name, v)
        self._check_range("L", 1, None)
        self._check_range("F", 0, F_MAX)
        self._check_range("F2", 0, F_MAX)
        self._check_range("carry", 0, CARRY_MAX)
        self._check_range("P", 1, None)
        self._check_range("G", 1, None)
        self._check_range("scale_block", 1, None)
        for name in op.needs:
            if getattr(self, name) is None:
                raise ModelError(f"{self.id}: op {self.op} needs {name}: {FIELD_RANGES[_row(name)]}")
        L = self.L or 1
        if self.op in TR_OPS and _top(self.F2) < _top(self.F):
            raise ModelError(f"{self.id}: F2={_top(self.F2)} is below F={_top(self.F)}: "
                             f"{FIELD_RANGES['F2']}")
        if self.op in PAIRWISE_OPS and (self.P & (self.P - 1) or L % self.P):
            self._refuse("P", self.P, f"with L={self.L}")
        if self.op == "gstfdpa" and (L % self.G or self.scale_block % self.G):
            self._refuse("G", self.G, f"with L={self.L}, scale_block={self.scale_block}")
        if (self.op == "stfdpa" or (self.op in TR_OPS and self.scale_block)) and self.scale_block % L:
            self._refuse("scale_block", self.scale_block, f"with L={self.L}")
        if self.op not in SCALED_OPS and (self.scale_fmt is not None or self.scale_block is not None):
            raise ModelError(f"{self.id}: op {self.op} reads no block scales: scale_fmt and scale_block "
                             f"are none (they are {self.scale_fmt}, {self.scale_block})")
        self._check_rho(op)
        for name in ZERO_RULES:
            try:
                check_zero_rule(getattr(self, name))
            except ValueError as exc:
                raise ModelError(f"{self.id}: {name}: {exc}") from None
        for name in ("normalize", "saturate"):
            if not isinstance(getattr(self, name), bool):
                self._refuse(name, getattr(self, name))
        for name in ("flush_inputs", "flush_outputs"):
            v = getattr(self, name)       # a run-time choice holds FLUSH_CODES (None for none)
            ok = FLUSH if not isinstance(v, Runtime) else (None,) + tuple(FLUSH_CODES[f] for f in FLUSH if f)
            if any(c not in ok for c in _choices(v)):
                raise ModelError(f"{self.id}: {name} must be none, signed or positive")
        if self.specials not in SPECIALS:
            self._refuse("specials", self.specials)
        if self.specials == "propagate" and (self.op != "fma" or self.flush_inputs or len(
                {get_format(f).name for f in (*self.operand_fmts, self.out_fmt)}) != 1):
            raise ModelError(f"{self.id}: specials=propagate is an FMA chain's rule (op=fma, one format, "
                             "no input flushing)")
        if self.round_products not in (None,) + MODES:
            raise ModelError(f"{self.id}: round_products must be none or one of {', '.join(MODES)}")
        if self.mixed and self.round_products:
            raise ModelError(f"{self.id}: round_products rounds a_k b_k to one input format; "
                             "not defined for a_fmt != b_fmt")
        if self.c_entry not in C_ENTRY:
            raise ModelError(f"{self.id}: c_entry must be one of {', '.join(C_ENTRY)}")
        if self.c_rm not in MODES:
            raise ModelError(f"{self.id}: c_rm must be one of {', '.join(MODES)}")
        if self.tf32_low not in TF32_LOW:
            raise ModelError(f"{self.id}: tf32_low must be one of {', '.join(TF32_LOW)}")
        if self.op in INT_OPS and (self.round_products or self.flush_inputs or self.flush_outputs
                                   or self.c_entry != "align"):
            raise ModelError(f"{self.id}: {FIELD_RANGES['imma']}")
        if self.kind not in ("catalog", "rival") or (self.kind == "rival") != (self.rival_of is not None):
            raise ModelError(f"{self.id}: kind is catalog (no rival_of) or rival (with rival_of)")

    def _refuse(self, name: str, value, context: str = ""):
        """The one-line error of a field out of range (``context``: the fields it must agree with)."""
        ctx = f" ({context})" if context else ""
        raise ModelError(f"{self.id}: {name}={_show(value)} is out of range{ctx}: "
                         f"{name} is {FIELD_RANGES[_row(name)]}")

    def _check_range(self, name: str, lo: int, hi: "int | None") -> None:
        for v in _choices(getattr(self, name)):
            if v is not None and (v < lo or (hi is not None and v > hi)):
                self._refuse(name, v)

    def _check_formats(self) -> None:
        """Known formats; integer formats with the integer ops only; E8M0 as a scale only;
        exponent ranges the core's exponent arithmetic holds (:data:`FORMAT_EXP_MAX`)."""
        fa, fb = self.operand_fmts
        named = (("in_fmt", self.in_fmt), ("a_fmt", fa), ("b_fmt", fb), ("c_fmt", self.c_fmt),
                 ("out_fmt", self.out_fmt))
        fmts = {}
        for name, f in named + (("scale_fmt", self.scale_fmt),) * (self.scale_fmt is not None):
            try:
                fmts[name] = get_format(f)
            except ValueError as exc:
                raise ModelError(f"{self.id}: {name}: {exc}") from None
        if self.mixed and not _OPS[self.op].mixed:
            raise ModelError(f"{self.id}: op {self.op} takes one input format (a_fmt = b_fmt = in_fmt)")
        ints = [is_int_format(fmts[n]) for n, _ in named]
        if (self.op in INT_OPS) != all(ints) or (any(ints) and not all(ints)):
            raise ModelError(f"{self.id}: integer formats go with the integer ops ({', '.join(INT_OPS)}) "
                             f"and only with them (a, b, c, out = {fa}, {fb}, {self.c_fmt}, {self.out_fmt})")
        if self.op in INT_OPS:
            if (fmts["c_fmt"].width, fmts["out_fmt"].width) != (32, 32):
                raise ModelError(f"{self.id}: integer MMA accumulates in int32 (c and d)")
            return
        for name, f in fmts.items():
            if name == "scale_fmt":
                if is_int_format(f) or f.signed or (self.op == "stfdpa" and f.mbits):
                    raise ModelError(f"{self.id}: scale_fmt={f.name} is out of range: "
                                     f"scale_fmt is {FIELD_RANGES['scale_fmt']}")
            elif f.policy == "e8m0":
                raise ModelError(f"{self.id}: {name}={f.name} is a scale format (no zero, no sign): "
                                 "only scale_fmt takes it")
            lo, hi = f.emin - f.mbits, f.emax
            if min(lo, -hi) < -FORMAT_EXP_MAX:
                raise ModelError(f"{self.id}: {name}={f.name} spans exponents {lo}..{hi}, beyond "
                                 f"+-{FORMAT_EXP_MAX} (FORMAT_EXP_MAX, the core's exponent arithmetic)")
        if self.op == "fp8_via_fp16":
            h = get_format("fp16")
            for name in ("a_fmt", "b_fmt"):
                f = fmts[name]
                if f.precision > h.precision or f.emax > h.emax or f.emin - f.mbits < h.emin - h.mbits:
                    raise ModelError(f"{self.id}: {name}={f.name}: op fp8_via_fp16 converts the operands "
                                     "to fp16 exactly; this format has values fp16 does not")

    def _check_rho(self, op: "Op") -> None:
        """ρ is a known output conversion and stores the output format (for the ops that read it)."""
        if self.rho is not None and self.rho not in RHO:
            raise ModelError(f"{self.id}: unknown rho {self.rho!r}: rho is {FIELD_RANGES['rho']}")
        if not op.reads_rho:
            return
        rho = RHO[self.rho if self.rho is not None else "RNE-FP32"]
        if get_format(rho.container).name != get_format(self.out_fmt).name:
            raise ModelError(f"{self.id}: rho={_show(self.rho)} stores {rho.container}, not the output "
                             f"format {self.out_fmt}: rho is {FIELD_RANGES['rho']}")

    # ---- geometry ------------------------------------------------------------------------
    def block(self, k: int) -> int:
        """Products per fused block for a K-term dot product (Algorithm 5: L = min(K, L_max);
        L_max is 2L for the FP8 mma.sync path, whose instruction K is 32). Any K >= 1 is taken:
        a K above L_max that is not a multiple of it is zero-padded first (:meth:`padded_k`)."""
        if k < 1:
            raise ModelError(f"{self.id}: k={k}: a dot product needs at least one term")
        return min(k, self._block_max())

    def _block_max(self) -> int:
        return 2 * self.L if self.op == "fp8_via_fp16" else (self.L or 1)

    def padded_k(self, k: int) -> int:
        """K as the model evaluates it: k itself up to L_max, else rounded up to a multiple of
        L_max, as a kernel pads K to the instruction's K (mmaemu does the same)."""
        L = self.block(k)
        return -(-k // L) * L

    def scale_count(self, k: int) -> int:
        """Scales per operand a block-scaled model reads for a K-term dot product: one per
        ``scale_block`` products of the padded K (:meth:`padded_k`)."""
        return -(-self.padded_k(k) // self.scale_block)

    def _pad(self, a: list, b: list) -> tuple[list, list]:
        """a and b zero-padded (positive zero patterns, 0) to :meth:`padded_k` terms. The zeros
        are ordinary inputs of the last block: they take part in its alignment exactly as the
        model says (e.g. ``zero_align``), so symbolic and concrete readings agree."""
        kp = self.padded_k(len(a))
        if kp == len(a):
            return a, b
        n = kp - len(a)
        return list(a) + [a[0].B.const(0, a[0].w)] * n, list(b) + [b[0].B.const(0, b[0].w)] * n

    @property
    def operand_fmts(self) -> tuple[str, str]:
        """(A's format, B's format): ``a_fmt``/``b_fmt``, each defaulting to ``in_fmt``."""
        return (self.a_fmt or self.in_fmt, self.b_fmt or self.in_fmt)

    @property
    def formats(self) -> tuple[str, str, str, str]:
        """Canonical names of (A's, B's, c's, d's) formats: what a model takes and gives, to
        compare with a vector file or another model."""
        return tuple(get_format(f).name for f in self.operand_fmts + (self.c_fmt, self.out_fmt))

    @property
    def scale_key(self) -> tuple[str, int] | None:
        """(scale format, products per scale) in canonical names, as a harness kernel's
        ``scale_key`` and a vector file's header give them; None for an unscaled model."""
        return (get_format(self.scale_fmt).name, int(self.scale_block)) if self.scale_fmt else None

    @property
    def in_key(self) -> str:
        """The operand formats as one name: ``fp16``, or ``fp8e4m3xfp8e5m2`` for mixed operands
        (A's x B's), as model ids, suite folders and identify spaces spell a format pair."""
        return operand_key(*self.operand_fmts)

    @property
    def mixed(self) -> bool:
        """Whether A and B are read in different formats."""
        fa, fb = self.operand_fmts
        return get_format(fa).name != get_format(fb).name

    @property
    def widths(self) -> tuple[int, int, int]:
        """Bit widths of (A's format, c, d); B's is :attr:`operand_widths`' second."""
        return tuple(get_format(f).width for f in (self.operand_fmts[0], self.c_fmt, self.out_fmt))

    @property
    def operand_widths(self) -> tuple[int, int]:
        """Bit widths of A's and B's formats."""
        return tuple(get_format(f).width for f in self.operand_fmts)

    # ---- the one semantics ---------------------------------------------------------------
    def build(self, a: list[BV], b: list[BV], c: BV, a_scale: list[BV] | None = None,
              b_scale: list[BV] | None = None) -> BV:
        """Output bits of d = c + sum a_k b_k, chaining blocks of L as Algorithm 5 defines, with
        the model's variants around it: products rounded first (``round_products``), c added
        last (``c_entry="end"``), subnormal results flushed (``flush_outputs``)."""
        k = len(a)
        if len(b) != k or k == 0:
            raise ModelError(f"{self.id}: a and b need the same positive length")
        if (self.op in ("stfdpa", "gstfdpa") or self.scale_fmt) and (a_scale is None or b_scale is None):
            raise ModelError(f"{self.id}: block-scaled model needs a_scale and b_scale")
        if a_scale is not None:
            n = self.scale_count(k)
            if len(a_scale) != n or len(b_scale) != n:
                raise ModelError(f"{self.id}: K={k} takes {n} scales per operand (one per {self.scale_block} "
                                 f"products, K padded to {self.padded_k(k)}), got {len(a_scale)} and {len(b_scale)}")
        a, b = self._pad(a, b)
        k = len(a)
        L = self.block(k)
        d, d_fmt = self.chain_start(c), self.c_fmt
        for i in range(0, k, L):
            sl = slice(i, i + L)
            sc = None
            if a_scale is not None:
                # the scale of each product group (GST-FDPA: groups of G; ST-FDPA: the block, which
                # lies in one scale block, validate: L divides scale_block)
                G = self.G if self.op == "gstfdpa" else L
                idx = [j // self.scale_block for j in range(i, i + L, G)]
                sc = ([a_scale[j] for j in idx], [b_scale[j] for j in idx])
            d = self.chain_step(a[sl], b[sl], d, d_fmt, sc)
            d_fmt = self.out_fmt
        return self.chain_end(d, c)

    # The three parts of :meth:`build`'s chain, public so that a GEMM can run the chain block by
    # block (``smtmodel.gemm``) with the same semantics: build is exactly start, steps, end.
    def chain_start(self, c: BV) -> BV:
        """The accumulator before the first block (in the c format): c, or +0 when c is added
        last (``c_entry="end"``)."""
        return zero_bits(get_format(self.c_fmt), c.B.false()) if self.c_entry == "end" else c

    def chain_step(self, a: list[BV], b: list[BV], d: BV, d_fmt: str, scales=None) -> BV:
        """One block of Algorithm 5: d (in ``d_fmt``) plus the block's products, in the output
        format; products rounded first where the model says so (``round_products``)."""
        if self.round_products:      # seed 002 §4.1 Property 1's rival: p_k = fl(a_k b_k), then (p_k, 1.0)
            B = a[0].B
            fi = self.operand_fmts[0]     # = B's format: validate refuses mixed formats here
            a = [fp_mul(x, y, fi, self.round_products) for x, y in zip(a, b)]
            b = [B.const(one_bits(fi), get_format(fi).width)] * len(a)
        return self._block(a, b, d, d_fmt, scales)

    def chain_end(self, d: BV, c: BV) -> BV:
        """The chain's result after the last block: c added last (``c_entry="end"``), subnormal
        outputs flushed (``flush_outputs``)."""
        if self.c_entry == "end":    # seeds 003/004 §III: c added after the products
            d = add_late_c(d, self.out_fmt, c, self.c_fmt, self._specials, self.c_rm)
        if self.flush_outputs:       # seed 002 §4.4's rival: subnormal outputs flushed
            B = d.B
            fo = get_format(self.out_fmt)
            tiny = is_subnormal(d, fo)
            sign = sign_of(d, fo) if self.flush_outputs == "signed" and fo.signed else B.false()
            if self.flush_outputs == "positive":
                tiny = tiny | is_zero(d, fo)
            d = tiny.ite(zero_bits(fo, sign), d)
        return d

    def decode_input(self, bits: BV, fmt: str):
        """Decode an input pattern as this model reads it (input subnormal flushing applied; a
        TF32 container with non-zero low bits read as :attr:`tf32_low` says)."""
        f = get_format(fmt)
        if f.shift and self.tf32_low != "ignore":
            low = bits.extract(f.shift - 1, 0).ne(bits.B.const(0, f.shift))
            if self.tf32_low == "nan":
                bits = low.ite(bits.B.const(f.canonical_nan, f.width), bits)
            else:
                bits = convert(bits, "fp32", f, self.tf32_low)
        return decode(bits, fmt, self.flush_inputs)

    @property
    def zero_align(self) -> "str | int | None":
        """The common zero rule of zero products and c (the shorthand override ``zero_align``),
        None where the two differ."""
        return self.zero_prod if self.zero_prod == self.zero_c else None

    @property
    def _specials(self):
        return NVIDIA if self.specials == "nvidia" else IEEE

    def _block(self, a, b, c_bits, c_fmt, scales):
        """One fused block: the op's function from :data:`OPS`."""
        return _OPS[self.op].fn(self, a, b, c_bits, c_fmt, scales)

    # ---- readings ------------------------------------------------------------------------
    def evaluate(self, a, b, c, a_scale=None, b_scale=None, backend: str = "auto",
                 jobs: int | None = None) -> np.ndarray:
        """Twin: raw output bits (uint64, shape (N,)) for raw input bits a, b (N, K) and c (N,).

        Any K >= 1 (zero-padded above L_max, see :meth:`padded_k`). ``backend``: ``"numpy"`` the
        reference reading; ``"native"`` the compiled reading (:mod:`smtmodel.native`, ``jobs``
        threads, default all cores); ``"auto"`` native when llvmlite loads and the batch is
        large (cases x K >= :data:`smtmodel.native.AUTO_MIN_WORK`) or the kernel is compiled
        already, else NumPy (also for a model
        too wide to compile, :data:`smtmodel.native.MAX_WIDTH`). Both are bit-equal.
        """
        a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
        if a.ndim != 2 or a.shape != b.shape or c.shape != (a.shape[0],):
            raise ModelError(f"{self.id}: expected a, b of shape (N, K) and c of shape (N,), "
                             f"got {a.shape}, {b.shape}, {c.shape}")
        if backend not in _BACKENDS:
            raise ModelError(f"unknown backend {backend!r}; one of {', '.join(_BACKENDS)}")
        if backend != "numpy":
            d = self._evaluate_native(a, b, c, a_scale, b_scale, jobs, backend == "native")
            if d is not None:
                return d
        if a.shape[0] > CHUNK:     # cache-sized batches: ~2x faster than one huge batch
            parts = [self.evaluate(a[s:s + CHUNK], b[s:s + CHUNK], c[s:s + CHUNK],
                                   None if a_scale is None else np.asarray(a_scale)[s:s + CHUNK],
                                   None if b_scale is None else np.asarray(b_scale)[s:s + CHUNK],
                                   backend="numpy")
                     for s in range(0, a.shape[0], CHUNK)]
            return np.concatenate(parts)
        (wa, wb), (_, wc, _) = self.operand_widths, self.widths
        A = [NUMPY.input(a[:, k], wa) for k in range(a.shape[1])]
        Bv = [NUMPY.input(b[:, k], wb) for k in range(b.shape[1])]
        C = NUMPY.input(c, wc)
        sa = sb = None
        if a_scale is not None:
            ws = get_format(self.scale_fmt).width
            sa = [NUMPY.input(np.asarray(a_scale)[:, j], ws) for j in range(np.asarray(a_scale).shape[1])]
            sb = [NUMPY.input(np.asarray(b_scale)[:, j], ws) for j in range(np.asarray(b_scale).shape[1])]
        d = self.build(A, Bv, C, sa, sb)
        return np.broadcast_to(np.asarray(d.v, dtype=np.uint64), (a.shape[0],)).copy()

    def evaluate_batches(self, batches: list, backend: str = "auto", jobs: int | None = None) -> list:
        """:meth:`evaluate` of each batch ``(a, b, c, a_scale, b_scale)`` (scales None where
        unscaled), the batches of one K and scale layout read in one call: the cases are independent,
        and the NumPy reading costs about as much for one case as for thousands. One uint64 array
        per batch, in order."""
        together: dict = {}
        for i, (a, _b, _c, sa, sb) in enumerate(batches):
            together.setdefault((np.shape(a)[1], sa is None, sb is None), []).append(i)
        out: list = [None] * len(batches)
        for idx in together.values():
            cols = [None if batches[idx[0]][j] is None else
                    np.concatenate([np.asarray(batches[i][j], dtype=np.uint64) for i in idx]) for j in range(5)]
            d = np.asarray(self.evaluate(*cols, backend=backend, jobs=jobs), dtype=np.uint64)
            for i, part in zip(idx, np.split(d, np.cumsum([len(batches[i][2]) for i in idx])[:-1])):
                out[i] = part
        return out

    def _evaluate_native(self, a, b, c, a_scale, b_scale, jobs, required: bool):
        """The compiled reading, or None where ``auto`` prefers NumPy (small batch, no llvmlite)."""
        from . import native
        n, k = a.shape
        ns = 0 if a_scale is None else np.asarray(a_scale).shape[1]
        if not required and not native.available():
            return None
        if not required and n * k < native.AUTO_MIN_WORK and not native.is_cached(
                self, k, ns, native.row_layout(k, ns, dts := _kernel_dtypes(a, b, c, a_scale if ns else None),
                                               native.row_lanes(n, max(dts[0].itemsize, dts[1].itemsize)))):
            return None
        (wa, wb), (_, wc, _) = self.operand_widths, self.widths
        ws = get_format(self.scale_fmt).width if ns else 0
        a, b, c = (np.ascontiguousarray(_unsigned(x, w)) for x, w in ((a, wa), (b, wb), (c, wc)))
        sa = sb = None
        if ns:
            sa, sb = (np.ascontiguousarray(_unsigned(np.asarray(x), ws)) for x in (a_scale, b_scale))
            if sa.shape != (n, ns) or sb.shape != (n, ns):
                raise ModelError(f"{self.id}: a_scale and b_scale need shape (N, S) = ({n}, {ns})")
            if sa.dtype != sb.dtype:
                sa, sb = sa.astype(np.uint64), sb.astype(np.uint64)
        dtypes = (a.dtype, b.dtype, c.dtype, sa.dtype if ns else np.uint64)
        try:
            lanes = native.row_lanes(n, max(a.itemsize, b.itemsize))
            kern = native.kernel(self, k, ns, native.row_layout(k, ns, dtypes, lanes))
        except native.TooWide as e:
            if not required:
                return None
            raise ModelError(str(e)) from None
        except native.NativeError as e:
            raise ModelError(str(e)) from None
        return native.run_rows(kern, a, b, c, sa, sb, jobs=jobs, widths=(wa, wc, ws, wb))

    def symbolic(self, B, k: int, prefix: str = ""):
        """Fresh symbolic inputs of backend ``B`` (z3 or cvc5) and the output term.

        Returns (a, b, c, d, scales) where a, b are lists of k BVs and scales is None or a pair
        of lists."""
        (wa, wb), (_, wc, _) = self.operand_widths, self.widths
        a = [B.var(f"{prefix}a{i}", wa) for i in range(k)]
        b = [B.var(f"{prefix}b{i}", wb) for i in range(k)]
        c = B.var(f"{prefix}c", wc)
        scales = None
        if self.scale_fmt:
            ws = get_format(self.scale_fmt).width
            n = self.scale_count(k)
            scales = ([B.var(f"{prefix}sa{i}", ws) for i in range(n)], [B.var(f"{prefix}sb{i}", ws) for i in range(n)])
        d = self.build(a, b, c, *(scales or (None, None)))
        return a, b, c, d, scales

    def summary(self) -> str:
        p = [f"{k}={getattr(self, k)}" for k in ("L", "F", "F2", "rho", "carry", "P", "G") if getattr(self, k) is not None]
        if self.mixed:
            p.append("a={} b={}".format(*self.operand_fmts))
        if self.normalize:
            p.append("normalize")
        if self.flush_inputs:
            p.append(f"ftz={self.flush_inputs}")
        for name in ZERO_RULES:
            if getattr(self, name) != "seed000":
                p.append(f"{name}={getattr(self, name)}")
        if self.round_products:
            p.append(f"products rounded ({self.round_products})")
        if self.c_entry != "align":
            p.append(f"c {self.c_entry} ({self.c_rm})")
        if self.flush_outputs:
            p.append(f"output ftz={self.flush_outputs}")
        if self.tf32_low != "ignore":
            p.append(f"tf32 low bits {self.tf32_low}")
        if self.op in INT_OPS:
            p.append("satfinite" if self.saturate else "wrap-around")
        return f"{self.op}({', '.join(p)})"


def _choices(v) -> tuple:
    """The values a field may take: a run-time parameter's choices, else the value itself."""
    return tuple(v.choices) if isinstance(v, Runtime) else (v,)


def _top(v):
    """A field's largest value (a run-time parameter's largest choice)."""
    return max(c for c in _choices(v) if c is not None)


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _show(v) -> str:
    return "none" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


def _row(name: str) -> str:
    """The :data:`FIELD_RANGES` row of a field."""
    return next(k for k in FIELD_RANGES if name in k.split(", "))


def _kernel_dtypes(a, b, c, s) -> tuple:
    """The dtypes the compiled reading reads a, b, c and the scales in (see :func:`_unsigned`)."""
    return tuple(x.dtype if x is not None and np.asarray(x).dtype.kind == "u" else np.dtype(np.uint64)
                 for x in (np.asarray(a), np.asarray(b), np.asarray(c), None if s is None else np.asarray(s)))


def _unsigned(x, width: int) -> np.ndarray:
    """Raw input bits as an unsigned integer array: unsigned arrays as they are, of any element
    size (the compiled reading reads them in place and checks that they fit ``width`` bits from
    the OR of every element its kernel read), anything else through the NumPy reading's own
    check and error."""
    x = np.asarray(x)
    if x.dtype.kind == "u":
        return x
    return np.asarray(NUMPY.input(x, width).v, dtype=np.uint64)


# ---- the operations, one function per op (seed 000 Tables 3-7; seed 001 §IV-A5/A6) ---------------

def _inputs(m: Model, a, b, c_bits, c_fmt):
    """Decoded a, b, c as the model reads them (a and b each in its own format, input flushing
    applied)."""
    fa, fb = m.operand_fmts
    return ([m.decode_input(x, fa) for x in a], [m.decode_input(y, fb) for y in b],
            m.decode_input(c_bits, c_fmt))


def _op_fma(m: Model, a, b, c_bits, c_fmt, scales):
    """A chain of IEEE FMAs in the output format (seed 000 Algorithm 4). Inputs of a narrower
    format (fp16/bf16 -> fp32: seed 003 Table III's MI250X, "FMA unit width 1") are read exactly,
    with the model's input flushing applied to a, b and the accumulator; each FMA is one IEEE
    rounding (RNE) of the exact a_k b_k + d. With ``specials="nvidia"`` every NaN result is
    NVIDIA's canonical NaN (0x7FFFFFFF for fp32: an FFMA, CUDA C++ Programming Guide, "Floating-Point
    Standard"); zeros and overflow stay IEEE 754's, as an FMA rounds them (not the tensor cores'
    +0 rule)."""
    d = _fma_chain(m, a, b, c_bits, c_fmt)
    if m.specials == "nvidia":
        from .fp.classify import is_nan
        f = get_format(m.out_fmt)
        d = is_nan(d, f).ite(d.B.const(m._specials.nan_pattern(f), f.width), d)
    return d


def _fma_chain(m: Model, a, b, c_bits, c_fmt):
    out = get_format(m.out_fmt).name
    if all(get_format(f).name == out for f in m.operand_fmts) and not m.flush_inputs:
        d = convert(c_bits, c_fmt, m.out_fmt) if c_fmt != m.out_fmt else c_bits
        f = get_format(m.out_fmt)
        for x, y in zip(a, b):
            d = (fma_propagating(x, y, d, f, "bca", f.canonical_nan | 1 << (f.width - 1))
                 if m.specials == "propagate" else fma(x, y, d, f))
        return d
    A, Bv, C = _inputs(m, a, b, c_bits, c_fmt)
    d = ieee_sum([C], m.out_fmt)
    for x, y in zip(A, Bv):
        d = ieee_sum([mul_exact(x, y), decode(d, m.out_fmt)], m.out_fmt)
    return d


def _op_ftz_addmul(m: Model, a, b, c_bits, c_fmt, scales):
    """CDNA2 FTZ-Add/FTZ-Mul, pairwise groups of P, inputs flushed to +0 (seed 000 Algorithm 2)."""
    fa, fb = m.operand_fmts
    A = [decode(x, fa, "positive") for x in a]
    Bv = [decode(y, fb, "positive") for y in b]
    c32 = convert(c_bits, c_fmt, "fp32") if c_fmt != "fp32" else c_bits
    return ftz_addmul(A, Bv, c32, m.P)


def _op_addmul(m: Model, a, b, c_bits, c_fmt, scales):
    """Pairwise groups of P with IEEE fp32 multiplications and additions, nothing flushed: the
    rival reading of CDNA1 fp16/bf16 (Algorithm 2's order without FTZ; seed 000 Table 6 finds
    E-FDPA instead)."""
    A, Bv, _ = _inputs(m, a, b, c_bits, c_fmt)
    c32 = convert(c_bits, c_fmt, "fp32") if c_fmt != "fp32" else c_bits
    return ftz_addmul(A, Bv, c32, m.P, flush=False)


def _op_efdpa(m: Model, a, b, c_bits, c_fmt, scales):
    """Exact FDPA, one rounding (seed 000 Algorithm 6)."""
    A, Bv, C = _inputs(m, a, b, c_bits, c_fmt)
    return e_fdpa(A, Bv, C, m.out_fmt)


def _op_tfdpa(m: Model, a, b, c_bits, c_fmt, scales):
    """Truncated FDPA (seed 000 Algorithm 7)."""
    A, Bv, C = _inputs(m, a, b, c_bits, c_fmt)
    return t_fdpa(A, Bv, C, F=m.F, rho=RHO[m.rho], carry=m.carry, normalize=m.normalize,
                  zero_prod=m.zero_prod, zero_c=m.zero_c, specials=m._specials)


def _op_stfdpa(m: Model, a, b, c_bits, c_fmt, scales):
    """Scaled T-FDPA, one scale per block (seed 000 Algorithm 8)."""
    A, Bv, C = _inputs(m, a, b, c_bits, c_fmt)
    sa = decode(scales[0][0], m.scale_fmt)
    sb = decode(scales[1][0], m.scale_fmt)
    d = t_fdpa(A, Bv, C, F=m.F, rho=RHO[m.rho], carry=m.carry, normalize=m.normalize,
               zero_prod=m.zero_prod, zero_c=m.zero_c, specials=m._specials, scale_exp=sa.exp + sb.exp)
    out = get_format(m.out_fmt)
    nan = b[0].B.const(m._specials.nan_pattern(out), out.width)
    return (sa.nan | sb.nan).ite(nan, d)


def _op_gstfdpa(m: Model, a, b, c_bits, c_fmt, scales):
    """Group-scaled T-FDPA (seed 000 Algorithm 9); ``scales``: one pair per group of G."""
    A, Bv, C = _inputs(m, a, b, c_bits, c_fmt)
    sa = [decode(s, m.scale_fmt) for s in scales[0]]
    sb = [decode(s, m.scale_fmt) for s in scales[1]]
    return gst_fdpa(A, Bv, C, sa, sb, G=m.G, F=m.F, rho=RHO[m.rho], specials=m._specials,
                    zero_c=m.zero_c, zero_group=m.zero_group, zero_scale=m.zero_scale)


def _tr(group_even_odd: bool):
    def op(m: Model, a, b, c_bits, c_fmt, scales):
        A, Bv, C = _inputs(m, a, b, c_bits, c_fmt)
        sx = nan = None
        if scales is not None and m.scale_fmt:      # one scale per block, as ST-FDPA reads it
            if len(scales[0]) != 1:
                raise ModelError(f"{m.id}: a block-scaled {m.op} takes one scale per block of {m.L}")
            sa, sb = decode(scales[0][0], m.scale_fmt), decode(scales[1][0], m.scale_fmt)
            sx, nan = sa.exp + sb.exp, sa.nan | sb.nan
        d = tr_fdpa(A, Bv, C, F=m.F, F2=m.F2, rho=RHO[m.rho or "RNE-FP32"],
                    group_even_odd=group_even_odd, special_trunc=group_even_odd, specials=m._specials,
                    zero_prod=m.zero_prod, zero_c=m.zero_c, scale_exp=sx)
        if nan is None:
            return d
        out = get_format(m.out_fmt)
        return nan.ite(b[0].B.const(m._specials.nan_pattern(out), out.width), d)
    op.__doc__ = ("GTR-FDPA, even/odd groups (seed 000 Algorithm 11)" if group_even_odd
                  else "TR-FDPA (seed 000 Algorithm 10)") + "; with block scales, scaled as ST-FDPA (Algorithm 8)"
    return op


def _op_fp8_via_fp16(m: Model, a, b, c_bits, c_fmt, scales):
    """FP8 through mma.sync on Hopper/Blackwell (seed 001 §IV-A5/A6): inputs converted to
    fp16 (exact), products interleaved in pairs into two halves {k mod 4 in {0,1}} and
    {k mod 4 in {2,3}}, each an fp16 tensor-core T-FDPA (F, ρ) chained from +0, then c added
    with RNE in the output format."""
    B = a[0].B
    out = get_format(m.out_fmt)
    fa, fb = m.operand_fmts           # each operand converted from its own format (exact)
    h16 = [decode(convert(x, fa, "fp16"), "fp16") for x in a]
    g16 = [decode(convert(y, fb, "fp16"), "fp16") for y in b]
    halves = [[k for k in range(len(a)) if k % 4 in (0, 1)], [k for k in range(len(a)) if k % 4 in (2, 3)]]
    d = zero_bits(out, B.false())
    for idx in halves:
        d = t_fdpa([h16[k] for k in idx], [g16[k] for k in idx], decode(d, out), F=m.F,
                   rho=RHO[m.rho], carry=m.carry, normalize=m.normalize,
                   zero_prod=m.zero_prod, zero_c=m.zero_c, specials=m._specials)
    return add_late_c(d, m.out_fmt, c_bits, c_fmt, m._specials)


def _op_imma(m: Model, a, b, c_bits, c_fmt, scales):
    """Integer MMA (PTX mma/wmma.mma .s8/.u8/.s4/.u4 -> .s32, AMD v_mfma_i32_*): exact products
    and sum, the s32 result wrapped or, with ``saturate`` (.satfinite), clamped."""
    fa, fb = m.operand_fmts           # PTX mixes signedness (.s8.u8, .u8.s8): each operand its own
    return imma_block(list(a), list(b), c_bits, get_format(fa).signed, get_format(fb).signed, m.saturate)


@dataclass(frozen=True)
class Op:
    """One elementary operation: ``fn(model, a, b, c_bits, c_fmt, scales)`` -> output bits of a
    block; ``needs``: the fields the model must give (:meth:`Model.validate`); ``mixed``: reads A
    and B each in its own format (:attr:`Model.operand_fmts`); ``reads_rho``: ends in an output
    conversion ρ (which must store the output format)."""
    fn: Callable
    needs: tuple = ()
    mixed: bool = True
    reads_rho: bool = False

    @property
    def needs_F(self) -> bool:
        return "F" in self.needs


_OPS: dict[str, Op] = {
    "fma": Op(_op_fma, mixed=False),      # an FMA chain in the output format
    "efdpa": Op(_op_efdpa),
    "tfdpa": Op(_op_tfdpa, ("F", "rho"), reads_rho=True),
    "stfdpa": Op(_op_stfdpa, ("F", "rho", "scale_fmt", "scale_block"), reads_rho=True),
    "gstfdpa": Op(_op_gstfdpa, ("F", "rho", "G", "scale_fmt", "scale_block"), reads_rho=True),
    "ftz_addmul": Op(_op_ftz_addmul, ("P",)),
    "addmul": Op(_op_addmul, ("P",)),
    "trfdpa": Op(_tr(False), ("F", "F2"), reads_rho=True),
    "gtrfdpa": Op(_tr(True), ("F", "F2"), reads_rho=True),
    "fp8_via_fp16": Op(_op_fp8_via_fp16, ("L", "F", "rho"), reads_rho=True),
    "imma": Op(_op_imma),
}
OPS = tuple(_OPS)
"""The op names a model may use."""

INT_OPS = ("imma",)
"""The ops over integer formats (:class:`smtmodel.formats.IntFormat`)."""

TR_OPS = ("trfdpa", "gtrfdpa")
"""AMD CDNA3's ops with a second fraction width F2 (F <= F2)."""

PAIRWISE_OPS = ("ftz_addmul", "addmul")
"""The ops that sum products in pairwise groups of P (P a power of two dividing L)."""

SCALED_OPS = ("stfdpa", "gstfdpa", "trfdpa", "gtrfdpa")   # TR/GTR-FDPA: block-scaled CDNA4 hypotheses
"""The block-scaled ops: the only ones with scale_fmt and scale_block."""

FIELD_RANGES["op"] = f"one of {', '.join(OPS)}"

OVERRIDES = ("op", "L", "F", "F2", "rho", "carry", "normalize", "zero_align", "flush_inputs", "P",
             "G", "specials", "scale_block", "round_products", "flush_outputs", "c_entry", "c_rm", "tf32_low",
             "zero_prod", "zero_c", "zero_group", "zero_scale", "e_zero", "saturate")
"""Fields that ``ID:key=value,...`` may override."""
OVERRIDES += ("a_fmt", "b_fmt")     # A's and B's formats (docs/mixed-operands.md)


def _parse_value(key: str, val: str):
    low = val.lower()
    if key in ("normalize", "saturate"):
        if low in ("1", "true", "yes"):
            return True
        if low in ("0", "false", "no"):
            return False
        raise ModelError(f"override {key} takes true or false, got {val!r}")
    if key in ("L", "F", "F2", "carry", "P", "G", "scale_block"):
        if low in ("none", "inf", "unbounded") and key == "carry":
            return None
        try:
            return int(val)
        except ValueError:
            raise ModelError(f"override {key} takes an integer, got {val!r}") from None
    if key in ("flush_inputs", "flush_outputs", "round_products") and low in ("none", "no", "exact"):
        return None
    if key in ZERO_RULES or key in ZERO_ALIASES:
        if low in ("seed000", "ignore"):
            return low
        try:
            return int(val)
        except ValueError:
            raise ModelError(f"override {key} takes seed000, ignore or an integer exponent, got {val!r}") from None
    return val
