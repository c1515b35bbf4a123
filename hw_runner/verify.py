"""The harness's verification plan: which kernel runs a model, the chunks of the validation mix,
and one chunk's comparison of a device's outputs with the model's twin (``mmaprobe verify``: the
command line runs these chunks as campaign tasks; the GPU side runs here, before them).
"""

from __future__ import annotations

import numpy as np

from smtmodel.formats import get_format
from smtmodel.sampling import KINDS, scale_mix, validation_mix

from . import runner
from .kernels import default_kernel, kernels_for, preferred


def kernel_for(model, arch: str):
    """The instruction a model says it runs on (its ``kernels``) where one exists on ``arch``,
    else the default kernel of its formats (e.g. the wgmma model of Hopper FP8 -> wgmma)."""
    fmts = (getattr(model, "in_key", model.in_fmt), model.c_fmt, model.out_fmt)     # stand-ins: one format
    sf = getattr(model, "scale_fmt", None)
    scale = (get_format(sf).name, int(model.scale_block)) if sf else None           # block-scaled models
    mine = [s for s in kernels_for(*fmts, arch, scale=scale) if s.id in getattr(model, "kernels", ())]
    return preferred(mine) if mine else default_kernel(*fmts, arch, scale=scale)


VERIFY_CHUNK = 1 << 18     # cases per campaign task of verify


def verify_draw(in_fmt: str, c_fmt: str, k: int, seed: int, chunk: int, n: int, b_fmt: str | None = None):
    """Chunk ``chunk`` of verify's validation mix: the first chunk is ``validation_mix(..., seed)``
    itself, chunk i > 0 draws from the seed sequence ``[seed, i]`` (independent streams); b in
    ``b_fmt`` where it differs (mixed operands)."""
    return validation_mix(in_fmt, c_fmt, k, n, seed if chunk == 0 else [seed, chunk], b_fmt=b_fmt)


def verify_scales(model, k: int, seed: int, chunk: int, n: int):
    """The block scales of chunk ``chunk`` for a block-scaled model (raw bits ``(n,
    model.scale_count(k))`` for a and for b, every kind of :data:`smtmodel.sampling.SCALE_KINDS`
    in turn, drawn from the seed sequence ``[seed, chunk, 1]``, apart from the elements); (None,
    None) for an unscaled model."""
    if not getattr(model, "scale_fmt", None):
        return None, None
    return scale_mix(model.scale_fmt, n, model.scale_count(k), [seed, chunk, 1])


def verify_task(model_id: str, other: str | None, k: int, seed: int, chunk: int, n: int, hw_d, nan_equal: bool,
                key: str, size: int = VERIFY_CHUNK, keep: int | None = None, twin: dict | None = None) -> dict:
    """One chunk of ``verify`` (a campaign task): the twin of ``model_id`` on the chunk's cases
    against the device's outputs ``hw_d`` (or, for ``--device twin:OTHER``, the twin of
    ``other``); per-kind counts, and the first ``keep`` mismatching cases (all if None)."""
    model = runner.default_model_lookup(model_id)
    fa, fb = getattr(model, "operand_fmts", (model.in_fmt, model.in_fmt))     # stand-ins have one format
    a, b, c, kinds = verify_draw(fa, model.c_fmt, k, seed, chunk, n, b_fmt=fb)
    sa, sb = verify_scales(model, k, seed, chunk, n)
    sc = {} if sa is None else {"a_scale": sa, "b_scale": sb}
    tw = np.asarray(model.evaluate(a, b, c, **sc, **(twin or {})), dtype=np.uint64)
    hw = (np.asarray(runner.default_model_lookup(other).evaluate(a, b, c, **sc, **(twin or {})), dtype=np.uint64)
          if other else np.asarray(hw_d, dtype=np.uint64))
    fo, fi, fc = get_format(model.out_fmt), get_format(fa), get_format(model.c_fmt)
    fbb = get_format(fb)
    fs = get_format(model.scale_fmt) if sa is not None else None
    mism = ~runner.agree(hw, tw, fo, nan_equal)
    base = chunk * size
    cases = [{"id": f"verify-{kinds[i]}-{base + i}", "kind": str(kinds[i]),
              "a": [fi.hex(int(x)) for x in a[i]], "b": [fbb.hex(int(x)) for x in b[i]], "c": fc.hex(int(c[i])),
              "expect": {model.id: fo.hex(int(tw[i]))}, "observed": {key: fo.hex(int(hw[i]))},
              **({} if sa is None else {"a_scale": [fs.hex(int(x)) for x in sa[i]],
                                        "b_scale": [fs.hex(int(x)) for x in sb[i]]})}
             for i in np.flatnonzero(mism)[:keep]]
    return {"status": "done", "cases": cases, "mismatches": int(mism.sum()),
            "kinds": {kind: [int(mism[kinds == kind].sum()), int((kinds == kind).sum())] for kind in KINDS}}
