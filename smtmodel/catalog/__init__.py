"""The catalog of named models: seed 000 Tables 3-7 as data, plus the seeds' rival hypotheses.

Look a model up with :func:`get_model` (``ID`` or ``ID:key=value,...`` overrides); list them with
:func:`all_models`; find a catalog model's rivals with :func:`rivals_of` and the model of a
harness kernel on an architecture with :func:`model_for_kernel` (by the models' fields, never by
their ids' spelling).
"""

from __future__ import annotations

from ..model import INT_OPS, Model, ModelError
from .aliases import ALIAS_MODELS, ALIASES
from .amd import AMD_MODELS
from .cdna4 import CDNA4_MODELS, CDNA4_RIVALS
from .integer import INTEGER_MODELS
from .nvidia import NVIDIA_MODELS
from .rivals import RIVAL_MODELS

_CATALOG: dict[str, Model] = {}
for _m in NVIDIA_MODELS + AMD_MODELS + CDNA4_MODELS + RIVAL_MODELS + CDNA4_RIVALS + INTEGER_MODELS + ALIAS_MODELS:
    if _m.id in _CATALOG:
        raise RuntimeError(f"duplicate model id {_m.id}")
    _m.validate()
    _CATALOG[_m.id] = _m


def all_models() -> list[Model]:
    """The floating-point models (catalog and rivals); the integer MMA models are
    :func:`integer_models`, the aliases of another architecture's models :func:`alias_models`."""
    return [m for m in _CATALOG.values() if m.op not in INT_OPS and m.id not in ALIASES]


def alias_models() -> list[Model]:
    """Models that stand for another architecture's under their own ids (B300 = B200,
    :mod:`smtmodel.catalog.aliases`): found by :func:`get_model`, listed by ``mmaprobe models``,
    kept out of :func:`all_models`."""
    return [m for m in _CATALOG.values() if m.id in ALIASES]


def unvalidated_note(m: Model) -> str:
    """One line for every output that uses model ``m``: empty for a validated model, else what it
    rests on (``Model.validated`` is False for hypotheses no capture or seed measurement backs)."""
    if m.validated:
        return ""
    base = m.id.split(":")[0]
    why = (f"an assumed alias of {ALIASES[base]}" if base in ALIASES else
           "a hypothesis no hardware capture or seed measurement backs")
    return f"UNVALIDATED model {m.id}: {why}; its predictions are a hypothesis to test, not a reference"


def unvalidated_ids(ids) -> list[Model]:
    """The models among ``ids`` (as a vector file names them) that are UNVALIDATED; an id that is
    not a model here (an identified-model file elsewhere) is left out."""
    found = []
    for mid in ids:
        try:
            m = get_model(mid)
        except (ModelError, ValueError, OSError):
            continue
        if not m.validated:
            found.append(m)
    return found


def integer_models() -> list[Model]:
    """The integer MMA models (op ``imma``: IMMA, ``v_mfma_i32_*``), kept apart from the
    floating-point ones that the suite, identify and the bounds read."""
    return [m for m in _CATALOG.values() if m.op in INT_OPS]


def get_model(spec: "str | Model") -> Model:
    """A catalog model by id, with optional overrides: ``hopper-fp16-fp32:F=24,carry=3``."""
    if isinstance(spec, Model):
        return spec
    if spec.endswith(".json") or ".json:" in spec:     # a model file written by mmaprobe identify
        from .identified import load_identified
        path, sep, over = spec.partition(".json")
        m = load_identified(path + ".json")
        over = over.removeprefix(":")
        return m.with_overrides(over) if over else m
    base, sep, over = spec.partition(":")
    if base not in _CATALOG:
        close = [m for m in _CATALOG if base.split("-")[0] in m][:6]
        hint = f" (similar: {', '.join(close)})" if close else ""
        raise ModelError(f"unknown model {base!r}{hint}; `mmaprobe models` lists them")
    m = _CATALOG[base]
    return m.with_overrides(over) if sep else m


def rivals_of(model_id: str) -> list[Model]:
    """The rival hypotheses (``kind="rival"``) that contradict catalog model ``model_id``."""
    return [m for m in _CATALOG.values() if m.rival_of == model_id]


def model_for_kernel(kernel_id: str, sm: "int | str", k: int | None = None) -> Model | None:
    """The catalog model (not a rival) of the instruction harness kernel ``kernel_id`` runs on
    ``sm`` (e.g. 90, or an AMD target such as ``"gfx90a"``), or None where the catalog names none.

    ``k``: the instruction's K. A model describes the instruction of the largest K of its formats
    (its block L); an instruction of fewer products computes one block of its own K, so a chain of
    them rounds, or clamps, after every K products: the model is read with the override ``L=K``
    (an H100 runs ``mma.sync`` m16n8k8 and m16n8k4 chains so: hwdata/survey/h100-sxm)."""
    where = "gfx" if isinstance(sm, str) else "sm"
    found = [m for m in _CATALOG.values() if m.kind == "catalog" and getattr(m, where) == sm and kernel_id in m.kernels]
    if not found:
        return None
    m = found[0]
    if k is not None and m.block(1 << 20) > k:
        return get_model(f"{m.id}:L={k}")
    return m


__all__ = ["Model", "ModelError", "alias_models", "all_models", "get_model", "integer_models", "model_for_kernel",
           "rivals_of", "unvalidated_note"]
