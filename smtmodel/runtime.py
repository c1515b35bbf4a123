"""Parameters read at run time: one evaluation of a model reads several hypotheses side by side.

A :class:`Runtime` stands where a model's parameter (F, carry) is normally a Python constant: a
bitvector value per lane and the static tuple of values it may take (the widths the core needs
are those of the largest). The core's operations take either form and read both from the same
code (:func:`smtmodel.ops.fused.truncated_sum`), so a batch of hypotheses that differ only in
such parameters is one NumPy evaluation whose lanes are (hypothesis, case) pairs. Used by
:mod:`queries.identify.batched`; a SMT reading may use it too (the parameter a solver variable).
"""

from __future__ import annotations

from dataclasses import dataclass

from .bv import BV

NONE_CODE = 255
"""The lane code of ``None`` (e.g. carry = unbounded)."""

WIDTH = 8
"""Bits of a run-time parameter's lane value."""


@dataclass(frozen=True)
class Runtime:
    """A parameter given per lane: ``value`` (a ``WIDTH``-bit BV, ``NONE_CODE`` for None) takes
    one of ``choices`` (ints, or None)."""

    value: BV
    choices: tuple

    def __post_init__(self):
        if not self.choices or any(c is not None and not 0 <= c < NONE_CODE for c in self.choices):
            raise ValueError(f"run-time choices must be ints in [0, {NONE_CODE}) or None, got {self.choices}")

    @property
    def top(self) -> int | None:
        """The largest int choice (None if every choice is None)."""
        ints = [c for c in self.choices if c is not None]
        return max(ints) if ints else None

    @property
    def has_none(self) -> bool:
        return None in self.choices


def code(v) -> int:
    """The lane code of a parameter value."""
    return NONE_CODE if v is None else int(v)


def static(p):
    """The static bound of a parameter: its largest choice for a Runtime, else the value."""
    return p.top if isinstance(p, Runtime) else p


__all__ = ["NONE_CODE", "Runtime", "WIDTH", "code", "static"]
