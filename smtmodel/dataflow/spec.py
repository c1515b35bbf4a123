"""A GEMM dataflow as data: what a library does around the instruction (docs/dataflow.md).

Between the instruction (a catalog :class:`~smtmodel.model.Model`) and the bits a user sees sits
the library's dataflow. :class:`Dataflow` states it, independent of the values of alpha and beta:

* where C enters: the epilogue, or the accumulator (the chain starts from C, optionally
  pre-scaled: ``c_scale``);
* the epilogue form and its format; what beta = 0 does;
* the output: its format, rounding once or via fp32, FP8 saturation and scale_result, NaN pattern;
* the chains: K cut into k-tiles (the last zero-padded), the tiles assigned to S slices
  (contiguous | interleaved t mod S | explicit boundaries), each slice's chain restarting every
  ``restart`` of its own tiles (the restarted chunks added serially from +0);
* the combine of the slices' partial sums, and per-tensor / per-block scales.

Text form (``--dataflow``, read by :func:`smtmodel.dataflow.text.parse_dataflow`): ``PROFILE``
or ``PROFILE:key=value,...`` or ``key=value,...`` (keys: :data:`KEYS`); JSON:
:meth:`Dataflow.to_json` / :meth:`Dataflow.from_json`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace

from ..model import ModelError

C_ENTRY = ("epilogue", "accumulator")
C_SCALE = ("none", "beta", "beta/alpha")
EPILOGUES = ("fma_acc", "fma_c", "alpha_acc")
BETA0 = ("skip", "read", "fma0")
EPI_FMT = ("auto", "fp32", "fp64")
OUT_VIA = ("direct", "fp32")
SCALE_RESULT = ("fp8", "all", "none")
NAN = ("nvidia", "ieee")
ASSIGN = ("contiguous", "interleaved", "explicit")
PAD = ("tile", "block")
COMBINE = ("serial", "serial0", "pairwise", "output", "workspace")
COMBINE_OP = ("fadd", "ffma")
SCALE_A = ("tensor", "1x128")
SCALE_B = ("tensor", "128x128")
K0 = ("epilogue", "zero")


REGISTRY: dict = {}
"""The named profiles by name (filled by :mod:`.profiles`; :meth:`Dataflow.text` writes a
profile's variants relative to it)."""


class DataflowError(ModelError):
    """A malformed dataflow, a contradictory one, or one that does not fit a GEMM's shapes (a
    :class:`~smtmodel.model.ModelError`: one line for the command line, exit 2)."""


@dataclass(frozen=True)
class Dataflow:
    """One GEMM dataflow (module docstring; every field is documented in docs/dataflow.md)."""
    name: str = ""
    # ---- C and the epilogue --------------------------------------------------------------
    c_entry: str = "epilogue"     # epilogue | accumulator (the chain starts from C)
    c_scale: str = "none"         # accumulator entry: C as is | RN(beta*C) | RN(C*RN(beta/alpha))
    epilogue: str = "fma_acc"     # fma(a, acc, RN(b*C)) | fma(b, C, RN(a*acc)) | RN(a*acc) (C not read)
    beta0: str = "skip"           # beta = 0: C not read, RN(a*acc) | the form as written | fma(a, acc, +0)
    epi_fmt: str = "auto"         # the epilogue's format: fp32 (fp64 for fp64 models) | fp32 | fp64
    # ---- the output ----------------------------------------------------------------------
    out: str = "model"            # model (the instruction's output format) | fp32 | bf16 | fp16 | fp8e4m3 | fp8e5m2
    out_via: str = "direct"       # one RNE rounding from the epilogue format | RNE to fp32 first
    saturate: bool = True         # FP8 outputs: clamp to +-max (inf included, NaN passes) before rounding
    scale_result: str = "fp8"     # where a scale_result multiplies D (RN in the epilogue format): fp8 outputs | all | none
    nan: str = "nvidia"           # output NaN pattern: NVIDIA canonical (0x7FFFFFFF, 0x7FFF, 0x7F) | IEEE quiet
    # ---- the chains ----------------------------------------------------------------------
    tile: int = 0                 # k-tile width (0: the model's block L_max)
    pad: str = "tile"             # the last tile zero-padded to the tile width | only to the model's block
    slices: int = 1               # S
    assign: str = "contiguous"    # tiles to slices: contiguous runs | t mod S | explicit boundaries
    bounds: tuple = ()            # explicit: the S-1 interior slice boundaries, in tiles (stream-K)
    restart: int = 0              # a new chain every `restart` of a slice's own tiles (0: never)
    # ---- the combine ---------------------------------------------------------------------
    combine: str = "serial"       # slices: ((p0+p1)+p2).. | from +0 | pairwise tree | per-partition D in the
    #                               output type (serial split-K) | partials stored in the output type
    combine_op: str = "fadd"      # FADD, or FFMA with the per-block scale (restart chunks: acc = fma(s, p, acc))
    # ---- scales --------------------------------------------------------------------------
    scale_a: str = "tensor"       # per-tensor | 1x128 blocks (one per row and 128 of K)
    scale_b: str = "tensor"       # per-tensor | 128x128 blocks
    alpha_from_scales: bool = False   # per-tensor scales: alpha = RN(scale_a*scale_b) (cuBLASLt FP8)
    k0: str = "epilogue"          # K = 0: the epilogue runs on acc = +0 (or C) | D = +0, nothing computed
    k_multiple: int = 0           # K must be a multiple of this (the library refuses other K); 0: any K
    source: str = ""              # citation (profiles)

    # ---- checks --------------------------------------------------------------------------
    def validate(self) -> "Dataflow":
        for key, allowed in _CHOICES.items():
            if getattr(self, key) not in allowed:
                raise DataflowError(f"dataflow {key}={getattr(self, key)!r}: one of {', '.join(allowed)}")
        if self.out not in ("model", "fp32", "bf16", "fp16", "fp8e4m3", "fp8e5m2", "fp64"):
            raise DataflowError(f"dataflow out={self.out!r}: one of model, fp32, bf16, fp16, fp8e4m3, fp8e5m2, fp64")
        for key in ("tile", "slices", "restart", "k_multiple"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < (1 if key == "slices" else 0):
                raise DataflowError(f"dataflow {key}={v!r}: an integer >= {1 if key == 'slices' else 0}")
        if self.c_entry == "accumulator" and self.epilogue != "alpha_acc":
            raise DataflowError("contradictory dataflow: C enters the accumulator, so the epilogue is alpha_acc "
                                f"(got epilogue={self.epilogue})")
        if self.c_entry == "epilogue" and self.c_scale != "none":
            raise DataflowError("contradictory dataflow: c_scale applies only when C enters the accumulator")
        if self.epilogue == "alpha_acc" and self.c_entry == "epilogue":
            raise DataflowError("contradictory dataflow: epilogue alpha_acc reads no C; "
                                "use c=accumulator or an fma epilogue")
        if self.assign == "explicit":
            b = tuple(self.bounds)
            if len(b) != self.slices - 1 or list(b) != sorted(set(b)) or (b and b[0] < 1):
                raise DataflowError(f"dataflow bounds={_bounds_text(b)}: {self.slices - 1} increasing interior "
                                    "tile boundaries >= 1 for explicit slices")
        elif self.bounds:
            raise DataflowError("contradictory dataflow: bounds need assign=explicit")
        if self.combine == "output" and self.c_entry != "epilogue":
            raise DataflowError("contradictory dataflow: combine=output runs the epilogue per partition, "
                                "so C enters in the epilogue")
        if self.combine_op == "ffma" and self.scale_a == "tensor" and self.scale_b == "tensor":
            raise DataflowError("contradictory dataflow: combine_op=ffma multiplies per-block scales; "
                                "set scale_a=1x128 and/or scale_b=128x128")
        if (self.scale_a != "tensor" or self.scale_b != "tensor") and self.combine_op != "ffma":
            raise DataflowError("contradictory dataflow: per-block scales are applied by combine_op=ffma")
        if (self.scale_a != "tensor" or self.scale_b != "tensor") and (self.tile not in (128,) or self.restart != 1):
            raise DataflowError("contradictory dataflow: per-block scales of 128 along K need tile=128, restart=1")
        if self.alpha_from_scales and (self.scale_a != "tensor" or self.scale_b != "tensor"):
            raise DataflowError("contradictory dataflow: alpha_from_scales takes per-tensor scales")
        return self

    # ---- the text form -------------------------------------------------------------------
    def text(self) -> str:
        """The compact text form: the profile name, then the fields that differ from it."""
        base = REGISTRY.get(self.name)
        ref = base if base is not None else Dataflow()
        diff = [f"{k}={_value_text(getattr(self, k))}" for k in KEYS if getattr(self, k) != getattr(ref, k)]
        head = self.name if base is not None else ""
        if not diff:
            return head or "default"
        return f"{head}:{','.join(diff)}" if head else ",".join(diff)

    def describe(self) -> str:
        """One line in words (printed by gemm; JSON sidecars carry :meth:`to_json`)."""
        E = self.epi_fmt
        if self.c_entry == "accumulator":
            cs = {"none": "C", "beta": "RN(beta*C)", "beta/alpha": "RN(C*RN(beta/alpha))"}[self.c_scale]
            epi = f"chain from {cs}, D = RN(alpha*acc)"
        else:
            epi = {"fma_acc": "D = fma(alpha, acc, RN(beta*C))", "fma_c": "D = fma(beta, C, RN(alpha*acc))"}[self.epilogue]
            epi += {"skip": ", beta=0: RN(alpha*acc) (C not read)", "read": ", beta=0: C read",
                    "fma0": ", beta=0: fma(alpha, acc, +0)"}[self.beta0]
        S = self.slices
        tile = f"{self.tile}-wide k-tiles" if self.tile else "k-tiles of the model's block"
        ch = f"{tile}, {S} slice{'s' if S > 1 else ''}"
        if S > 1:
            ch += f" ({self.assign}{' ' + _bounds_text(self.bounds) if self.bounds else ''}, combine {self.combine})"
        if self.restart:
            ch += f", new chain every {self.restart} tile{'s' if self.restart > 1 else ''} of a slice"
        return f"{epi} in {'fp32' if E == 'auto' else E}; {ch}; out {self.out} ({self.out_via}, NaN {self.nan})"

    def to_json(self) -> dict:
        d = asdict(self)
        d["bounds"] = list(self.bounds)
        d["text"] = self.text()
        return d

    @classmethod
    def from_json(cls, obj: "dict | str") -> "Dataflow":
        if isinstance(obj, str):
            try:
                obj = json.loads(obj)
            except json.JSONDecodeError as e:
                raise DataflowError(f"dataflow JSON: {e}") from None
        if not isinstance(obj, dict):
            raise DataflowError("dataflow JSON must be an object")
        names = {f.name for f in fields(cls)}
        bad = sorted(set(obj) - names - {"text"})
        if bad:
            raise DataflowError(f"dataflow JSON: unknown field(s) {', '.join(bad)}")
        kw = {k: (tuple(v) if k == "bounds" else v) for k, v in obj.items() if k in names}
        return replace(cls(), **kw).validate()


_CHOICES = {"c_entry": C_ENTRY, "c_scale": C_SCALE, "epilogue": EPILOGUES, "beta0": BETA0, "epi_fmt": EPI_FMT,
            "out_via": OUT_VIA, "scale_result": SCALE_RESULT, "nan": NAN, "assign": ASSIGN, "pad": PAD,
            "combine": COMBINE, "combine_op": COMBINE_OP, "scale_a": SCALE_A, "scale_b": SCALE_B, "k0": K0}

KEYS = ("c_entry", "c_scale", "epilogue", "beta0", "epi_fmt", "out", "out_via", "saturate", "scale_result", "nan",
        "tile", "pad", "slices", "assign", "bounds", "restart", "combine", "combine_op", "scale_a", "scale_b",
        "alpha_from_scales", "k0", "k_multiple")
"""The fields of the text form, in order."""

ALIASES = {"c": "c_entry", "S": "slices", "split": "slices", "interval": "_interval"}
"""Short keys of the text form: ``c=accumulator``, ``S=3``; ``interval=N`` is ``tile=N,restart=1``
(the FP8 promotion interval N_C)."""


def _value_text(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, tuple):
        return _bounds_text(v)
    return str(v)


def _bounds_text(b) -> str:
    return "/".join(str(x) for x in b)


def _parse_value(key: str, val: str):
    low = val.strip().lower()
    if key in ("saturate", "alpha_from_scales"):
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise DataflowError(f"dataflow {key} takes yes or no, got {val!r}")
    if key in ("tile", "slices", "restart", "k_multiple", "_interval"):
        try:
            return int(val)
        except ValueError:
            raise DataflowError(f"dataflow {key} takes an integer, got {val!r}") from None
    if key == "bounds":
        try:
            return tuple(int(x) for x in val.split("/") if x.strip())
        except ValueError:
            raise DataflowError(f"dataflow bounds takes tile indices separated by '/', got {val!r}") from None
    return val.strip()
