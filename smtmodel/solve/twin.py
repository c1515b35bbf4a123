"""The twin-search engine: candidate inputs evaluated in batches by the NumPy reading of the core.

Cheap before expensive: a query that a few thousand concrete cases already answer needs no
solver. The query supplies the candidates (structured probes first, then random cases within its
constraints) and the acceptance test (its assertions read by the twin, one lane per candidate).
The engine can only answer sat -- an exhausted search or budget is ``unknown``, never a proof.
"""

from __future__ import annotations

import time

import numpy as np

from .result import Engine, Result, Sat, Unknown


class TwinSearch(Engine):
    name = "twin"

    def search(self, batches, accept, timeout: float, want: int = 1) -> Result:
        """``batches``: iterable of ``{name: uint64 array (N,)}``; ``accept(batch)``: a bool array
        (N,). Returns Sat with the first accepted case as ``model`` and up to ``want`` distinct
        accepted cases in ``extra["models"]``, or Unknown when the candidates or ``timeout``
        run out."""
        t0 = time.perf_counter()
        found: list = []
        seen: set = set()
        tried = 0
        for batch in batches:
            names = list(batch)
            n = len(batch[names[0]])
            tried += n
            for i in np.flatnonzero(accept(batch)):
                case = {nm: int(batch[nm][i]) for nm in names}
                key = tuple(case.values())
                if key not in seen:
                    seen.add(key)
                    found.append(case)
                    if len(found) >= want:
                        break
            if len(found) >= want or time.perf_counter() - t0 > timeout:
                break
        dt = time.perf_counter() - t0
        if found:
            res = Sat(found[0], dt, self.name)
            res.extra["models"] = found
            res.extra["tried"] = tried
            return res
        return Unknown(f"no case found among {tried} candidates", dt, self.name)
