"""Number formats: parameters, the registry of named formats, hex text and NumPy views.

A format is data (exponent bits, mantissa bits, bias, special-value policy); the bit-level
decode/encode that every model uses lives in :mod:`smtmodel.fp.unpack` and is written once in
the semantic core. This module only describes formats and moves raw bit patterns between hex
text (../shared/spec/vectors.md), Python ints and NumPy / ml_dtypes arrays.

Special-value policies:

``ieee``   the top exponent encodes +-inf (mantissa 0) and NaN (mantissa != 0).
``fn``     no infinities; only S.1...1.1...1 is NaN (OCP E4M3, "finite + NaN").
``fnuz``   no infinities, no -0; the single NaN is the pattern 1.0...0 (AMD CDNA3 FP8).
``finite`` every pattern is a finite number (OCP FP6/FP4).
``e8m0``   unsigned power of two 2^(E-bias); 0xFF is NaN; there is no zero (MX scale).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

POLICIES = ("ieee", "fn", "fnuz", "finite", "e8m0")


class FormatError(ValueError):
    """Unknown format name, malformed format spec or a value that does not fit a format."""


_HEX = re.compile(r"0x[0-9a-fA-F]+")
_HEXES = re.compile(r"0x[0-9a-fA-F]+(?:,0x[0-9a-fA-F]+)*")


class _HexText:
    """Raw bit patterns as hex text (spec/vectors.md), for every kind of format: ``width``,
    ``name``, ``hex_digits`` and ``shift`` (container bits below the encoding) come from the format."""

    def hex(self, bits: int) -> str:
        bits = int(bits)
        if not 0 <= bits < (1 << self.width):
            raise FormatError(f"{bits:#x} does not fit {self.name} ({self.width} bits)")
        return f"0x{bits:0{self.hex_digits}x}"

    def hex_list(self, bits) -> list[str]:
        """:meth:`hex` of each pattern of a 1-D array (one range check for the whole array)."""
        arr = np.asarray(bits)
        vals = arr.astype(np.uint64).tolist() if arr.dtype.kind in "ui" else [int(x) for x in arr]
        if vals and (min(vals) < 0 or max(vals) >> self.width):
            bad = next(v for v in vals if v < 0 or v >> self.width)
            raise FormatError(f"{bad:#x} does not fit {self.name} ({self.width} bits)")
        form = f"0x{{:0{self.hex_digits}x}}"
        return [form.format(v) for v in vals]

    def parse_hex_list(self, texts) -> list[int]:
        """The bits of each text of a list: ``0x`` and hex digits, within the format's width, the
        container's low bits zero (the widths read once: vector files hold millions of patterns)."""
        width, shift = self.width, self.shift
        low = (1 << shift) - 1
        texts = texts if isinstance(texts, (list, tuple)) else list(texts)
        try:                          # the common case checked in bulk; any fault: the loop names it
            joined = ",".join(texts)
            if _HEXES.fullmatch(joined) and joined.count(",") == len(texts) - 1:
                out = [int(t, 16) for t in texts]
                if not out or (max(out) >> width == 0 and not (low and any(b & low for b in out))):
                    return out
        except TypeError:             # a text that is not a str
            pass
        match = _HEX.fullmatch
        out = []
        for text in texts:
            if not isinstance(text, str) or not match(text):
                raise FormatError(f"{text!r} is not a hex bit pattern like '0x3c00'")
            bits = int(text, 16)
            if bits >> width:
                raise FormatError(f"{text} does not fit {self.name} ({width} bits)")
            if bits & low:
                raise FormatError(f"{text} is not a {self.name} pattern: its {shift} low bits must be zero")
            out.append(bits)
        return out

    def parse_hex(self, text: str) -> int:
        return self.parse_hex_list([text])[0]


