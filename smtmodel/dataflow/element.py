"""One GEMM output element under a dataflow as a single term of any backend (the SMT reading).

The same composition as the batched :func:`smtmodel.gemm.gemm_bits`: the model's chains
(:meth:`Model.build`) over the plan's chunks (:mod:`.plan`), then the steps of :mod:`.steps`.
Used for small GEMMs: tests read it with z3 on constants and compare with the twins.
"""

from __future__ import annotations

from ..formats import get_format
from . import steps
from .plan import chains
from .spec import Dataflow


def element(m, df: Dataflow, a: list, b: list, c, *, alpha_bits: int, beta_bits: int, beta_zero: bool,
            has_c: bool = True, q_bits: int | None = None, sr_bits: int | None = None, out: str | None = None,
            E: str | None = None, block_scale=None):
    """D[i, j] from row i of op(A) (``a``, K bit vectors), column j of op(B) (``b``) and C[i, j]
    (``c`` in the model's c format). alpha/beta/q/scale_result are raw bits of the epilogue
    format ``E``; ``beta_zero`` says whether beta is +-0 (it selects the beta = 0 rule, as the
    batched reading does from the bits); ``block_scale(t)``: the per-block scale term of k-tile t
    (``combine_op=ffma``)."""
    K = len(a)
    B = (a[0] if a else c).B
    if E is None:
        E = df.epi_fmt if df.epi_fmt != "auto" else ("fp64" if get_format(m.out_fmt).width > 32 else "fp32")
    if q_bits is None and df.c_scale == "beta/alpha":
        q_bits = steps.beta_over_alpha(E, alpha_bits, beta_bits)
    out = out or (m.out_fmt if df.out == "model" else df.out)
    if K == 0 and df.k0 == "zero":
        return steps.zero(B, out)
    use_c = "read" if (has_c and not beta_zero) else df.beta0
    wa, wb = m.operand_widths
    za, zb = B.const(0, wa), B.const(0, wb)
    c0 = None
    if df.c_entry == "accumulator" and use_c == "read":
        c0 = steps.c_prescale(c, m.c_fmt, E, df.c_scale, alpha_bits, beta_bits, q_bits)
    zero_c = steps.zero(B, m.c_fmt)

    def chain(idx, start):
        if len(idx) == 0:
            return steps.to_fmt(start, m.c_fmt, m.out_fmt) if start is not None else steps.zero(B, m.out_fmt)
        aa = [a[k] if k >= 0 else za for k in idx]
        bb = [b[k] if k >= 0 else zb for k in idx]
        return m.build(aa, bb, zero_c if start is None else start)

    parts = []
    for s, chunks in enumerate(chains(df, m, K)):
        start = c0 if s == 0 else None
        if not chunks:
            parts.append(steps.zero(B, E) if start is None else steps.to_fmt(start, m.c_fmt, E))
        elif len(chunks) == 1:
            parts.append(steps.to_fmt(chain(chunks[0], start), m.out_fmt, E))
        else:
            part = steps.zero(B, E)
            for j, idx in enumerate(chunks):
                p = steps.to_fmt(chain(idx, start if j == 0 else None), m.out_fmt, E)
                if df.combine_op == "ffma":
                    part = steps.ffma(block_scale(int(idx[idx >= 0][0]) // 128), p, part, E)
                else:
                    part = steps.add(part, p, E)
            parts.append(part)
    form = "alpha_acc" if df.c_entry == "accumulator" else df.epilogue
    if df.c_entry == "accumulator":
        use_c = "skip"
    zero_cf = steps.zero(B, m.c_fmt)
    cc = c if (has_c and use_c == "read") else zero_cf

    def finish(acc, cv, c_fmt, beta, how):
        d = steps.epilogue(acc, cv, E, form, alpha_bits, beta, c_fmt, how)
        return steps.output(d, E, out, df.out_via, df.saturate, sr_bits, df.nan)

    if df.combine == "output" and len(parts) > 1:
        one = _one(E)
        d = finish(parts[0], cc, m.c_fmt, beta_bits, use_c)
        for p in parts[1:]:
            d = finish(p, d, out, one, "read")
        return d
    if len(parts) > 1 and df.combine == "workspace":
        parts = [steps.to_fmt(steps.to_fmt(p, E, out), out, E) for p in parts]
    if len(parts) == 1:
        acc = parts[0]
    elif df.combine == "pairwise":
        S = len(parts)
        h = -(-S // 2)
        acc = parts[S - 1]
        for i in range(h):
            slot = steps.add(parts[i], parts[i + h], E) if i + h < S - 1 else parts[i]
            acc = steps.add(acc, slot, E)
    else:
        acc = steps.zero(B, E) if df.combine == "serial0" else parts[0]
        for p in (parts if df.combine == "serial0" else parts[1:]):
            acc = steps.add(acc, p, E)
    return finish(acc, cc, m.c_fmt, beta_bits, use_c)


def _one(E: str) -> int:
    from ..fp.classify import one_bits
    return one_bits(E)
