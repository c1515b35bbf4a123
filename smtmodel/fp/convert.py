"""Format conversions, written once in the semantic core (both readings)."""

from __future__ import annotations

from ..bv import BV
from ..formats import Format
from .rounding import round_value
from .value import decode


def convert(bits: BV, src: "Format | str", dst: "Format | str", rm: str = "RNE",
            overflow: str = "ieee", flush_inputs: str | None = None, flush_output: bool = False,
            nan_pattern: int | None = None) -> BV:
    """Convert raw bits of ``src`` to raw bits of ``dst`` with rounding mode ``rm``.

    NaN becomes ``dst``'s canonical NaN (or ``nan_pattern``); infinities map to infinities, or
    where ``dst`` has none, to NaN (``overflow="ieee"``) or the largest finite value
    (``"saturate"``; also for formats with neither).
    """
    return round_value(decode(bits, src, flush_inputs), dst, rm, overflow, flush_output, nan_pattern)