@dataclass(frozen=True)
class Format(_HexText):
    """A binary floating-point format.

    ``ebits``/``mbits``: exponent and stored-mantissa (fraction) bits; ``bias``: exponent bias;
    ``signed``: whether a sign bit is stored; ``subnormals``: False means patterns with a zero
    exponent field decode as zero (input flush); ``container``: storage width when wider than
    the encoding (TF32 lives in the top 19 bits of an fp32 container, ``shift`` = 13).
    """

    name: str
    ebits: int
    mbits: int
    bias: int
    policy: str = "ieee"
    signed: bool = True
    subnormals: bool = True
    container: int | None = None
    description: str = field(default="", compare=False)

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise FormatError(f"format {self.name!r}: unknown policy {self.policy!r} (one of {', '.join(POLICIES)})")
        if self.ebits < 1 or self.mbits < 0 or self.ebits > 15 or self.mbits > 112:
            raise FormatError(f"format {self.name!r}: unsupported widths e={self.ebits} m={self.mbits}")
        if self.policy == "e8m0" and (self.mbits != 0 or self.signed):
            raise FormatError(f"format {self.name!r}: policy e8m0 needs mbits=0 and no sign")
        if self.policy in ("ieee", "fn") and self.mbits < 1:
            raise FormatError(f"format {self.name!r}: policy {self.policy} needs at least one mantissa bit "
                              "(its NaN is told apart from inf/max by the mantissa)")

    # ---- geometry -------------------------------------------------------------------------
    @property
    def enc_width(self) -> int:
        """Bits of the encoding itself (19 for TF32)."""
        return int(self.signed) + self.ebits + self.mbits

    @property
    def width(self) -> int:
        """Bits of the stored pattern (the container for TF32)."""
        return self.container or self.enc_width

    @property
    def shift(self) -> int:
        """Low container bits below the encoding (13 for TF32, else 0)."""
        return self.width - self.enc_width

    @property
    def hex_digits(self) -> int:
        return (self.width + 7) // 8 * 2

    @property
    def precision(self) -> int:
        """Significand bits including the hidden bit."""
        return self.mbits + 1

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal (and of every subnormal)."""
        return 1 - self.bias if self.policy != "e8m0" else -self.bias

    @property
    def emax(self) -> int:
        """Unbiased exponent of the largest finite number."""
        top = (1 << self.ebits) - 1
        return (top - 1 if self.policy in ("ieee", "e8m0") else top) - self.bias

    @property
    def max_mantissa(self) -> int:
        """Mantissa field of the largest finite number."""
        full = (1 << self.mbits) - 1
        return full - 1 if self.policy == "fn" else full

    @property
    def has_inf(self) -> bool:
        return self.policy == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.policy != "finite"

    @property
    def has_neg_zero(self) -> bool:
        return self.signed and self.policy not in ("fnuz", "e8m0")

    @property
    def canonical_nan(self) -> int | None:
        """The NaN pattern this project writes by default (positive quiet NaN where defined)."""
        if self.policy == "ieee":
            return (((1 << self.ebits) - 1) << self.mbits | (1 << (self.mbits - 1))) << self.shift
        if self.policy == "fn":
            return ((1 << (self.ebits + self.mbits)) - 1) << self.shift
        if self.policy == "fnuz":
            return 1 << (self.enc_width - 1)
        if self.policy == "e8m0":
            return (1 << self.ebits) - 1
        return None

    def max_finite(self) -> float:
        return float((2 - 2.0 ** -self.mbits * (1 + (self.policy == "fn"))) * 2.0 ** self.emax) \
            if self.policy != "e8m0" else float(2.0 ** self.emax)

    def with_overrides(self, **kw) -> "Format":
        return replace(self, **kw)

    def summary(self) -> str:
        sub = "subnormals" if self.subnormals else "no subnormals"
        cont = f", {self.width}-bit container" if self.container else ""
        return (f"{self.name:<13} e{self.ebits}m{self.mbits} bias={self.bias:<5} policy={self.policy:<6} "
                f"{'signed' if self.signed else 'unsigned'}, {sub}{cont}, "
                f"emin={self.emin}, emax={self.emax}, max={self.max_finite():.6g}")


def _f(name, e, m, bias, policy="ieee", signed=True, container=None, description=""):
    return Format(name, e, m, bias, policy, signed, True, container, description)


FORMATS: dict[str, Format] = {f.name: f for f in [
    _f("fp64", 11, 52, 1023, description="IEEE binary64"),
    _f("fp32", 8, 23, 127, description="IEEE binary32"),
    _f("tf32", 8, 10, 127, container=32, description="NVIDIA TensorFloat-32, top 19 bits of an fp32 container"),
    _f("bf16", 8, 7, 127, description="bfloat16"),
    _f("fp16", 5, 10, 15, description="IEEE binary16"),
    _f("fp8e4m3", 4, 3, 7, "fn", description="OCP FP8 E4M3 (fn): no inf, NaN = S.1111.111"),
    _f("fp8e5m2", 5, 2, 15, description="OCP FP8 E5M2 (IEEE-style specials)"),
    _f("fp6e2m3", 2, 3, 1, "finite", description="OCP FP6 E2M3 (no inf/NaN)"),
    _f("fp6e3m2", 3, 2, 3, "finite", description="OCP FP6 E3M2 (no inf/NaN)"),
    _f("fp4e2m1", 2, 1, 1, "finite", description="OCP FP4 E2M1 (no inf/NaN)"),
    _f("e8m0", 8, 0, 127, "e8m0", signed=False, description="OCP MX scale: 2^(E-127), 0xFF = NaN"),
    _f("ue4m3", 4, 3, 7, "fn", signed=False, description="NVFP4 scale: unsigned E4M3, 0x7F = NaN"),
    _f("fp8e4m3fnuz", 4, 3, 8, "fnuz", description="AMD CDNA3 FP8 E4M3: bias 8, NaN = 0x80, no -0"),
    _f("fp8e5m2fnuz", 5, 2, 16, "fnuz", description="AMD CDNA3 FP8 E5M2: bias 16, NaN = 0x80, no -0"),
]}

@dataclass(frozen=True)
class IntFormat(_HexText):
    """A two's-complement (``signed``) or unsigned integer of ``width`` bits: the operands and
    accumulators of the integer MMA instructions (PTX ``.s8 .u8 .s4 .u4 .s32``, AMD
    ``v_mfma_i32_*``). Not a floating-point format: it has a width and a range, nothing else,
    and only integer ops (``imma``) read it."""

    name: str
    width: int
    signed: bool = True
    description: str = field(default="", compare=False)
    kind = "int"
    shift = 0                     # no container bits below the encoding (as Format.shift)

    @property
    def lo(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    @property
    def hex_digits(self) -> int:
        return (self.width + 7) // 8 * 2

    def value(self, bits: int) -> int:
        """The integer a bit pattern encodes."""
        bits = int(bits) & ((1 << self.width) - 1)
        return bits - (1 << self.width) if self.signed and bits >> (self.width - 1) else bits

    def bits(self, value: int) -> int:
        """The bit pattern of an integer in range (FormatError otherwise)."""
        if not self.lo <= int(value) <= self.hi:
            raise FormatError(f"{value} is out of the range of {self.name} [{self.lo}, {self.hi}]")
        return int(value) & ((1 << self.width) - 1)

    def summary(self) -> str:
        return (f"{self.name:<13} {'signed' if self.signed else 'unsigned'} {self.width}-bit integer, "
                f"range [{self.lo}, {self.hi}]")


INT_FORMATS: dict[str, IntFormat] = {f.name: f for f in [
    IntFormat("int8", 8, True, "PTX .s8 / AMD i8"),
    IntFormat("uint8", 8, False, "PTX .u8"),
    IntFormat("int4", 4, True, "PTX .s4"),
    IntFormat("uint4", 4, False, "PTX .u4"),
    IntFormat("int32", 32, True, "PTX .s32 / AMD i32 accumulator"),
]}


def is_int_format(spec) -> bool:
    """Whether ``spec`` names (or is) an integer format of :data:`INT_FORMATS`."""
    return isinstance(spec, IntFormat) or (isinstance(spec, str) and spec in INT_FORMATS)


_CUSTOM = re.compile(r"^(u?)e(\d+)m(\d+)((?:[,:][a-z_]+=[A-Za-z0-9_+-]+)*)$")


def get_format(spec: "str | Format | IntFormat") -> "Format | IntFormat":
    """Look up a named format, or build a user-defined one.

    User formats are written ``e<E>m<M>[,bias=B][,policy=P][,subnormals=no]`` (``u`` prefix for
    unsigned), e.g. ``e5m10`` (= fp16), ``e4m3,bias=8,policy=fnuz`` or ``e8m7,subnormals=no``.
    A named format may take the same overrides: ``bf16,subnormals=no``. The integer formats
    (``int8 uint8 int4 uint4 int32``) come back as :class:`IntFormat`.
    """
    if isinstance(spec, (Format, IntFormat)):
        return spec
    if isinstance(spec, str) and spec in INT_FORMATS:
        return INT_FORMATS[spec]
    if not isinstance(spec, str) or not spec:
        raise FormatError(f"format must be a name, got {spec!r}")
    base, _, opts = spec.partition(",")
    if base in FORMATS:
        fmt = FORMATS[base]
        return _apply_opts(fmt, opts, spec) if opts else fmt
    m = _CUSTOM.match(spec.replace(":", ","))
    if not m:
        known = ", ".join(FORMATS)
        raise FormatError(f"unknown format {spec!r}; known formats: {known}; "
                          "or a custom 'e<E>m<M>[,bias=B][,policy=ieee|fn|fnuz|finite][,subnormals=no]'")
    unsigned, e, mm, rest = m.groups()
    e, mm = int(e), int(mm)
    kw = dict(name=spec, ebits=e, mbits=mm, bias=(1 << (e - 1)) - 1 if e >= 1 else 0, policy="ieee",
              signed=not unsigned)
    kw.update(_parse_opts(rest.lstrip(","), spec))
    return Format(**kw)        # options applied before validation (e.g. 'ue8m0,policy=e8m0')


def operand_formats(key: str) -> tuple[Format, Format]:
    """A's and B's formats from an operand key: one format (``fp16``: both), or ``AxB`` for mixed
    operands (``fp8e4m3xfp8e5m2``), as :attr:`smtmodel.model.Model.in_key` spells them."""
    try:
        f = get_format(key)
        return f, f
    except FormatError:
        if not isinstance(key, str) or key.count("x") != 1:
            raise
    a, b = key.split("x")
    try:
        return get_format(a), get_format(b)
    except FormatError:
        raise FormatError(f"unknown format or operand pair {key!r}: a format name, or A's and B's "
                          "formats joined by 'x' (fp8e4m3xfp8e5m2)") from None


def operand_key(fa: "str | Format", fb: "str | Format") -> str:
    """The operand key of a pair of formats: ``fp16`` when they agree, else ``AxB``."""
    a, b = get_format(fa).name, get_format(fb).name
    return a if a == b else f"{a}x{b}"


def _apply_opts(fmt: Format, opts: str, spec: str) -> Format:
    return replace(fmt, **_parse_opts(opts, spec))


def _parse_opts(opts: str, spec: str) -> dict:
    kw: dict = {"name": spec}
    for item in filter(None, opts.split(",")):
        key, _, val = item.partition("=")
        if key == "bias":
            try:
                kw["bias"] = int(val)
            except ValueError:
                raise FormatError(f"{spec!r}: bias must be an integer, got {val!r}") from None
        elif key == "policy":
            kw["policy"] = val
        elif key == "subnormals":
            if val not in ("yes", "no", "1", "0", "true", "false"):
                raise FormatError(f"{spec!r}: subnormals must be yes or no")
            kw["subnormals"] = val in ("yes", "1", "true")
        else:
            raise FormatError(f"{spec!r}: unknown format option {key!r} (bias, policy, subnormals)")
    return kw


# ---- NumPy / ml_dtypes views -------------------------------------------------------------

def numpy_dtype(fmt: "str | Format"):
    """The NumPy / ml_dtypes dtype whose bit layout is exactly this format, or None."""
    import ml_dtypes

    fmt = get_format(fmt)
    table = {
        "fp64": np.float64, "fp32": np.float32, "tf32": np.float32, "fp16": np.float16,
        "bf16": ml_dtypes.bfloat16, "fp8e4m3": ml_dtypes.float8_e4m3fn,
        "fp8e5m2": ml_dtypes.float8_e5m2, "fp8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
        "fp8e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "fp6e2m3": ml_dtypes.float6_e2m3fn,
        "fp6e3m2": ml_dtypes.float6_e3m2fn, "fp4e2m1": ml_dtypes.float4_e2m1fn,
        "e8m0": ml_dtypes.float8_e8m0fnu, "int8": np.int8, "uint8": np.uint8, "int32": np.int32,
    }
    return table.get(fmt.name)


def dtype_name(fmt: "str | Format") -> str | None:
    """The name NumPy / ml_dtypes and torch give the dtype whose bit layout is exactly this
    format (``float16``, ``bfloat16``, ``float8_e4m3fn``, ...), or None. TF32 lives in an fp32
    container and reads as ``float32``."""
    dt = numpy_dtype(fmt)
    return None if dt is None else np.dtype(dt).name


_DTYPE_ALIASES = {"e4m3": "fp8e4m3", "e5m2": "fp8e5m2"}
"""Short FP8 names of mmaemu's recordings."""


