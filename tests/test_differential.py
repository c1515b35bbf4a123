"""Differential: the symbolic readings (z3, cvc5) of the semantic core, evaluated on concrete
inputs, equal the concrete NumPy reading, operation by operation.

Each case builds its symbolic term ONCE over solver variables (several operations' results
concatenated into one bitvector), then for every concrete input gives the
variables constants and lets the solver fold the term to a value (z3: its model evaluator on a model
assigning every variable, about 1.6x faster than ``substitute`` + ``simplify``; cvc5:
``Term.substitute`` + ``Solver.simplify``). The NumPy reading computes all
inputs at once. Expected values: the NumPy reading; the two symbolic readings must agree with it.

Inputs are seeded NumPy draws that over-weight specials (tests/conftest.py): zeros, subnormal
edges, max finite, infinities, NaNs, shift amounts >= width, sign-bit patterns.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
import z3

from conftest import draw_bits, draw_uint
from smtmodel.bv import NUMPY, abs_signed, clamp_shift, clz, ite, lshr_sticky, smax, smin, umax, umin
from smtmodel.bv.core import BV, Bool
from smtmodel.formats import get_format
from smtmodel.fp import convert, decode, fma, fp_add, fp_mul

N_Z3 = 10_000           # inputs per case for z3 (every operation of a case sees all of them): -m slow
N_Z3_DEFAULT = 800    # the default run's (the same edge-heavy draw, fewer inputs)
N_CVC5 = 500            # inputs per case for cvc5: -m slow
N_CVC5_DEFAULT = 150    # the default run's


# ---------------------------------------------------------------------------------------------
# cases: (input widths, input generator, function of BVs -> {name: BV | Bool})
# ---------------------------------------------------------------------------------------------

@dataclass
class Case:
    name: str
    widths: list[int]
    draw: Callable[[int, np.random.Generator], list[list[int]]]
    fn: Callable[..., dict]


def prim_ops(x: BV, y: BV, n: BV) -> dict:
    """Every primitive and derived op of smtmodel/bv/core.py (``n`` is a shift amount)."""
    w = x.w
    out = {
        "add": x + y, "sub": x - y, "mul": x * y, "and": x & y, "or": x | y, "xor": x ^ y,
        "not": ~x, "neg": -x, "rsub": 5 - x,
        "shl_var": x << n, "lshr_var": x.lshr(n), "ashr_var": x.ashr(n),
        "eq": x.eq(y), "ne": x.ne(y), "ult": x.ult(y), "ule": x.ule(y), "ugt": x.ugt(y), "uge": x.uge(y),
        "slt": x.slt(y), "sle": x.sle(y), "sgt": x.sgt(y), "sge": x.sge(y),
        "extract_hi": x.extract(w - 1, w // 2), "extract_lo": x.extract(w // 2, 0),
        "concat": x.concat(y), "zext": x.zext(5), "sext": x.sext(7), "sext_wide": x.sext(70),
        "uresize_down": x.uresize(max(w // 2, 1)), "sresize_up": x.sresize(w + 3),
        "clz": clz(x), "clz_y": clz(y), "smax": smax(x, y), "smin": smin(x, y), "umax": umax(x, y),
        "umin": umin(x, y), "ite": ite(x.slt(y), y, x), "ite_bool": ite(x.eq(y), x.msb(), y.bit(0)),
        "abs_neg": abs_signed(x)[0], "abs_mag": abs_signed(x)[1],
        "clamp_shift": clamp_shift(y, w // 2, max((w // 2).bit_length() + 1, 2)),
        "sticky_v": lshr_sticky(x, n)[0], "sticky_b": lshr_sticky(x, n)[1],
        "bool_ops": (x.ult(y) & ~y.msb()) | (x.bit(0) ^ n.eq(0)),
    }
    for k in sorted({0, 1, w - 1, w, w + 3}):
        out[f"shl#{k}"] = x << k
        out[f"lshr#{k}"] = x.lshr(k)
        out[f"ashr#{k}"] = x.ashr(k)
    return out


def _prim_draw(w):
    def draw(n, rng):
        amounts = [a if rng.random() < 0.5 else int(rng.integers(0, w + 4)) & ((1 << w) - 1)
                   for a in draw_uint(w, n, rng)]
        return [draw_uint(w, n, rng), draw_uint(w, n, rng), amounts]
    return draw


def _fp_draw(*fmts):
    def draw(n, rng):
        return [[int(v) for v in draw_bits(f, n, rng)] for f in fmts]
    return draw


def decode_ops(fmt):
    def fn(x):
        v = decode(x, fmt)
        return {"sign": v.sign, "exp": v.exp, "sig": v.sig, "nan": v.nan, "inf": v.inf, "zero": v.zero,
                "finite_nonzero": v.finite_nonzero}
    return fn


def _decode_flush(x):
    v = decode(x, "fp16", "positive")
    w = decode(x, "bf16,subnormals=no" if x.w == 16 else "fp16")
    return {"sign": v.sign, "sig": v.sig, "exp": v.exp, "zero": v.zero, "bf_sig": w.sig, "bf_sign": w.sign}


def convert_from_fp32(x):
    return {
        "fp16_RNE": convert(x, "fp32", "fp16", "RNE"),
        "bf16_RZ": convert(x, "fp32", "bf16", "RZ"),
        "tf32_RTO": convert(x, "fp32", "tf32", "RTO"),
        "e4m3_RNE": convert(x, "fp32", "fp8e4m3", "RNE"),
        "e4m3_RZ_sat": convert(x, "fp32", "fp8e4m3", "RZ", overflow="saturate"),
        "e5m2_RU": convert(x, "fp32", "fp8e5m2", "RU"),
        "e4m3fnuz_RD": convert(x, "fp32", "fp8e4m3fnuz", "RD"),
        "fp6e2m3_RNA": convert(x, "fp32", "fp6e2m3", "RNA"),
        "fp4_RNE": convert(x, "fp32", "fp4e2m1", "RNE"),
        "ue4m3_RNE": convert(x, "fp32", "ue4m3", "RNE"),
        "fp16_ftz": convert(x, "fp32", "fp16", "RNE", flush_inputs="positive", flush_output=True),
        "fp64_widen": convert(x, "fp32", "fp64", "RNE"),
    }


def convert_from_fp16(x):
    return {"e5m2_RD": convert(x, "fp16", "fp8e5m2", "RD"), "fp32": convert(x, "fp16", "fp32"),
            "e4m3_RNA": convert(x, "fp16", "fp8e4m3", "RNA"), "fp6e3m2_RZ": convert(x, "fp16", "fp6e3m2", "RZ"),
            "bf16_RU": convert(x, "fp16", "bf16", "RU"),
            "fp16_RNE_flush": convert(x, "fp16", "fp16", "RNE", flush_inputs="signed")}


def convert_from_fp64(x):
    return {"fp32_RNE": convert(x, "fp64", "fp32", "RNE"), "fp16_RD": convert(x, "fp64", "fp16", "RD"),
            "bf16_RTO": convert(x, "fp64", "bf16", "RTO")}


def arith_fp32(x, y, z):
    return {"add_RNE": fp_add(x, y, "fp32", "RNE"), "add_RD": fp_add(x, y, "fp32", "RD"),
            "mul_RNE": fp_mul(x, y, "fp32", "RNE"), "mul_RU": fp_mul(x, y, "fp32", "RU"),
            "fma_RNE": fma(x, y, z, "fp32", "RNE"), "fma_RZ": fma(x, y, z, "fp32", "RZ")}


def arith_fp16(x, y, z):
    return {"add_RZ": fp_add(x, y, "fp16", "RZ"), "add_RU": fp_add(x, y, "fp16", "RU"),
            "mul_RNE": fp_mul(x, y, "fp16", "RNE"), "mul_fp32": fp_mul(x, y, "fp16", "RNE", out="fp32"),
            "mul_RNA": fp_mul(x, y, "fp16", "RNA"), "fma_RNE": fma(x, y, z, "fp16", "RNE"),
            "fma_RD": fma(x, y, z, "fp16", "RD")}


def arith_small(x, y, z):
    return {"e4m3_add": fp_add(x, y, "fp8e4m3", "RNE"), "e4m3_mul_fp32": fp_mul(x, y, "fp8e4m3", "RNE", out="fp32"),
            "e4m3_fma": fma(x, y, z, "fp8e4m3", "RZ"), "e4m3_mul_RTO": fp_mul(x, y, "fp8e4m3", "RTO")}


def arith_fp64(x, y):
    return {"add_RNE": fp_add(x, y, "fp64", "RNE"), "mul_RNE": fp_mul(x, y, "fp64", "RNE")}


CASES = [
    *(Case(f"prim-w{w}", [w, w, w], _prim_draw(w), prim_ops) for w in (8, 32, 64, 100)),
    *(Case(f"decode-{f}", [get_format(f).width], _fp_draw(f), decode_ops(f))
      for f in ("fp32", "fp16", "bf16", "tf32", "fp64", "fp8e4m3", "fp8e5m2", "fp6e2m3", "fp6e3m2",
                "fp4e2m1", "e8m0", "ue4m3", "fp8e4m3fnuz", "fp8e5m2fnuz")),
    Case("decode-flush", [16], _fp_draw("fp16"), _decode_flush),
    Case("convert-fp32", [32], _fp_draw("fp32"), convert_from_fp32),
    Case("convert-fp16", [16], _fp_draw("fp16"), convert_from_fp16),
    Case("convert-fp64", [64], _fp_draw("fp64"), convert_from_fp64),
    Case("arith-fp32", [32, 32, 32], _fp_draw("fp32", "fp32", "fp32"), arith_fp32),
    Case("arith-fp16", [16, 16, 16], _fp_draw("fp16", "fp16", "fp16"), arith_fp16),
    Case("arith-e4m3", [8, 8, 8], _fp_draw("fp8e4m3", "fp8e4m3", "fp8e4m3"), arith_small),
    Case("arith-fp64", [64, 64], _fp_draw("fp64", "fp64"), arith_fp64),
]
CASE_IDS = [c.name for c in CASES]

# ---------------------------------------------------------------------------------------------
# the machinery
# ---------------------------------------------------------------------------------------------

def _as_bv(r):
    return r.as_bv(1) if isinstance(r, Bool) else r


def _numpy_fields(case: Case, cols: list[list[int]]) -> dict[str, list[int]]:
    xs = [NUMPY.input(c, w) for c, w in zip(cols, case.widths)]
    out = {}
    n = len(cols[0])
    for name, r in case.fn(*xs).items():
        arr = np.broadcast_to(np.asarray(_as_bv(r).v), (n,))
        out[name] = [int(v) for v in arr]
    return out


def _symbolic(case: Case, B):
    vs = [B.var(f"v{i}", w) for i, w in enumerate(case.widths)]
    res = {k: _as_bv(r) for k, r in case.fn(*vs).items()}
    names = list(res)
    term = res[names[0]]
    for k in names[1:]:
        term = term.concat(res[k])
    # field layout, most significant first
    layout, pos = [], term.w
    for k in names:
        pos -= res[k].w
        layout.append((k, pos, res[k].w))
    return vs, term, layout


def _compare(case, layout, values, expected, cols, solver):
    mism = []
    for i, val in enumerate(values):
        for k, lo, w in layout:
            got = (val >> lo) & ((1 << w) - 1)
            if got != expected[k][i]:
                mism.append((k, [hex(c[i]) for c in cols], hex(got), hex(expected[k][i])))
    assert not mism, f"{case.name} [{solver}] (op, inputs, symbolic, numpy): {mism[:6]} ({len(mism)} in all)"


def _inputs(case: Case, n: int, seed: int):
    rng = np.random.default_rng(seed)
    return case.draw(n, rng)


@pytest.mark.parametrize("n", [N_Z3_DEFAULT, pytest.param(N_Z3, marks=pytest.mark.slow)], ids=lambda n: f"n{n}")
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_z3_reading_equals_numpy(case, n):
    from smtmodel.bv.z3_backend import Z3Backend

    cols = _inputs(case, n, seed=CASE_IDS.index(case.name))
    expected = _numpy_fields(case, cols)
    vs, term, layout = _symbolic(case, Z3Backend())
    zv = [v.v for v in vs]
    t0 = time.perf_counter()
    values = []
    decls = [v.decl() for v in zv]
    for i in range(n):
        point = z3.Model()                      # z3's model evaluator folds the term on this input
        for d, c, w in zip(decls, cols, case.widths):
            point.update_value(d, z3.BitVecVal(c[i], w))
        r = point.eval(term.v)
        assert z3.is_bv_value(r), f"{case.name}: z3 did not fold to a constant"
        values.append(r.as_long())
    dt = time.perf_counter() - t0
    _compare(case, layout, values, expected, cols, "z3")
    print(f"\n{case.name}: {n} inputs x {len(layout)} ops, z3 {dt:.1f} s")


@pytest.mark.parametrize("n", [N_CVC5_DEFAULT, pytest.param(N_CVC5, marks=pytest.mark.slow)], ids=lambda n: f"n{n}")
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_cvc5_reading_equals_numpy(case, n):
    import cvc5

    from smtmodel.bv.cvc5_backend import Cvc5Backend

    cols = _inputs(case, n, seed=1000 + CASE_IDS.index(case.name))
    expected = _numpy_fields(case, cols)
    B = Cvc5Backend()
    solver = cvc5.Solver(B.tm)
    vs, term, layout = _symbolic(case, B)
    zv = [v.v for v in vs]
    t0 = time.perf_counter()
    values = []
    for i in range(n):
        consts = [B.tm.mkBitVector(w, str(c[i]), 10) for c, w in zip(cols, case.widths)]
        r = solver.simplify(term.v.substitute(zv, consts))
        assert r.isBitVectorValue(), f"{case.name}: cvc5 did not fold to a constant"
        values.append(int(r.getBitVectorValue(10)))
    dt = time.perf_counter() - t0
    _compare(case, layout, values, expected, cols, "cvc5")
    print(f"\n{case.name}: {n} inputs x {len(layout)} ops, cvc5 {dt:.1f} s")


def test_inputs_cover_specials():
    """The draws really contain the special patterns (a guard on the generators)."""
    rng = np.random.default_rng(0)
    x = draw_bits("fp32", N_Z3, rng)
    mag = x & np.uint64(0x7FFFFFFF)
    assert np.sum(mag == 0) > 50 and np.sum(mag == 0x7F800000) > 50
    assert np.sum(mag > 0x7F800000) > 50 and np.sum((mag > 0) & (mag < 0x00800000)) > 50
    assert np.sum(mag == 0x7F7FFFFF) > 20
    amounts = _prim_draw(32)(2000, rng)[2]
    assert sum(a >= 32 for a in amounts) > 100
