"""Every dispatch table by name: the recorded cuBLASLt FP8 tables (:mod:`.dispatch`) and the
H100 torch ``cublasGemmEx`` rule (:mod:`.hopper_gemmex`), behind one lookup interface
(``lookup``, ``lookup_m``, ``not_in_table``, ``model_id``, ``setting_text``)."""

from __future__ import annotations

import difflib

from . import dispatch, hopper_gemmex
from .dispatch import DispatchError

NAMES = (*dispatch.TABLES, hopper_gemmex.NAME)
ANSWERS = (dispatch.Dispatch, hopper_gemmex.Predicted)
"""The types of a table's answer for one call."""


def get_table(name: str):
    """A table by name (a recorded one, or the rule); an unknown name is one line."""
    if name == hopper_gemmex.NAME:
        return hopper_gemmex.RuleTable()
    if name not in dispatch.TABLES:
        close = difflib.get_close_matches(name, list(NAMES), n=2, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise DispatchError(f"unknown dispatch table {name!r}{hint} (tables: {', '.join(NAMES)})")
    return dispatch.get_table(name)