def format_of_dtype(dtype) -> Format:
    """The format of a dtype: a ``torch.dtype``, a NumPy / ml_dtypes dtype or a dtype's name
    (``"float8_e4m3fn"``, ``"torch.bfloat16"``, mmaemu's ``"e4m3"``); a format's own name is taken
    as is. FormatError for a dtype no format has."""
    if isinstance(dtype, str):
        name = dtype.removeprefix("torch.")
    elif type(dtype).__module__ == "torch":          # torch.float16 prints as "torch.float16"
        name = str(dtype).removeprefix("torch.")
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            raise FormatError(f"{dtype!r} is not a dtype") from None
    if not _BY_DTYPE:
        _BY_DTYPE.update({n: n for n in (*FORMATS, *INT_FORMATS)} | _DTYPE_ALIASES)
        for f in (*FORMATS, *INT_FORMATS):
            if f != "tf32" and dtype_name(f) is not None:      # float32 is fp32's, not TF32's
                _BY_DTYPE.setdefault(dtype_name(f), f)
    try:
        return get_format(_BY_DTYPE[name])
    except KeyError:
        raise FormatError(f"no format has the dtype {name!r}") from None


_BY_DTYPE: dict[str, str] = {}


_TORCH_VIEW = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}
"""The integer dtype of each width that torch supports fully (its uint16/32/64 are partial)."""


