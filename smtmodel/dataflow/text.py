"""The text form of a dataflow (``--dataflow``): ``PROFILE``, ``PROFILE:key=value,...``,
``key=value,...`` or a JSON object (docs/dataflow.md)."""

from __future__ import annotations

from dataclasses import replace

from .profiles import DEFAULT, get_profile
from .spec import ALIASES, KEYS, Dataflow, DataflowError, _parse_value


def parse_dataflow(text: "str | Dataflow | dict | None") -> Dataflow:
    """``PROFILE``, ``PROFILE:key=value,...``, ``key=value,...``, a JSON object (text starting
    with ``{``), a dict, or a :class:`Dataflow`; None: the default (:data:`DEFAULT`)."""
    if text is None:
        return DEFAULT
    if isinstance(text, Dataflow):
        return text.validate()
    if isinstance(text, dict):
        return Dataflow.from_json(text)
    text = str(text).strip()
    if text.startswith("{"):
        return Dataflow.from_json(text)
    head, sep, rest = text.partition(":")
    if "=" in head:                       # no profile: key=value,... on the default
        base, items = DEFAULT, text
    else:
        base, items = get_profile(head), rest
    kw = {}
    for item in filter(None, (s.strip() for s in items.split(","))):
        key, eq, val = item.partition("=")
        key = ALIASES.get(key.strip(), key.strip())
        if not eq or (key not in KEYS and key != "_interval"):
            raise DataflowError(f"bad dataflow item {item!r}: use key=value with key in {', '.join(KEYS)} "
                                f"(or {', '.join(k for k in ALIASES)})")
        v = _parse_value(key, val)
        if key == "_interval":
            if v < 1:
                raise DataflowError(f"dataflow interval takes an integer >= 1, got {val!r}")
            kw["tile"], kw["restart"] = v, 1
        else:
            kw[key] = v
    if kw.get("c_entry") == "accumulator" and "epilogue" not in kw:
        kw["epilogue"] = "alpha_acc"             # C in the accumulator: the epilogue only scales by alpha
    if kw.get("c_entry") == "epilogue" and "epilogue" not in kw and base.epilogue == "alpha_acc":
        kw["epilogue"] = "fma_acc"
        kw.setdefault("c_scale", "none")
    if "bounds" in kw and "assign" not in kw:
        kw["assign"] = "explicit"
    if not kw:
        return base
    return replace(base, name=base.name, **kw).validate()
