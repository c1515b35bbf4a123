"""Architectures whose models are aliases of another architecture's: the same arithmetic assumed,
under their own ids, so that a device of that architecture names its own models.

B300 / GB300 (Blackwell Ultra, sm_103): floating-point ``tcgen05`` and ``mma`` as B200 (sm_100),
and no integer ``tcgen05`` (NVIDIA cuBLASDx API reference, supported-architecture card: "SM 1030
... no integer tcgen05"). No public source reports a floating-point difference from B200, so each
B200 floating-point catalog model has a B300 alias (``blackwell-ultra-...``) computing the same
bits; its source text says that this is an assumption, and it is UNVALIDATED
(``validated=False``): every output that uses it says so. There are no B300 integer models.

Aliases are data: :data:`ALIASES` maps each alias id to the id it stands for. They are not in
:func:`smtmodel.catalog.all_models` (a pair of an alias and its model is one model twice, and the
suite, identify and the bounds would only repeat work); :func:`smtmodel.catalog.alias_models`
lists them and :func:`smtmodel.catalog.get_model` finds them.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import INT_OPS, Model
from .nvidia import NVIDIA_MODELS

B300_ARCH, B300_SM = "blackwell-ultra", 103
B300_ASSUMPTION = ("ASSUMPTION: B300 (Blackwell Ultra, sm_103) computes as B200 (sm_100); no public source reports "
                   "a floating-point difference; cuBLASDx API reference: SM 1030, floating-point tcgen05 only, "
                   "no integer tcgen05")


def _alias(m: Model) -> Model:
    return replace(m, id=m.id.replace("blackwell-", f"{B300_ARCH}-", 1), arch=B300_ARCH, sm=B300_SM,
                   validated=False, source=f"{B300_ASSUMPTION}; alias of {m.id} ({m.source})",
                   description=f"B300 (sm_103) [UNVALIDATED alias of {m.id}]: {m.description}")


_B200 = [m for m in NVIDIA_MODELS if m.arch == "blackwell" and m.kind == "catalog" and m.op not in INT_OPS]
ALIAS_MODELS: list[Model] = [_alias(m) for m in _B200]
ALIASES: dict[str, str] = {a.id: m.id for a, m in zip(ALIAS_MODELS, _B200)}
"""Alias id -> the id of the model it stands for."""
