"""The catalog of named models: seed 000 Tables 3-7 as data, plus the seeds' rival hypotheses.

Look a model up with :func:`get_model` (``ID`` or ``ID:key=value,...`` overrides); list them with
:func:`all_models`.
"""

from __future__ import annotations

from ..model import Model, ModelError
from .amd import AMD_MODELS
from .nvidia import NVIDIA_MODELS
from .rivals import RIVAL_MODELS

_CATALOG: dict[str, Model] = {}
for _m in NVIDIA_MODELS + AMD_MODELS + RIVAL_MODELS:
    if _m.id in _CATALOG:
        raise RuntimeError(f"duplicate model id {_m.id}")
    _m.validate()
    _CATALOG[_m.id] = _m


def all_models() -> list[Model]:
    return list(_CATALOG.values())


def get_model(spec: "str | Model") -> Model:
    """A catalog model by id, with optional overrides: ``hopper-fp16-fp32:F=24,carry=3``."""
    if isinstance(spec, Model):
        return spec
    base, sep, over = spec.partition(":")
    if base not in _CATALOG:
        close = [m for m in _CATALOG if base.split("-")[0] in m][:6]
        hint = f" (similar: {', '.join(close)})" if close else ""
        raise ModelError(f"unknown model {base!r}{hint}; `mmaprobe models` lists them")
    m = _CATALOG[base]
    return m.with_overrides(over) if sep else m


__all__ = ["Model", "ModelError", "all_models", "get_model"]
