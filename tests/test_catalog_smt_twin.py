"""For every catalog model, the SMT reading (z3 terms, evaluated on constants) equals the twin.

Inputs come from the validation mix of the harness (normal, wide-exponent, cancellation-heavy,
raw bit patterns with subnormals and specials). Both readings run the same ``Model.build``; this
checks that the backends' primitives agree on whole models. The default run uses 120 cases for
one model of each operation shape (the shape's primitives are the representative's); ``-m slow``
runs 40 for every other model and 2,000 for every model.
"""

from __future__ import annotations

import numpy as np
import pytest
import z3

from smtmodel.bv.z3_backend import Z3Backend
from smtmodel.catalog import all_models
from smtmodel.formats import get_format
from smtmodel.sampling import validation_mix

from conftest import representatives

MODELS = all_models()


def _k(m):
    return m.block(m.L or 1) if m.op != "fma" else 4


REPS = representatives([m for m in MODELS if m.validated])   # the UNVALIDATED (CDNA4) ops: 40 cases, -m slow 2000


def _cases(m, n, seed):
    k = _k(m)
    fa, fb = m.operand_fmts
    a, b, c, _ = validation_mix(fa, m.c_fmt, k, n, seed, b_fmt=fb)
    scales = None
    if m.scale_fmt:
        rng = np.random.default_rng(seed)
        fs = get_format(m.scale_fmt)
        nb = -(-k // m.scale_block)          # a block shorter than a scale block takes one scale
        lo, hi = (120, 135) if fs.name == "e8m0" else (0x30, 0x48)   # scales near 1, plus some raw
        sa = rng.integers(lo, hi, (n, nb), dtype=np.int64).astype(np.uint64)
        sb = rng.integers(lo, hi, (n, nb), dtype=np.int64).astype(np.uint64)
        raw = rng.random((n, nb)) < 0.1
        sa[raw] = rng.integers(0, 1 << fs.width, raw.sum(), dtype=np.int64).astype(np.uint64)
        scales = (sa, sb)
    return a, b, c, scales


def smt_outputs(m, a, b, c, scales=None) -> list[int]:
    """The SMT reading's output bits on each case: z3's model evaluator folds the output term on
    the case's constants (every input assigned; a term left symbolic fails ``as_long``), about
    1.6x faster than ``substitute`` + ``simplify`` on these terms, the same z3 reading of the
    same term. ``scales``: (a_scale, b_scale) arrays (N, S) or None."""
    B = Z3Backend()
    sa_v, sb_v, sc_v, d, sym_scales = m.symbolic(B, a.shape[1])
    (wa, wb), (_, wc, _) = m.operand_widths, m.widths
    out = []
    for i in range(len(c)):
        subs = [(x.v, z3.BitVecVal(int(v), wa)) for x, v in zip(sa_v, a[i])]
        subs += [(x.v, z3.BitVecVal(int(v), wb)) for x, v in zip(sb_v, b[i])]
        subs.append((sc_v.v, z3.BitVecVal(int(c[i]), wc)))
        if sym_scales:
            ws = get_format(m.scale_fmt).width
            subs += [(x.v, z3.BitVecVal(int(v), ws)) for x, v in zip(sym_scales[0], scales[0][i])]
            subs += [(x.v, z3.BitVecVal(int(v), ws)) for x, v in zip(sym_scales[1], scales[1][i])]
        case = z3.Model()
        for x, val in subs:
            case.update_value(x.decl(), val)
        out.append(case.eval(d.v).as_long())
    return out


def check_model(m, n, seed=11):
    a, b, c, scales = _cases(m, n, seed)
    twin = m.evaluate(a, b, c, *(scales or (None, None)))
    bad = [(i, got, int(twin[i])) for i, got in enumerate(smt_outputs(m, a, b, c, scales)) if got != int(twin[i])]
    assert not bad, f"{m.id}: {len(bad)}/{n} differ, first case {bad[0][0]}: smt {bad[0][1]:#x} twin {bad[0][2]:#x}"


# The default run checks one model per operation shape (the representative's primitives are the
# shape's: the other models differ in parameters the same primitives read); ``-m slow`` every
# model on 40 cases here and on 2,000 below.
DEFAULT = [pytest.param(m, id=m.id, marks=() if m.id in REPS else pytest.mark.slow) for m in MODELS]


@pytest.mark.parametrize("m", DEFAULT)
def test_smt_reading_equals_twin(m):
    check_model(m, 120 if m.id in REPS and not m.mixed else 40)


@pytest.mark.slow
@pytest.mark.parametrize("m", MODELS, ids=[m.id for m in MODELS])
def test_smt_reading_equals_twin_2000_every_model(m):
    check_model(m, 2000, seed=12)