def bits_to_torch(bits, fmt: "str | Format", device=None):
    """A new torch tensor of the format's dtype holding these raw bit patterns, on ``device``
    (CPU by default). Imports torch; FormatError where torch has no dtype of this layout."""
    import torch

    fmt = get_format(fmt)
    name = dtype_name(fmt)
    if name is None or getattr(torch, name, None) is None:
        raise FormatError(f"torch has no dtype with the layout of {fmt.name}")
    u = uint_dtype(fmt)
    raw = np.asarray(bits).astype(u, order="C")         # a new array: the tensor owns its memory
    t = torch.from_numpy(raw.view(_TORCH_VIEW[raw.itemsize])).view(getattr(torch, name))
    return t if device is None else t.to(device)


def torch_to_bits(t) -> np.ndarray:
    """The raw bit patterns of a torch tensor (any device) as an unsigned NumPy array of its
    element width (``astype(np.uint64)`` for the project's uint64 bits)."""
    import torch

    w = t.element_size()
    x = t.contiguous().view(getattr(torch, _TORCH_VIEW[w])).cpu().numpy()
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[w])


def uint_dtype(fmt: "str | Format"):
    w = get_format(fmt).width
    return np.uint8 if w <= 8 else np.uint16 if w <= 16 else np.uint32 if w <= 32 else np.uint64


