"""A query's answer as a vector file (``../shared/spec/vectors.md``): its vectors with both
models' outputs, the query and the solvers that answered it."""

from __future__ import annotations

from smtmodel.catalog import unvalidated_ids
from smtmodel.formats import get_format
from smtmodel.vectors import VectorFile, make_header

from .api import QueryResult


def vector_file(res: QueryResult, tool: str = "mmaprobe distinguish", note: str = "") -> VectorFile:
    """A vector file (spec/vectors.md) of a query's vectors with both models' outputs."""
    fi, fc, fo = (get_format(f) for f in res.formats)
    fa, fb = (get_format(f) for f in (res.operand_fmts or (fi.name, fi.name)))
    a_id, b_id = res.models
    source = {"tool": tool, "query": f"distinguish {a_id} {b_id} k={res.k}", "solver": res.solver,
              "solver_versions": solver_versions(), "seconds": round(res.seconds, 3),
              "constraints": res.constraints.describe(), "simple": res.simple}
    if note:
        source["note"] = note
    extra = {"models": [a_id, b_id], "source": source}
    weak = [m.id for m in unvalidated_ids([a_id, b_id])]
    if weak:                 # the file says which of its predictions no capture backs
        extra["unvalidated"] = weak
    scale_fmt, scale_block = res.scales if res.scales else (None, None)
    if scale_fmt:
        extra.update(scale_fmt=get_format(scale_fmt).name, scale_block=scale_block)
    vf = VectorFile(make_header((fa.name, fb.name), fc.name, fo.name, res.k, **extra))
    for i, vec in enumerate(res.vectors):
        case = {"id": f"{a_id}-vs-{b_id}-{i}", "a": [fa.hex(x) for x in vec.a], "b": [fb.hex(x) for x in vec.b],
                "c": fc.hex(vec.c), "expect": {m: fo.hex(d) for m, d in vec.d.items()}}
        if vec.a_scale is not None:
            fs = get_format(scale_fmt)
            case["a_scale"] = [fs.hex(x) for x in vec.a_scale]
            case["b_scale"] = [fs.hex(x) for x in vec.b_scale]
        if vec.level:
            case["note"] = f"simple level {vec.level}"
        vf.cases.append(case)
    return vf


def solver_versions() -> str:
    """The solvers' versions, for a vector file's provenance."""
    out = []
    for mod, attr in (("z3", "get_version_string"), ("cvc5", None), ("bitwuzla", "version")):
        try:
            m = __import__(mod)
            v = getattr(m, attr)() if attr else getattr(m, "__version__", "?")
            out.append(f"{mod} {v}")
        except (ImportError, AttributeError):
            pass
    return ", ".join(out)
