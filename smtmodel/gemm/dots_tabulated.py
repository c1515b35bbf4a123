"""The tabulated reading of a GEMM's dot products (:mod:`smtmodel.tabulate`): element by element,
repeated block groups' steps tabulated."""

from __future__ import annotations

import numpy as np

from ..model import Model

def dots(m: Model, a, b, c, k0: int, k1: int, jobs) -> np.ndarray:
    """The NumPy reading element by element with repeated block groups tabulated."""
    from ..tabulate import dots
    return dots(m, a, b, c, k0, k1)