def bits_to_numpy(bits, fmt: "str | Format") -> np.ndarray:
    """Reinterpret raw bit patterns as an array of the format's NumPy / ml_dtypes type."""
    fmt = get_format(fmt)
    dt = numpy_dtype(fmt)
    if dt is None:
        raise FormatError(f"no NumPy/ml_dtypes type has the layout of {fmt.name}; use smtmodel.values()")
    return np.asarray(bits).astype(uint_dtype(fmt)).view(dt)


def numpy_to_bits(values, fmt: "str | Format") -> np.ndarray:
    """Raw bit patterns (uint64) of values already of the format's NumPy / ml_dtypes type.

    Values of another type are cast with NumPy / ml_dtypes rounding (round to nearest even);
    for TF32 the fp32 value must already be a TF32 value (its low 13 bits zero).
    """
    fmt = get_format(fmt)
    arr = np.asarray(values)
    if isinstance(fmt, IntFormat):      # two's complement / unsigned bits of the width (int4 has no NumPy type)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (np.trunc(arr) == arr)):
            raise FormatError(f"values are not integers: cannot encode them as {fmt.name}")
        if np.any(arr < fmt.lo) or np.any(arr > fmt.hi):
            raise FormatError(f"values out of the range of {fmt.name} [{fmt.lo}, {fmt.hi}]")
        return (arr.astype(np.int64) & np.int64((1 << fmt.width) - 1)).astype(np.uint64)
    dt = numpy_dtype(fmt)
    if dt is None:
        raise FormatError(f"no NumPy/ml_dtypes type has the layout of {fmt.name}")
    if arr.dtype != dt:
        with np.errstate(over="ignore", invalid="ignore"):     # overflow to inf / NaN is the cast's result
            arr = arr.astype(dt)
    bits = arr.view(uint_dtype(fmt)).astype(np.uint64)
    if fmt.shift and np.any(bits & np.uint64((1 << fmt.shift) - 1)):
        raise FormatError(f"values are not {fmt.name} values (low {fmt.shift} bits set); round them first")
    return bits
