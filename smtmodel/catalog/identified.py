"""Models identified by ``mmaprobe identify``: a JSON catalog entry (``kind: mmaprobe.model``) read
back as a :class:`~smtmodel.model.Model`, so ``--model identified.json`` works wherever an id does."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..model import Model, ModelError

KIND = "mmaprobe.model"


def load_identified(path) -> Model:
    """The model of an identified-model file (its ``model`` fields), validated."""
    p = Path(path)
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelError(f"{path}: cannot read a model file ({exc})") from None
    if not isinstance(obj, dict) or obj.get("kind") != KIND or not isinstance(obj.get("model"), dict):
        raise ModelError(f"{path}: not a model file (kind {KIND!r} with a 'model' object)")
    names = {f.name for f in dataclasses.fields(Model)} - {"overrides"}
    fields = {k: v for k, v in obj["model"].items() if k in names}
    if "zero_align" in obj["model"]:      # files written before the zero rules split (ZERO_ALIASES)
        for k in ("zero_prod", "zero_c"):
            fields.setdefault(k, obj["model"]["zero_align"])
    fields["kernels"] = tuple(fields.get("kernels") or ())
    try:
        m = Model(**fields)
    except TypeError as exc:
        raise ModelError(f"{path}: bad model fields ({exc})") from None
    m.validate()
    return m
