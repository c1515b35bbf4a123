"""A query's answer as a vector file (``../shared/spec/vectors.md``): its vectors with both
models' outputs, the query and the solvers that answered it."""

from __future__ import annotations

import numpy as np

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
    header = make_header((fa.name, fb.name), fc.name, fo.name, res.k, **extra)
    vecs = res.vectors
    if not vecs:
        return VectorFile(header)
    col = (lambda key: np.array([[int(x) for x in getattr(v, key)] for v in vecs], dtype=np.uint64))
    scaled = vecs[0].a_scale is not None
    return VectorFile.from_arrays(
        header, col("a"), col("b"), np.array([int(v.c) for v in vecs], dtype=np.uint64),
        ids=f"{a_id}-vs-{b_id}", a_scale=col("a_scale") if scaled else None, b_scale=col("b_scale") if scaled else None,
        expect={m: np.array([int(v.d[m]) for v in vecs], dtype=np.uint64) for m in vecs[0].d},
        extra=[{"note": f"simple level {v.level}"} if v.level else {} for v in vecs])


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
